import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Stores

/// File work `backup` and `restore` share: a folder that must be new or empty, files
/// linked or copied with their sha256, folders made durable.
enum BackupFolder {
    /// Makes `dir` (mode 0750), or accepts it when it is an empty folder; anything else is
    /// refused before a byte is written, so nothing of what is there is ever overwritten.
    /// Returns the path to write through: `dir` with its parent's symlinks resolved. Never
    /// inside one of `daemonFolders` (the inbox, the store, ...): the daemon would take what
    /// is written there as photos, or delete it.
    static func createEmpty(_ dir: String, what: String, outside daemonFolders: [String] = []) throws -> String {
        let dir = try onlyAdminsCanChange(dir, what: what)
        for folder in daemonFolders {
            let real = realpath(folder, nil).map { p in defer { free(p) }; return String(cString: p) } ?? folder
            if dir == real || dir.hasPrefix(real + "/") {
                throw PhotomemoError(.badUsage, "\(what) \(dir) is inside \(real), which the daemon takes files from or removes them in: name a folder outside it")
            }
        }
        var st = stat()
        if lstat(dir, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else { throw PhotomemoError(.badUsage, "\(what) \(dir) exists and is not a folder") }
            guard UnixUser.isAdmin(uid: st.st_uid), st.st_mode & 0o022 == 0 else {
                throw PhotomemoError(.badUsage, "\(what) \(dir) belongs to \(UnixUser.nameOrNumber(st.st_uid)) (mode \(String(st.st_mode & 0o7777, radix: 8))): "
                    + "another user could read or swap what is written there; name a new folder")
            }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            guard entries.isEmpty else {
                throw PhotomemoError(.badUsage, "\(what) \(dir) is not empty (\(entries.count) entries): name a new or empty folder")
            }
            return dir
        }
        try syscall("mkdir \(dir)", blocking: { mkdir(dir, 0o750) })
        return dir
    }

    /// `dir` with its parent resolved (realpath), once every folder above it is one only
    /// admins can change: owned by root or the daemon's user, and writable by group or
    /// others only when sticky (as /tmp, where no one else can rename what we make). The
    /// daemon writes the journal there by path as root: a folder another user may rename
    /// or fill lets them swap in a symlink, or a file of theirs, and read or redirect it.
    static func onlyAdminsCanChange(_ dir: String, what: String) throws -> String {
        let parent = (dir as NSString).deletingLastPathComponent
        guard let p = realpath(parent, nil) else { throw PhotomemoError(.badUsage, "\(what) \(dir): its parent folder \(parent) does not exist") }
        let real = String(cString: p)
        free(p)
        var path = ""
        for name in [""] + real.split(separator: "/").map(String.init) {
            path = name.isEmpty ? "/" : (path == "/" ? "" : path) + "/" + name
            let st = try Files.lstatEntry(path)
            guard UnixUser.isAdmin(uid: st.st_uid), st.st_mode & 0o022 == 0 || st.st_mode & S_ISVTX != 0 else {
                throw PhotomemoError(.badUsage, "\(what) \(dir): \(path) belongs to \(UnixUser.nameOrNumber(st.st_uid)) (mode \(String(st.st_mode & 0o7777, radix: 8))), "
                    + "so another user could swap what is written there; name a folder only root or the daemon's user can change")
            }
        }
        return (real == "/" ? "" : real) + "/" + (dir as NSString).lastPathComponent
    }

    /// The manifest entry of `dir/name`: its size and sha256, read back from the disk.
    static func entry(_ dir: String, _ name: String) throws -> BackupManifest.File {
        let (hex, bytes) = try SHA256.hexOfFile(atPath: dir + "/" + name)
        return .init(path: name, bytes: bytes, sha256: hex)
    }

    /// `target` as a hard link to `source` where the filesystem allows (store objects are
    /// never written in place, so a link is a copy that costs nothing), else a copy made
    /// durable; its sha256 and size, read from the bytes.
    static func linkOrCopy(_ source: String, to target: String) throws -> (sha256: String, bytes: Int64) {
        try makeParent(of: target)
        do {
            try syscall("link \(target)", blocking: { link(source, target) })
            let (hex, bytes) = try SHA256.hexOfFile(atPath: target)
            return (hex, bytes)
        } catch let e as SystemError where [EXDEV, EPERM, EMLINK, EACCES].contains(e.errno) {
            return try copy(source, to: target)  // another filesystem, or one without hard links
        }
    }

    /// A durable copy of `source` at `target` (a new file): its sha256 and size.
    static func copy(_ source: String, to target: String) throws -> (sha256: String, bytes: Int64) {
        try makeParent(of: target)
        let fd = try syscall("open \(source)", blocking: { open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) })
        defer { close(fd) }
        var st = stat()
        try syscall("fstat \(source)", blocking: { fstat(fd, &st) })
        return (try LocalStore.copy(fd, name: source, to: target, size: Int64(st.st_size)), Int64(st.st_size))
    }

    static func makeParent(of path: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        if !Files.exists(parent) { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
    }

    /// fsyncs every folder under `root` and `root` itself: the new names are durable.
    static func syncFolders(under root: String) throws {
        guard Files.exists(root) else { return }
        let e = FileManager.default.enumerator(atPath: root)
        var folders = [root]
        while let rel = e?.nextObject() as? String {
            if (e?.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory { folders.append(root + "/" + rel) }
        }
        for f in folders.reversed() { try DurableFile.fsyncFolder(f) }
    }
}
