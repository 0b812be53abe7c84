import PhotomemoCore
import StageKit
import SQLite

/// Inbox photos at intake: which files are taken already (by name and identity), and a
/// batch of complete files committed as jobs (a join, a duplicate, or a photo job).
extension Journal {
    /// An inbox file with this name and identity already taken: nil when it is not, else
    /// the reason its job failed ("" when it did not), as a `keep` inbox lists it.
    public func takenFailure(name: String, identity: String) throws -> String? {
        try read { db in
            try db.queryOne("""
                SELECT j.state, j.error FROM inbox_taken t JOIN jobs j ON j.id = t.job_id WHERE t.host = ? AND t.name = ? AND t.identity = ?
                """, [.text(host), .text(name), .text(identity)]).map { $0.string(0) == "failed" ? $0.string(1) ?? "failed" : "" }
        }
    }

    /// Whether the inbox file with this name and identity is a photo its own job stored and
    /// finished (`done`, not a duplicate): still in a consuming inbox, its release missed
    /// it (it was renamed away, its folder with it, as upload removed it) and it may go now.
    public func isStoredAndDone(name: String, identity: String) throws -> Bool {
        try read { db in
            try db.queryOne("""
                SELECT 1 FROM inbox_taken t JOIN jobs j ON j.id = t.job_id
                WHERE t.host = ? AND t.name = ? AND t.identity = ? AND j.photo = t.name AND j.state = 'done' AND j.duplicate_of IS NULL
                """, [.text(host), .text(name), .text(identity)]) != nil
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
        let taken = try db.queryOne("""
            SELECT t.identity, t.job_id, j.photo_sha256, j.state, j.id, j.owner FROM inbox_taken t LEFT JOIN jobs j ON j.id = t.job_id
            WHERE t.host = ? AND t.name = ?
            """, [.text(host), .text(p.name)])
        if taken?.string(0) == p.identity { return .alreadyTaken }
        // Another user's job of this name is nothing to this photo (a photo and its record are
        // its file's owner's): not its bytes taken again, not a job to wait for. Alice's y.jpg
        // waited behind bob's retried job for his FIFO named y.jpg, up to the join timeout.
        let before = taken.flatMap { $0.int(4) != nil && $0.string(5) != p.owner ? nil : $0 }
        // A `keep` inbox's path taken before: the same bytes again (touched, or rewritten by
        // a sync tool) are not taken again; other bytes update its record (`RecordInput.source`).
        // In any inbox, a file whose job has not finished is still that job's photo: a tool
        // that sets its time after the quiet time (rsync --inplace on a busy machine) made
        // the same bytes a second job, a duplicate racing the first.
        let unfinished = ["queued", "running", "waiting"].contains(before?.string(3) ?? "")
        let retake = p.keep || unfinished ? before : nil
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

    /// Records of these photos came back from the trash: the same bytes dropped again are
    /// a duplicate again (a new job would overwrite the restored record's memo).
    public func recordsRestored(photos: [(sha256: String, owner: String?)]) throws {
        guard !photos.isEmpty else { return }
        try write { db in
            for p in photos {
                try db.run("UPDATE jobs SET record_deleted = NULL WHERE photo_sha256 = ? AND owner IS NOT DISTINCT FROM ? AND record_deleted IS NOT NULL",
                           [.text(p.sha256), SQLValue(p.owner)])
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
