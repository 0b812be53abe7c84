import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore

/// The blocking half of inbox intake, run on the intake lane: looks at inbox entries,
/// hashes complete photos and commits them as jobs in batches; leaves folders and files
/// that are not photos where they are (`leftAlone`); rejects a photo candidate that can
/// never be one (a FIFO or a symlink named like a photo, a file over `max_bytes`) into
/// quarantine, unread.
final class InboxScanner: @unchecked Sendable {
    // Safe: used only from the serial intake lane.
    let inbox: String
    let journal: any JobIntake
    let quarantine: Quarantine
    /// A file found by a rescan (not by a close event) is taken once untouched this long.
    let settleSeconds: Double
    /// A bigger file is quarantined unread (`MemoIntake.maxPhotoBytes`, set on reload).
    let maxPhotoBytes: LockedValue<Int64?>
    /// A file under an ignored name untouched this long is reported (`InboxOptions`, set on reload).
    let staleTempSeconds: LockedValue<Double>
    /// Per-user quotas, when set (`QuotaMeter`): a photo past its owner's waits, untaken.
    var quota: QuotaMeter?

    static let batchSize = 64

    struct Report: Sendable {
        var outcomes: [(name: String, outcome: IntakeOutcome, owner: String?)] = []
        var rejected: [String] = []
        /// Files seen but not yet settled: scan again after the settle time.
        var unsettled = 0
        /// Files the journal could not take now (a full disk): still the backlog, and
        /// looked at again soon rather than at the next periodic rescan.
        var untaken = 0
        /// Copies of finished jobs' photos removed from the inbox.
        var removedDuplicates: [String] = []
        /// Entries left alone (folders, files that are not photos), with why and whose.
        var skipped: [String: SkippedEntry] = [:]
        /// Entries looked at that are not (or no longer) left alone.
        var notSkipped: [String] = []
        /// Regular files under ignored names untouched for `staleTempSeconds` (a rescan's).
        var stale: [String: StaleEntry] = [:]
        /// Users at their cap of unfinished jobs, whose files wait (counted in `untaken`).
        var atCap: Set<String> = []
        /// How many more jobs each user may have, as this look found it (`MemoIntake.room`).
        fileprivate var room: [UInt32: Int] = [:]
        /// Users over their quota, with why: their files wait (counted in `untaken`).
        var overQuota: [String: String] = [:]
        fileprivate var allowance: [UInt32: QuotaMeter.Allowance] = [:]
        var errors: [String] = []
    }

    init(inbox: String, journal: any JobIntake, quarantine: Quarantine, settleSeconds: Double,
         maxPhotoBytes: LockedValue<Int64?> = LockedValue(nil), staleTempSeconds: LockedValue<Double> = LockedValue(InboxOptions().staleTempSeconds)) {
        self.maxPhotoBytes = maxPhotoBytes
        self.staleTempSeconds = staleTempSeconds
        self.inbox = inbox
        self.journal = journal
        self.quarantine = quarantine
        self.settleSeconds = settleSeconds
        realInbox = realpath(inbox, nil).map { p in defer { free(p) }; return String(cString: p) } ?? inbox
    }

    private let realInbox: String

    /// An inbox entry that is not a photo and is left where it is, untouched: sync tools
    /// own their folders, videos and sidecars, and a two-way sync would delete on the phone
    /// what the daemon moved away.
    struct SkippedEntry: Sendable, Equatable {
        let reason: String
        let owner: String
    }

    /// A file under a name the inbox never takes (a transfer tool's temporary name, a dot
    /// file), untouched for `staleTempSeconds`: a transfer that died, or bytes parked where
    /// nothing takes them. Reported, never removed (it may still be a tool's).
    struct StaleEntry: Sendable, Equatable {
        let owner: String
        let bytes: Int64
        let idleSeconds: Double
    }

    /// Why an entry is left alone, or nil for a photo candidate: a folder; or a name
    /// without a photo's extension that is not a regular file starting like an image (the
    /// first bytes are read for that, without following a link or waiting on a FIFO).
    static func leftAlone(_ path: String, name: String, _ st: stat) -> String? {
        let type = st.st_mode & S_IFMT
        if type == S_IFDIR { return "a folder (folders are left alone)" }
        let ext = PhotoPolicy.fileExtension(name)
        if let ext, PhotoPolicy.photoExtensions.contains(ext) { return nil }
        let kind = ext.map { "not a photo (.\($0))" } ?? "not a photo (no photo extension"
        guard type == S_IFREG else { return ext == nil ? kind + ")" : kind }
        if let head = try? Files.head(path, count: 16), PhotoPolicy.startsLikeAnImage(head) { return nil }
        return ext == nil ? kind + ", and its first bytes are no image's)" : kind
    }

