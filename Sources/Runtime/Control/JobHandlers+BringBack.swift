import CPosix
import Foundation
import Glibc
import PhotomemoCore
import StageKit

extension JobHandlers {
    /// A retried job reads its photo where it was taken: put back from quarantine if it is
    /// there. A photo stage (`needed`) would only fail again on a photo that is in neither
    /// place (renamed or removed before its stage ran): `photo_gone`, and the job stays
    /// failed. Past the photo stages, the photo is in the store and its file may be gone.
    /// An inbox photo goes back beneath the inbox, through its folder opened with no link
    /// followed (a folder swapped for a link to /etc gets nothing moved into it).
    /// `copies`: `HOME/reprocess`, where reprocess jobs' copies of originals are.
    static func bringBack(_ photo: String, from quarantined: String?, needed: Bool, job id: Int64, inbox: String, copies: String? = nil) throws {
        // Another job's entry there now (this one's removed by an admin, the name taken since):
        // not this job's photo, and not to be taken from its owner.
        let q = quarantined.flatMap { q in (Quarantine.job(ofEntry: q) ?? id) == id ? q : nil }
        let inQuarantine = q.flatMap { try? Files.lstatEntry($0) }
        var held: (folder: OpenFolder, name: String)?
        if photo.hasPrefix(inbox + "/") {
            held = try? OpenFolder(inbox, followLink: true).parentBeneath(String(photo.dropFirst(inbox.count + 1)))
            if let held, let there = held.folder.entry(held.name) {
                // A file: someone's photo, or this one again; the retry reads and checks it.
                // Anything else made at the name since is no photo: this job's stays where it is.
                guard there.st_mode & S_IFMT != S_IFREG, let q, inQuarantine != nil else { return }
                throw PhotomemoError(.conflict, "job \(id)'s photo stays in quarantine (\(q)): \(photo) is a \(Files.kind(there)) now; "
                                     + "move that away and retry")
            }
        } else if Files.exists(photo) {
            return
        }
        guard let q, let inQuarantine else {
            guard needed else {
                if let q { unlink(q + ".reason.json") }  // the reason of a file that was not there
                return
            }
            // A reprocess job's copy of its record's original (`copies`) went with its cancel.
            let again = copies.map { photo.hasPrefix($0 + "/") } == true
                ? "run `photomemo reprocess` for its record again" : "drop it into the inbox again (it becomes a job of its own)"
            throw PhotomemoError(.photoGone, "job \(id)'s photo is gone: it is not at \(photo), nor in quarantine; " + again)
        }
        do {
            // Never over a file that came under the name since it was looked at (someone
            // else's photo): that one is there, as above, and the retry reads and checks it.
            if photo.hasPrefix(inbox + "/") {
                guard let held else {
                    throw PhotomemoError(.io, "the folder of \(photo) is gone from the inbox (or is a symlink now); make it again")
                }
                // A folder another user made at its place since (the owner's was removed), or
                // above it: they could take the photo (or its folder) from there, so it stays in
                // quarantine. (The inbox itself is whoever the admin made it; no user removes it.)
                if let (path, uid) = Self.foreignFolder(on: photo, in: inbox, held: held.folder, owner: inQuarantine.st_uid) {
                    throw PhotomemoError(.conflict, "job \(id)'s photo stays in quarantine (\(q)): the folder it goes back into, \(path), "
                                         + "is \(UnixUser.nameOrNumber(uid))'s now, who could take it from there; "
                                         + "have it removed, make it again as \(UnixUser.nameOrNumber(inQuarantine.st_uid)) and retry")
                }
                try syscall("rename \(q) to \(photo)", blocking: { pm_rename_noreplace(AT_FDCWD, q, held.folder.fd, held.name) })
            } else {
                try syscall("rename \(q) to \(photo)", blocking: { pm_rename_noreplace(AT_FDCWD, q, AT_FDCWD, photo) })
            }
        } catch let e as SystemError where e.errno == EEXIST {
            return
        } catch let e as PhotomemoError {
            throw e
        } catch {
            throw PhotomemoError(.io, "cannot move job \(id)'s photo back from quarantine: \(error)")
        }
        unlink(q + ".reason.json")
    }

    /// The first folder between the inbox and `photo` (the one held open last) that belongs
    /// to someone other than `owner`, root or the daemon's user: its path and owner.
    static func foreignFolder(on photo: String, in inbox: String, held: OpenFolder, owner: uid_t) -> (String, uid_t)? {
        let folders = photo.dropFirst(inbox.count + 1).split(separator: "/").dropLast()
        let trusted: Set<uid_t> = [owner, 0, geteuid()]
        var path = inbox
        for (i, name) in folders.enumerated() {
            path += "/" + name
            var st = stat()
            let found = i == folders.count - 1 ? fstat(held.fd, &st) == 0 : lstat(path, &st) == 0
            if found, !trusted.contains(st.st_uid) { return (path, st.st_uid) }
        }
        return nil
    }
}
