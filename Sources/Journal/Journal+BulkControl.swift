import StageKit
import SQLite

/// Which jobs `retry --state` / `cancel --state` act on.
public struct JobFilter: Sendable, Equatable {
    public var state: JobState
    /// Only jobs at (stopped at) this stage.
    public var stageIndex: Int?
    /// Only jobs whose state last changed at or after this (Unix seconds).
    public var since: Double?
    /// Only this owner's jobs; nil: everyone's (an admin).
    public var owner: String?

    public init(state: JobState, stageIndex: Int? = nil, since: Double? = nil, owner: String? = nil) {
        self.state = state
        self.stageIndex = stageIndex
        self.since = since
        self.owner = owner
    }
}

/// Bulk retry and cancel: a batch of ids read, then acted on in one short transaction,
/// so 10,000 jobs never hold the writer longer than one batch does.
extension Journal {
    /// The newest job id now: a bulk action stops there, so jobs that fail while it runs
    /// are not swept up (and it ends).
    public func newestJobID() throws -> Int64 {
        try read { db in try db.queryOne("SELECT coalesce(max(id), 0) FROM jobs")!.int(0)! }
    }

    /// Up to `limit` jobs matching `filter` above `after` and up to `through`, ascending.
    public func jobIDs(matching filter: JobFilter, after: Int64, through: Int64, limit: Int) throws -> [(id: Int64, owner: String?)] {
        try read { db in
            var sql = "SELECT id, owner FROM jobs WHERE state = ? AND id > ? AND id <= ? AND pruned IS NULL"
            var params: [SQLValue] = [.text(filter.state.rawValue), .int(after), .int(through)]
            if let s = filter.stageIndex { sql += " AND stage_index = ?"; params.append(.int(Int64(s))) }
            if let t = filter.since { sql += " AND updated >= ?"; params.append(.double(t)) }
            if let o = filter.owner { sql += " AND owner = ?"; params.append(.text(o)) }
            return try db.query(sql + " ORDER BY id LIMIT ?", params + [.int(Int64(limit))]).map { ($0.int(0)!, $0.string(1)) }
        }
    }

    /// Retries those of `ids` still `state` (failed or cancelled), in one transaction.
    /// A job `bringBack` refuses (its photo is gone) stays as it was and is listed with
    /// why; one whose state changed meanwhile is left alone. Returns the ids retried.
    public func retry(jobs ids: [Int64], state: JobState, joinTimeoutSeconds: Int, photoNeededEnd: Int, now: Double,
                      bringBack: (_ job: Int64, _ photoPath: String, _ quarantined: String?, _ needed: Bool) throws -> Void)
        throws -> (retried: [Int64], refused: [(job: Int64, reason: String)]) {
        try write { db in
            var retried: [Int64] = [], refused: [(job: Int64, reason: String)] = []
            for id in ids {
                guard try db.queryOne("SELECT state FROM jobs WHERE id = ? AND pruned IS NULL", [.int(id)])?.string(0) == state.rawValue else { continue }
                do {
                    try retry(db, job: id, joinTimeoutSeconds: joinTimeoutSeconds, photoNeededEnd: photoNeededEnd, now: now) {
                        try bringBack(id, $0, $1, $2)
                    }
                    retried.append(id)
                } catch let e as PhotomemoError {
                    refused.append((id, e.message))
                }
            }
            if !retried.isEmpty { try announceWork(db) }
            return (retried, refused)
        }
    }

    /// Cancels those of `ids` still `state` (queued or waiting), in one transaction.
    public func cancel(jobs ids: [Int64], state: JobState, now: Double) throws -> [Int64] {
        try write { db in
            var cancelled: [Int64] = []
            for id in ids where try db.queryOne("SELECT state FROM jobs WHERE id = ? AND pruned IS NULL", [.int(id)])?.string(0) == state.rawValue {
                try cancel(db, job: id, now: now)
                cancelled.append(id)
            }
            return cancelled
        }
    }
}
