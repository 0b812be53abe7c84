import StageKit
import SQLite

/// What the control socket asks of the journal: statistics, paging, retry and cancel.
extension Journal {
    /// Per-stage outcome counts since the journal began, and the latencies of the last
    /// `window` successful runs of each stage.
    public func stageStats(window: Int = 1000) throws -> [String: StageStats] {
        try read { db in
            var out: [String: StageStats] = [:]
            for r in try db.query("SELECT stage, event, count(*) FROM job_events WHERE stage IS NOT NULL GROUP BY stage, event") {
                let stage = r.string(0)!, n = Int(r.int(2)!)
                switch r.string(1)! {
                case "done": out[stage, default: StageStats()].done = n
                case "failed": out[stage, default: StageStats()].failed = n
                case "retry": out[stage, default: StageStats()].retried = n
                case "skipped": out[stage, default: StageStats()].skipped = n
                case "unavailable": out[stage, default: StageStats()].unavailable = n
                default: break
                }
            }
            for stage in out.keys {
                out[stage]!.recentMs = try db.query("""
                    SELECT duration_ms FROM job_events WHERE stage = ? AND event = 'done' AND duration_ms IS NOT NULL
                    ORDER BY id DESC LIMIT ?
                    """, [.text(stage), .int(Int64(window))]).compactMap { $0.double(0) }.reversed()
            }
            return out
        }
    }

    /// Latency histogram of successful runs per stage: cumulative counts at each bound (ms), sum, count.
    public func stageHistograms(boundsMs: [Double]) throws -> [String: (buckets: [Int], sumMs: Double, count: Int)] {
        try read { db in
            let cases = boundsMs.map { "sum(CASE WHEN duration_ms <= \($0) THEN 1 ELSE 0 END)" }.joined(separator: ", ")
            var out: [String: (buckets: [Int], sumMs: Double, count: Int)] = [:]
            for r in try db.query("""
                SELECT stage, \(cases), coalesce(sum(duration_ms), 0), count(*) FROM job_events
                WHERE stage IS NOT NULL AND event = 'done' GROUP BY stage
                """) {
                let buckets = (0..<boundsMs.count).map { Int(r.int($0 + 1) ?? 0) }
                out[r.string(0)!] = (buckets, r.double(boundsMs.count + 1) ?? 0, Int(r.int(boundsMs.count + 2)!))
            }
            return out
        }
    }

    /// Jobs finished (done) since `since` (Unix seconds).
    public func finishedCount(since: Double) throws -> Int {
        try read { db in Int(try db.queryOne("SELECT count(*) FROM job_events WHERE event = 'finished' AND at >= ?", [.double(since)])!.int(0)!) }
    }

    /// A page of jobs, newest first, optionally in one state, with ids below `before`, as
    /// a list shows them (no results). With `owner`, only that owner's jobs. It stops early
    /// once the memos reach about `maxBytes` (sizes read first: memos of 1 MiB each made a
    /// page of 1,000 a gigabyte in memory); `more`: a next page may follow.
    public func jobsPage(state: JobState?, before: Int64?, limit: Int, owner: String? = nil,
                         maxBytes: Int = 4 << 20) throws -> (jobs: [JobSummary], more: Bool) {
        try read { db in
            var filter = "id < ? AND pruned IS NULL"
            var params: [SQLValue] = [.int(before ?? Int64.max)]
            if let owner { filter += " AND owner = ?"; params.append(.text(owner)) }
            if let state { filter += " AND state = ?"; params.append(.text(state.rawValue)) }
            let sizes = try db.query("SELECT length(memo) + coalesce(length(error), 0) + coalesce(length(photo), 0) + 256 FROM jobs "
                                     + "WHERE \(filter) ORDER BY id DESC LIMIT ?", params + [.int(Int64(limit))])
            let fit = Row.fitting(sizes, maxBytes) ?? limit
            let jobs = try db.query("SELECT \(Self.listColumns) FROM jobs WHERE \(filter) ORDER BY id DESC LIMIT ?",
                                    params + [.int(Int64(fit))]).map(Self.summary)
            return (jobs, jobs.count == fit)
        }
    }

