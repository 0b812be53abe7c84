import PhotomemoCore
import SQLite

/// Scheduling: claiming runnable jobs per stage and recording what each stage run decided.
extension Journal {
    /// After a crash or stop, jobs that were `running` resume at their stage. The
    /// interrupted run counts as an attempt, so a photo that crashes the daemon every time
    /// fails after `maxAttempts` instead of crash-looping it. Returns (resumed, failed).
    @discardableResult
    public func resumeInterrupted(maxAttempts: Int, now: Double = unixNow()) throws -> (resumed: Int, failed: Int) {
        try write { db in
            var resumed = 0, failed = 0
            for r in try db.query("SELECT id, stage, attempts FROM jobs WHERE state = 'running'") {
                let id = r.int(0)!, attempts = Int(r.int(2)!) + 1
                if attempts >= maxAttempts {
                    let reason = "interrupted \(attempts) times during stage \(r.string(1) ?? "?") (the daemon stopped or crashed while it ran)"
                    try db.run("""
                        UPDATE jobs SET state = 'failed', attempts = ?, error = ?, updated = ?, finished = ?,
                               quarantine = CASE WHEN photo_path IS NULL THEN NULL ELSE 'pending' END WHERE id = ?
                        """, [.int(Int64(attempts)), .text(reason), .double(now), .double(now), .int(id)])
                    try event(db, job: id, stage: r.string(1), attempt: attempts, "failed", message: reason, at: now)
                    failed += 1
                } else {
                    try db.run("UPDATE jobs SET state = 'queued', attempts = ?, ready_at = ?, updated = ? WHERE id = ?",
                               [.int(Int64(attempts)), .double(now), .double(now), .int(id)])
                    try event(db, job: id, stage: r.string(1), attempt: attempts, "resumed", message: "after restart", at: now)
                    resumed += 1
                }
            }
            return (resumed, failed)
        }
    }

