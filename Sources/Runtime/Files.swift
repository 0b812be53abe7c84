import EventLoop
import PhotomemoCore
import StageKit
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

    /// What the symlink `name` in `folder` says (readlinkat), not what it leads to; nil if it is no link.
    static func linkText(_ name: String, in folder: OpenFolder) -> String? {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlinkat(folder.fd, name, &buf, buf.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Up to `count` first bytes of the regular file `name` in `folder`: opened without
    /// following a link or waiting on a FIFO (`O_NOFOLLOW | O_NONBLOCK`), and only if it is
    /// still a regular file.
    static func head(_ name: String, in folder: OpenFolder, count: Int) throws -> [UInt8] {
        let fd = try folder.open(name, O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        return try head(of: fd, path: folder.path + "/" + name, count: count)
    }

    /// The same for an entry whose name is not UTF-8 (`cName`: its bytes and a NUL), which
    /// no String names; [] when it cannot be read.
    static func head(cName: [CChar], in folder: OpenFolder, count: Int) -> [UInt8] {
        let fd = openat(folder.fd, cName, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        return (try? head(of: fd, path: folder.path, count: count)) ?? []
    }

    private static func head(of fd: Int32, path: String, count: Int) throws -> [UInt8] {
        var st = stat()
        try syscall("fstat \(path)", blocking: { fstat(fd, &st) })
        guard st.st_mode & S_IFMT == S_IFREG else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try syscall("read \(path)", blocking: { bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, count) } })
        return Array(bytes.prefix(n))
    }

    /// The SHA-256 of the regular file `name` in `folder`, if it is still the inode
    /// `expected` names (device, inode) at the size it was seen at; nil when it is gone, a
    /// link, another file now, or another size (then at most `size` and a byte are read).
    static func hexOfRegularFile(_ name: String, in folder: OpenFolder, expected: (dev: UInt64, ino: UInt64, size: Int64)) throws -> String? {
        let fd: Int32
        do { fd = try folder.open(name, O_RDONLY | O_NONBLOCK) } catch let e as SystemError where [ENOENT, ENOTDIR, ELOOP].contains(e.errno) {
            return nil
        } catch let e as PhotomemoError where e.code == .badPath { return nil }  // a link
        defer { close(fd) }
        var st = stat()
        try syscall("fstat \(folder.path)/\(name)", blocking: { fstat(fd, &st) })
        guard st.st_mode & S_IFMT == S_IFREG, UInt64(st.st_dev) == expected.dev, UInt64(st.st_ino) == expected.ino,
              Int64(st.st_size) == expected.size else { return nil }
        return try SHA256.hex(ofOpenFile: fd, path: folder.path + "/" + name, size: expected.size)
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// A name that is not UTF-8, shown: printable ASCII as it is, every other byte and the
    /// backslash itself as `\xHH`. One way only, so two names never show alike.
    static func shown(_ bytes: [UInt8]) -> String {
        bytes.map { $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C ? String(UnicodeScalar($0)) : String(format: "\\x%02X", $0) }.joined()
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
