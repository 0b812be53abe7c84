import Foundation
import Journal
import StageKit
import Postgres

/// What batched, set-based statements would give on the same schema (bench-side SQL, not
/// the engine): a claim is one statement (`FOR UPDATE SKIP LOCKED`, no advisory lock),
/// a record of the batch another, instead of two round trips per job.
enum ClaimPrototype {
    static let claim = """
        WITH c AS (SELECT id FROM jobs WHERE stage_index = 0 AND ready_at IS NOT NULL AND ready_at <= $1
                   AND state IN ('queued', 'waiting') AND crashes = 0 AND after_job IS NULL
                   ORDER BY ready_at, id LIMIT 64 FOR UPDATE SKIP LOCKED),
             u AS (UPDATE jobs SET state = 'running', stage = 's0', wait_reason = NULL, ready_at = NULL, updated = $1,
                          lease_host = $2, lease_until = $1 + 30 FROM c WHERE jobs.id = c.id
                   RETURNING jobs.id, jobs.key, jobs.memo, jobs.results, jobs.attempts),
             e AS (INSERT INTO job_events(job_id, at, stage, attempt, event, host)
                   SELECT id, $1, 's0', attempts + 1, 'started', $2 FROM u)
        SELECT id, key, memo, results, attempts FROM u
        """
    static let record = """
        WITH r AS (UPDATE jobs SET state = 'queued', stage_index = 1, stage = NULL, attempts = 0, ready_at = $1, updated = $1
                   WHERE id = ANY($3::bigint[]) AND state = 'running' AND lease_host = $2 RETURNING id),
             e AS (INSERT INTO job_events(job_id, at, stage, attempt, event, host) SELECT id, $1, 's0', 1, 'done', $2 FROM r)
        SELECT pg_notify('photomemo_work', $2), count(*) FROM r
        """

    /// Claims/s and claim + record/s over `n` jobs each, 2 hosts on their own connections.
    static func rates(url: String, jobs n: Int) throws -> (claims: Double, claimRecord: Double) {
        let journal = try Journal(connection: PostgresDatabase(url: url), path: "bench", host: "proto", leaseSeconds: 30)
        let hosts = try (0..<2).map { try PostgresConnection(url: url, applicationName: "bench-proto-\($0)") }
        func drain(record: Bool) throws -> Double {
            let count = LockedValue(0), failure = LockedValue<String?>(nil)
            let t = Date()
            DispatchQueue.concurrentPerform(iterations: hosts.count) { h in
                do {
                    while true {
                        let host = PostgresValue.text("proto-\(h)")
                        let rows = try hosts[h].query(claim, [.double(unixNow()), host])
                        if rows.isEmpty { return }
                        if record {
                            let ids = "{" + rows.map { String($0.int(0)!) }.joined(separator: ",") + "}"
                            _ = try hosts[h].query(Self.record, [.double(unixNow()), host, .text(ids)])
                        }
                        count.withLock { $0 += rows.count }
                    }
                } catch {
                    failure.value = "\(error)"
                }
            }
            if let f = failure.value { throw SideBySide.Failure("prototype: \(f)") }
            return Double(count.value) / Date().timeIntervalSince(t)
        }
        try ClaimBench.commit(journal, n, tag: "proto-claim")
        let claims = try drain(record: false)
        try ClaimBench.commit(journal, n, tag: "proto-record")
        return (claims, try drain(record: true))
    }
}
