import StageKit
import SQLite

/// Intake: memo lines and inbox photos become jobs. Each batch is one transaction.
extension Journal {
    /// The read position of a queue file (`queue.jsonl`, `queue.d/NAME.jsonl`).
    public func queuePosition(file: String = "queue.jsonl") throws -> QueuePosition {
        try read { db in
            guard let r = try db.queryOne("SELECT inode, generation, \"offset\", line, tail FROM queue_files WHERE host = ? AND name = ?",
                                          [.text(host), .text(file)]) else { return .start }
            return QueuePosition(inode: UInt64(bitPattern: r.int(0)!), generation: r.int(1)!, offset: r.int(2)!, line: r.int(3)!,
                                 tail: r.string(4))
        }
    }

    /// Commits the jobs of a batch of queue lines together with the file's new read
    /// position. With `position` nil (socket `enqueue`) only the jobs are committed.
    public func commitMemos(_ memos: [QueuedMemo], position: QueuePosition?, file: String = "queue.jsonl", joinTimeoutSeconds: Int,
                            memoStage: Int = .max, now: Double = unixNow()) throws -> [IntakeOutcome] {
        try write { db in
            var out: [IntakeOutcome] = []
            for m in memos {
                out.append(try self.addMemo(db, m, joinTimeoutSeconds: joinTimeoutSeconds, memoStage: memoStage, now: now))
            }
            if !memos.isEmpty { try announceWork(db) }
            if let position {
                try db.run("""
                    INSERT INTO queue_files(host, name, inode, generation, "offset", line, tail) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(host, name) DO UPDATE SET inode = excluded.inode, generation = excluded.generation,
                        "offset" = excluded."offset", line = excluded.line, tail = excluded.tail
                    """, [.text(host), .text(file), .int(Int64(bitPattern: position.inode)), .int(position.generation), .int(position.offset),
                          .int(position.line), SQLValue(position.tail)])
            }
            return out
        }
    }

    private func addMemo(_ db: any SQLConnection, _ m: QueuedMemo, joinTimeoutSeconds: Int, memoStage: Int, now: Double) throws -> IntakeOutcome {
        if let existing = try db.queryOne("SELECT id FROM jobs WHERE key = ?", [.text(m.key)])?.int(0) {
            let id = try insertJob(db, key: nil, origin: m.origin, photo: m.memo.photo, photoPath: nil, sha256: nil, memo: m.memo,
                                   state: .done, readyAt: nil, duplicateOf: existing, source: m.source, now: now)
            return .duplicate(job: id, of: existing)
        }
        switch m.photo {
        case .none:
            let id = try insertJob(db, key: m.key, origin: m.origin, photo: nil, photoPath: nil, sha256: nil, memo: m.memo,
                                   state: .queued, readyAt: now, source: m.source, now: now)
            return .created(job: id, state: .queued)
        case .file(let path, let sha):
            let id = try insertJob(db, key: m.key, origin: m.origin, photo: path, photoPath: path, sha256: sha, memo: m.memo,
                                   state: .queued, readyAt: now, source: m.source, now: now)
            return .created(job: id, state: .queued)
        case .unusable(let path, let reason):
            let id = try insertJob(db, key: m.key, origin: m.origin, photo: path, photoPath: nil, sha256: nil, memo: m.memo,
                                   state: .failed, readyAt: nil, error: reason, source: m.source, now: now)
            return .failed(job: id, reason: reason)
        case .inbox(let name):
            return try addInboxMemo(db, m, name: name, joinTimeoutSeconds: joinTimeoutSeconds, memoStage: memoStage, now: now)
        }
    }

