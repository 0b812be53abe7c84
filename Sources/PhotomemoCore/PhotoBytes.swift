import Glibc
import StageKit

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

    /// Reads the opened `photo` (`PhotoFile`: the file taken, within the byte limit),
    /// checking its bytes against `sha256` (hex) unless the file is sealed against `seal`
    /// (`PhotoSeal`: nobody but an admin can have changed it since intake hashed it).
    /// Changed bytes are `.badImage`, without their hash or size; a failing read is `.io`.
    public static func read(_ photo: PhotoFile, sha256 expected: String?, seal: String?) throws -> PhotoBytes {
        guard let expected else {
            throw PhotomemoError(.badImage, "photo has no recorded sha256, so its bytes cannot be checked")
        }
        let size = Int64(photo.stat.st_size)
        // One byte more than fstat says, to see a file that grew since.
        let (bytes, total) = try readUpTo(Int(size) + 1, photo.fd, photo.path, fileSize: size)
        if total == Int(size), PhotoSeal.holds(photo.stat, of: photo.fd, taken: seal) { return bytes }
        var h = SHA256()
        h.update(bytes.bytes)
        guard total == Int(size), h.finalizeHex() == expected else {
            throw PhotomemoError(.badImage, "photo changed after it was taken: its bytes are not the ones hashed then")
        }
        return bytes
    }

    /// The first `count` bytes of the opened `photo` when it is sealed against `seal` (so
    /// they are intake's), for reading headers only; nil when it is not: read it whole,
    /// checked, with `read`.
    public static func head(_ photo: PhotoFile, count: Int, seal: String?) throws -> PhotoBytes? {
        guard PhotoSeal.holds(photo.stat, of: photo.fd, taken: seal) else { return nil }
        let size = Int64(photo.stat.st_size)
        return try readUpTo(Int(min(Int64(count), size)), photo.fd, photo.path, fileSize: size).0
    }

    /// Up to `capacity` bytes from the file's start (pread: a descriptor read before, as
    /// for `head`, reads the same bytes again), and how many came; the photo holds at most
    /// `fileSize` of them.
    static func readUpTo(_ capacity: Int, _ fd: Int32, _ path: String, fileSize: Int64) throws -> (PhotoBytes, Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
        var total = 0
        while total < capacity {
            let n: Int
            do { n = try syscall("read \(path)", blocking: { pread(fd, buffer.baseAddress! + total, capacity - total, off_t(total)) }) } catch {
                buffer.deallocate()
                throw PhotomemoError(.io, "cannot \(error)")
            }
            if n == 0 { break }
            total += n
        }
        return (PhotoBytes(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(total, Int(fileSize))]), fileSize: fileSize), total)
    }
}
