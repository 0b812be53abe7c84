import PhotomemoCore

/// Scheduling: claiming runnable jobs per stage and recording what each stage run decided.
extension Journal {
    /// After a crash or stop, jobs that were `running` resume at their stage, and the
    /// interrupted run counts as an attempt (out of attempts, the job fails). A job the
    /// last process was running when it died of a fatal signal (`crashed`: job → stage,
    /// from its crash log) has a crash counted at that stage; the second fails it with
    /// a reason, so one poisonous input costs at most two restarts.
    @discardableResult
    public func resumeInterrupted(maxAttempts: Int, crashed: [Int64: String] = [:], signal: String = "a fatal signal",
                                  now: Double = unixNow()) throws -> ResumeCounts {
        try write { db in
            var counts = ResumeCounts()
            for r in try db.query("SELECT id, stage, attempts, crashes FROM jobs WHERE state = 'running'") {
                let id = r.int(0)!, stage = r.string(1) ?? "?", attempts = Int(r.int(2)!) + 1
                let crashes = Int(r.int(3)!) + (crashed[id] == stage ? 1 : 0)
                let reason: String? = crashes >= 2
                    ? "the daemon died twice while stage \(stage) ran on this job (last: \(signal)); not retried (photomemo retry \(id) runs it again)"
                    : attempts >= maxAttempts
                    ? "interrupted \(attempts) times during stage \(stage) (the daemon stopped or crashed while it ran)" : nil
                if let reason {
                    try db.run("""
                        UPDATE jobs SET state = 'failed', attempts = ?, crashes = ?, error = ?, updated = ?, finished = ?,
                               quarantine = CASE WHEN photo_path IS NULL THEN NULL ELSE 'pending' END WHERE id = ?
                        """, [.int(Int64(attempts)), .int(Int64(crashes)), .text(reason), .double(now), .double(now), .int(id)])
                    try event(db, job: id, stage: stage, attempt: attempts, "failed", message: reason, at: now)
                    if crashes >= 2 { counts.crashLooped.append(id) } else { counts.failed += 1 }
                } else {
                    try db.run("UPDATE jobs SET state = 'queued', attempts = ?, crashes = ?, ready_at = ?, updated = ? WHERE id = ?",
                               [.int(Int64(attempts)), .int(Int64(crashes)), .double(now), .double(now), .int(id)])
                    let why = crashed[id] == stage ? "after the daemon died of \(signal) while this stage ran (it runs alone now)" : "after restart"
                    try event(db, job: id, stage: stage, attempt: attempts, "resumed", message: why, at: now)
                    counts.resumed += 1
                }
            }
            return counts
        }
    }

    /// Whether a job that crashed the daemon once is runnable at one of `stageIndexes`:
    /// the scheduler then lets running stages drain and runs it alone.
    public func crashSuspectReady(stageIndexes: [Int], now: Double = unixNow()) throws -> Bool {
        guard !stageIndexes.isEmpty else { return false }
        return try read { db in
            try db.queryOne("""
                SELECT 1 FROM jobs WHERE crashes > 0 AND state IN ('queued', 'waiting') AND ready_at IS NOT NULL AND ready_at <= ?
                AND stage_index IN (\(stageIndexes.map(String.init).joined(separator: ",")))
                AND (after_job IS NULL OR NOT EXISTS (
                    SELECT 1 FROM jobs p WHERE p.id = jobs.after_job AND p.state IN ('queued', 'running', 'waiting')))
                LIMIT 1
                """, [.double(now)]) != nil
        }
    }

