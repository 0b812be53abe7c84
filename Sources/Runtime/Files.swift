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
