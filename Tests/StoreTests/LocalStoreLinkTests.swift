import Foundation
import Glibc
import PhotomemoCore
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
        #expect(try store.put(releasing: file, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:], fresh: false))
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
        #expect(try store.put(releasing: file, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:], fresh: false))
        #expect(inode(root + "/" + key) != inode(file))
        #expect(try SHA256.hexOfFile(atPath: root + "/" + key).hex == sha)
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
            try store.put(releasing: file, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:], fresh: false)
        }
        #expect(try store.head(key: key) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/.tmp").isEmpty)
    }
}
