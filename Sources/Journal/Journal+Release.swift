import StageKit
import SQLite

extension Journal {
    /// Claimed jobs that will not start — their stage was paused after the claim — go
    /// back to the queue at that stage as they were, spending no attempt; their history
    /// says why. Only this host's claim at that stage is undone: a job cancelled or taken
    /// back since stays as it is.
    public func release(_ claims: [(job: ClaimedJob, stage: String)], reason: String, now: Double = unixNow()) throws {
        guard !claims.isEmpty else { return }
        try write { db in
            for (job, stage) in claims {
                let id = job.context.id
                guard try db.run("""
                    UPDATE jobs SET state = 'queued', stage = NULL, ready_at = ?, lease_until = NULL, updated = ?
                    WHERE id = ? AND state = 'running' AND lease_host = ? AND stage_index = ?
                    """, [.double(now), .double(now), .int(id), .text(host), .int(Int64(job.stageIndex))]) > 0 else { continue }
                try event(db, job: id, stage: stage, attempt: job.context.attempt, "released", message: reason, at: now)
            }
            try announceWork(db)
        }
    }
}
