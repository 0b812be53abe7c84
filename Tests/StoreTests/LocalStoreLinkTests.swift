import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Testing
@testable import Stores

/// `put(releasing:)`: the daemon's own file with one name becomes the object itself (no
/// copy); a file with another name stays a copy, so nothing outside the store can change
/// an object under its content address.
@Suite struct LocalStoreLinkTests {
    func inode(_ path: String) -> UInt64 {
        var st = stat()
        return lstat(path, &st) == 0 ? UInt64(st.st_ino) : 0
    }

    @Test func aReleasedFileIsLinkedNotCopied() throws {
        let root = try tempDir("store")
        let store = try LocalStore(root: root)
        let (photo, sha) = photoFile("Nikon_D70.jpg")
        let file = root + "-in.jpg"  // beside the store: the same filesystem
        defer { unlink(file) }
        try FileManager.default.copyItem(atPath: photo, toPath: file)
        chmod(file, 0o644)
        let key = LocalStore.key(sha256: sha)
        #expect(try store.put(file: file, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:], fresh: false, releasing: true, seal: nil))
        #expect(inode(root + "/" + key) == inode(file))
        let perms = try FileManager.default.attributesOfItem(atPath: root + "/" + key)[.posixPermissions] as? Int
        #expect(perms == 0o640)
        #expect(try SHA256.hexOfFile(atPath: root + "/" + key).hex == sha)
    }

    @Test(arguments: ["another name", "writable by others"])
    func aFileOthersCouldChangeIsCopied(_ why: String) throws {
        let root = try tempDir("store")
        let store = try LocalStore(root: root)
        let (photo, sha) = photoFile("Nikon_D70.jpg")
        let file = root + "-in.jpg", other = root + "-other.jpg"
        defer { unlink(file); unlink(other) }
        try FileManager.default.copyItem(atPath: photo, toPath: file)
        chmod(file, 0o644)
        if why == "another name" { #expect(link(file, other) == 0) } else { chmod(file, 0o666) }
        let key = LocalStore.key(sha256: sha)
        #expect(try store.put(file: file, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:], fresh: false, releasing: true, seal: nil))
        #expect(inode(root + "/" + key) != inode(file))
        #expect(try SHA256.hexOfFile(atPath: root + "/" + key).hex == sha)
    }

    /// A sealed file is the bytes intake hashed: linked and fsync'd, not hashed again (so a
    /// wrong hash goes unnoticed here, on purpose). Once its ctime moves, it is hashed.
    @Test func aSealedFileIsLinkedWithoutHashingAndABrokenSealIsHashed() throws {
        let root = try tempDir("store")
        let store = try LocalStore(root: root)
        let (photo, _) = photoFile("Nikon_D70.jpg")
        let file = root + "-in.jpg"
        defer { unlink(file) }
        try FileManager.default.copyItem(atPath: photo, toPath: file)
        chmod(file, 0o644)
        var st = stat()
        #expect(lstat(file, &st) == 0)
        let wrong = String(repeating: "ab", count: 32), key = LocalStore.key(sha256: wrong)
        #expect(try store.put(file: file, key: key, sha256: wrong, contentType: "image/jpeg", metadata: [:], fresh: false,
                              releasing: true, seal: PhotoSeal.seal(st)))
        #expect(inode(root + "/" + key) == inode(file))

        let again = root + "-again.jpg"
        defer { unlink(again) }
        try FileManager.default.copyItem(atPath: photo, toPath: again)
        chmod(again, 0o644)
        #expect(lstat(again, &st) == 0)
        let seal = PhotoSeal.seal(st)
        chmod(again, 0o644)  // the same mode, a new ctime
        let other = String(repeating: "cd", count: 32)
        #expect(throws: StoreFailure.self) {
            try store.put(file: again, key: LocalStore.key(sha256: other), sha256: other, contentType: "image/jpeg",
                          metadata: [:], fresh: false, releasing: true, seal: seal)
        }
        #expect(try store.head(key: LocalStore.key(sha256: other)) == nil)
    }

    @Test func aLinkedFileThatChangedIsRefusedAndNotStored() throws {
        let root = try tempDir("store")
        let store = try LocalStore(root: root)
        let (photo, sha) = photoFile("Nikon_D70.jpg")
        let file = root + "-in.jpg"
        defer { unlink(file) }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        bytes[100] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: file))
        let key = LocalStore.key(sha256: sha)
        #expect(throws: StoreFailure.self) {
            try store.put(file: file, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:], fresh: false, releasing: true, seal: nil)
        }
        #expect(try store.head(key: key) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/.tmp").isEmpty)
    }
}

/// A descriptor fstat cannot read is refused at once, as what it is: no zeroed stat read as
/// root's empty file (one only admins can write, so linked).
@Suite struct LocalStoreUnreadableSourceTests {
    /// A source that holds more than it did when the put began (grown sparse to a terabyte
    /// while stored) was copied to its end, filling the disk: no more than its size is read.
    @Test func aSourceGrownPastItsSizeIsRefusedNotCopied() throws {
        let root = try tempDir("store")
        let file = root + "-grown.jpg"
        defer { unlink(file) }
        try Data(repeating: 7, count: 3 << 20).write(to: URL(fileURLWithPath: file))
        #expect(truncate(file, 1 << 40) == 0)
        let fd = open(file, O_RDONLY)
        defer { close(fd) }
        let started = Date()
        #expect(throws: StoreFailure.self) { try LocalStore.copy(fd, name: file, to: root + "/grown", size: 3 << 20) }
        #expect(Date().timeIntervalSince(started) < 2, "read past the size it was given")
        var st = stat()
        #expect(stat(root + "/grown", &st) != 0 || st.st_size <= 3 << 20)
    }

    @Test func aSourceFstatCannotReadIsRefusedNamingTheFile() throws {
        let root = try tempDir("store")
        let store = try LocalStore(root: root)
        let sha = String(repeating: "0", count: 64)
        do {
            try store.put(-1, name: "gone.jpg", key: LocalStore.key(sha256: sha), sha256: sha, contentType: "image/jpeg", metadata: [:],
                          fresh: false, releasing: true, seal: nil)
            Issue.record("stored from a closed descriptor")
        } catch let e as StoreFailure {
            #expect("\(e)".contains("cannot read gone.jpg: Bad file descriptor"))
        }
    }
}
