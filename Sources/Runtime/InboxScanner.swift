import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore
import StageKit

/// The blocking half of inbox intake, run on the intake lane: looks at inbox entries,
/// hashes complete photos and commits them as jobs in batches; leaves files that are not
/// photos where they are (`leftAlone`); rejects a photo candidate that can never be one (a
/// FIFO or a symlink named like a photo, a file over `max_bytes`) into quarantine, unread.
///
/// The inbox is a tree: a photo's name is its path relative to the inbox
/// (`DCIM/2026/IMG_1.jpg`), and every entry is reached through its folder, opened beneath
/// the inbox with no link followed on the way (`OpenFolder.parentBeneath`): a folder
/// swapped for a link to `/etc` leads nowhere. Folders are walked (`InboxWalk`), never moved.
final class InboxScanner: @unchecked Sendable {
    // Safe: used only from the serial intake lane.
    let inbox: String
    let journal: any JobIntake
    let quarantine: Quarantine
    /// A file found by a rescan (not by a close event) is taken once untouched this long.
    let settleSeconds: Double
    /// A bigger file is quarantined unread (`MemoIntake.maxPhotoBytes`, set on reload).
    let maxPhotoBytes: LockedValue<Int64?>
    /// How long a memo sidecar is said to wait for its photo (`MemoIntake`, set on reload).
    let joinTimeoutSeconds: LockedValue<Int>
    /// Where a sidecar stops joining its photo's job (`MemoIntake.memoStage`, set on reload).
    let memoStage: LockedValue<Int>
    /// The definition's `inbox` section (depth, entries per turn, ignore globs, stale_temp; set on reload).
    let options: LockedValue<InboxOptions>
    /// Watches each folder a walk opens (the recursive `FolderWatcher`), when set; called
    /// on the lane with the open folder's descriptor and its relative path.
    var watchFolder: ((Int32, String) -> Void)?
    /// Per-user quotas, when set (`QuotaMeter`): a photo past its owner's waits, untaken.
    var quota: QuotaMeter?

    static let batchSize = 64
    /// Of one owner's files, a look hashes at most this many bytes (one file, whatever its
    /// size); the rest go round again (`retake`), behind other users' drops.
    static let hashBytesPerOwner: Int64 = 64 << 20

    struct Report: Sendable {
        var outcomes: [(name: String, outcome: IntakeOutcome, owner: String?)] = []
        var rejected: [String] = []
        /// Files seen but not yet settled (by name): scan again after the settle time.
        var unsettled: [String] = []
        /// Files the journal could not take now (a full disk): still the backlog, and
        /// looked at again soon rather than at the next periodic rescan.
        var untaken = 0
        /// Copies of finished jobs' photos removed from the inbox.
        var removedDuplicates: [String] = []
        /// Entries left alone (folders, files that are not photos), with why and whose.
        var skipped: [String: SkippedEntry] = [:]
        /// Entries looked at that are not (or no longer) left alone.
        var notSkipped: [String] = []
        /// Regular files under ignored names untouched for `inbox.stale_temp` (a rescan's).
        var stale: [String: StaleEntry] = [:]
        /// Users at their cap of unfinished jobs, whose files wait (counted in `untaken`).
        var atCap: Set<String> = []
        /// Photos no longer taken because their sidecar was fixed: to be taken again now.
        var retake: [String] = []
        /// How many more jobs each user may have, as this look found it (`MemoIntake.room`).
        var room: [UInt32: Int] = [:]
        /// Users over their quota, with why: their files wait (counted in `untaken`).
        var overQuota: [String: String] = [:]
        var allowance: [UInt32: QuotaMeter.Allowance] = [:]
        /// Bytes of each owner's files this look hashed (`hashBytesPerOwner`).
        var hashed: [UInt32: Int64] = [:]
        var errors: [String] = []
        /// Stored originals found still in a consuming inbox, and released.
        var releasedLate: [String] = []
    }

    init(inbox: String, journal: any JobIntake, quarantine: Quarantine, settleSeconds: Double,
         maxPhotoBytes: LockedValue<Int64?> = LockedValue(nil),
         joinTimeoutSeconds: LockedValue<Int> = LockedValue(600), memoStage: LockedValue<Int> = LockedValue(.max),
         options: LockedValue<InboxOptions> = LockedValue(InboxOptions())) {
        self.memoStage = memoStage
        self.joinTimeoutSeconds = joinTimeoutSeconds
        self.options = options
        self.maxPhotoBytes = maxPhotoBytes
        self.inbox = inbox
        self.journal = journal
        self.quarantine = quarantine
        self.settleSeconds = settleSeconds
        realInbox = realpath(inbox, nil).map { p in defer { free(p) }; return String(cString: p) } ?? inbox
    }

    let realInbox: String

    /// An inbox entry that is not a photo and is left where it is, untouched: sync tools
    /// own their folders, videos and sidecars, and a two-way sync would delete on the phone
    /// what the daemon moved away.
    struct SkippedEntry: Sendable, Equatable {
        let reason: String
        let owner: String
    }

    /// A file under a name the inbox never takes (a transfer tool's temporary name, a dot
    /// file), untouched for `inbox.stale_temp`: a transfer that died, or bytes parked where
    /// nothing takes them. Reported, never removed (it may still be a tool's).
    struct StaleEntry: Sendable, Equatable {
        let owner: String
        let bytes: Int64
        let idleSeconds: Double
    }

