import Glibc

/// A photo's bytes, read once through one descriptor and checked against the SHA-256
/// intake recorded, so what a stage probes or decodes is exactly what was hashed.
///
/// Why memory and not a descriptor handed to libvips: a descriptor reads the file while
/// decoding, so a writer could change it after any check (size, mtime, inode, even a hash
/// made through the same descriptor). A buffer hashed and then decoded cannot change in
/// between. And libvips never sees a file name, so `t.jpg[n=-1]` is a name, not options.
/// Measured on a 12 MP JPEG (4.5 MB, debug build, shrink-on-load 4): decode from this
/// buffer 77-87 ms CPU, from a descriptor 69-78 ms; the difference is the read + SHA-256
/// (~5 ms), which a descriptor would need as well to tie the pixels to intake's hash.
public final class PhotoBytes: @unchecked Sendable {  // immutable after init
    public let bytes: UnsafeRawBufferPointer
    /// The file's size when read: `count` unless these are only its first bytes (`head`).
    public let fileSize: Int64

    init(_ bytes: UnsafeMutableRawBufferPointer, fileSize: Int64) {
        self.bytes = UnsafeRawBufferPointer(bytes)
        self.fileSize = fileSize
    }
    deinit { bytes.deallocate() }

    public var count: Int { bytes.count }

    /// Reads `path` (a regular file, at most `maxBytes`), checking its bytes against
    /// `sha256` (hex) unless the file is sealed against `seal` (`PhotoSeal`: nobody but
    /// an admin can have changed it since intake hashed it). Permanent problems are
    /// `.badImage` (changed, too large, not a file) or `.notFound` (gone); a failing read
    /// is `.io` (worth a retry).
    public static func read(_ path: String, sha256 expected: String?, seal: String?, maxBytes: Int64) throws -> PhotoBytes {
        guard let expected else {
            throw PhotomemoError(.badImage, "photo has no recorded sha256, so its bytes cannot be checked")
        }
        let fd = try openNoFollow(path)
        defer { close(fd) }
        let st = try regularFile(fd, path, maxBytes: maxBytes)
        let size = Int64(st.st_size)
        // One byte more than fstat says, to see a file that grew since.
        let (photo, total) = try readUpTo(Int(size) + 1, fd, path, fileSize: size)
        if total == Int(size), PhotoSeal.holds(st, of: fd, taken: seal) { return photo }
        var h = SHA256()
        h.update(photo.bytes)
        let actual = h.finalizeHex()
        guard total == Int(size), actual == expected else {
            throw PhotomemoError(.badImage, "photo changed after it was taken (sha256 \(actual.prefix(12))… of \(total) bytes, taken as \(expected.prefix(12))…)")
        }
        return photo
    }

    /// The first `count` bytes of `path` (a regular file, at most `maxBytes`) when it is
    /// sealed against `seal` (so they are intake's), for reading headers only; nil when it
    /// is not: read it whole, checked, with `read`.
    public static func head(_ path: String, count: Int, seal: String?, maxBytes: Int64) throws -> PhotoBytes? {
        let fd = try openNoFollow(path)
        defer { close(fd) }
        let st = try regularFile(fd, path, maxBytes: maxBytes)
        guard PhotoSeal.holds(st, of: fd, taken: seal) else { return nil }
        return try readUpTo(Int(min(Int64(count), Int64(st.st_size))), fd, path, fileSize: Int64(st.st_size)).0
    }

    /// fstat of the opened photo: a regular file within the byte limit.
    static func regularFile(_ fd: Int32, _ path: String, maxBytes: Int64) throws -> Glibc.stat {
        var st = Glibc.stat()
        guard fstat(fd, &st) == 0 else { throw PhotomemoError(.io, "cannot fstat \(path): \(String(cString: strerror(errno)))") }
        guard st.st_mode & S_IFMT == S_IFREG else { throw PhotomemoError(.badImage, "photo is not a regular file: \(path)") }
        guard Int64(st.st_size) <= maxBytes else {
            throw PhotomemoError(.badImage, "file is \(st.st_size) bytes, over max_bytes (\(maxBytes))")
        }
        return st
    }

    /// Up to `capacity` bytes from the descriptor's position, and how many came; the
    /// photo holds at most `fileSize` of them.
    static func readUpTo(_ capacity: Int, _ fd: Int32, _ path: String, fileSize: Int64) throws -> (PhotoBytes, Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
        var total = 0
        while total < capacity {
            let n = Glibc.read(fd, buffer.baseAddress! + total, capacity - total)
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                buffer.deallocate()
                throw PhotomemoError(.io, "cannot read \(path): \(String(cString: strerror(e)))")
            }
            total += n
        }
        return (PhotoBytes(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(total, Int(fileSize))]), fileSize: fileSize), total)
    }

    /// O_NOFOLLOW: a link swapped in after intake is never followed (intake takes no
    /// links, and stores an allowed root's photo by its resolved path).
    static func openNoFollow(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw PhotomemoError(.notFound, "photo file is gone: \(path)") }
            if e == ELOOP { throw PhotomemoError(.badImage, "photo is a symlink: \(path)") }
            throw PhotomemoError(.io, "cannot open \(path): \(String(cString: strerror(e)))")
        }
        return fd
    }
}
