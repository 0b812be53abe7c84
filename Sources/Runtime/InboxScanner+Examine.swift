import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore
import StageKit

/// One inbox entry looked at: taken as a photo, left alone, or rejected into quarantine
/// unread (moved out of InboxScanner.swift unchanged).
extension InboxScanner {
    /// Looks at the entry `name` (a path relative to the inbox), reached through `held`
    /// (its folder and base name) when the caller has it open, else beneath `root`.
    func examine(_ name: String, requireSettled: Bool, _ report: inout Report, root: OpenFolder,
                 held: (folder: OpenFolder, base: String)? = nil) -> TakenPhoto? {
        // A walk's names are made of what readdir gave and checked there already.
        guard held != nil || (!isIgnored(name) && (try? PhotoPolicy.checkInboxName(name)) != nil) else { return nil }
        // Gone again, or its folder is: or a folder on the way is a link now, not followed.
        guard let (folder, base) = held ?? (try? root.parentBeneath(name)) else {
            report.notSkipped.append(name)
            return nil
        }
        guard let st = folder.entry(base) else {
            report.notSkipped.append(name)
            lookAtSidecars(ofGone: name, in: folder, &report, root: root)
            return nil
        }
        let path = inbox + "/" + name
        // A folder is walked, never taken (an event may name one made as a file was).
        if st.st_mode & S_IFMT == S_IFDIR {
            report.notSkipped.append(name)
            return nil
        }
        if let why = Self.leftAlone(base, st, head: { (try? Files.head(base, in: folder, count: 16)) ?? [] }) {
            let reason = lookAtSidecar(name, st, in: folder, requireSettled: requireSettled, &report) ?? why
            if reason == Self.released { report.notSkipped.append(name) } else {
                report.skipped[name] = SkippedEntry(reason: reason, owner: UnixUser.nameOrNumber(st.st_uid))
            }
            return nil
        }
        report.notSkipped.append(name)
        let identity = PhotoSeal.identity(st)
        let reject = { (owner: String, reason: String, report: inout Report) -> TakenPhoto? in
            self.reject(name, base: base, in: folder, identity, owner, reason, &report)
        }
        do {
            if quarantine.keepsInbox {
                // A `keep` inbox's bad photo stays where it is, taken (not tried again until
                // its bytes change) and listed by `photomemo inbox` with its reason.
                if let failure = try journal.takenFailure(name: name, identity: identity) {
                    if !failure.isEmpty {
                        report.notSkipped.removeLast()  // this name's, appended above
                        report.skipped[name] = SkippedEntry(reason: "kept in place, not taken: \(failure)", owner: UnixUser.nameOrNumber(st.st_uid))
                    }
                    return nil
                }
            } else if try journal.isTaken(name: name, identity: identity) {
                // A stored original still here (a folder renamed A→B→A while upload released
                // it found nothing): released now, as upload would have.
                if try journal.isStoredAndDone(name: name, identity: identity),
                   try quarantine.originals.value.release(base, in: folder, as: name, done: done, identity: identity) {
                    report.releasedLate.append(name)
                }
                return nil
            }
            if requireSettled {
                if waitingAfterClose.value.contains(name) { return nil }  // the watcher takes it when quiet
                let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
                if unixNow() - mtime < settleSeconds { report.unsettled.append(name); return nil }
            }
            let owner = UnixUser.nameOrNumber(st.st_uid)
            switch st.st_mode & S_IFMT {
            case S_IFREG: break
            case S_IFLNK:
                // A photo belongs to the owner of the file, so a link (whose owner need not
                // own what it points to) is never followed — nor resolved: the daemon (root)
                // would tell the link's owner what exists, and where links lead, in folders
                // they cannot read. The reason shows only the link's own text.
                if let target = Files.linkText(base, in: folder), !isLexicallyInInbox(target, from: name) {
                    return reject(owner, "symlink escapes the inbox (points to \(target))", &report)
                }
                return reject(owner, "a symlink is not taken (a photo belongs to its file's owner): move or copy the file in", &report)
            default:
                return reject(owner, "a \(Files.kind(st)) is not a photo", &report)
            }
            // A stage opens the photo by its path beneath the inbox, which the kernel takes up
            // to PATH_MAX: a deeper one would fail every attempt (`File name too long`).
            if name.utf8.count >= Int(PATH_MAX) {
                return reject(owner, "its path in the inbox is \(name.utf8.count) bytes, longer than a path can be (\(PATH_MAX - 1)); move it up", &report)
            }
            if let why = MemoIntake.overLimit(size: Int64(st.st_size), maxPhotoBytes) { return reject(owner, why, &report) }
            // A daemon not run as root cannot read another user's mode-600 file: that never
            // passes by waiting (it was retried as if the disk were full, logged every few
            // seconds, and the daemon was never idle again).
            do { try syscall("faccessat", blocking: { faccessat(folder.fd, base, R_OK, 0) }) } catch let e as SystemError where e.errno == EACCES {
                return reject(owner, "the daemon (uid \(getuid())) may not read it; make it readable (chmod a+r) and drop it again", &report)
            } catch {}
            // Fair to everyone else: 600 sparse files of 52 MB, free to make, were hashed in
            // one look and held every user's photos for 73 s (attack review, 2026-12-04).
            // Only bytes hashed count (below): a user at their cap or over quota, whose files
            // wait unread, must not send the rest of a look round again, look after look.
            let hashed = report.hashed[st.st_uid, default: 0]
            if hashed > 0, hashed.addingSaturated(Int64(st.st_size)) > Self.hashBytesPerOwner {
                report.retake.append(name)
                return nil
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
                    // Listed by `photomemo inbox` with why it waits, until it is taken.
                    if report.notSkipped.last == name { report.notSkipped.removeLast() }  // this name's, appended above
                    report.skipped[name] = SkippedEntry(reason: "waits, not taken: \(refused.message)", owner: owner)
                    return nil
                }
            }
            report.room[st.st_uid] = room - 1
            report.hashed[st.st_uid] = hashed.addingSaturated(Int64(st.st_size))
            // The very file lstat saw: a FIFO or a link renamed over it meanwhile is not read.
            // Nil when replaced under us: what is there now comes back with its own event or the rescan.
            // Nil too when it grew or shrank: at most the bytes sized (within max_bytes) are read.
            guard let sha = try Files.hexOfRegularFile(base, in: folder, expected: (UInt64(st.st_dev), UInt64(st.st_ino), Int64(st.st_size))) else {
                return nil
            }
            // Still being written (a rescan raced a writer): its close event brings it back.
            guard let after = folder.entry(base), PhotoSeal.identity(after) == identity else { return nil }
            // Sealed only when not even the ctime moved while it was hashed.
            let seal = PhotoSeal.seal(after) == PhotoSeal.seal(st) ? PhotoSeal.seal(after) : nil
            var taken = TakenPhoto(name: name, path: path, identity: identity, seal: seal, sha256: sha, owner: owner, keep: quarantine.keepsInbox)
            taken.sidecar = sidecar(forPhoto: name, owner: owner, st, in: folder)
            return taken
        } catch {
            report.errors.append("\(name): \(error)")
            report.untaken += 1
            return nil
        }
    }

    /// Whether the text of the link `name` (a relative inbox name) names a path in the
    /// inbox, by its words alone (`.` and `..` folded, no link looked up).
    private func isLexicallyInInbox(_ target: String, from name: String) -> Bool {
        let folder = name.split(separator: "/").dropLast().map { "/" + $0 }.joined()
        let full = target.hasPrefix("/") ? target : inbox + folder + "/" + target
        var parts: [Substring] = []
        for part in full.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        let normal = "/" + parts.joined(separator: "/")
        return [inbox, realInbox].contains { normal.hasPrefix($0 + "/") }
    }

    /// A name that is not UTF-8 can be no record's photo name: a photo candidate goes to
    /// quarantine under its path's bytes in hex, with the name shown escaped (`\xFF`) in the reason.
    func rejectBadName(_ bytes: [UInt8], in folder: OpenFolder, under relative: String, _ report: inout Report) {
        let whole = (relative.isEmpty ? [] : Array(relative.utf8) + [0x2F]) + bytes
        let digits = Array("0123456789abcdef".utf8)
        let hex = whole.count <= 100 ? String(decoding: whole.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
            : SHA256.hex(bytes: whole)
        let shown = Files.shown(whole)
        let cName = bytes.map { CChar(bitPattern: $0) } + [0]
        var st = stat()
        guard fstatat(folder.fd, cName, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        // A folder is a sync tool's, whatever its name: never moved, not looked into.
        if st.st_mode & S_IFMT == S_IFDIR {
            report.skipped[shown] = SkippedEntry(reason: "a folder whose name is not valid UTF-8 (not looked into)", owner: UnixUser.nameOrNumber(st.st_uid))
            return
        }
        // Left alone as under a UTF-8 name: a transfer tool's name in transit (rsync's
        // `.NAME.XXXXXX` of such a name), an ignored one, or no photo (a Latin-1 `.MOV`).
        let lossy = String(decoding: whole, as: UTF8.self)
        if isIgnored(lossy) { return }
        if let why = Self.leftAlone(lossy, st, head: { Files.head(cName: cName, in: folder, count: 16) }) {
            report.skipped[shown] = SkippedEntry(reason: why, owner: UnixUser.nameOrNumber(st.st_uid))
            return
        }
        let name = "inbox-name-" + hex
        let reason = "the file name \"\(shown)\" is not valid UTF-8; rename it and drop it again"
        if quarantine.keepsInbox {  // not renamed away: recorded once, listed while it is there
            let identity = PhotoSeal.identity(st), owner = UnixUser.nameOrNumber(st.st_uid)
            do {
                if try journal.takenFailure(name: shown, identity: identity) == nil {
                    _ = try journal.recordRejectedEntry(name: shown, identity: identity, owner: owner, reason: reason,
                                                        quarantinePath: quarantine.keptInPlace(inbox + "/" + shown), now: unixNow())
                    report.rejected.append("\(shown): \(reason)")
                }
                report.skipped[shown] = SkippedEntry(reason: "kept in place, not taken: \(reason)", owner: owner)
            } catch {
                report.errors.append("cannot record \(shown): \(error)")
            }
            return
        }
        do {
            // Each drop of one such name an entry of its own (the second no longer replaced the first).
            try quarantineRejected(cName, in: folder, as: name, shown: shown, PhotoSeal.identity(st), UnixUser.nameOrNumber(st.st_uid), reason, &report)
        } catch {
            report.errors.append("cannot quarantine \(shown): \(error)")
        }
    }

    /// Moves a rejected entry (`cName` in `folder`) to quarantine under `name`, records its
    /// failed job under `shown` (its inbox name), and names that job in its reason.
    private func quarantineRejected(_ cName: [CChar], in folder: OpenFolder, as name: String, shown: String, _ identity: String, _ owner: String,
                                    _ reason: String, _ report: inout Report) throws {
        let why = Quarantine.reason(reason, extra: ["source": "inbox", "name": .string(shown)])
        let moved = try quarantine.moveEntry(cName: cName, in: folder, name: name, reason: why, job: nil)
        let job = try journal.recordRejectedEntry(name: shown, identity: identity, owner: owner, reason: reason, quarantinePath: moved, now: unixNow())
        report.rejected.append("\(shown): \(reason)")
        do { try quarantine.name(job: job, inReasonOf: moved, reason: why) } catch {
            report.errors.append("job \(job): cannot name it in \(moved).reason.json: \(error)")
        }
    }

    private func reject(_ name: String, base: String, in folder: OpenFolder, _ identity: String, _ owner: String, _ reason: String,
                        _ report: inout Report) -> TakenPhoto? {
        do {
            try quarantineRejected(Array(base.utf8CString), in: folder, as: name, shown: name, identity, owner, reason, &report)
            if quarantine.keepsInbox {  // still there: listed, as every later look lists it
                report.notSkipped.removeLast()  // this name's, appended by `examine`
                report.skipped[name] = SkippedEntry(reason: "kept in place, not taken: \(reason)", owner: owner)
            }
        } catch {
            report.errors.append("cannot quarantine \(name) (\(reason)): \(error)")
        }
        return nil
    }
}
