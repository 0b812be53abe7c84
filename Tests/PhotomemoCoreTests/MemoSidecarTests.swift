import Foundation
import Glibc
import Testing
@testable import PhotomemoCore
@testable import StageKit

@Suite struct MemoSidecarTests {
    @Test func sidecarNamesOfAPhotoInItsOwnFolderMostSpecificFirst() {
        #expect(MemoSidecar.candidates(forPhoto: "DCIM/IMG_1.jpg") == [
            "DCIM/IMG_1.jpg.json", "DCIM/IMG_1.jpg.JSON", "DCIM/IMG_1.json", "DCIM/IMG_1.JSON",
            "DCIM/IMG_1.jpg.xmp", "DCIM/IMG_1.jpg.XMP", "DCIM/IMG_1.xmp", "DCIM/IMG_1.XMP"])
        #expect(MemoSidecar.photoNames(forSidecar: "IMG_1.HEIC.xmp") == ["IMG_1.HEIC"])
        #expect(MemoSidecar.photoNames(forSidecar: "a/IMG_1.XMP")?.contains("a/IMG_1.heic") == true)
        #expect(MemoSidecar.photoNames(forSidecar: "a/IMG_1.XMP")?.contains("a/IMG_1.JPG") == true)
        #expect(MemoSidecar.photoNames(forSidecar: "notes.txt") == nil)
        #expect(MemoSidecar.photoNames(forSidecar: ".json") == nil)
    }

    func json(_ s: String) throws -> MemoJob {
        try MemoSidecar.parse(Array(s.utf8), xmp: false, photo: "IMG_1.jpg", owner: "alice")
    }

    @Test func aJSONSidecarIsAMemoLineWithoutPhoto() throws {
        let m = try json(#"{"memo": "lunch", "type": "Houses", "fields": {"price": 1200, "tags": ["a"]}, "key": "k1"}"#)
        #expect(m == {
            var j = MemoJob(photo: "IMG_1.jpg", memo: "lunch", type: "Houses", fields: ["price": .int(1200), "tags": .array([.string("a")])],
                            owner: "alice", key: "k1")
            j.record = nil
            return j
        }())
        #expect(try json("{}").type == "Memo")
    }

    /// The memo line's own rules and words, and no photo, owner or record of its own.
    @Test(arguments: [
        (#"{"memo": "x""#, "not valid JSON"),
        (#"{"fields": {"x": null}}"#, "field \"x\" must be a string, number, bool, list of strings or reference"),
        (#"{"fields": {"id": 1}}"#, "built-in record key"),
        (#"{"memo": "a\u0000b"}"#, "NUL"),
        (#"{"photo": "other.jpg"}"#, "\"photo\" is not a sidecar's key"),
        (#"{"owner": "root"}"#, "\"owner\" is not a sidecar's key"),
        (#"{"colour": "red"}"#, "unknown key \"colour\""),
    ])
    func badJSONSidecars(_ text: String, _ message: String) {
        #expect {
            try json(text)
        } throws: { e in
            (e as? PhotomemoError)?.code == .badJob && (e as? PhotomemoError)?.message.contains(message) == true
        }
    }

    /// A 100 MB sidecar (and a 1 TB one: both sparse) is refused by its size on the open
    /// file, without a byte read: fast, and no buffer of its size.
    @Test func aHugeSidecarIsRefusedUnread() throws {
        let dir = NSTemporaryDirectory() + "pm-sidecar-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for size: Int64 in [100 << 20, 1 << 40] {
            let path = dir + "/IMG_1.jpg.json"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(fd >= 0 && ftruncate(fd, off_t(size)) == 0)
            close(fd)
            let start = Date()
            #expect {
                try MemoSidecar.read(in: OpenFolder(dir), "IMG_1.jpg.json", photo: "IMG_1.jpg", owner: nil)
            } throws: { e in
                (e as? PhotomemoError)?.message == "is \(size) bytes, over the \(MemoSidecar.maxBytes) a memo sidecar may have"
            }
            #expect(Date().timeIntervalSince(start) < 0.05)
        }
    }

    @Test func aSidecarOfAnotherOwnerDoesNotCount() throws {
        let dir = NSTemporaryDirectory() + "pm-sidecar-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["IMG_1.jpg", "IMG_1.jpg.json", "IMG_1.xmp"] { _ = FileManager.default.createFile(atPath: dir + "/" + name, contents: Data("{}".utf8)) }
        #expect(try MemoSidecar.locate(in: OpenFolder(dir), photo: "IMG_1.jpg", uid: getuid())?.name == "IMG_1.jpg.json")
        guard getuid() == 0 else { return }
        chown(dir + "/IMG_1.jpg.json", 65534, 65534)
        #expect(try MemoSidecar.locate(in: OpenFolder(dir), photo: "IMG_1.jpg", uid: 0)?.name == "IMG_1.xmp")
        #expect(try MemoSidecar.releasedWith(photo: "IMG_1.jpg", uid: 0, in: OpenFolder(dir)) == "IMG_1.xmp")
        _ = FileManager.default.createFile(atPath: dir + "/IMG_1.heic", contents: Data())
        #expect(try MemoSidecar.releasedWith(photo: "IMG_1.jpg", uid: 0, in: OpenFolder(dir)) == nil, "IMG_1.heic still uses IMG_1.xmp")
    }
}
