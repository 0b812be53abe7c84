import Glibc
import Journal
import PhotomemoCore
import StageKit

/// Memo sidecars (`MemoSidecar`) at intake. A photo taken reads the sidecar beside it (its
/// job is created with that memo, or fails naming it); a sidecar seen on its own applies
/// to its photo's job once the photo is taken (`Journal.commitSidecar`), and until then
/// waits where it is, as a file: nothing is recorded for it, so it is never lost to a
/// timeout, and the photo's intake finds it whenever the photo comes.
extension InboxScanner {
    /// What `lookAtSidecar` says of a sidecar it released: it is no longer in the inbox.
    static let released = "released with its photo"

    /// The sidecar of the photo `name` owned by `st.st_uid`, read, if it has one, from
    /// `folder`: the photo's folder, held open (a sidecar is always beside its photo).
    func sidecar(forPhoto name: String, owner: String, _ st: stat, in folder: OpenFolder) -> SidecarMemo? {
        guard let (sidecar, sst) = MemoSidecar.locate(in: folder, photo: name, uid: st.st_uid) else { return nil }
        let identity = PhotoSeal.identity(sst)
        do {
            let memo = try MemoSidecar.read(in: folder, sidecar, expected: (UInt64(sst.st_dev), UInt64(sst.st_ino)), photo: name, owner: owner)
            return SidecarMemo(name: sidecar, identity: identity, memo: memo)
        } catch let e as PhotomemoError {
            return SidecarMemo(name: sidecar, identity: identity, error: e.message)
        } catch {
            return SidecarMemo(name: sidecar, identity: identity, error: "\(error)")
        }
    }

    /// Looks at an entry that is no photo: if it is named like a memo sidecar, applies it
    /// to its photo when it can, and says what it is for `photomemo inbox` (`released`:
    /// it has left the inbox); nil otherwise. Its photos are looked up in `folder`, the
    /// sidecar's own, held open.
    ///
    /// Its photo may have left the inbox already (`delete`, `move`; or removed from a
    /// `keep` one): the ledger's last photo of a name it matches, of its owner, is its
    /// photo then, and the sidecar updates that photo's record. Once what it holds is read
    /// into a job, it leaves as its photo did (removed, moved, or kept).
    func lookAtSidecar(_ name: String, _ st: stat, in folder: OpenFolder, requireSettled: Bool, _ report: inout Report) -> String? {
        guard st.st_mode & S_IFMT == S_IFREG, let photos = MemoSidecar.photoNames(forSidecar: name) else { return nil }
        let owner = UnixUser.nameOrNumber(st.st_uid)
        var mine: [String] = []
        var notUsed: String?
        for photo in photos {
            guard let pst = folder.entry(MemoSidecar.split(photo).1) else { continue }
            guard pst.st_uid == st.st_uid else {
                notUsed = notUsed ?? "memo sidecar not used: it is \(owner)'s, its photo \(photo) is \(UnixUser.nameOrNumber(pst.st_uid))'s (a sidecar counts only when its photo's owner owns it)"
                continue
            }
            if let used = MemoSidecar.locate(in: folder, photo: photo, uid: st.st_uid)?.name, used != name {
                notUsed = notUsed ?? "memo sidecar not used: \(photo) has \(used), which counts first"
            } else {
                mine.append(photo)
            }
        }
        let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
        var photoLeft = false
        if mine.isEmpty, notUsed == nil {
            do {
                if let left = try journal.takenPhoto(among: photos, owner: owner),
                   MemoSidecar.locate(in: folder, photo: left, uid: st.st_uid)?.name == name {
                    (mine, photoLeft) = ([left], true)
                }
            } catch {
                report.errors.append("\(name): \(error)")
            }
        }
        guard !mine.isEmpty else {
            if let notUsed { return notUsed }
            let shown = photos.count == 1 ? photos[0] : String(photos[0].dropLast(PhotoPolicy.fileExtension(photos[0])!.utf8.count)) + "*"
            let timeout = joinTimeoutSeconds.value
            if unixNow() - mtime > Double(timeout) {
                return "memo sidecar: no photo \(shown) arrived within join_timeout_s (\(timeout)); it is still joined if one does"
            }
            return "memo sidecar waiting for its photo \(shown)"
        }
        let identity = PhotoSeal.identity(st)
        let of = "memo sidecar of \(mine.joined(separator: ", "))"
        do {
            if try journal.isTaken(name: name, identity: identity) {
                return photoLeft && release(name, identity, in: folder, photo: mine[0], uid: st.st_uid, &report) ? Self.released : of
            }
            if requireSettled && unixNow() - mtime < settleSeconds {
                report.unsettled.append(name)
                return of + " (settling)"
            }
            // Each edit may be a job: a user's sidecars count toward their unfinished jobs
            // as their photos do, and at the cap wait, unread, like them.
            let room = try report.room[st.st_uid] ?? MemoIntake.room(for: owner, uid: st.st_uid, in: journal)
            guard room > 0 else {
                report.room[st.st_uid] = room
                report.atCap.insert(owner)
                report.untaken += 1
                return of + " (waiting: \(owner) has \(MemoIntake.maxUnfinishedPerUser) unfinished jobs)"
            }
            report.room[st.st_uid] = room - 1
            for photo in mine {
                guard let s = sidecar(forPhoto: photo, owner: owner, st, in: folder), s.name == name else { continue }
                switch try journal.commitSidecar(s, photo: photo, owner: owner, memoStage: memoStage.value, now: unixNow()) {
                case .waiting: break  // its photo is there, not taken yet: the photo's intake reads it
                case .applied(let outcome):
                    report.outcomes.append((name, outcome, owner))
                    if photoLeft, outcome.job != nil, !outcome.isFailure,
                       release(name, s.identity, in: folder, photo: photo, uid: st.st_uid, &report) { return Self.released }
                case .photoReleased: report.retake.append(photo)
                }
            }
        } catch {
            report.errors.append("\(name): \(error)")
            report.untaken += 1
        }
        return of
    }

