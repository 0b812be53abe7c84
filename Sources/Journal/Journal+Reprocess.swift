import StageKit
import SQLite

/// One record to run again from its stored original (`photomemo reprocess`).
public struct ReprocessJob: Sendable {
    /// `reprocess:<record>@<change tag>/<from stage>`: the same request for a record that
    /// has not changed since is one job, however often the command runs; the record's
    /// update (its new change tag) lets a later request run it again.
    public let key: String
    /// The record to update, as its owner (or the user who may write it) would.
    public let memo: MemoJob
    /// The original's local copy (`HOME/reprocess/`), its hash, and the set the job starts with.
    public let photoPath: String
    public let sha256: String
    public let working: WorkingSet

    public init(key: String, memo: MemoJob, photoPath: String, sha256: String, working: WorkingSet) {
        self.key = key
        self.memo = memo
        self.photoPath = photoPath
        self.sha256 = sha256
        self.working = working
    }

    public static func key(record: String, changeTag: String, from stage: String) -> String {
        "reprocess:\(record)@\(changeTag)/\(stage)"
    }
}

/// A reprocess job whose host is gone (`Journal.strandedReprocessJobs`).
public struct StrandedReprocessJob: Sendable {
    public let id: Int64
    public let key: String
    public let host: String
    public let working: WorkingSet
}

