import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// The embedded default: a content-addressed folder (`HOME/store/sha256/ab/cd/<hex>`).
/// A put copies to `.tmp/` in the same filesystem while hashing (or hard-links a file the
/// caller releases, see `put(_:releasing:)`), fsyncs, checks the SHA-256, then renames into
/// place and fsyncs the folder: a crash leaves at most a temp file, never a partial object
/// under a final key.
public struct LocalStore: AssetStore {
    public let root: String
    public var name: String { "file:" + root }
    var tmp: String { root + "/.tmp" }

    public init(root: String) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root + "/.tmp", withIntermediateDirectories: true)
        removeStaleTemps(olderThan: 3600)
    }

    func path(_ key: String) -> String { root + "/" + key }

    public func head(key: String) throws -> Int64? {
        var st = stat()
        return stat(path(key), &st) == 0 ? Int64(st.st_size) : nil
    }

    /// `fresh` changes nothing here: asking is a stat.
    /// `releasing`: the caller removes `source` once stored, so the object may be the file
    /// itself (a hard link): when only admins can write it (`PhotoSeal.onlyAdminsCanWrite`),
    /// on this filesystem. Any other file could be changed under its content address later
    /// (through another name or a descriptor opened for writing), so it is copied. A linked
    /// file is hashed unless the descriptor's file holds `seal` (`PhotoSeal`, ctime
    /// included): then these are the bytes intake hashed, and only fsync is left to do.
    @discardableResult
    public func put(_ source: Int32, name file: String, key: String, sha256: String, contentType: String, metadata: [String: String],
                    fresh: Bool, releasing mayLink: Bool, seal: String?) throws -> Bool {
        let final = path(key)
        var st = stat()
        // Checked: a zeroed stat would read as root's empty file, one only admins can write.
        do { try syscall("fstat", blocking: { fstat(source, &st) }) } catch let e as SystemError {
            throw StoreFailure(.permanent, "cannot read \(file): \(e.reason)")
        }
        if let existing = try head(key: key), existing == Int64(st.st_size) { return false }
        do {
            try DurableFile.makeFolders((final as NSString).deletingLastPathComponent)
            let temp = tmp + "/\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
            // Links the inode behind `source` (the one fstat and the hash saw), not whatever
            // the name points to by now: a file renamed over it meanwhile is never stored.
            let linked = mayLink && PhotoSeal.onlyAdminsCanWrite(st)
                && linkat(AT_FDCWD, "/proc/self/fd/\(source)", AT_FDCWD, temp, AT_SYMLINK_FOLLOW) == 0
            let actual: String
            do {
                if linked && PhotoSeal.holds(st, of: source, taken: seal) {
                    try syscall("fsync \(file)", blocking: { fsync(source) })
                    actual = sha256
                } else {
                    actual = try linked ? Self.hashAndSync(source, path: file, size: Int64(st.st_size))
                        : Self.copy(source, name: file, to: temp, size: Int64(st.st_size))
                }
            } catch {
                unlink(temp)
                throw error
            }
            guard actual == sha256 else {
                unlink(temp)
                throw StoreFailure(.permanent, "\(file) changed since it was hashed: its bytes no longer have sha256 \(sha256)")
            }
            if linked { fchmod(source, 0o640) }  // as a copy would be: the store's, not the dropper's mode
            Failpoint.hit("store.before_rename")
            try syscall("rename \(temp)", blocking: { rename(temp, final) })
            try DurableFile.fsyncFolder((final as NSString).deletingLastPathComponent)
            return true
        } catch let e as StoreFailure {
            throw e
        } catch {
            // Disk full, permissions: the job's own trouble, worth retrying.
            throw StoreFailure(.transient, "local store \(root): \(error)", code: PhotomemoError.Code.of(error))
        }
    }

    /// Copies the `size` bytes of `source` (`name`, in errors) to a new file `temp` while
    /// hashing, fsyncs it; the hex digest (also what `backup` and `restore` copy files with).
    public static func copy(_ source: Int32, name: String, to temp: String, size: Int64) throws -> String {
        try syscall("seek \(temp)", blocking: { lseek(source, 0, SEEK_SET) })
        let fd = try syscall("open \(temp)", blocking: { open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640) })
        defer { close(fd) }
        var hash = SHA256()
        try readChunks(source, path: name, size: size) { chunk in
            hash.update(chunk)
            var off = 0
            while off < chunk.count {
                off += try syscall("write \(temp)", blocking: { Glibc.write(fd, chunk.baseAddress! + off, chunk.count - off) })
            }
        }
        try syscall("fsync \(temp)", blocking: { fsync(fd) })
        return hash.finalizeHex()
    }

    /// A linked file: its hash (it is the very inode stored) and its data made durable.
    static func hashAndSync(_ fd: Int32, path: String, size: Int64) throws -> String {
        try syscall("seek \(path)", blocking: { lseek(fd, 0, SEEK_SET) })
        var hash = SHA256()
        try readChunks(fd, path: path, size: size) { hash.update($0) }
        try syscall("fsync \(path)", blocking: { fsync(fd) })
        return hash.finalizeHex()
    }

    /// The `size` bytes the file had when the put began (`readSized`): a file grown as it is
    /// copied (sparse, to a terabyte) is refused, not copied on until the disk is full.
    static func readChunks(_ fd: Int32, path: String, size: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard try readSized(fd, path: path, size: size, body) else {
            throw StoreFailure(.permanent, "\(path) changed as it was stored: it is no longer \(size) bytes")
        }
    }

    public func get(key: String, to file: String) throws {
        guard let data = FileManager.default.contents(atPath: path(key)) else {
            throw StoreFailure(.permanent, "no object \(key) in \(name)")
        }
        try DurableFile.write(data, to: file)
    }

    public func read(key: String, offset: Int64, count: Int) throws -> [UInt8] {
        let file = path(key)
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreFailure(.permanent, "no object \(key) in \(name)") }
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = try out.withUnsafeMutableBytes { buf in
                try syscall("read \(file)", blocking: { pread(fd, buf.baseAddress! + got, count - got, off_t(offset) + off_t(got)) })
            }
            if n == 0 { break }
            got += n
        }
        out.removeLast(count - got)
        return out
    }

    public func delete(key: String) throws {
        do { try syscall("unlink", blocking: { unlink(path(key)) }) } catch let e as SystemError {
            // Gone already is deleted (as S3 answers): a key released twice is not an error.
            guard e.errno != ENOENT else { return }
            throw StoreFailure(.transient, "cannot delete \(key): \(e.reason)")
        }
    }

    public func list(prefix: String) throws -> [String] {
        guard let e = FileManager.default.enumerator(atPath: root) else { return [] }
        var out: [String] = []
        while let rel = e.nextObject() as? String {
            if rel.hasPrefix(".tmp") { e.skipDescendants(); continue }
            if rel.hasPrefix(prefix), (e.fileAttributes?[.type] as? FileAttributeType) == .typeRegular { out.append(rel) }
        }
        return out.sorted()
    }

    /// Temp files a crash left behind (never under a final key).
    func removeStaleTemps(olderThan seconds: Double) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] {
            let p = tmp + "/" + name
            if let m = (try? FileManager.default.attributesOfItem(atPath: p))?[.modificationDate] as? Date,
               Date().timeIntervalSince(m) > seconds {
                unlink(p)
            }
        }
    }
}
