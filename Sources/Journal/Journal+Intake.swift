import PhotomemoCore
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
        let photoJob = try db.queryOne("""
            SELECT j.id, j.state, j.error, j.origin, j.photo_path, j.photo_sha256, j.stage_index FROM inbox_taken t JOIN jobs j ON j.id = t.job_id
            WHERE t.name = ? AND j.owner IS NOT DISTINCT FROM ? ORDER BY t.job_id DESC LIMIT 1
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

    /// An inbox file with this name and identity already taken: nil when it is not, else
    /// the reason its job failed ("" when it did not), as a `keep` inbox lists it.
    public func takenFailure(name: String, identity: String) throws -> String? {
        try read { db in
            try db.queryOne("""
                SELECT j.state, j.error FROM inbox_taken t JOIN jobs j ON j.id = t.job_id WHERE t.host = ? AND t.name = ? AND t.identity = ?
                """, [.text(host), .text(name), .text(identity)]).map { $0.string(0) == "failed" ? $0.string(1) ?? "failed" : "" }
        }
    }

    /// Whether an inbox file with this name and identity is already a job.
    public func isTaken(name: String, identity: String) throws -> Bool {
        try read { db in
            try db.queryOne("SELECT 1 FROM inbox_taken WHERE host = ? AND name = ? AND identity = ?", [.text(host), .text(name), .text(identity)]) != nil
        }
    }

    /// Commits a batch of complete inbox files as jobs: each joins a memo waiting for its
    /// name, or is a duplicate of a job with the same bytes, or becomes a `Photo` job.
    public func unfinishedJobs(owner: String, limit: Int) throws -> Int {
        // SQLite has no statistics and would pick jobs_owner, every job the owner ever had.
        let index = dialect == .sqlite ? " INDEXED BY jobs_owner_unfinished" : ""
        return try read { db in
            Int(try db.queryOne("""
                SELECT count(*) FROM (SELECT 1 FROM jobs\(index) WHERE owner = ? AND state IN ('queued', 'running', 'waiting') LIMIT ?) t
                """, [.text(owner), .int(Int64(limit))])?.int(0) ?? 0)
        }
    }

    public func commitPhotos(_ photos: [TakenPhoto], now: Double = unixNow()) throws -> [IntakeOutcome] {
        try write { db in
            var out: [IntakeOutcome] = []
            for p in photos {
                out.append(try self.addPhoto(db, p, now: now))
            }
            if !photos.isEmpty { try announceWork(db) }
            return out
        }
    }

    private func addPhoto(_ db: any SQLConnection, _ p: TakenPhoto, now: Double) throws -> IntakeOutcome {
        let before = try db.queryOne("""
            SELECT t.identity, t.job_id, j.photo_sha256, j.state FROM inbox_taken t LEFT JOIN jobs j ON j.id = t.job_id WHERE t.host = ? AND t.name = ?
            """, [.text(host), .text(p.name)])
        if before?.string(0) == p.identity { return .alreadyTaken }
        // A `keep` inbox's path taken before: the same bytes again (touched, or rewritten by
        // a sync tool) are not taken again; other bytes update its record (`RecordInput.source`).
        let retake = p.keep ? before : nil
        if let retake, retake.string(2) == p.sha256 {
            try db.run("UPDATE inbox_taken SET identity = ?, seal = ? WHERE host = ? AND name = ?",
                       [.text(p.identity), SQLValue(p.seal), .text(host), .text(p.name)])
            return .alreadyTaken
        }
        let outcome: IntakeOutcome
        let jobID: Int64
        if let row = try db.queryOne("""
            SELECT id, memo FROM jobs WHERE photo = ? AND state = 'waiting' AND wait_reason = 'photo' AND owner IS NOT DISTINCT FROM ?
            ORDER BY id LIMIT 1
            """, [.text(p.name), SQLValue(p.owner)]) {
            let waiting = row.int(0)!
            let memo = try MemoJob(json: JSONValue.parse(row.string(1)!))
            try db.run("""
                UPDATE jobs SET photo_path = ?, photo_sha256 = ?, memo = ?, state = 'queued', wait_reason = NULL, deadline = NULL,
                       ready_at = ?, updated = ?, host = ? WHERE id = ?
                """, [.text(p.path), .text(p.sha256), .text(memo.json.jsonString), .double(now), .double(now), .text(host), .int(waiting)])
            try event(db, job: waiting, stage: nil, attempt: nil, "joined", message: "photo \(p.name) arrived", at: now)
            jobID = waiting
            outcome = .joined(job: waiting)
        } else if retake == nil, let original = try db.queryOne("""
            SELECT id FROM jobs WHERE photo_sha256 = ? AND owner IS NOT DISTINCT FROM ? AND duplicate_of IS NULL AND state NOT IN ('failed','cancelled')
                AND record_deleted IS NULL
            ORDER BY id LIMIT 1
            """, [.text(p.sha256), SQLValue(p.owner)])?.int(0) {
            jobID = try insertJob(db, key: nil, origin: "inbox", photo: p.name, photoPath: p.path, sha256: p.sha256,
                                  memo: .photoOnly(p.name, owner: p.owner), state: .done, readyAt: nil, duplicateOf: original,
                                  source: "inbox", now: now)
            outcome = .duplicate(job: jobID, of: original)
        } else if let failure = p.sidecar?.failure {
            // The photo is good, its memo is not: the job fails naming the sidecar, the photo
            // stays where it is, and a fixed sidecar takes it again (`commitSidecar`); `retry`
            // takes it without one.
            jobID = try insertJob(db, key: nil, origin: "inbox", photo: p.name, photoPath: p.path, sha256: p.sha256,
                                  memo: .photoOnly(p.name, owner: p.owner), state: .failed, readyAt: nil, error: failure,
                                  source: "inbox", now: now)
            outcome = .failed(job: jobID, reason: failure)
        } else {
            // The same bytes again after a failure or a deleted record: a job of its own.
            let key = try unusedKey(db, JobKey.scoped("sha256:" + p.sha256, owner: p.owner))
            jobID = try insertJob(db, key: key, origin: "inbox", photo: p.name, photoPath: p.path,
                                  sha256: p.sha256, memo: p.sidecar?.memo ?? .photoOnly(p.name, owner: p.owner), state: .queued, readyAt: now,
                                  source: "inbox", now: now)
            outcome = .created(job: jobID, state: .queued)
            // Its record is the earlier job's: it is indexed after that one has ended.
            if let retake, let earlier = retake.int(1), ["queued", "running", "waiting"].contains(retake.string(3) ?? "") {
                try db.run("UPDATE jobs SET after_job = ? WHERE id = ?", [.int(earlier), .int(jobID)])
                try event(db, job: jobID, stage: nil, attempt: nil, "updates", message: "job \(earlier)", at: now)
            }
        }
        try db.run("""
            INSERT INTO inbox_taken(host, name, identity, seal, job_id) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(host, name) DO UPDATE SET identity = excluded.identity, seal = excluded.seal, job_id = excluded.job_id
            """, [.text(host), .text(p.name), .text(p.identity), SQLValue(p.seal), .int(jobID)])
        // A duplicate's sidecar is not marked: taken on its own, it updates the original's record.
        if let sidecar = p.sidecar, !outcome.isDuplicate { try markTaken(db, sidecar, job: jobID) }
        return outcome
    }

    /// `key`, or `key#2`, `key#3`... the first no job has.
    private func unusedKey(_ db: any SQLConnection, _ key: String) throws -> String {
        var candidate = key
        var n = 1
        while try db.queryOne("SELECT 1 FROM jobs WHERE key = ?", [.text(candidate)]) != nil {
            n += 1
            candidate = "\(key)#\(n)"
        }
        return candidate
    }

    /// Records of these photos were deleted: the same bytes dropped again make a new record
    /// instead of being a duplicate of a job whose record is gone.
    public func recordsDeleted(photos: [(sha256: String, owner: String?)], now: Double = unixNow()) throws {
        guard !photos.isEmpty else { return }
        try write { db in
            for p in photos {
                try db.run("UPDATE jobs SET record_deleted = ? WHERE photo_sha256 = ? AND owner IS NOT DISTINCT FROM ? AND record_deleted IS NULL",
                           [.double(now), .text(p.sha256), SQLValue(p.owner)])
            }
        }
    }

    /// Records an inbox entry that can never be a photo (FIFO, device, symlink out of the
    /// inbox...): a failed job, already quarantined at `quarantinePath`.
    public func recordRejectedEntry(name: String, identity: String, owner: String?, reason: String, quarantinePath: String,
                                    now: Double = unixNow()) throws -> Int64 {
        try write { db in
            let id = try insertJob(db, key: nil, origin: "inbox", photo: name, photoPath: nil, sha256: nil,
                                   memo: .photoOnly(name, owner: owner), state: .failed, readyAt: nil, error: reason, source: "inbox", now: now)
            try db.run("UPDATE jobs SET quarantine = ? WHERE id = ?", [.text(quarantinePath), .int(id)])
            try db.run("""
                INSERT INTO inbox_taken(host, name, identity, seal, job_id) VALUES (?, ?, ?, NULL, ?)
                ON CONFLICT(host, name) DO UPDATE SET identity = excluded.identity, seal = NULL, job_id = excluded.job_id
                """, [.text(host), .text(name), .text(identity), .int(id)])
            return id
        }
    }
}

extension Journal {
    /// Inbox files that repeat the bytes of a job that has finished: their content is kept
    /// (in the store, or in the original's inbox file), so the copy may leave the inbox.
    public func finishedDuplicates() throws -> [(name: String, identity: String)] {
        try read { db in
            try db.query("""
                SELECT t.name, t.identity FROM inbox_taken t JOIN jobs d ON d.id = t.job_id JOIN jobs o ON o.id = d.duplicate_of
                WHERE t.host = ? AND o.state = 'done'
                """, [.text(host)]).map { ($0.string(0)!, $0.string(1)!) }
        }
    }

    /// Forgets an inbox file once it has been removed.
    public func forgetTaken(name: String) throws {
        try write { db in _ = try db.run("DELETE FROM inbox_taken WHERE host = ? AND name = ?", [.text(host), .text(name)]) }
    }
}