    /// Runs a failed or cancelled job again from the stage where it stopped, with fresh
    /// attempts. `bringBack(photoPath, quarantined, needed)` runs first, in the transaction,
    /// for a job with a photo file: it puts the photo back where the job reads it (from
    /// quarantine) or throws, and then the job stays as it was. `needed`: the job stopped
    /// before `photoNeededEnd` (`JobDefinition.photoNeededEnd`); from there on the store can
    /// stand in for the photo's file.
    public func retry(job id: Int64, joinTimeoutSeconds: Int, photoNeededEnd: Int = .max, now: Double = unixNow(),
                      bringBack: (_ photoPath: String, _ quarantined: String?, _ needed: Bool) throws -> Void) throws {
        try write { db in
            try retry(db, job: id, joinTimeoutSeconds: joinTimeoutSeconds, photoNeededEnd: photoNeededEnd, now: now, bringBack: bringBack)
            try announceWork(db)
        }
    }

    /// One retry in the caller's transaction. Nothing is written before `bringBack` has
    /// run, so a job it refuses leaves the transaction as it found it (a bulk retry goes on).
    func retry(_ db: any SQLConnection, job id: Int64, joinTimeoutSeconds: Int, photoNeededEnd: Int, now: Double,
               bringBack: (_ photoPath: String, _ quarantined: String?, _ needed: Bool) throws -> Void) throws {
        guard let r = try db.queryOne("SELECT state, photo, photo_path, quarantine, stage_index, owner, origin, key FROM jobs WHERE id = ? AND pruned IS NULL",
                                      [.int(id)]) else {
            throw JobControlError.notFound
        }
        let state = r.string(0)!
        guard state == "failed" || state == "cancelled" else {
            throw JobControlError.conflict("job \(id) is \(state); only failed or cancelled jobs can be retried")
        }
        // A reprocess job whose key a new request took (`enqueueReprocess`): that job runs the
        // record; two would update it twice and share nothing.
        if r.string(6) == "reprocess", let key = r.string(7), let mark = key.lastIndex(of: "#") {
            throw PhotomemoError(.conflict, "job \(id)'s record was asked to reprocess again since: that request's job runs it "
                                 + "(photomemo jobs shows the one keyed \(key[..<mark]))")
        }
        let waitsForPhoto = r.string(1) != nil && r.string(2) == nil
        if !waitsForPhoto, let photoPath = r.string(2) {
            // Only a path: "(not moved: ...)" says the file stayed where it was.
            try bringBack(photoPath, r.string(3).flatMap { $0.hasPrefix("/") ? $0 : nil }, Int(r.int(4)!) < photoNeededEnd)
        }
        // Behind its owner's other jobs, as a new one (a bulk retry is a flood too);
        // taken while it is still finished, so its old turn does not count.
        try takeTurn(db, job: id, owner: r.string(5))
        if waitsForPhoto {
            // A memo whose photo never came: wait for it again.
            try db.run("""
                UPDATE jobs SET state = 'waiting', wait_reason = 'photo', deadline = ?, error = NULL, error_code = NULL, finished = NULL,
                       attempts = 0, outages = 0, crashes = 0, updated = ? WHERE id = ?
                """, [.double(now + Double(joinTimeoutSeconds)), .double(now), .int(id)])
        } else {
            try db.run("""
                UPDATE jobs SET state = 'queued', ready_at = ?, error = NULL, error_code = NULL, finished = NULL, attempts = 0, outages = 0, crashes = 0,
                       quarantine = NULL, updated = ? WHERE id = ?
                """, [.double(now), .double(now), .int(id)])
        }
        try event(db, job: id, stage: nil, attempt: nil, "retried", message: "by request", at: now)
    }

    /// Ends a job that has not finished. A running stage finishes, and its outcome is dropped.
    public func cancel(job id: Int64, now: Double = unixNow()) throws {
        try write { db in try cancel(db, job: id, now: now) }
    }

    func cancel(_ db: any SQLConnection, job id: Int64, now: Double) throws {
        guard let state = try db.queryOne("SELECT state FROM jobs WHERE id = ? AND pruned IS NULL", [.int(id)])?.string(0) else {
            throw JobControlError.notFound
        }
        guard ["queued", "waiting", "running"].contains(state) else {
            throw JobControlError.conflict("job \(id) is already \(state)")
        }
        try db.run("""
            UPDATE jobs SET state = 'cancelled', ready_at = NULL, deadline = NULL, wait_reason = NULL, updated = ?, finished = ?
            WHERE id = ?
            """, [.double(now), .double(now), .int(id)])
        try event(db, job: id, stage: nil, attempt: nil, "cancelled", message: "by request", at: now)
        // Files taken as its duplicates are stored by nobody now: the next rescan takes them.
        _ = try untake(db, endedJob: id, photoGone: false, now: now)
    }
}