    /// Claims up to `limit` runnable jobs at stage `stageIndex` (queued, or waiting whose
    /// back-off is over), marks them `running` and returns their contexts.
    public func claim(stageIndex: Int, stageName: String, limit: Int, now: Double = unixNow()) throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        return try write { db in
            let rows = try db.query("""
                SELECT id, key, photo_path, memo, results, attempts, photo_sha256, outages FROM jobs
                WHERE stage_index = ? AND ready_at IS NOT NULL AND ready_at <= ? AND state IN ('queued', 'waiting')
                ORDER BY ready_at, id LIMIT ?
                """, [.int(Int64(stageIndex)), .double(now), .int(Int64(limit))])
            var out: [ClaimedJob] = []
            for r in rows {
                let id = r.int(0)!
                let attempt = Int(r.int(5)!) + 1
                try db.run("""
                    UPDATE jobs SET state = 'running', stage = ?, wait_reason = NULL, ready_at = NULL, updated = ? WHERE id = ?
                    """, [.text(stageName), .double(now), .int(id)])
                try event(db, job: id, stage: stageName, attempt: attempt, "started", at: now)
                let results = try JSONValue.parse(r.string(4)!).objectValue ?? [:]
                let ctx = JobContext(id: id, key: r.string(1) ?? "job:\(id)", photoPath: r.string(2), photoSHA256: r.string(6),
                                     memo: try MemoJob(json: JSONValue.parse(r.string(3)!)), results: results, attempt: attempt)
                out.append(ClaimedJob(context: ctx, stageIndex: stageIndex, outages: Int(r.int(7) ?? 0)))
            }
            return out
        }
    }

    /// Memo jobs whose photo did not arrive in time fail; returns their ids.
    public func expireJoins(now: Double = unixNow()) throws -> [Int64] {
        try write { db in
            let rows = try db.query("SELECT id, photo FROM jobs WHERE deadline IS NOT NULL AND deadline <= ? AND state = 'waiting'",
                                    [.double(now)])
            for r in rows {
                let reason = "photo \(r.string(1) ?? "?") did not arrive within the join timeout"
                try db.run("""
                    UPDATE jobs SET state = 'failed', wait_reason = NULL, deadline = NULL, error = ?, updated = ?, finished = ?
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
                  UNION ALL SELECT min(deadline) FROM jobs WHERE deadline IS NOT NULL)
                """)
            return r?.double(0)
        }
    }

    /// A stage run's steps, one per job (one, or a batch), as the scheduler decided them
    /// (`JobStateMachine`), in one transaction (one fsync for the batch); says what
    /// happened to each job. A job done in a batch says so in its event (`photomemo job
    /// ID` shows it; the duration is the batch's).
    public func recordSteps(_ runs: [(job: ClaimedJob, step: JobStep)], stageName: String, durationMs: Double,
                            now: Double = unixNow()) throws -> [Transition] {
        try write { db in
            try runs.map { try self.persist($0.step, of: $0.job, db: db, stageName: stageName, durationMs: durationMs, now: now) }
        }
    }

    /// One job's step, inside the caller's transaction; only what was decided is written.
    private func persist(_ step: JobStep, of job: ClaimedJob, db: Database, stageName: String, durationMs: Double,
                         now: Double) throws -> Transition {
        let id = job.context.id
        guard let row = try db.queryOne("SELECT state, photo_path, results FROM jobs WHERE id = ?", [.int(id)]),
              row.string(0) == "running" else {
            // Cancelled (or otherwise moved on) while the stage ran: keep what is there.
            return Transition(kind: .abandoned, quarantinePhoto: nil)
        }
        try event(db, job: id, stage: stageName, attempt: job.context.attempt, step.event, durationMs: durationMs,
                  message: step.message, at: now)
        switch step.next {
        case .advance, .finish:
            var results = try JSONValue.parse(row.string(2)!).objectValue ?? [:]
            if let r = step.result { results[stageName] = r }
            let json = JSONValue.object(results).jsonString
            if case .advance(let next) = step.next {
                try db.run("""
                    UPDATE jobs SET state = 'queued', stage_index = ?, stage = NULL, attempts = 0, outages = 0, ready_at = ?,
                           results = ?, error = NULL, updated = ? WHERE id = ?
                    """, [.int(Int64(next)), .double(now), .text(json), .double(now), .int(id)])
                return Transition(kind: .advanced(toStage: next), quarantinePhoto: nil)
            }
            try db.run("""
                UPDATE jobs SET state = 'done', stage = NULL, stage_index = stage_index + 1, results = ?, error = NULL, updated = ?,
                       finished = ? WHERE id = ?
                """, [.text(json), .double(now), .double(now), .int(id)])
            try event(db, job: id, stage: nil, attempt: nil, "finished", at: now)
            return Transition(kind: .finished, quarantinePhoto: nil)
        case .retry(let delay, let attempts, let error):
            try db.run("""
                UPDATE jobs SET state = 'waiting', wait_reason = 'backoff', attempts = ?, ready_at = ?, error = ?, updated = ?
                WHERE id = ?
                """, [.int(Int64(attempts)), .double(now + Double(delay) / 1000), .text(error), .double(now), .int(id)])
            return Transition(kind: .retrying(afterMs: delay), quarantinePhoto: nil)
        case .waitForDependency(let delay, let outages, let error):
            try db.run("""
                UPDATE jobs SET state = 'waiting', wait_reason = 'dependency', outages = ?, ready_at = ?, error = ?, updated = ?
                WHERE id = ?
                """, [.int(Int64(outages)), .double(now + Double(delay) / 1000), .text(error), .double(now), .int(id)])
            return Transition(kind: .waitingForDependency(afterMs: delay), quarantinePhoto: nil)
        case .fail(let reason, let attempts):
            try db.run("""
                UPDATE jobs SET state = 'failed', error = ?, quarantine = CASE WHEN photo_path IS NULL THEN NULL ELSE 'pending' END,
                       attempts = ?, updated = ?, finished = ? WHERE id = ?
                """, [.text(reason), .int(Int64(attempts)), .double(now), .double(now), .int(id)])
            return Transition(kind: .failed(reason: reason), quarantinePhoto: row.string(1))
        }
    }

    /// Failed jobs whose photo has not reached quarantine yet (a crash came in between).
    public func pendingQuarantines() throws -> [PendingQuarantine] {
        try read { db in
            try db.query("SELECT id, photo_path, stage, error FROM jobs WHERE quarantine = 'pending' AND photo_path IS NOT NULL")
                .map { PendingQuarantine(job: $0.int(0)!, photoPath: $0.string(1)!, stage: $0.string(2), reason: $0.string(3) ?? "failed") }
        }
    }

    public func markQuarantined(job: Int64, at path: String, now: Double = unixNow()) throws {
        try write { db in
            try db.run("UPDATE jobs SET quarantine = ?, updated = ? WHERE id = ?", [.text(path), .double(now), .int(job)])
            try event(db, job: job, stage: nil, attempt: nil, "quarantined", message: path, at: now)
        }
    }
}
