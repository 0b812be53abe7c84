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
