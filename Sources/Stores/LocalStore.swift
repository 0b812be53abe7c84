import Foundation
import Glibc
import PhotomemoCore

/// The embedded default: a content-addressed folder (`HOME/store/sha256/ab/cd/<hex>`).
/// A put copies to `.tmp/` in the same filesystem while hashing, fsyncs, checks the
/// SHA-256, then renames into place and fsyncs the folder: a crash leaves at most a temp
/// file, never a partial object under a final key.
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

    @discardableResult
    public func put(file: String, key: String, sha256: String, contentType: String, metadata: [String: String]) throws -> Bool {
        let final = path(key)
        guard let source = FileHandle(forReadingAtPath: file) else {
            throw StoreFailure(.permanent, "cannot read \(file)")
        }
        defer { try? source.close() }
        var st = stat()
        fstat(source.fileDescriptor, &st)
        if let existing = try head(key: key), existing == Int64(st.st_size) { return false }
        do {
            try FileManager.default.createDirectory(atPath: (final as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let temp = tmp + "/\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
            let fd = try syscall("open \(temp)", blocking: { open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640) })
            var hash = SHA256()
            do {
                while true {
                    let chunk = try source.read(upToCount: 1 << 20) ?? Data()
                    if chunk.isEmpty { break }
                    hash.update(chunk)
                    try DurableFile.writeAll(fd, chunk, path: temp)
                }
                try syscall("fsync \(temp)", blocking: { fsync(fd) })
                close(fd)
            } catch {
                close(fd)
                unlink(temp)
                throw error
            }
            let actual = hash.finalizeHex()
            guard actual == sha256 else {
                unlink(temp)
                throw StoreFailure(.permanent, "\(file) changed since it was hashed (sha256 \(actual), expected \(sha256))")
            }
            Failpoint.hit("store.before_rename")
            try syscall("rename \(temp)", blocking: { rename(temp, final) })
            try DurableFile.fsyncFolder((final as NSString).deletingLastPathComponent)
            return true
        } catch let e as StoreFailure {
            throw e
        } catch {
            // Disk full, permissions: the job's own trouble, worth retrying.
            throw StoreFailure(.transient, "local store \(root): \(error)")
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
        if unlink(path(key)) != 0 && errno != ENOENT {
            throw StoreFailure(.transient, "cannot delete \(key): \(String(cString: strerror(errno)))")
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