    /// A memo naming an inbox photo: join the photo's job if it was taken and has not
    /// finished and is before `memoStage`; fail at once if the photo was rejected;
    /// otherwise wait for it.
    func addInboxMemo(_ db: any SQLConnection, _ m: QueuedMemo, name: String, joinTimeoutSeconds: Int, memoStage: Int, now: Double) throws -> IntakeOutcome {
        // Only a photo of the memo's own owner: another user's photo of that name is as
        // good as absent (nothing of it is revealed), and the memo waits for its own.
        // A duplicate's copy that left the inbox is no longer in the ledger (`forgetTaken`),
        // but its job, done, still names it: the memo updates the record of its bytes, as
        // it did while the copy was there, instead of waiting for a photo that never comes.
        // Not once that record is deleted: a memo then made a record of no assets that the
        // same bytes dropped again were taken as a duplicate of, and lost (as a late sidecar).
        let photoJob = try db.queryOne("""
            SELECT j.id, j.state, j.error, j.origin, j.photo_path, j.photo_sha256, j.stage_index FROM inbox_taken t JOIN jobs j ON j.id = t.job_id
            WHERE t.name = ? AND j.owner IS NOT DISTINCT FROM ? ORDER BY t.job_id DESC LIMIT 1
            """, [.text(name), SQLValue(m.memo.owner)]) ?? db.queryOne("""
            SELECT id, state, error, origin, photo_path, photo_sha256, stage_index FROM jobs
            WHERE photo = ? AND owner IS NOT DISTINCT FROM ? AND duplicate_of IS NOT NULL AND state = 'done' AND pruned IS NULL
                  AND record_deleted IS NULL
            ORDER BY id DESC LIMIT 1
            """, [.text(name), SQLValue(m.memo.owner)])
        if let r = photoJob {
            let id = r.int(0)!
            let state = JobState(rawValue: r.string(1)!) ?? .failed
            let unfinished = state == .queued || state == .running || state == .waiting
            // Joined only before a stage that reads the memo has begun: a record stage
            // that already read the photo-only memo would write the record without it.
            if unfinished && r.string(3) == "inbox" && Int(r.int(6)!) < memoStage {
                // One job: the memo's type, fields and memo replace the photo-only defaults.
                try db.run("UPDATE jobs SET memo = ?, key = ?, origin = 'inbox+queue', updated = ? WHERE id = ?",
                           [.text(m.memo.json.jsonString), .text(m.key), .double(now), .int(id)])
                try event(db, job: id, stage: nil, attempt: nil, "joined", message: "memo from \(m.source)", at: now)
                return .joined(job: id)
            }
            if state == .failed || state == .cancelled {
                let reason = "photo \(name) was rejected: \(r.string(2) ?? state.rawValue)"
                let fid = try insertJob(db, key: m.key, origin: m.origin, photo: name, photoPath: nil, sha256: nil, memo: m.memo,
                                        state: .failed, readyAt: nil, error: reason, source: m.source, now: now)
                return .failed(job: fid, reason: reason)
            }
            // The photo already went through (or already has its memo): this memo is a job
            // of its own that the record-writing stage applies as an update of the record with the
            // photo's bytes. The photo stages have nothing to do (the file may be gone).
            // It runs once the photo's job has ended, so the record it updates exists.
            let nid = try insertJob(db, key: m.key, origin: m.origin, photo: nil, photoPath: nil, sha256: r.string(5),
                                    memo: m.memo, state: .queued, readyAt: now, source: m.source, now: now)
            if unfinished { try db.run("UPDATE jobs SET after_job = ? WHERE id = ?", [.int(id), .int(nid)]) }
            try event(db, job: nid, stage: nil, attempt: nil, "updates", message: "job \(id)", at: now)
            return .created(job: nid, state: .queued)
        }
        let id = try insertJob(db, key: m.key, origin: m.origin, photo: name, photoPath: nil, sha256: nil, memo: m.memo,
                               state: .waiting, waitReason: "photo", readyAt: nil,
                               deadline: now + Double(joinTimeoutSeconds), source: m.source, now: now)
        return .created(job: id, state: .waiting)
    }

    /// How many of `owner`'s unfinished jobs may still add a record, counted up to `limit`:
    /// those not past `recordStage` (the stage writing records: a job beyond it has its
    /// record, counted already) and not a reprocess (its record exists). A quota counts
    /// these with the records: counting every unfinished job counted a record twice while
    /// its job ran the stages after index, and refused a user one below their quota.
    public func jobsBeforeTheirRecord(owner: String, recordStage: Int, limit: Int) throws -> Int {
        try countUnfinished(owner: owner, " AND stage_index <= ? AND origin <> 'reprocess'", [.int(Int64(recordStage))], limit: limit)
    }

    /// How many of `owner`'s jobs are unfinished (queued, running or waiting), counted up to
    /// `limit`: reprocess jobs, or the others (an admin's reprocess of every record makes
    /// jobs of each owner, which must not hold their fresh photos and lines back).
    public func unfinishedJobs(owner: String, reprocess: Bool = false, limit: Int) throws -> Int {
        try countUnfinished(owner: owner, reprocess ? " AND origin = 'reprocess'" : " AND origin <> 'reprocess'", [], limit: limit)
    }

    /// `owner`'s unfinished jobs matching `condition` too, counted up to `limit`.
    private func countUnfinished(owner: String, _ condition: String, _ params: [SQLValue], limit: Int) throws -> Int {
        // SQLite has no statistics and would pick jobs_owner, every job the owner ever had.
        let index = dialect == .sqlite ? " INDEXED BY jobs_owner_unfinished" : ""
        return try read { db in
            Int(try db.queryOne("""
                SELECT count(*) FROM (SELECT 1 FROM jobs\(index) WHERE owner = ? AND state IN ('queued', 'running', 'waiting')\(condition) LIMIT ?) t
                """, [.text(owner)] + params + [.int(Int64(limit))])?.int(0) ?? 0)
        }
    }
}
