import StageKit
import SQLite

/// Scheduling: claiming runnable jobs per stage and recording what each stage run decided.
extension Journal {
    /// After a reload changed the stages: jobs waiting or queued at a stage move to where
    /// it (or the next stage still there) now stands; a job with no stage left is done.
    /// Returns how many moved.
    @discardableResult
    public func moveStages(from old: [String], to new: [String], now: Double = unixNow()) throws -> Int {
        guard old != new else { return 0 }
        return try write { db in
            var moved = 0
            for r in try db.query("SELECT id, stage_index FROM jobs WHERE state IN ('queued', 'waiting')") {
                let id = r.int(0)!, index = Int(r.int(1)!)
                let next = JobStateMachine.stage(index, from: old, to: new)
                if next == index && index < old.count && index < new.count && old[index] == new[index] { continue }
                if next < new.count {
                    try db.run("UPDATE jobs SET stage_index = ?, updated = ? WHERE id = ?", [.int(Int64(next)), .double(now), .int(id)])
                    try event(db, job: id, stage: nil, attempt: nil, "moved", message: "the reload put it at stage \(new[next])", at: now)
                } else {
                    try db.run("""
                        UPDATE jobs SET state = 'done', stage_index = ?, stage = NULL, ready_at = NULL, wait_reason = NULL,
                               deadline = NULL, error = NULL, error_code = NULL, updated = ?, finished = ? WHERE id = ? AND wait_reason IS DISTINCT FROM 'photo'
                        """, [.int(Int64(next)), .double(now), .double(now), .int(id)])
                    try event(db, job: id, stage: nil, attempt: nil, "finished", message: "the reload removed the stages it had left", at: now)
                }
                moved += 1
            }
            return moved
        }
    }

    /// A job that waits for another (`after_job`) is runnable once that one has ended. A
    /// scalar subquery, one primary-key lookup per candidate: PostgreSQL runs a NOT EXISTS
    /// under OR as a hashed subplan, built from every unfinished job on each claim.
    static let afterJobEnded = """
        (after_job IS NULL OR (SELECT p.state FROM jobs p WHERE p.id = jobs.after_job) NOT IN ('queued', 'running', 'waiting'))
        """

    /// Whether a job that crashed the daemon once is runnable at one of `stageIndexes`:
    /// the scheduler then lets running stages drain and runs it alone.
    public func crashSuspectReady(stageIndexes: [Int], now: Double = unixNow()) throws -> Bool {
        guard !stageIndexes.isEmpty else { return false }
        return try read { db in
            try db.queryOne(Self.crashSuspectQuery(stageIndexes: stageIndexes, dialect: db.dialect), [.double(now)]) != nil
        }
    }

    /// The query behind `crashSuspectReady`, asked on every pump. SQLite has no statistics
    /// and would walk a claim's index — every runnable job — for the few that crashed (1.3 s
    /// a pump with a million queued, so the daemon ran one job a second); a unary `+`
    /// keeps `state` and `ready_at` out of its index choice, leaving `jobs_crashed`.
    /// PostgreSQL plans from statistics (and has no `+` for text).
    static func crashSuspectQuery(stageIndexes: [Int], dialect: SQLDialect) -> String {
        let plus = dialect == .sqlite ? "+" : ""
        return """
            SELECT 1 FROM jobs WHERE crashes > 0 AND \(plus)state IN ('queued', 'waiting') AND \(plus)ready_at IS NOT NULL
            AND \(plus)ready_at <= ? AND stage_index IN (\(stageIndexes.map(String.init).joined(separator: ",")))
            AND \(Self.afterJobEnded)
            LIMIT 1
            """
    }