    /// Takes the named entries. `complete`: reported closed after writing or moved in;
    /// otherwise only created, so a regular file is left for its close event and only
    /// what can never be written (FIFO, device, symlink, directory) is examined now.
    func take(_ names: [(name: String, complete: Bool)]) -> Report {
        var report = Report()
        var batch: [TakenPhoto] = []
        for (name, complete) in names {
            if !complete, let st = try? Files.lstatEntry(inbox + "/" + name), st.st_mode & S_IFMT == S_IFREG { continue }
            if let p = examine(name, requireSettled: false, &report) { batch.append(p) }
        }
        commit(batch, &report)
        return report
    }

    /// Walks the whole inbox (start-up, overflow, periodic): entries not yet taken are
    /// taken once settled. Memory stays bounded: commits every `batchSize` photos.
    func rescan() -> Report {
        var report = Report()
        guard let dir = opendir(inbox) else {
            report.errors.append("cannot read \(inbox): \(String(cString: strerror(errno)))")
            return report
        }
        defer { closedir(dir) }
        var batch: [TakenPhoto] = []
        while let ent = readdir(dir) {
            let bytes = withUnsafeBytes(of: ent.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            guard let name = String(validating: bytes, as: UTF8.self) else {
                rejectBadName(bytes, &report)
                continue
            }
            if name == "." || name == ".." { continue }
            if PhotoPolicy.isIgnoredInboxName(name) {
                noteIfStale(name, &report)
                continue
            }
            if let p = examine(name, requireSettled: true, &report) { batch.append(p) }
            if batch.count >= Self.batchSize {
                commit(batch, &report)
                batch.removeAll(keepingCapacity: true)
            }
        }
        commit(batch, &report)
        removeFinishedDuplicates(&report)
        quota?.noteStale(report.stale.values.map { ($0.owner, $0.bytes) })
        return report
    }

    private func noteIfStale(_ name: String, _ report: inout Report) {
        guard let st = try? Files.lstatEntry(inbox + "/" + name), st.st_mode & S_IFMT == S_IFREG else { return }
        let idle = unixNow() - (Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
        guard idle >= staleTempSeconds.value else { return }
        report.stale[name] = StaleEntry(owner: UnixUser.nameOrNumber(st.st_uid), bytes: Int64(st.st_size), idleSeconds: idle)
    }

    /// Same bytes as a job that has finished: the job ended `done` with `duplicate_of`
    /// when taken; once the original is through, the copy leaves the inbox.
    func removeFinishedDuplicates(_ report: inout Report) {
        do {
            for (name, identity) in try journal.finishedDuplicates() {
                let path = inbox + "/" + name
                // Only the very file that was taken: not one written under the same name since.
                if let st = try? Files.lstatEntry(path), PhotoSeal.identity(st) != identity { continue }
                if unlink(path) == 0 || errno == ENOENT {
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
    private func commit(_ batch: [TakenPhoto], _ report: inout Report) {
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

    private func examine(_ name: String, requireSettled: Bool, _ report: inout Report) -> TakenPhoto? {
        guard !PhotoPolicy.isIgnoredInboxName(name), !name.contains("/") else { return nil }
        let path = inbox + "/" + name
        guard let st = try? Files.lstatEntry(path) else {  // gone again
            report.notSkipped.append(name)
            return nil
        }
        if let why = Self.leftAlone(path, name: name, st) {
            report.skipped[name] = SkippedEntry(reason: why, owner: UnixUser.nameOrNumber(st.st_uid))
            return nil
        }
        report.notSkipped.append(name)
        let identity = PhotoSeal.identity(st)
        do {
            if try journal.isTaken(name: name, identity: identity) { return nil }
            if requireSettled {
                let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
                if unixNow() - mtime < settleSeconds { report.unsettled += 1; return nil }
            }
            let owner = UnixUser.nameOrNumber(st.st_uid)
            switch st.st_mode & S_IFMT {
            case S_IFREG: break
            case S_IFLNK:
                // A photo belongs to the owner of the file, so a link (whose owner need not
                // own what it points to) is never followed — nor resolved: the daemon (root)
                // would tell the link's owner what exists, and where links lead, in folders
                // they cannot read. The reason shows only the link's own text.
                if let target = Files.linkText(path), !isLexicallyInInbox(target) {
                    return reject(name, identity, owner, "symlink escapes the inbox (points to \(target))", &report)
                }
                return reject(name, identity, owner, "a symlink is not taken (a photo belongs to its file's owner): move or copy the file in", &report)
            default:
                return reject(name, identity, owner, "a \(Files.kind(st)) is not a photo", &report)
            }
            if let why = MemoIntake.overLimit(size: Int64(st.st_size), maxPhotoBytes) { return reject(name, identity, owner, why, &report) }
            // A daemon not run as root cannot read another user's mode-600 file: that never
            // passes by waiting (it was retried as if the disk were full, logged every few
            // seconds, and the daemon was never idle again).
            if access(path, R_OK) != 0 && errno == EACCES {
                return reject(name, identity, owner, "the daemon (uid \(getuid())) may not read it; make it readable (chmod a+r) and drop it again", &report)
            }
            // A user's drops count toward their unfinished jobs like their queue lines: at the
            // cap their files wait, unread, and are taken as their jobs finish (a flood of
            // drops is never more than the cap ahead of anyone else's photo).
            let room = try report.room[st.st_uid] ?? MemoIntake.room(for: owner, uid: st.st_uid, in: journal)
            guard room > 0 else {
                report.room[st.st_uid] = room
                report.atCap.insert(owner)
                report.untaken += 1
                return nil
            }
            if let quota, var allowance = try report.allowance[st.st_uid] ?? quota.allowance(owner: owner, uid: st.st_uid) {
                let refused = allowance.take(bytes: Int64(st.st_size))
                report.allowance[st.st_uid] = allowance
                if let refused {
                    report.overQuota[owner] = refused.message
                    report.untaken += 1
                    return nil
                }
            }
            report.room[st.st_uid] = room - 1
            // The very file lstat saw: a FIFO or a link renamed over it meanwhile is not read.
            let sha: String
            do {
                sha = try SHA256.hexOfRegularFile(atPath: path, expected: (UInt64(st.st_dev), UInt64(st.st_ino))).hex
            } catch let e as PhotomemoError where e.code == .badImage {
                return nil  // replaced under us: what is there now comes back with its own event or the rescan
            }
            // Still being written (a rescan raced a writer): its close event brings it back.
            guard let after = try? Files.lstatEntry(path), PhotoSeal.identity(after) == identity else { return nil }
            // Sealed only when not even the ctime moved while it was hashed.
            let seal = PhotoSeal.seal(after) == PhotoSeal.seal(st) ? PhotoSeal.seal(after) : nil
            return TakenPhoto(name: name, path: path, identity: identity, seal: seal, sha256: sha, owner: owner)
        } catch {
            report.errors.append("\(name): \(error)")
            report.untaken += 1
            return nil
        }
    }

    /// Whether a link's text names a path in the inbox, by its words alone (`.` and `..`
    /// folded, no link looked up).
    private func isLexicallyInInbox(_ target: String) -> Bool {
        let full = target.hasPrefix("/") ? target : inbox + "/" + target
        var parts: [Substring] = []
        for part in full.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        let normal = "/" + parts.joined(separator: "/")
        return [inbox, realInbox].contains { normal.hasPrefix($0 + "/") }
    }

    /// A name that is not UTF-8 can be no record's photo name: the file goes to quarantine
    /// under its bytes in hex, with the name shown escaped (`\xFF`) in the reason.
    private func rejectBadName(_ bytes: [UInt8], _ report: inout Report) {
        let digits = Array("0123456789abcdef".utf8)
        let hex = String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
        let shown = bytes.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16, uppercase: true) }.joined()
        let path = Array(inbox.utf8) + [0x2F] + bytes + [0]
        var st = stat()
        guard path.withUnsafeBufferPointer({ lstat(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), &st) }) == 0 else { return }
        let name = "inbox-name-" + hex
        let reason = "the file name \"\(shown)\" is not valid UTF-8; rename it and drop it again"
        do {
            let target = quarantine.folder + "/" + name
            try DurableFile.write(Quarantine.reason(reason, extra: ["source": "inbox", "name": .string(shown)]).jsonData, to: target + ".reason.json")
            try path.withUnsafeBufferPointer { p in
                try syscall("rename \(shown)", blocking: { rename(UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self), target) })
            }
            try DurableFile.fsyncFolder(inbox)
            _ = try journal.recordRejectedEntry(name: shown, identity: PhotoSeal.identity(st), owner: UnixUser.nameOrNumber(st.st_uid),
                                                reason: reason, quarantinePath: target, now: unixNow())
            report.rejected.append("\(shown): \(reason)")
        } catch {
            report.errors.append("cannot quarantine \(shown): \(error)")
        }
    }

    private func reject(_ name: String, _ identity: String, _ owner: String, _ reason: String, _ report: inout Report) -> TakenPhoto? {
        do {
            let why = Quarantine.reason(reason, extra: ["source": "inbox", "name": .string(name)])
            let moved = try quarantine.moveFile(at: inbox + "/" + name, name: name, reason: why, job: nil)
            _ = try journal.recordRejectedEntry(name: name, identity: identity, owner: owner, reason: reason, quarantinePath: moved, now: unixNow())
            report.rejected.append("\(name): \(reason)")
        } catch {
            report.errors.append("cannot quarantine \(name) (\(reason)): \(error)")
        }
        return nil
    }
}
