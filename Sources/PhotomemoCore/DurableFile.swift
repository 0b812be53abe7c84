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
        let tmp = dir + "/." + (path as NSString).lastPathComponent + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = try syscall("open \(tmp)", blocking: { open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) })
        do {
            try body(fd)
            try syscall("fsync \(tmp)", blocking: { fsync(fd) })
            close(fd)
        } catch {
            close(fd)
            unlink(tmp)
            throw error
        }
        try syscall("rename \(tmp)", blocking: { rename(tmp, path) })
        try fsyncFolder(dir)
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

    public static func fsyncFolder(_ dir: String) throws {
        let fd = try syscall("open \(dir)", blocking: { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
        defer { close(fd) }
        try syscall("fsync \(dir)", blocking: { fsync(fd) })
    }
}
