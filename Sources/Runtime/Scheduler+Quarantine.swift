import Foundation
import Journal
import PhotomemoCore
import StageKit

extension Scheduler {
    /// Moves a failed job's inbox photo into quarantine with its reason, and says which
    /// inbox names are to be taken again (`JobQueue.untake`): the job stored nothing, so
    /// files taken as its duplicates are, and so is its own file when it was not there
    /// (renamed away: a→b→a) or is back with the bytes it was taken with.
    ///
    /// `taken`: the SHA-256 intake took the photo with, when known. A file with other
    /// bytes under that name now was renamed over it after intake — another drop, with a
    /// job of its own or taken at the next scan — so it stays in the inbox and only this
    /// job fails; moving it would fail that drop too ("gone") and lose it. `takenSize`: the
    /// most its bytes were (the size intake sealed, else the definition's max_bytes): a
    /// bigger file is another without a read (one grown sparse to a terabyte after its job
    /// took it was hashed to its end, holding every job's outcome and SIGTERM).
    ///
    /// `copies`: `HOME/reprocess`. A reprocess job's copy of its record's stored original is
    /// removed: kept, it held the disk for the failed job's retention (180 days), counted by
    /// no limit, and each request after a change of the record copied one more. `reprocess`
    /// runs the record again from a copy of its own.
    @discardableResult
    static func quarantinePhoto(_ p: PendingQuarantine, taken: String? = nil, takenSize: Int64? = nil, journal: any JobQueue,
                                quarantine: Quarantine, copies: String?) throws -> [String] {
        if let copies, p.photoPath.hasPrefix(copies + "/") {
            unlink(p.photoPath)
            try journal.markQuarantined(job: p.job, at: "(removed: \(p.photoPath) was a copy of its record's stored original)", now: unixNow())
            return []
        }
        guard p.photoPath.hasPrefix(quarantine.inbox + "/") else {
            try journal.markQuarantined(job: p.job, at: "(not moved: \(p.photoPath) is outside the inbox)", now: unixNow())
            return []
        }
        // Its path relative to the inbox, reached beneath it: a folder on the way that is
        // gone, or a link now, holds nothing of this job's.
        let name = String(p.photoPath.dropFirst(quarantine.inbox.count + 1))
        let held = try? OpenFolder(quarantine.inbox, followLink: true).parentBeneath(name)
        // A folder standing at the photo's name now is a sync tool's: never moved, and not the photo.
        let st = held.flatMap { $0.folder.entry($0.name) }.flatMap { $0.st_mode & S_IFMT == S_IFDIR ? nil : $0 }
        let present = st != nil
        var now: String?
        if let held, let st, taken != nil {  // only ever compared with what intake took
            now = takenSize.map { Int64(st.st_size) > $0 } == true ? "(bigger than the photo taken)"
                : (try? Files.hexOfRegularFile(held.name, in: held.folder, expected: (UInt64(st.st_dev), UInt64(st.st_ino), Int64(st.st_size)))) ?? nil
        }
        // Its stage found no file, and the very bytes are back: a good photo, not one to
        // quarantine under a reason no longer true.
        let cameBack = now != nil && now == taken && failedAsGone(p.code)
        // Before the move: a crash after it leaves this to the next start's pending quarantine.
        let untaken = try journal.untake(endedJob: p.job, photoGone: !present || cameBack, now: unixNow())
        if let taken, let now, now != taken {
            try journal.markQuarantined(job: p.job, at: "(not moved: \(p.photoPath) was replaced after this job took it; the new file is another drop)",
                                        now: unixNow())
            return untaken
        }
        if cameBack {
            try journal.markQuarantined(job: p.job, at: "(not moved: \(p.photoPath) was back after its stage found it gone; it is taken again)",
                                        now: unixNow())
            return untaken
        }
        if quarantine.keepsInbox && present {
            // Left where it is, its ledger row kept (not taken again until its bytes change);
            // looked at again now so `photomemo inbox` lists it with its reason.
            try journal.markQuarantined(job: p.job, at: quarantine.keptInPlace(p.photoPath), now: unixNow())
            return untaken + [String(p.photoPath.dropFirst(quarantine.inbox.count + 1))]
        }
        let why = Quarantine.reason(p.reason, job: p.job, stage: p.stage, extra: ["source": "inbox", "name": .string(name)])
        let moved = try quarantine.moveEntry(held?.name ?? name, in: held?.folder, name: name, reason: why, job: p.job, gone: !present)
        try journal.markQuarantined(job: p.job, at: moved, now: unixNow())
        return untaken
    }

    /// Whether the job failed because its photo file was not there: the `photo_gone` code
    /// validate and compress (`PhotoFile`) and upload (gone and not in the store) set, kept
    /// when the job ran out of attempts. Never the message's text.
    static func failedAsGone(_ code: PhotomemoError.Code?) -> Bool { code == .photoGone }
}