    /// Claims up to `limit` runnable jobs at stage `stageIndex` (queued, or waiting whose
    /// back-off is over), marks them `running` (leased to this host) and returns their
    /// contexts in claiming order: by turn (`nextTurn`: round robin by owner), then id.
    /// `crashSuspects` claims only jobs that crashed the daemon once (to run alone), else
    /// only the others. A stage before `photoLocalEnd` takes only this host's photos.
    public func claim(stageIndex: Int, stageName: String, limit: Int, crashSuspects: Bool = false, photoLocalEnd: Int = .max,
                      now: Double = unixNow()) throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        // PostgreSQL: one statement per batch, atomic by itself, under row locks and not
        // the journal lock: hosts claiming together skip each other's rows instead of
        // waiting, and an empty claim is one round trip. Its commit does not wait for the
        // WAL flush (`synchronous_commit` off for this transaction alone, set per claimed
        // row, so only a claim that wrote sets it): a claim lost with a server crash leaves
        // its jobs queued, the stage's late outcome is dropped (not `running` for this
        // host) and the job runs again, which stages are built for; and every later
        // durable commit flushes the WAL before it, the claim included. SQLite: the one
        // writer selects, then marks, without an fsync of its own for the same reason (a
        // crash of the daemon keeps it, and a restart resumes what was `running`).
        if dialect == .postgres {
            return try statement { db in
                try claim(db, stageIndex: stageIndex, stageName: stageName, limit: limit, crashSuspects: crashSuspects,
                          photoLocalEnd: photoLocalEnd, relaxedCommit: true, now: now)
            }
        }
        // Nothing runnable (most pumps): a read, not an empty write transaction, which
        // would commit even on a full disk and pass for the journal writing again.
        let (picked, params) = Self.runnableQuery(dialect: dialect, stageIndex: stageIndex, limit: limit, crashSuspects: crashSuspects,
                                                  host: host, photoLocalEnd: photoLocalEnd, now: now)
        guard try read({ try $0.queryOne("WITH \(picked) SELECT 1 FROM picked LIMIT 1", params) }) != nil else { return [] }
        return try write(durable: false) { db in
            try claim(db, stageIndex: stageIndex, stageName: stageName, limit: limit, crashSuspects: crashSuspects,
                      photoLocalEnd: photoLocalEnd, relaxedCommit: false, now: now)
        }
    }

    /// The claim itself, in the caller's transaction (or, on PostgreSQL, as one statement):
    /// marks up to `limit` runnable jobs `running` for this host with their `started`
    /// events and returns them in claiming order. `relaxedCommit` (PostgreSQL): this
    /// statement's transaction commits without waiting for the WAL flush.
    func claim(_ db: any SQLConnection, stageIndex: Int, stageName: String, limit: Int, crashSuspects: Bool, photoLocalEnd: Int,
               relaxedCommit: Bool, now: Double) throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        let (picked, params) = Self.runnableQuery(dialect: db.dialect, stageIndex: stageIndex, limit: limit, crashSuspects: crashSuspects,
                                                  host: host, photoLocalEnd: photoLocalEnd, now: now)
        let lease: [SQLValue] = [.text(stageName), .double(now), .text(host), SQLValue(leaseSeconds.map { now + $0 })]
        let columns = "id, key, photo_path, memo, results, attempts, photo_sha256, outages, working_set"
        let qualified = columns.split(separator: ",").map { "jobs." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        // The inbox file's seal as intake took it, while the inbox still maps the name to
        // this job (a file taken under the name since has its own): `PhotoSeal`.
        let seal = "(SELECT t.seal FROM inbox_taken t WHERE t.host = jobs.host AND t.name = jobs.photo AND t.job_id = jobs.id) AS photo_seal"
        let rows: [Row]
        if db.dialect == .postgres {
            rows = try db.query("""
                WITH \(picked),
                claimed AS (
                    UPDATE jobs SET state = 'running', stage = ?, wait_reason = NULL, ready_at = NULL, updated = ?,
                           lease_host = ?, lease_until = ?
                    FROM picked WHERE jobs.id = picked.id
                    RETURNING \(qualified),
                              \(seal), picked.turn),
                started AS (
                    INSERT INTO job_events(job_id, at, stage, attempt, event, host)
                    SELECT id, ?, ?, attempts + 1, 'started', ? FROM claimed)
                SELECT \(columns), photo_seal, turn\(relaxedCommit ? ", set_config('synchronous_commit', 'off', true)" : "") FROM claimed
                """, params + lease + [.double(now), .text(stageName), .text(host)])
                .sorted { ($0.int(10)!, $0.int(0)!) < ($1.int(10)!, $1.int(0)!) }
        } else {
            rows = try db.query("""
                WITH \(picked) SELECT \(qualified), \(seal) FROM picked JOIN jobs ON jobs.id = picked.id ORDER BY picked.turn, picked.id
                """, params)
            for r in rows {
                try db.run("""
                    UPDATE jobs SET state = 'running', stage = ?, wait_reason = NULL, ready_at = NULL, updated = ?,
                           lease_host = ?, lease_until = ? WHERE id = ?
                    """, lease + [.int(r.int(0)!)])
                try event(db, job: r.int(0)!, stage: stageName, attempt: Int(r.int(5)!) + 1, "started", at: now)
            }
        }
        var out: [ClaimedJob] = []
        for r in rows {
            let id = r.int(0)!
            let results = try JSONValue.parse(r.string(4)!).objectValue ?? [:]
            // NULL until a stage continued: the set a new job starts with (its photo), or
            // for a job between stages at the upgrade, the set its results describe.
            let working = try r.string(8).map { try WorkingSet(json: JSONValue.parse($0)) }
                ?? WorkingSet(upgrading: results, photoPath: r.string(2), sha256: r.string(6))
            let ctx = JobContext(id: id, key: r.string(1) ?? "job:\(id)", photoPath: r.string(2), photoSHA256: r.string(6),
                                 photoSeal: r.string(9), memo: try MemoJob(json: JSONValue.parse(r.string(3)!)), results: results, attempt: Int(r.int(5)!) + 1,
                                 outages: Int(r.int(7) ?? 0), working: working)
            out.append(ClaimedJob(context: ctx, stageIndex: stageIndex, outages: ctx.outages))
        }
        return out
    }

    /// Memo jobs whose photo did not arrive in time fail; returns their ids.
    public func expireJoins(now: Double = unixNow()) throws -> [Int64] {
        // Every pump asks; nearly always nothing is due: a read, not a locked write.
        guard try read({ db in
            try db.queryOne("SELECT 1 FROM jobs WHERE deadline IS NOT NULL AND deadline <= ? AND state = 'waiting' LIMIT 1",
                            [.double(now)]) != nil
        }) else { return [] }
        return try write { db in
            let rows = try db.query("SELECT id, photo FROM jobs WHERE deadline IS NOT NULL AND deadline <= ? AND state = 'waiting'",
                                    [.double(now)])
            for r in rows {
                let reason = "photo \(r.string(1) ?? "?") did not arrive within the join timeout"
                try db.run("""
                    UPDATE jobs SET state = 'failed', wait_reason = NULL, deadline = NULL, error = ?, error_code = NULL, updated = ?, finished = ?
                    WHERE id = ?
                    """, [.text(reason), .double(now), .double(now), .int(r.int(0)!)])
                try event(db, job: r.int(0)!, stage: nil, attempt: nil, "failed", message: reason, at: now)
            }
            return rows.map { $0.int(0)! }
        }
    }

    /// The earliest time a waiting job becomes runnable or a join deadline passes.
    public func nextWakeAt() throws -> Double? {
        try read { db in
            let r = try db.queryOne("""
                SELECT min(t) FROM (
                  SELECT min(ready_at) AS t FROM jobs WHERE ready_at IS NOT NULL AND state = 'waiting'
                  UNION ALL SELECT min(deadline) FROM jobs WHERE deadline IS NOT NULL) AS wake
                """)
            return r?.double(0)
        }
    }

    /// Failed jobs whose photo has not reached quarantine yet (a crash came in between).
    public func pendingQuarantines() throws -> [PendingQuarantine] {
        try read { db in
            try db.query("SELECT id, photo_path, stage, error, error_code FROM jobs WHERE quarantine = 'pending' AND photo_path IS NOT NULL")
                .map { PendingQuarantine(job: $0.int(0)!, photoPath: $0.string(1)!, stage: $0.string(2), reason: $0.string(3) ?? "failed",
                                         code: $0.string(4).map(PhotomemoError.Code.init(rawValue:))) }
        }
    }

    public func markQuarantined(job: Int64, at path: String, now: Double = unixNow()) throws {
        try write { db in
            try db.run("UPDATE jobs SET quarantine = ?, updated = ? WHERE id = ?", [.text(path), .double(now), .int(job)])
            try event(db, job: job, stage: nil, attempt: nil, "quarantined", message: path, at: now)
        }
    }
}