    /// Claims up to `limit` runnable jobs at stage `stageIndex` (queued, or waiting whose
    /// back-off is over), marks them `running` and returns their contexts.
    /// `crashSuspects` claims only jobs that crashed the daemon once (to run alone), else only the others.
    public func claim(stageIndex: Int, stageName: String, limit: Int, crashSuspects: Bool = false,
                      now: Double = unixNow()) throws -> [ClaimedJob] {
        guard limit > 0 else { return [] }
        return try write { db in
            let rows = try db.query("""
                SELECT id, key, photo_path, memo, results, attempts, photo_sha256 FROM jobs
                WHERE stage_index = ? AND ready_at IS NOT NULL AND ready_at <= ? AND state IN ('queued', 'waiting')
                AND (crashes > 0) = ?
                AND (after_job IS NULL OR NOT EXISTS (
                    SELECT 1 FROM jobs p WHERE p.id = jobs.after_job AND p.state IN ('queued', 'running', 'waiting')))
                ORDER BY ready_at, id LIMIT ?
                """, [.int(Int64(stageIndex)), .double(now), .int(crashSuspects ? 1 : 0), .int(Int64(limit))])
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
                out.append(ClaimedJob(context: ctx, stageIndex: stageIndex))
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

    /// A stage run's outcomes, one per job (one, or a batch), in one transaction (one
    /// fsync for the batch); says what happened to each job.
    public func recordOutcomes(_ runs: [(job: ClaimedJob, outcome: StageOutcome)], stageName: String, durationMs: Double,
                               stageCount: Int, retry: RetryPolicy, now: Double = unixNow()) throws -> [Transition] {
        try write { db in
            try runs.map {
                try self.apply($0.outcome, to: $0.job, db: db, stageName: stageName, durationMs: durationMs,
                               batch: runs.count, stageCount: stageCount, retry: retry, now: now)
            }
        }
    }

    /// One job's outcome, inside the caller's transaction. A job done in a batch says so
    /// in its event (`photomemo job ID` shows it; the duration is the batch's).
    private func apply(_ outcome: StageOutcome, to job: ClaimedJob, db: Database, stageName: String, durationMs: Double,
                       batch: Int, stageCount: Int, retry: RetryPolicy, now: Double) throws -> Transition {
        let id = job.context.id
        let attempt = job.context.attempt
        guard let row = try db.queryOne("SELECT state, photo_path, outages FROM jobs WHERE id = ?", [.int(id)]),
              row.string(0) == "running" else {
            // Cancelled (or otherwise moved on) while the stage ran: keep what is there.
            return Transition(kind: .abandoned, quarantinePhoto: nil)
        }
        let photo = row.string(1)
        let outages = Int(row.int(2) ?? 0)

        func fail(_ reason: String) throws -> Transition {
            try db.run("""
                UPDATE jobs SET state = 'failed', error = ?, quarantine = CASE WHEN photo_path IS NULL THEN NULL ELSE 'pending' END,
                       attempts = ?, updated = ?, finished = ? WHERE id = ?
                """, [.text(reason), .int(Int64(attempt)), .double(now), .double(now), .int(id)])
            try event(db, job: id, stage: stageName, attempt: attempt, "failed", durationMs: durationMs, message: reason, at: now)
            return Transition(kind: .failed(reason: reason), quarantinePhoto: photo)
        }

        switch outcome {
        case .continue, .skip:
            var results = try JSONValue.parse(
                try db.queryOne("SELECT results FROM jobs WHERE id = ?", [.int(id)])!.string(0)!).objectValue ?? [:]
            let eventName: String
            var message: String? = nil
            if case .skip(let reason) = outcome {
                eventName = "skipped"
                message = reason
                results[stageName] = ["skipped": .string(reason)]
            } else {
                eventName = "done"
                if batch > 1 { message = "in a batch of \(batch)" }
                if case .continue(let r) = outcome { results[stageName] = r }
            }
            try event(db, job: id, stage: stageName, attempt: attempt, eventName, durationMs: durationMs, message: message, at: now)
            let next = job.stageIndex + 1
            if next < stageCount {
                try db.run("""
                    UPDATE jobs SET state = 'queued', stage_index = ?, stage = NULL, attempts = 0, outages = 0, crashes = 0, ready_at = ?,
                           results = ?, error = NULL, updated = ? WHERE id = ?
                    """, [.int(Int64(next)), .double(now), .text(JSONValue.object(results).jsonString), .double(now), .int(id)])
                return Transition(kind: .advanced(toStage: next), quarantinePhoto: nil)
            }
            try db.run("""
                UPDATE jobs SET state = 'done', stage = NULL, stage_index = ?, results = ?, error = NULL, updated = ?, finished = ?
                WHERE id = ?
                """, [.int(Int64(next)), .text(JSONValue.object(results).jsonString), .double(now), .double(now), .int(id)])
            try event(db, job: id, stage: nil, attempt: nil, "finished", at: now)
            return Transition(kind: .finished, quarantinePhoto: nil)

        case .retry(let reason, let after):
            if attempt >= retry.maxAttempts {
                return try fail("\(reason) (gave up after \(attempt) attempts)")
            }
            var delay = retry.delayMs(afterFailures: attempt)
            if let after { delay = max(delay, after.milliseconds) }
            try db.run("""
                UPDATE jobs SET state = 'waiting', wait_reason = 'backoff', attempts = ?, ready_at = ?, error = ?, updated = ?
                WHERE id = ?
                """, [.int(Int64(attempt)), .double(now + Double(delay) / 1000), .text(reason), .double(now), .int(id)])
            try event(db, job: id, stage: stageName, attempt: attempt, "retry", durationMs: durationMs,
                      message: "\(reason); next attempt in \(delay) ms", at: now)
            return Transition(kind: .retrying(afterMs: delay), quarantinePhoto: nil)

        case .unavailable(let dependency, let reason):
            // An outage is not the job's fault: back off (capped) without spending an attempt.
            let delay = retry.delayMs(afterFailures: outages + 1)
            try db.run("""
                UPDATE jobs SET state = 'waiting', wait_reason = 'dependency', outages = ?, ready_at = ?, error = ?, updated = ?
                WHERE id = ?
                """, [.int(Int64(outages + 1)), .double(now + Double(delay) / 1000), .text("\(dependency) unavailable: \(reason)"),
                      .double(now), .int(id)])
            try event(db, job: id, stage: stageName, attempt: attempt, "unavailable", durationMs: durationMs,
                      message: "\(dependency): \(reason); next try in \(delay) ms", at: now)
            return Transition(kind: .waitingForDependency(afterMs: delay), quarantinePhoto: nil)

        case .fail(let reason):
            return try fail(reason)
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
