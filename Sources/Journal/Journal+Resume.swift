import StageKit
import SQLite

/// Resuming: jobs left `running` by a process that stopped or died, and leases.
extension Journal {
    /// After a crash or stop, jobs that were `running` resume at their stage, and the
    /// interrupted run counts as an attempt (out of attempts, the job fails). A job the
    /// last process was running when it died of a fatal signal (`crashed`: job → stage,
    /// from its crash log) has a crash counted at that stage; the second fails it with
    /// a reason, so one poisonous input costs at most two restarts.
    ///
    /// `started` (job → attempt, from the last process's start marks) tells a run that
    /// began from a job only claimed (held ahead or parked, never started): those resume
    /// with no attempt counted. nil (no marks to read) counts an attempt for every job.
    @discardableResult
    public func resumeInterrupted(maxAttempts: Int, crashed: [Int64: String] = [:], started: [Int64: Int]? = nil,
                                  signal: String = "a fatal signal", now: Double = unixNow()) throws -> ResumeCounts {
        try write { db in
            try resume(db, "lease_host = ?", [.text(host)], maxAttempts: maxAttempts, crashed: crashed, started: started,
                       signal: signal, because: "after restart", now: now)
        }
    }

    /// Jobs whose lease ran out — the host running them died or lost the database for
    /// longer than a lease — go back to their stage as after a restart, for any host.
    public func reclaimExpiredLeases(maxAttempts: Int, now: Double) throws -> ResumeCounts {
        try write { db in
            let counts = try resume(db, "lease_until IS NOT NULL AND lease_until < ?", [.double(now)], maxAttempts: maxAttempts,
                                    crashed: [:], started: nil, signal: "a fatal signal", because: "after the lease of the host running it ran out", now: now)
            if counts.resumed > 0 { try announceWork(db) }
            return counts
        }
    }

    /// Extends this host's leases on the jobs it is running now.
    public func renewLeases(_ jobs: [Int64], now: Double) throws {
        guard let leaseSeconds, !jobs.isEmpty else { return }
        try write { db in
            try db.run("""
                UPDATE jobs SET lease_until = ? WHERE state = 'running' AND lease_host = ? AND id IN (\(jobs.map(String.init).joined(separator: ",")))
                """, [.double(now + leaseSeconds), .text(host)])
        }
    }

    /// Running jobs matching `condition` resume at their stage (or fail, out of attempts or
    /// after a second crash there).
    private func resume(_ db: any SQLConnection, _ condition: String, _ params: [SQLValue], maxAttempts: Int, crashed: [Int64: String],
                        started: [Int64: Int]?, signal: String, because: String, now: Double) throws -> ResumeCounts {
        var counts = ResumeCounts()
        for r in try db.query("SELECT id, stage, attempts, crashes FROM jobs WHERE state = 'running' AND \(condition)", params) {
            let id = r.int(0)!, stage = r.string(1) ?? "?", before = Int(r.int(2)!)
            if let started, crashed[id] == nil, started[id] != before + 1 {
                try db.run("UPDATE jobs SET state = 'queued', ready_at = ?, updated = ? WHERE id = ?", [.double(now), .double(now), .int(id)])
                try event(db, job: id, stage: stage, attempt: nil, "resumed",
                          message: "\(because); it was claimed but had not started (no attempt counted)", at: now)
                counts.resumed += 1
                continue
            }
            let attempts = before + 1
            let crashes = Int(r.int(3)!) + (crashed[id] == stage ? 1 : 0)
            if let reason = JobStateMachine.afterInterruption(job: id, stage: stage, attempt: attempts, crashes: crashes, signal: signal,
                                                              maxAttempts: maxAttempts) {
                try db.run("""
                    UPDATE jobs SET state = 'failed', attempts = ?, crashes = ?, error = ?, error_code = NULL, updated = ?, finished = ?,
                           quarantine = CASE WHEN photo_path IS NULL THEN NULL ELSE 'pending' END WHERE id = ?
                    """, [.int(Int64(attempts)), .int(Int64(crashes)), .text(reason), .double(now), .double(now), .int(id)])
                try event(db, job: id, stage: stage, attempt: attempts, "failed", message: reason, at: now)
                if crashes >= 2 { counts.crashLooped.append(id) } else { counts.failed += 1 }
            } else {
                try db.run("UPDATE jobs SET state = 'queued', attempts = ?, crashes = ?, ready_at = ?, updated = ? WHERE id = ?",
                           [.int(Int64(attempts)), .int(Int64(crashes)), .double(now), .double(now), .int(id)])
                let why = crashed[id] == stage ? "after the daemon died of \(signal) while this stage ran (it runs alone now)" : because
                try event(db, job: id, stage: stage, attempt: attempts, "resumed", message: why, at: now)
                counts.resumed += 1
            }
        }
        return counts
    }
}
