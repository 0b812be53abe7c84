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

/// Reprocess jobs: queued at a stage with the original already in hand, at turns in the
/// reprocess band (`Journal.reprocessBand`), so fresh drops are claimed first.
extension Journal {
    /// The keys among `keys` that already name a job: their records need no new one.
    public func existingKeys(_ keys: [String]) throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try read { db in
            let marks = Array(repeating: "?", count: keys.count).joined(separator: ",")
            return Set(try db.query("SELECT key FROM jobs WHERE key IN (\(marks))", keys.map(SQLValue.text)).compactMap { $0.string(0) })
        }
    }

    /// Queues `jobs` at stage `stageIndex` in one transaction; a key already there is
    /// skipped. Returns the keys that became jobs.
    public func enqueueReprocess(_ jobs: [ReprocessJob], stageIndex: Int, now: Double = unixNow()) throws -> [String] {
        guard !jobs.isEmpty else { return [] }
        return try write { db in
            var added: [String] = []
            for j in jobs where try db.queryOne("SELECT 1 FROM jobs WHERE key = ?", [.text(j.key)]) == nil {
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

    /// The copies (`HOME/reprocess/`) unfinished reprocess jobs run from (failed ones too:
    /// a retry runs from its copy); a copy no such job names was never enqueued.
    public func reprocessCopiesInUse() throws -> Set<String> {
        try read { db in
            Set(try db.query("""
                SELECT photo_path FROM jobs WHERE origin = 'reprocess' AND state NOT IN ('done', 'cancelled') AND photo_path IS NOT NULL
                """, []).compactMap { $0.string(0) })
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
