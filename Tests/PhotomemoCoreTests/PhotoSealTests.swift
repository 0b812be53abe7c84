import Foundation
import Glibc
import Testing
@testable import PhotomemoCore
@testable import StageKit

/// Which photos a stage trusts intake's hash for (`PhotoSeal`). Each file is read against
/// a recorded hash that is wrong on purpose: a sealed file is read without hashing (so
/// the wrong hash goes unnoticed); every other file is hashed and refused.
@Suite struct PhotoSealTests {
    let dir = NSTemporaryDirectory() + "pm-seal-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let wrongHash = String(repeating: "0", count: 64)

    /// A fresh daemon-owned 0644 photo and the seal intake would record for it.
    func photo(_ name: String) throws -> (path: String, seal: String) {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/" + name
        try Data("photo bytes".utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o644) == 0)
        var st = stat()
        #expect(lstat(path, &st) == 0)
        return (path, PhotoSeal.seal(st))
    }

    func isHashed(_ path: String, _ seal: String?) -> Bool {
        do {
            _ = try PhotoBytes.read(PhotoFile(path, beneath: dir, owner: nil, seal: nil, maxBytes: 1 << 20), sha256: wrongHash, seal: seal)
            return false
        } catch let e as PhotomemoError {
            #expect(e.message.hasPrefix("photo changed after it was taken"), "\(e.message)")
            return true
        } catch {
            Issue.record("\(error)")
            return true
        }
    }

    @Test func theDaemonsOwnUnchangedFileIsTrusted() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = try photo("sealed.jpg")
        #expect(!isHashed(p.path, p.seal))
        #expect(isHashed(p.path, nil), "no seal recorded: not sealed")
    }

    @Test func aFileReplacedOrRewrittenSinceIntakeIsHashed() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let renamed = try photo("renamed.jpg")
        try Data("other bytes".utf8).write(to: URL(fileURLWithPath: dir + "/new"))
        #expect(rename(dir + "/new", renamed.path) == 0)
        #expect(isHashed(renamed.path, renamed.seal))
        let rewritten = try photo("rewritten.jpg")
        try Data("longer photo bytes".utf8).write(to: URL(fileURLWithPath: rewritten.path))
        #expect(isHashed(rewritten.path, rewritten.seal))
    }

    /// Rewritten in place at the same size with its mtime put back (as `cp -p` over a
    /// recycled inode, or a share writer mapped to the daemon's uid, would leave it): only
    /// the ctime tells, and it does.
    @Test func aSameSizeRewriteWithTheMtimePutBackIsHashed() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = try photo("restored.jpg")
        var before = stat()
        #expect(stat(p.path, &before) == 0)
        let fd = open(p.path, O_WRONLY)
        #expect(fd >= 0)
        #expect(pwrite(fd, "PHOTO", 5, 0) == 5)
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        close(fd)
        var after = stat()
        #expect(stat(p.path, &after) == 0)
        #expect(PhotoSeal.identity(after) == PhotoSeal.identity(before), "size and mtime are back")
        #expect(isHashed(p.path, p.seal))
        // A chmod that changes nothing still moves the ctime: hashed too.
        let q = try photo("chmod.jpg")
        #expect(chmod(q.path, 0o644) == 0)
        #expect(isHashed(q.path, q.seal))
    }

    @Test func aFileOthersCouldWriteIsHashed() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Group- or other-writable: another uid may hold a descriptor open for writing.
        for mode: mode_t in [0o664, 0o646] {
            let p = try photo("mode-\(String(mode, radix: 8)).jpg")
            #expect(chmod(p.path, mode) == 0)
            #expect(isHashed(p.path, p.seal), "mode \(String(mode, radix: 8))")
        }
        // A second name: writable through a folder the daemon does not control.
        let linked = try photo("linked.jpg")
        #expect(link(linked.path, dir + "/second-name") == 0)
        #expect(isHashed(linked.path, linked.seal))
        // Another uid's file (tests run as root, who may give it away).
        if geteuid() == 0 {
            let theirs = try photo("theirs.jpg")
            #expect(chown(theirs.path, 65534, 65534) == 0)
            #expect(isHashed(theirs.path, theirs.seal))
        }
    }

    /// A sealed photo grown since intake took it (sparse, to a terabyte) is not the photo:
    /// refused as it is opened, before anything reads it (upload copied it to its end).
    @Test func aSealedPhotoOfAnotherSizeIsRefusedAsItIsOpened() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = try photo("grown.jpg")
        #expect(truncate(p.path, 1 << 40) == 0)
        #expect(PhotoSeal.size(p.seal) == Int64("photo bytes".utf8.count))
        #expect(throws: PhotomemoError.self) { try PhotoFile(p.path, beneath: dir, owner: nil, seal: p.seal, maxBytes: .max) }
    }
}
