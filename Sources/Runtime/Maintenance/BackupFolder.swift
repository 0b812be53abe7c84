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
    static func createEmpty(_ dir: String, what: String) throws {
        var st = stat()
        if lstat(dir, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else { throw PhotomemoError(.badUsage, "\(what) \(dir) exists and is not a folder") }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            guard entries.isEmpty else {
                throw PhotomemoError(.badUsage, "\(what) \(dir) is not empty (\(entries.count) entries): name a new or empty folder")
            }
            return
        }
        try syscall("mkdir \(dir)", blocking: { mkdir(dir, 0o750) })
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
        let sha = try LocalStore.copy(fd, to: target)
        var st = stat()
        try syscall("stat \(target)", blocking: { stat(target, &st) })
        return (sha, Int64(st.st_size))
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
