import SQLite

/// Fair share per owner: a claim takes a stage's queued jobs by `turn`, then id. A new
/// job's turn is one past its owner's last unfinished turn, and never before the front
/// of the queue (the least unfinished turn): an owner's jobs line up behind each other,
/// and each owner's next job stands beside every other owner's next one. So one user's
/// 2,000 queue lines or 40 bombs delay their own jobs; someone else's one photo is taken
/// within a turn. Two index lookups per new job, none per claim.
extension Journal {
    static let unfinished = "state IN ('queued', 'running', 'waiting')"

    /// The turn for a new (or retried) job of `owner` (nil: the daemon's own user).
    func nextTurn(_ db: any SQLConnection, owner: String?) throws -> Int64 {
        let (last, front) = Self.turnQueries(dialect: db.dialect, owner: owner)
        if let own = try db.queryOne(last, owner.map { [SQLValue.text($0)] } ?? [])?.int(0) { return own + 1 }
        return try db.queryOne(front)?.int(0) ?? 0
    }

    /// The owner's last unfinished turn and the front's. SQLite has no statistics and
    /// answered the front from `jobs_state`, every unfinished job (85 ms a job with
    /// 300,000 queued, so a flood's intake slowed as it grew): named indexes there.
    static func turnQueries(dialect: SQLDialect, owner: String?) -> (last: String, front: String) {
        let sqlite = dialect == .sqlite
        let own = owner == nil ? "owner IS NULL" : "owner = ?"
        // Ordered as (owner, turn) is, not max(turn): PostgreSQL answered max(turn) for the
        // daemon's own user (owner IS NULL, common once it has a backlog) by walking
        // jobs_front down from the top, past every other owner's later turns.
        return ("SELECT turn FROM jobs\(sqlite ? " INDEXED BY jobs_owner_turn" : "") WHERE \(own) AND \(unfinished) AND turn IS NOT NULL ORDER BY owner DESC, turn DESC LIMIT 1",
                "SELECT min(turn) FROM jobs\(sqlite ? " INDEXED BY jobs_front" : "") WHERE \(unfinished)")
    }

    /// Gives job `id` its turn now (a job that becomes unfinished again: a retry).
    func takeTurn(_ db: any SQLConnection, job id: Int64, owner: String?) throws {
        try db.run("UPDATE jobs SET turn = ? WHERE id = ?", [.int(try nextTurn(db, owner: owner)), .int(id)])
    }
}

extension Journal {
    /// The CTEs `queued`, `due` and `picked` (id, turn) of a claim: up to `limit` queued jobs
    /// in turn order and up to `limit` waiting ones whose back-off is over, in the order
    /// they became ready, each read from its own index up to its limit (a backlog of any
    /// size, or a stage's jobs all waiting out an outage, is not walked); of those, the
    /// first `limit` by turn. PostgreSQL locks what it reads, skipping other hosts' rows.
    static func runnableQuery(dialect: SQLDialect, stageIndex: Int, limit: Int, crashSuspects: Bool, host: String,
                              photoLocalEnd: Int, now: Double) -> (sql: String, params: [SQLValue]) {
        let sqlite = dialect == .sqlite
        func part(_ state: String, index: String, order: String) -> String {
            """
            SELECT id, turn FROM jobs\(sqlite ? " INDEXED BY \(index)" : "")
            WHERE stage_index = ? AND state = '\(state)' AND ready_at IS NOT NULL AND ready_at <= ?
            AND (host = ? OR photo_path IS NULL OR stage_index >= ?)
            AND crashes \(crashSuspects ? ">" : "=") 0 AND \(afterJobEnded)
            ORDER BY \(order) LIMIT ?\(sqlite ? "" : " FOR UPDATE SKIP LOCKED")
            """
        }
        let one: [SQLValue] = [.int(Int64(stageIndex)), .double(now), .text(host), .int(Int64(min(photoLocalEnd, Int(Int32.max)))),
                               .int(Int64(limit))]
        return ("""
            queued AS (\(part("queued", index: "jobs_turns", order: "turn, id"))),
            due AS (\(part("waiting", index: "jobs_backoff", order: "ready_at, id"))),
            picked AS (SELECT id, turn FROM queued UNION ALL SELECT id, turn FROM due ORDER BY turn, id LIMIT ?)
            """, one + one + [.int(Int64(limit))])
    }
}
