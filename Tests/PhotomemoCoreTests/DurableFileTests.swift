import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Testing

/// Several files into one folder (compress's renditions): each whole under its name, none
/// outside the folder, no temp file left by a write that failed.
@Suite struct DurableFileTests {
    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "durable-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func severalFilesInOneFolderAreEachWhole() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("old".utf8).write(to: URL(fileURLWithPath: dir + "/b"))
        let files = [(data: Data(repeating: 7, count: 300_000), path: dir + "/a"), (data: Data("new".utf8), path: dir + "/b"),
                     (data: Data(), path: dir + "/c")]
        try DurableFile.write(files, in: dir)
        for f in files { #expect(FileManager.default.contents(atPath: f.path) == f.data, "\(f.path)") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["a", "b", "c"])
    }

    /// `create` writes only where no entry is (a file, a dangling link): the one there
    /// stays as it was, and no temp file is left.
    @Test func createNeverReplacesAnEntry() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try DurableFile.create(Data("first".utf8), at: dir + "/r.json"))
        #expect(try !DurableFile.create(Data("second".utf8), at: dir + "/r.json"))
        #expect(symlink(dir + "/nowhere", dir + "/link.json") == 0)
        #expect(try !DurableFile.create(Data("third".utf8), at: dir + "/link.json"))
        #expect(FileManager.default.contents(atPath: dir + "/r.json") == Data("first".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["link.json", "r.json"])
    }

    @Test func aFileOutsideTheFolderIsRefusedBeforeAnyIsWritten() throws {
        let dir = try scratch(), other = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir); try? FileManager.default.removeItem(atPath: other) }
        #expect(throws: PhotomemoError.self) {
            try DurableFile.write([(Data("a".utf8), dir + "/a"), (Data("b".utf8), other + "/b")], in: dir)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: other).isEmpty)
    }

    /// A name that cannot be replaced (a folder stands there): that write fails, the others
    /// are whole, and no temp file is left in the folder.
    @Test func aFailedWriteLeavesNoTempFile() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/taken", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: dir + "/taken/x", withIntermediateDirectories: false)
        #expect(throws: SystemError.self) {
            try DurableFile.write([(Data("a".utf8), dir + "/a"), (Data("t".utf8), dir + "/taken")], in: dir)
        }
        #expect(FileManager.default.contents(atPath: dir + "/a") == Data("a".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["a", "taken"])
    }

    /// The store's `sha256/ab/cd` and compress's folders: each missing level made (its
    /// parent fsync'd, which only a power cut would show), the existing ones left.
    @Test func missingFoldersAreMadeLevelByLevel() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try DurableFile.makeFolders(dir + "/sha256/ab/cd") == [dir + "/sha256", dir + "/sha256/ab", dir + "/sha256/ab/cd"])
        #expect(try DurableFile.makeFolders(dir + "/sha256/ab/ef") == [dir + "/sha256/ab/ef"])
        #expect(try DurableFile.makeFolders(dir + "/sha256/ab/cd") == [])
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: dir + "/sha256/ab/ef", isDirectory: &isDir) && isDir.boolValue)
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/file"))
        #expect(throws: SystemError.self) { try DurableFile.makeFolders(dir + "/file/sub") }
    }
}
