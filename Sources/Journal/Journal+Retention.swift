import PhotomemoCore
import StageKit
import SQLite

/// Retention (DESIGN.md, "Running for months"): finished jobs older than the definition's
/// `retention` lose their history and payload, a batch per transaction, so intake waits
/// for one short batch at most.
///
/// Why pruning never lets a queue line or a photo be taken twice: every dedup decision
/// reads columns that pruning keeps.
/// - A job whose key may be presented again (a client's `key`, a photo's `sha256:…`, a
///   sidecar's `sidecar:NAME@IDENTITY`) keeps its row as a compact tombstone (`pruned`
///   set; key, owner, photo, sha256, state, duplicate_of kept; memo, results, working
///   set, history gone): the key stays unique in `jobs` and in the index's
///   `applied_jobs`, which a reused key would silently map to its old record.
/// - A done original photo (not a duplicate, its record not deleted) is a tombstone too:
///   intake finds the same bytes of the same owner by `photo_sha256` and makes a duplicate.
/// - A job an intake ledger row (`inbox_taken`) or another job (`duplicate_of`,
///   `after_job`) refers to is a tombstone: the ledger row says its file is taken.
/// - Only the rest is deleted: keyless jobs (duplicates, rejected entries) and jobs keyed
///   by their queue line's position (`queue:FILE:gN:OFFSET`) or a socket's random key
///   (`socket:UUID`). A position is never read again: the read position of a file only
///   moves forward and a rewritten file is a new generation (`QueueReader`).
/// - On SQLite the newest job is never deleted (a tombstone instead), or its id would be
///   given again (rowid = max + 1).
/// Tombstones are a few hundred bytes; they grow with stored photos and keyed lines, as
/// the index's records do, while everything else is pruned.
extension Journal {
    /// One batch: at most `limit` jobs finished before their state's retention, in one
    /// transaction. Returns how many were pruned (deleted or made tombstones).
    @discardableResult
    public func pruneBatch(retention: Retention, limit: Int = 500, now: Double = unixNow()) throws -> PruneBatch {
        try write { db in
            var candidates: [(id: Int64, state: String, keyed: Bool)] = []
            let byAge = db.dialect == .sqlite ? " INDEXED BY jobs_prunable" : ""
            for (state, age) in [("done", retention.done), ("failed", retention.failed), ("cancelled", retention.cancelled)] {
                let left = limit - candidates.count
                guard left > 0 else { break }
                // A failed job whose photo is still to move into quarantine is not finished with.
                candidates += try db.query("""
                    SELECT id, key, CASE WHEN state = 'done' AND duplicate_of IS NULL AND photo_sha256 IS NOT NULL AND record_deleted IS NULL THEN 1 ELSE 0 END
                    FROM jobs\(byAge) WHERE state = ? AND finished < ? AND pruned IS NULL AND finished IS NOT NULL
                        AND (quarantine IS NULL OR quarantine <> 'pending')
                    ORDER BY finished LIMIT ?
                    """, [.text(state), .double(now - age), .int(Int64(left))]).map { r in
                    let key = r.string(1)
                    let reusable = key.map { !$0.hasPrefix("queue:") && !$0.hasPrefix("socket:") } ?? false
                    return (r.int(0)!, state, reusable || r.int(2) == 1)
                }
            }
            guard !candidates.isEmpty else { return PruneBatch() }
            let all = candidates.map(\.id)
            let list = all.map(String.init).joined(separator: ",")
            var deletable = Set(candidates.filter { !$0.keyed }.map(\.id))
            for r in try db.query("SELECT job_id FROM inbox_taken WHERE job_id IN (\(list))") { deletable.remove(r.int(0)!) }
            if db.dialect == .sqlite, let newest = try db.queryOne("SELECT max(id) FROM jobs")?.int(0) { deletable.remove(newest) }
            // Referred to by a job that stays: a tombstone. Repeated, since a referrer in
            // this batch may turn out to stay too.
            let refs = try db.query("SELECT id, duplicate_of FROM jobs WHERE duplicate_of IN (\(list))")
                + db.query("SELECT id, after_job FROM jobs WHERE after_job IN (\(list))")
            var changed = true
            while changed {
                changed = false
                for r in refs where deletable.contains(r.int(1)!) && !deletable.contains(r.int(0)!) {
                    deletable.remove(r.int(1)!)
                    changed = true
                }
            }
            try db.run("DELETE FROM job_events WHERE job_id IN (\(list))")
            if !deletable.isEmpty {
                try db.run("DELETE FROM jobs WHERE id IN (\(deletable.map(String.init).joined(separator: ",")))")
            }
            let kept = all.filter { !deletable.contains($0) }
            if !kept.isEmpty {
                try db.run("""
                    UPDATE jobs SET pruned = ?, memo = '{}', results = '{}', working_set = NULL, source = NULL, photo_path = NULL,
                        quarantine = NULL, wait_reason = NULL, deadline = NULL, ready_at = NULL
                    WHERE id IN (\(kept.map(String.init).joined(separator: ",")))
                    """, [.double(now)])
            }
            var byState: [String: Int] = [:]
            for c in candidates { byState[c.state, default: 0] += 1 }
            for (state, n) in byState {
                let key = "pruned." + state
                let before = Int(try db.queryOne("SELECT value FROM meta WHERE key = ?", [.text(key)])?.string(0) ?? "0") ?? 0
                try db.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           [.text(key), .text(String(before + n))])
            }
            Failpoint.hit("prune.before_commit")
            return PruneBatch(deleted: deletable.count, tombstones: kept.count)
        }
    }

    /// Jobs pruned so far, per end state (`status` adds them to what the journal holds).
    public func prunedCounts() throws -> [JobState: Int] {
        try read { db in
            var out: [JobState: Int] = [:]
            for r in try db.query("SELECT key, value FROM meta WHERE key LIKE 'pruned.%'") {
                if let s = JobState(rawValue: String(r.string(0)!.dropFirst("pruned.".count))) { out[s] = Int(r.string(1)!) ?? 0 }
            }
            return out
        }
    }
}

/// What one prune batch did.
public struct PruneBatch: Sendable, Equatable {
    /// Rows gone with their history.
    public var deleted = 0
    /// Rows kept as tombstones (their keys stay unique), their history gone.
    public var tombstones = 0
    public var pruned: Int { deleted + tombstones }
}