    /// Why an entry is left alone, or nil for a photo candidate: a name without a photo's
    /// extension that is not a regular file starting like an image (the first bytes are
    /// read for that, through `folder`, without following a link or waiting on a FIFO).
    static func leftAlone(_ name: String, _ st: stat, head: () -> [UInt8]) -> String? {
        let type = st.st_mode & S_IFMT
        let ext = PhotoPolicy.fileExtension(name)
        if let ext, PhotoPolicy.photoExtensions.contains(ext) { return nil }
        let kind = ext.map { "not a photo (.\($0))" } ?? "not a photo (no photo extension"
        guard type == S_IFREG else { return ext == nil ? kind + ")" : kind }
        if PhotoPolicy.startsLikeAnImage(head()) { return nil }
        return ext == nil ? kind + ", and its first bytes are no image's)" : kind
    }

    /// The inbox, held for one look (the admin's own setting: a link to it is followed).
    func openInbox(_ report: inout Report) -> OpenFolder? {
        do { return try OpenFolder(inbox, followLink: true) } catch {
            report.errors.append("cannot open \(inbox): \(error)")
            return nil
        }
    }

    /// Files the watcher holds after a close in place until `inbox.quiet_after_close` has
    /// passed untouched (`InboxWatcher.closing`): a walk leaves them to it. A walk between a
    /// tool's close and the time it sets just after (rsync --inplace) took such a file once
    /// unchanged for `settleSeconds`, and the tool's `utimes` failed (a test that flaked in CI).
    let waitingAfterClose = LockedValue<Set<String>>([])

    func hold(_ name: String, _ held: Bool) { waitingAfterClose.withLock { if held { $0.insert(name) } else { $0.remove(name) } } }

    func isIgnored(_ name: String) -> Bool { PhotoPolicy.isIgnoredInboxName(name, globs: options.value.ignore) }

    /// Takes the named entries. `complete`: reported closed after writing or moved in;
    /// otherwise only created, so a regular file is left for its close event and only
    /// what can never be written (FIFO, device, symlink, directory) is examined now.
    func take(_ names: [(name: String, complete: Bool)]) -> Report {
        var report = Report()
        guard let root = openInbox(&report) else { return report }
        var batch: [TakenPhoto] = []
        for (name, complete) in names {
            if !complete, let (folder, base) = try? root.parentBeneath(name), let st = folder.entry(base), st.st_mode & S_IFMT == S_IFREG { continue }
            if let p = examine(name, requireSettled: false, &report, root: root) { batch.append(p) }
        }
        commit(batch, &report)
        return report
    }

    /// Walks the whole inbox tree to its end (start-up in tests; the daemon steps an
    /// `InboxWalk` a turn at a time): entries not yet taken are taken once settled.
    func rescan() -> Report {
        let walk = InboxWalk(under: "")
        var report = Report()
        while !walk.finished {
            let r = step(walk)
            report.outcomes += r.outcomes
            report.rejected += r.rejected
            report.removedDuplicates += r.removedDuplicates
            report.releasedLate += r.releasedLate
            report.errors += r.errors
        }
        report.skipped = walk.found.skipped.named
        report.stale = walk.found.stale.named
        report.unsettled = walk.found.unsettled.values.flatMap { $0 }
        report.untaken = walk.found.untaken
        report.atCap = walk.found.atCap
        return report
    }

    func noteIfStale(_ name: String, base: String, in folder: OpenFolder, _ report: inout Report) {
        guard let st = folder.entry(base), st.st_mode & S_IFMT == S_IFREG else { return }
        let idle = unixNow() - (Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
        guard idle >= options.value.staleTempSeconds else { return }
        report.stale[name] = StaleEntry(owner: UnixUser.nameOrNumber(st.st_uid), bytes: Int64(st.st_size), idleSeconds: idle)
    }

    /// Same bytes as a job that has finished: the job ended `done` with `duplicate_of`
    /// when taken; once the original is through, the copy leaves the inbox.
    func removeFinishedDuplicates(_ report: inout Report) {
        do {
            guard let root = openInbox(&report) else { return }
            for (name, identity) in try journal.finishedDuplicates() {
                let folder: OpenFolder, base: String
                do { (folder, base) = try root.parentBeneath(name) } catch let e as SystemError where [ENOENT, ENOTDIR, ELOOP, EXDEV].contains(e.errno) {
                    try journal.forgetTaken(name: name)  // its folder gone, or a link now: nothing of it is left to remove
                    continue
                } catch {
                    report.errors.append("removing duplicate \(name): \(error)")
                    continue
                }
                // Only the very file that was taken: not one written under the same name since.
                if let st = folder.entry(base), PhotoSeal.identity(st) != identity { continue }
                if (try? folder.remove(base)) != nil {
                    try journal.forgetTaken(name: name)
                    report.removedDuplicates.append(name)
                }
            }
        } catch {
            report.errors.append("removing duplicates: \(error)")
        }
    }

    /// One transaction for the batch; if it fails, each file alone, so one file the
    /// journal cannot take never holds back the others.
    func commit(_ batch: [TakenPhoto], _ report: inout Report) {
        guard !batch.isEmpty else { return }
        do {
            Failpoint.hit("inbox.before_commit")
            let outcomes = try journal.commitPhotos(batch, now: unixNow())
            report.outcomes += zip(batch, outcomes).map { ($0.name, $1, $0.owner) }
        } catch where batch.count > 1 {
            for photo in batch { commit([photo], &report) }
        } catch {
            report.errors.append("cannot record inbox file \(batch[0].name): \(error)")
            report.untaken += 1
        }
    }
}
