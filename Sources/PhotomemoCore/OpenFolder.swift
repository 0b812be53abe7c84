import CPosix
import Foundation
import Glibc
import StageKit

/// A folder held by its descriptor, for writing into a folder others may write too (a
/// root-run `photomemo gallery DIR` or `asset -o FILE`): everything is made, read, renamed
/// and removed relative to the descriptor, by one name at a time, and no symlink is ever
/// followed — not the folder itself, not a subfolder, not a file. New files are created
/// O_EXCL under a name from the kernel's random bytes, so a link planted under a guessed
/// temp name is never written through, then renamed into place (`renameat` replaces a
/// link, never follows it). Names with a '/' or that are "." or ".." are refused, so a
/// forged name (a manifest, a record) cannot reach outside the folder.
public final class OpenFolder: @unchecked Sendable {  // immutable; the descriptor closes with it
    public let path: String
    public let fd: Int32

    /// Opens `path` as a folder. A symlink is refused unless `followLink` (an admin's
    /// configured root, such as the inbox or an --allow-root).
    public init(_ path: String, followLink: Bool = false) throws {
        self.path = path
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followLink ? 0 : O_NOFOLLOW)
        fd = try Self.refusingLink(path) { try syscall("open \(path)", blocking: { Glibc.open(path, flags) }) }
    }

    /// Takes over `fd`, an open folder (closed with this).
    init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// The folder `name` in this one, made (0755 less the umask) if `create` and missing.
    public func subfolder(_ name: String, create: Bool) throws -> OpenFolder {
        let full = try self.full(name)
        if create {
            do { try syscall("mkdir \(full)", blocking: { mkdirat(fd, name, 0o755) }) } catch let e as SystemError where e.errno == EEXIST {}
        }
        let sub = try Self.refusingLink(full) {
            try syscall("open \(full)", blocking: { openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) })
        }
        return OpenFolder(path: full, fd: sub)
    }

    /// Opens the file `name` (never through a link: ELOOP). Add O_CREAT to make it.
    public func open(_ name: String, _ flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        let full = try self.full(name)
        return try Self.refusingLink(full) {
            try syscall("open \(full)", blocking: { openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode) })
        }
    }

    /// lstat of `name` (a link is described, not followed); nil when there is none.
    public func entry(_ name: String) -> stat? {
        var st = stat()
        guard (try? full(name)) != nil, fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return st
    }

    /// The bytes of the regular file `name`, or nil when there is none (or it is a link,
    /// a FIFO, a folder...).
    public func contents(_ name: String) throws -> [UInt8]? {
        guard let file = try? open(name, O_RDONLY | O_NONBLOCK) else { return nil }
        defer { close(file) }
        var st = stat()
        guard fstat(file, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try syscall("read \(path)/\(name)", blocking: { chunk.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) } })
            if n == 0 { return out }
            out += chunk[0..<n]
        }
    }

    /// A new, empty file for the content of `name`: ".NAME.RANDOM.part", created O_EXCL.
    /// Returns its descriptor and name; `commit` renames it to `name`.
    public func makeTemp(for name: String, mode: mode_t = 0o644) throws -> (fd: Int32, name: String) {
        _ = try full(name)
        var bytes = [UInt8](repeating: 0, count: 12)
        try syscall("getrandom", blocking: { pm_random_bytes(&bytes, bytes.count) })
        let temp = "." + name.prefix(200) + "." + SHA256.hex(bytes: bytes) + ".part"
        return (try open(temp, O_WRONLY | O_CREAT | O_EXCL, mode: mode), temp)
    }

    /// Renames `temp` (a name in this folder) to `name`, replacing what was there.
    public func commit(_ temp: String, as name: String) throws {
        let (from, to) = (try full(temp), try full(name))
        try syscall("rename \(from) to \(to)", blocking: { renameat(fd, temp, fd, name) })
    }

    /// Writes `bytes` to `name` through a temp file and a rename.
    public func write(_ bytes: Data, to name: String, mode: mode_t = 0o644) throws {
        let (file, temp) = try makeTemp(for: name, mode: mode)
        do {
            defer { close(file) }
            try DurableFile.writeAll(file, bytes, path: path + "/" + temp)
        } catch {
            try? remove(temp)
            throw error
        }
        do { try commit(temp, as: name) } catch {
            try? remove(temp)
            throw error
        }
    }

    /// Removes the file (or link) `name`; one already gone is no error.
    public func remove(_ name: String) throws {
        let full = try self.full(name)
        do { try syscall("remove \(full)", blocking: { unlinkat(fd, name, 0) }) } catch let e as SystemError where e.errno == ENOENT {}
    }

    /// The names in this folder ("." and ".." left out).
    public func names() throws -> [String] {
        let copy = try syscall("dup \(path)", blocking: { fcntl(fd, F_DUPFD_CLOEXEC, 0) })
        let dir: OpaquePointer
        do { dir = try syscall("list \(path)", pointer: { fdopendir(copy) }) } catch { close(copy); throw error }
        defer { closedir(dir) }
        rewinddir(dir)
        var out: [String] = []
        while let e = readdir(dir) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { out.append(name) }
        }
        return out
    }

    /// `path/name`, once `name` is known to be one component.
    private func full(_ name: String) throws -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw PhotomemoError(.badPath, "\"\(name)\" is not a file name in \(path)")
        }
        return path + "/" + name
    }

    /// A link met by an O_NOFOLLOW open (ELOOP; ENOTDIR with O_DIRECTORY), said plainly.
    private static func refusingLink(_ path: String, _ body: () throws -> Int32) throws -> Int32 {
        do { return try body() } catch let e as SystemError where e.errno == ELOOP || e.errno == ENOTDIR {
            var st = stat()
            guard e.errno == ELOOP || (lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK) else { throw e }
            throw PhotomemoError(.badPath, "\(path) is a symlink; photomemo does not follow it here (give the real path)")
        }
    }
}
