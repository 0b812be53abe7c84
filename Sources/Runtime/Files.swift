import EventLoop
import Foundation
import Glibc

/// File operations the daemon needs to be crash-safe, each a few syscalls through the
/// one errno wrapper (`syscall(blocking:)`).
enum Files {
    /// Writes `data` so that `path` holds either the old or the whole new content after a
    /// crash: temp file in the same folder, fsync, rename, fsync the folder.
    static func writeAtomically(_ data: Data, to path: String, mode: mode_t = 0o640) throws {
        let dir = (path as NSString).deletingLastPathComponent
        let tmp = dir + "/." + (path as NSString).lastPathComponent + ".\(getpid()).tmp"
        let fd = try syscall("open \(tmp)", blocking: { open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) })
        do {
            try data.withUnsafeBytes { raw in
                var off = 0
                while off < raw.count {
                    off += try syscall("write \(tmp)", blocking: { write(fd, raw.baseAddress! + off, raw.count - off) })
                }
            }
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

    static func fsyncFolder(_ dir: String) throws {
        let fd = try syscall("open \(dir)", blocking: { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
        defer { close(fd) }
        try syscall("fsync \(dir)", blocking: { fsync(fd) })
    }

    /// lstat: the entry itself, not what a symlink points at.
    static func lstatEntry(_ path: String) throws -> stat {
        var st = stat()
        try syscall("lstat \(path)", blocking: { lstat(path, &st) })
        return st
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// "dev:ino:size:mtime_ns": changes when a file is replaced or rewritten.
    static func identity(_ st: stat) -> String {
        "\(st.st_dev):\(st.st_ino):\(st.st_size):\(Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))"
    }

    static func kind(_ st: stat) -> String {
        switch st.st_mode & S_IFMT {
        case S_IFREG: "regular file"
        case S_IFDIR: "directory"
        case S_IFLNK: "symlink"
        case S_IFIFO: "FIFO"
        case S_IFCHR: "character device"
        case S_IFBLK: "block device"
        case S_IFSOCK: "socket"
        default: "unknown file type"
        }
    }
}
