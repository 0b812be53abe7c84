import CPosix
import Foundation
import Glibc
import StageKit

/// Crash-safe file writes: after a crash, `path` holds the old content or the whole new
/// one, never a torn mix (temp file in the same folder, fsync, rename, fsync the folder).
public enum DurableFile {
    public static func write(_ data: Data, to path: String, mode: mode_t = 0o640) throws {
        try write(to: path, mode: mode) { fd in try writeAll(fd, data, path: path) }
    }

    /// The same, with the content written by `body` to the temp file's descriptor.
    public static func write(to path: String, mode: mode_t = 0o640, _ body: (Int32) throws -> Void) throws {
        let dir = (path as NSString).deletingLastPathComponent
        try replace(path, in: dir, mode: mode, body)
        try fsyncFolder(dir)
    }

    /// `data` at `path` only if no entry is there: false, nothing written, when one is. Never
    /// seen empty or torn (the whole file is renamed in), never over another (`RENAME_NOREPLACE`).
    public static func create(_ data: Data, at path: String, mode: mode_t = 0o640) throws -> Bool {
        let dir = (path as NSString).deletingLastPathComponent
        do {
            try replace(path, in: dir, mode: mode, noReplace: true) { fd in try writeAll(fd, data, path: path) }
        } catch let e as SystemError where e.errno == EEXIST {
            return false
        }
        try fsyncFolder(dir)
        return true
    }

    /// Several files in the one folder `dir`, written and fsync'd together (`Concurrently`:
    /// the disk takes the fsyncs at once), then the folder fsync'd once: compress's
    /// renditions. The same guarantee as a `write` each: a name is renamed in only after
    /// its file's fsync, so it never names a torn file, and the folder's fsync, after every
    /// rename, makes all the names durable before this returns.
    public static func write(_ files: [(data: Data, path: String)], in dir: String, mode: mode_t = 0o640) throws {
        for f in files where (f.path as NSString).deletingLastPathComponent != dir {
            throw PhotomemoError(.internalError, "\(f.path) is not in \(dir)")
        }
        _ = try Concurrently.map(files) { f in try replace(f.path, in: dir, mode: mode) { fd in try writeAll(fd, f.data, path: f.path) } }
        Failpoint.hit("files.before_folder_fsync")
        try fsyncFolder(dir)
    }

    /// `path` (in `dir`) replaced by a temp file `body` wrote, fsync'd, renamed over it (or,
    /// `noReplace`, only to where nothing is: EEXIST otherwise); the folder not fsync'd yet.
    private static func replace(_ path: String, in dir: String, mode: mode_t, noReplace: Bool = false, _ body: (Int32) throws -> Void) throws {
        let tmp = dir + "/." + (path as NSString).lastPathComponent + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = try syscall("open \(tmp)", blocking: { open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) })
        do {
            defer { close(fd) }
            try body(fd)
            try syscall("fsync \(tmp)", blocking: { fsync(fd) })
            // A name that cannot be replaced (a folder stands there) leaves no temp file either.
            try syscall("rename \(tmp)", blocking: { noReplace ? pm_rename_noreplace(AT_FDCWD, tmp, AT_FDCWD, path) : rename(tmp, path) })
        } catch {
            unlink(tmp)
            throw error
        }
    }

    /// Writes every byte (a short write continues where it stopped).
    public static func writeAll(_ fd: Int32, _ data: Data, path: String) throws {
        try data.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                off += try syscall("write \(path)", blocking: { Glibc.write(fd, raw.baseAddress! + off, raw.count - off) })
            }
        }
    }

    /// `dir` and its missing ancestors made, each new one's name made durable (its parent
    /// fsync'd after the mkdir): a file fsync'd in a folder created since the last sync of
    /// its parent could otherwise vanish with the folder's entry in a power cut. Folders
    /// already there cost one stat. Returns the folders it made, outermost first.
    @discardableResult
    public static func makeFolders(_ dir: String, mode: mode_t = 0o750) throws -> [String] {
        var missing: [String] = []
        var at = dir
        var st = stat()
        while !at.isEmpty, at != "/", stat(at, &st) != 0 {
            missing.append(at)
            at = (at as NSString).deletingLastPathComponent
        }
        for folder in missing.reversed() {
            if mkdir(folder, mode) != 0, errno != EEXIST {
                throw SystemError("mkdir \(folder)", errno: errno)
            }
            try fsyncFolder((folder as NSString).deletingLastPathComponent)
        }
        return missing.reversed()
    }

    public static func fsyncFolder(_ dir: String) throws {
        let fd = try syscall("open \(dir)", blocking: { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
        defer { close(fd) }
        try syscall("fsync \(dir)", blocking: { fsync(fd) })
    }
}