    /// `HOME/done/`, where `move` puts what leaves the inbox (the inbox is `HOME/inbox`).
    var done: String { String(inbox[..<(inbox.lastIndex(of: "/") ?? inbox.startIndex)]) + "/done" }

    /// The photo `name` is gone (released, moved away, removed): its sidecars beside it
    /// are looked at now, to be released after it, or to update its record.
    func lookAtSidecars(ofGone name: String, in folder: OpenFolder, _ report: inout Report, root: OpenFolder) {
        guard let ext = PhotoPolicy.fileExtension(name), PhotoPolicy.photoExtensions.contains(ext) else { return }
        for sidecar in MemoSidecar.candidates(forPhoto: name) {
            let base = MemoSidecar.split(sidecar).1
            guard let st = folder.entry(base), st.st_mode & S_IFMT == S_IFREG else { continue }
            _ = examine(sidecar, requireSettled: false, &report, root: root, held: (folder, base))
        }
    }

    /// Releases the sidecar `name` of `folder` whose photo has left the inbox, as the photo
    /// was released (`inbox.originals`), if it still is what was read (`identity`) and no
    /// other photo beside it uses it: an edit since stays, to be read as an update.
    /// Whether it left.
    func release(_ name: String, _ identity: String, in folder: OpenFolder, photo: String, uid: uid_t, _ report: inout Report) -> Bool {
        let originals = quarantine.originals.value
        let base = MemoSidecar.split(name).1
        guard originals != .keep, MemoSidecar.releasedWith(photo: MemoSidecar.split(photo).1, uid: uid, in: folder) == base
        else { return false }
        do {
            return try originals.release(base, in: folder, as: name, done: done, identity: identity)
        } catch {
            report.errors.append("\(name): \(error)")
            return false
        }
    }
}
