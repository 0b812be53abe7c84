import PhotomemoCore
import StageKit
import SQLite

/// A memo sidecar (`MemoSidecar`) read from the inbox: its memo, or why it is bad.
public struct SidecarMemo: Sendable {
    /// Its inbox name (`IMG_1.jpg.json`).
    public let name: String
    /// `PhotoSeal.identity`: the same name with the same identity is not read twice, an edit is.
    public let identity: String
    public let memo: MemoJob?
    /// "memo sidecar NAME: why", the reason its photo's job fails with.
    public let failure: String?

    public init(name: String, identity: String, memo: MemoJob) {
        (self.name, self.identity, self.memo, failure) = (name, identity, memo, nil)
    }

    public init(name: String, identity: String, error: String) {
        (self.name, self.identity, memo) = (name, identity, nil)
        failure = MemoSidecar.failurePrefix + name + ": " + error
    }
}

/// What a sidecar that arrived or changed on its own (not with its photo) did.
public enum SidecarOutcome: Sendable, Equatable {
    /// Its photo has no job yet: nothing is recorded; the photo's intake will read it.
    case waiting
    /// It joined its photo's unfinished job, or became a job updating the photo's record,
    /// or a failed job naming it (bad, or its photo was rejected).
    case applied(IntakeOutcome)
    /// Its photo's job had failed on the sidecar as it was: the photo is no longer taken,
    /// so it is taken again, with this sidecar.
    case photoReleased
}

extension IntakeOutcome {
    var isDuplicate: Bool { if case .duplicate = self { true } else { false } }
    public var isFailure: Bool { if case .failed = self { true } else { false } }

    public var job: Int64? {
        switch self {
        case .created(let job, _), .joined(let job), .duplicate(let job, _), .failed(let job, _): job
        case .alreadyTaken: nil
        }
    }
}

extension Journal {
    /// A sidecar of `photo` (an inbox name), both files `owner`'s, found on its own: applied
    /// to the photo's job as a memo line naming the photo is (`addInboxMemo`: a join, or an
    /// update of its record), in one transaction with the mark that it is taken.
    public func commitSidecar(_ s: SidecarMemo, photo: String, owner: String?, memoStage: Int = .max, now: Double = unixNow()) throws -> SidecarOutcome {
        try write { db in
            guard let r = try db.queryOne("""
                SELECT j.id, j.state, j.error FROM inbox_taken t JOIN jobs j ON j.id = t.job_id
                WHERE t.host = ? AND t.name = ? AND j.owner IS NOT DISTINCT FROM ?
                """, [.text(host), .text(photo), SQLValue(owner)]) else { return .waiting }
            let photoJob = r.int(0)!
            if r.string(1) == JobState.failed.rawValue, r.string(2)?.hasPrefix(MemoSidecar.failurePrefix) == true {
                try db.run("DELETE FROM inbox_taken WHERE host = ? AND name = ?", [.text(host), .text(photo)])
                try event(db, job: photoJob, stage: nil, attempt: nil, "untaken", message: "\(s.name) changed: \(photo) is taken again", at: now)
                return .photoReleased
            }
            let outcome: IntakeOutcome
            if let failure = s.failure {
                let id = try insertJob(db, key: nil, origin: "sidecar", photo: photo, photoPath: nil, sha256: nil,
                                       memo: .photoOnly(photo, owner: owner), state: .failed, readyAt: nil, error: failure,
                                       source: "inbox/\(s.name)", now: now)
                outcome = .failed(job: id, reason: failure)
            } else if let memo = s.memo {
                // One key per sidecar content seen: an edit is a new job, a look again is not.
                let key = JobKey.scoped("sidecar:\(s.name)@\(s.identity)", owner: owner)
                if let existing = try db.queryOne("SELECT id FROM jobs WHERE key = ?", [.text(key)])?.int(0) {
                    try markTaken(db, s, job: existing)  // its mark was lost (untaken): applied already
                    return .applied(.alreadyTaken)
                } else {
                    outcome = try addInboxMemo(db, QueuedMemo(memo: memo, photo: .inbox(name: photo), key: key, source: "inbox/\(s.name)",
                                                              origin: "sidecar"), name: photo, joinTimeoutSeconds: 0, memoStage: memoStage, now: now)
                    if outcome.job != nil { try announceWork(db) }
                }
            } else {
                return .waiting
            }
            if let job = outcome.job { try markTaken(db, s, job: job) }
            return .applied(outcome)
        }
    }

    /// Of `names` (the photos a sidecar may belong to, one folder's), the one last taken
    /// for `owner` whose job has not failed and whose record its owner has not deleted (a
    /// late sidecar of a deleted record makes no record of its own): its original is stored or being stored, so a
    /// sidecar of it found after it left the inbox still updates its record (nil: none).
    /// Another user's photo of that name is as good as absent.
    public func takenPhoto(among names: [String], owner: String?) throws -> String? {
        guard !names.isEmpty else { return nil }
        let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
        return try read { db in
            try db.queryOne("""
                SELECT t.name FROM inbox_taken t JOIN jobs j ON j.id = t.job_id
                WHERE t.host = ? AND t.name IN (\(marks)) AND j.photo = t.name AND j.owner IS NOT DISTINCT FROM ?
                    AND j.state NOT IN ('failed', 'cancelled') AND j.record_deleted IS NULL
                ORDER BY t.job_id DESC LIMIT 1
                """, [.text(host)] + names.map { .text($0) } + [SQLValue(owner)])?.string(0)
        }
    }

    /// The sidecar at this identity is read: looked at again, it is not read again.
    func markTaken(_ db: any SQLConnection, _ s: SidecarMemo, job: Int64) throws {
        try db.run("""
            INSERT INTO inbox_taken(host, name, identity, seal, job_id) VALUES (?, ?, ?, NULL, ?)
            ON CONFLICT(host, name) DO UPDATE SET identity = excluded.identity, seal = NULL, job_id = excluded.job_id
            """, [.text(host), .text(s.name), .text(s.identity), .int(job)])
    }
}
