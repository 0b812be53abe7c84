import EventLoop
import PhotomemoCore
import Foundation
import Glibc

/// File facts intake needs (lstat, kind; identity is `PhotoSeal.identity`), through the one errno wrapper
/// (`syscall(blocking:)`); crash-safe writes are `DurableFile`.
enum Files {
    /// lstat: the entry itself, not what a symlink points at.
    static func lstatEntry(_ path: String) throws -> stat {
        var st = stat()
        try syscall("lstat \(path)", blocking: { lstat(path, &st) })
        return st
    }

    /// What a symlink says (readlink), not what it leads to; nil if `path` is no link.
    static func linkText(_ path: String) -> String? {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buf, buf.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Up to `count` first bytes of a regular file: opened without following a link or
    /// waiting on a FIFO (`O_NOFOLLOW | O_NONBLOCK`), and only if it is still a regular file.
    static func head(_ path: String, count: Int) throws -> [UInt8] {
        let fd = try syscall("open \(path)", blocking: { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) })
        defer { close(fd) }
        var st = stat()
        try syscall("fstat \(path)", blocking: { fstat(fd, &st) })
        guard st.st_mode & S_IFMT == S_IFREG else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try syscall("read \(path)", blocking: { bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, count) } })
        return Array(bytes.prefix(n))
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
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