/// Reprocess jobs: queued at a stage with the original already in hand, at turns in the
/// reprocess band (`Journal.reprocessBand`), so fresh drops are claimed first.
extension Journal {
    /// The keys among `keys` that already name a job queued, running, waiting or done: their
    /// records need no new one. A cancelled or failed job's key is taken over by a new
    /// request (`enqueueReprocess`).
    public func existingKeys(_ keys: [String]) throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try read { db in
            let marks = Array(repeating: "?", count: keys.count).joined(separator: ",")
            return Set(try db.query("SELECT key FROM jobs WHERE key IN (\(marks)) AND state NOT IN ('cancelled', 'failed')",
                                    keys.map(SQLValue.text)).compactMap { $0.string(0) })
        }
    }

    /// Queues `jobs` at stage `stageIndex` in one transaction; a key a job queued, running,
    /// waiting or done holds is skipped. A cancelled or failed one (or its pruned tombstone)
    /// gives its key up, renamed `KEY#ID` (a failed one is cancelled: one job a record at a
    /// time): asking again after a cancel or a failure runs the record again, as the docs
    /// say, and the old job can no longer be retried (`retry`). Returns the keys that
    /// became jobs.
    public func enqueueReprocess(_ jobs: [ReprocessJob], stageIndex: Int, now: Double = unixNow()) throws -> [String] {
        guard !jobs.isEmpty else { return [] }
        return try write { db in
            var added: [String] = []
            for j in jobs {
                if let held = try db.queryOne("SELECT id, state FROM jobs WHERE key = ?", [.text(j.key)]) {
                    guard let old = held.int(0), let state = held.string(1), state == "cancelled" || state == "failed" else { continue }
                    try db.run("UPDATE jobs SET key = ?, state = 'cancelled' WHERE id = ?", [.text(j.key + "#\(old)"), .int(old)])
                    if state == "failed" {
                        try event(db, job: old, stage: nil, attempt: nil, "cancelled", message: "a new reprocess request runs its record", at: now)
                    }
                }
                let turn = try nextTurn(db, owner: j.memo.owner, reprocess: true)
                let id = try db.queryOne("""
                    INSERT INTO jobs(key, origin, photo_path, photo_sha256, memo, state, stage_index, ready_at, source, created, updated,
                                     owner, host, turn, working_set)
                    VALUES (?, 'reprocess', ?, ?, ?, 'queued', ?, ?, 'reprocess', ?, ?, ?, ?, ?, ?) RETURNING id
                    """, [.text(j.key), .text(j.photoPath), .text(j.sha256), .text(j.memo.json.jsonString), .int(Int64(stageIndex)),
                          .double(now), .double(now), .double(now), SQLValue(j.memo.owner), .text(host), .int(turn),
                          .text(j.working.json.jsonString)])!.int(0)!
                try event(db, job: id, stage: nil, attempt: nil, "accepted", message: "reprocess of record \(j.memo.record ?? "?")", at: now)
                added.append(j.key)
            }
            if !added.isEmpty { try announceWork(db) }
            return added
        }
    }

    /// A deleted record's reprocess jobs are cancelled, failed ones too, and marked
    /// `record_deleted` (whoever's they are: a writer's too) so they pin nothing: queued,
    /// one would store renditions for a record that is gone and fail at index; failed or
    /// cancelled, its objects stay pinned for their retention (`verify` and the collector
    /// keep what a job not done names), a purged record's photo with them. A running one
    /// finishes its stage, its outcome dropped. A record restored from the trash is
    /// reprocessed by asking again. Returns the cancelled jobs' copies.
    public func cancelReprocess(ofRecords ids: [String], now: Double = unixNow()) throws -> [String] {
        guard !ids.isEmpty else { return [] }
        return try write { db in
            var copies: [String] = []
            for record in ids {
                let prefix = "reprocess:\(record)@"
                let jobs = try db.query("""
                    SELECT id, photo_path FROM jobs WHERE origin = 'reprocess' AND pruned IS NULL AND substr(key, 1, CAST(? AS INTEGER)) = ?
                        AND (state IN ('queued', 'waiting', 'running') OR (state = 'failed' AND (quarantine IS NULL OR quarantine <> 'pending')))
                    """, [.int(Int64(prefix.count)), .text(prefix)])
                for j in jobs {
                    let id = j.int(0)!
                    try db.run("""
                        UPDATE jobs SET state = 'cancelled', ready_at = NULL, deadline = NULL, wait_reason = NULL, updated = ?, finished = ?,
                            record_deleted = ?
                        WHERE id = ?
                        """, [.double(now), .double(now), .double(now), .int(id)])
                    try event(db, job: id, stage: nil, attempt: nil, "cancelled", message: "its record \(record) was deleted", at: now)
                    if let copy = j.string(1) { copies.append(copy) }
                }
                // Those cancelled before (a writer's too) pin nothing either.
                try db.run("""
                    UPDATE jobs SET record_deleted = ? WHERE origin = 'reprocess' AND state = 'cancelled' AND record_deleted IS NULL
                        AND substr(key, 1, CAST(? AS INTEGER)) = ?
                    """, [.double(now), .int(Int64(prefix.count)), .text(prefix)])
            }
            return copies
        }
    }

    /// Those of these jobs that are reprocess jobs, with their copies (`HOME/reprocess/`):
    /// a cancel removes the copies, a bulk retry counts them toward the reprocess cap.
    public func reprocessJobs(among ids: [Int64]) throws -> [(id: Int64, copy: String?)] {
        guard !ids.isEmpty else { return [] }
        return try read { db in
            try db.query("SELECT id, photo_path FROM jobs WHERE origin = 'reprocess' AND id IN (\(ids.map(String.init).joined(separator: ",")))")
                .map { ($0.int(0)!, $0.string(1)) }
        }
    }

    /// The copies (`HOME/reprocess/`) unfinished reprocess jobs run from; a copy no such job
    /// names was never enqueued, or is a failed job's (its failure removes it; one a release
    /// before that kept, for the job's retention, goes at the next start).
    public func reprocessCopiesInUse() throws -> Set<String> {
        try read { db in
            Set(try db.query("""
                SELECT photo_path FROM jobs WHERE origin = 'reprocess' AND state IN ('queued', 'running', 'waiting') AND photo_path IS NOT NULL
                """, []).compactMap { $0.string(0) })
        }
    }

    /// The copies `owner`'s unfinished reprocess jobs run from (`ReprocessRoom` adds up their bytes).
    public func reprocessCopies(owner: String) throws -> [String] {
        try read { db in
            try db.query("""
                SELECT photo_path FROM jobs WHERE owner = ? AND origin = 'reprocess' AND state IN ('queued', 'running', 'waiting')
                AND photo_path IS NOT NULL
                """, [.text(owner)]).compactMap { $0.string(0) }
        }
    }

    /// Of `paths` (copies in `HOME/reprocess/`), those reprocess jobs named and no job needs
    /// any more: every job naming it done or cancelled. A copy no job names yet is a page of
    /// a request being queued: not among them.
    public func reprocessCopiesEnded(_ paths: [String]) throws -> Set<String> {
        guard !paths.isEmpty else { return [] }
        return try read { db in
            let marks = Array(repeating: "?", count: paths.count).joined(separator: ",")
            return Set(try db.query("""
                SELECT photo_path FROM jobs WHERE origin = 'reprocess' AND photo_path IN (\(marks))
                GROUP BY photo_path HAVING sum(CASE WHEN state IN ('done', 'cancelled') THEN 0 ELSE 1 END) = 0
                """, paths.map(SQLValue.text)).compactMap { $0.string(0) })
        }
    }

    /// Reprocess jobs queued or waiting at a stage before `photoLocalEnd` (their stages read
    /// their copy of the original) on a host whose heartbeat is older than `window` seconds
    /// (or that never wrote one): the copy is on a host that is gone, the original in the
    /// shared store. Oldest first, at most `limit`.
    public func strandedReprocessJobs(window: Double, photoLocalEnd: Int, limit: Int, now: Double) throws -> [StrandedReprocessJob] {
        try read { db in
            try db.query("""
                SELECT j.id, j.key, j.host, j.working_set FROM jobs j LEFT JOIN hosts h ON h.host = j.host
                WHERE j.origin = 'reprocess' AND j.state IN ('queued', 'waiting') AND j.stage_index < ? AND j.host <> ?
                    AND j.working_set IS NOT NULL AND (h.seen IS NULL OR h.seen < ?)
                ORDER BY j.id LIMIT ?
                """, [.int(Int64(min(photoLocalEnd, Int(Int32.max)))), .text(host), .double(now - window), .int(Int64(limit))]).compactMap { r in
                guard let working = try? WorkingSet(json: JSONValue.parse(r.string(3)!)) else { return nil }
                return StrandedReprocessJob(id: r.int(0)!, key: r.string(1)!, host: r.string(2)!, working: working)
            }
        }
    }

    /// Takes a stranded reprocess job to this host, to run from `copy` (made here from the
    /// store): false when another host took it first, or it is no longer queued or waiting.
    public func adoptReprocess(_ job: StrandedReprocessJob, copy: String, now: Double = unixNow()) throws -> Bool {
        var working = job.working
        working.change(.original) { $0.path = copy }
        return try write { db in
            guard try db.run("""
                UPDATE jobs SET host = ?, photo_path = ?, working_set = ?, updated = ?
                WHERE id = ? AND host = ? AND state IN ('queued', 'waiting')
                """, [.text(host), .text(copy), .text(working.json.jsonString), .double(now), .int(job.id), .text(job.host)]) == 1 else { return false }
            try event(db, job: job.id, stage: nil, attempt: nil, "moved", message: "from host \(job.host), gone: its copy of the original made again here", at: now)
            try announceWork(db)
            return true
        }
    }

    /// Reprocess jobs that finished since `since` (`status`'s reprocess rate): the last
    /// minute's finish events alone are read, however many reprocess jobs there are.
    public func reprocessFinishedCount(since: Double) throws -> Int {
        try read { db in
            Int(try db.queryOne("""
                SELECT count(*) FROM job_events e JOIN jobs j ON j.id = e.job_id
                WHERE e.event = 'finished' AND e.at >= ? AND j.origin = 'reprocess'
                """, [.double(since)])!.int(0)!)
        }
    }

    /// Reprocess jobs by state (`status`'s `reprocess`), read from their own index.
    public func reprocessCounts() throws -> [JobState: Int] {
        try read { db in
            var out: [JobState: Int] = [:]
            for s in JobState.allCases { out[s] = 0 }
            for r in try db.query("SELECT state, count(*) FROM jobs WHERE origin = 'reprocess' GROUP BY state") {
                if let s = JobState(rawValue: r.string(0)!) { out[s] = Int(r.int(1)!) }
            }
            return out
        }
    }
}
