import CPosix
import Foundation
import Glibc
import StageKit

extension InboxOptions.Originals {
    /// What becomes of the inbox file `name` of `folder` (`relative` in the inbox) once what
    /// it holds is safe: removed (`delete`), moved to `done` + its flat name (`move`:
    /// `DCIM%2FIMG_1.jpg`, so two folders' `IMG_1.jpg` never meet), or left (`keep`). Both
    /// the upload stage (a stored photo) and intake (a memo sidecar applied) release this way.
    ///
    /// Only the file `identity` describes (`PhotoSeal.identity`) is released: a file renamed
    /// over it since, or written anew at the name, is a drop of its own and stays. There is
    /// no unlink-if-this-inode, so the entry is first renamed aside to a hidden name in its
    /// folder and looked at there: what was checked is what goes, and a file that took the
    /// name between the look and the rename is put back. The hidden name says whose it is
    /// and where it goes back (`asideName`): one a killed daemon left is put back by the next
    /// one's walk (`leftByAnEarlierRun`), and taken from there as any file at that name.
    /// Whether the file left.
    @discardableResult
    public func release(_ name: String, in folder: OpenFolder, as relative: String, done: String, identity: String) throws -> Bool {
        guard self != .keep, let st = folder.entry(name), PhotoSeal.identity(st) == identity else { return false }
        let aside = Self.asideName(for: name)
        do {
            try syscall("rename \(folder.path)/\(name) aside", blocking: { pm_rename_noreplace(folder.fd, name, folder.fd, aside) })
        } catch let e as SystemError where e.errno == ENOENT {
            return false
        }
        Failpoint.hit("release.aside")
        guard let moved = folder.entry(aside), PhotoSeal.identity(moved) == identity else {
            // Another drop: back under its name, or `NAME~2`, ... if yet another took it meanwhile.
            try move(aside, in: folder, toFree: name, folder: folder.fd)
            return false
        }
        switch self {
        case .keep: return false
        case .delete: try folder.remove(aside)
        case .move:
            try FileManager.default.createDirectory(atPath: done, withIntermediateDirectories: true)
            // Never over a file already there (a name dropped again after a camera's counter
            // reset, or another user's top-level `DCIM%2FIMG_1.jpg`): that one gets `~2`, `~3`, ...
            try move(aside, in: folder, toFree: done + "/" + PhotoPolicy.flatName(relative), folder: AT_FDCWD)
        }
        return true
    }

    static let asidePrefix = ".photomemo-release-"

    /// This process's, in its hidden names: not its pid, which a restarted daemon in a
    /// container often has again (and would then never put back what the last one left).
    static let processToken = String(UInt64.random(in: 1...UInt64.max), radix: 16)

    /// `.photomemo-release-TOKEN-RANDOM-NAME`: this process's, and the name it goes back to (a
    /// name past 200 bytes is cut short before its extension, so a put-back file is still a photo).
    static func asideName(for name: String) -> String {
        var back = name
        if back.utf8.count > 200 {
            // An "extension" of 240 bytes is no photo's: cut with the rest (kept, it left
            // nothing to cut and trapped the daemon at upload).
            let ext = PhotoPolicy.fileExtension(name).map { "." + $0 }.flatMap { $0.utf8.count <= 100 ? $0 : nil } ?? ""
            back = String(name.dropLast(ext.count))
            while back.utf8.count + ext.utf8.count > 200 { back.removeLast() }
            back += ext
        }
        return asidePrefix + processToken + "-" + String(UInt64.random(in: 0...UInt64.max), radix: 16) + "-" + back
    }

    /// For a hidden release name of another process (a daemon killed between the rename
    /// aside and the removal or the putting back), the name it goes back to; nil for any
    /// other name, or one this process is releasing now.
    public static func leftByAnEarlierRun(_ base: String) -> String? {
        guard base.hasPrefix(asidePrefix) else { return nil }
        let parts = base.dropFirst(asidePrefix.count).split(separator: "-", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, UInt64(parts[0], radix: 16) != nil, parts[0] != processToken, !parts[2].isEmpty else { return nil }
        return String(parts[2])
    }

    /// Puts back a file `leftByAnEarlierRun` under `name` (or `name~2`, ... when taken); the name it got.
    public static func putBack(_ aside: String, in folder: OpenFolder, as name: String) throws -> String {
        try InboxOptions.Originals.delete.move(aside, in: folder, toFree: name, folder: folder.fd)
    }

    /// Renames `from` to `target`, or `target~2`, `~3`, ... when taken: never over a file. The name it got.
    @discardableResult
    private func move(_ from: String, in folder: OpenFolder, toFree target: String, folder toFolder: Int32) throws -> String {
        for n in 1... {
            let to = n == 1 ? target : target + "~\(n)"
            do {
                try syscall("rename \(folder.path)/\(from) to \(to)", blocking: { pm_rename_noreplace(folder.fd, from, toFolder, to) })
                return to
            } catch let e as SystemError where e.errno == EEXIST && n < 10_000 {}
        }
        return target  // unreachable: the last try throws
    }
}
