import Foundation
import Glibc
import Testing
@testable import PhotomemoCore
@testable import StageKit

/// `OpenFolder`: nothing is reached through a link, nothing outside the folder is named.
/// `openBeneath` is tried both ways: openat2 (this kernel has it) and the openat walk
/// used where it is missing.
@Suite struct OpenFolderTests {
    let dir = NSTemporaryDirectory() + "pm-folder-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    /// dir/in/a/photo.jpg, dir/out/secret, and dir/in/link -> dir/out.
    func layout() throws -> OpenFolder {
        for d in ["in/a", "out"] { try FileManager.default.createDirectory(atPath: dir + "/" + d, withIntermediateDirectories: true) }
        try Data("photo".utf8).write(to: URL(fileURLWithPath: dir + "/in/a/photo.jpg"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: dir + "/out/secret"))
        #expect(symlink(dir + "/out", dir + "/in/link") == 0)
        #expect(symlink(dir + "/out/secret", dir + "/in/a/leaf") == 0)
        return try OpenFolder(dir + "/in")
    }

    func errno(_ body: () throws -> Int32) -> Int32? {
        do {
            close(try body())
            return nil
        } catch let e as SystemError {
            return e.errno
        } catch {
            return -1
        }
    }

    @Test func openBeneathFollowsNoLinkAndLeavesNoFolder() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let folder = try layout()
        let ways: [(String, (String) throws -> Int32)] = [
            ("openat2", { try folder.openBeneath($0, O_RDONLY) }),
            ("walk", { try folder.walk($0.split(separator: "/").map(String.init), O_RDONLY, $0) }),
        ]
        for (way, open) in ways {
            #expect(errno { try open("a/photo.jpg") } == nil, "\(way)")
            #expect([ELOOP, EXDEV, ENOTDIR].contains(errno { try open("link/secret") } ?? 0), "\(way): a linked folder")
            #expect([ELOOP, EXDEV].contains(errno { try open("a/leaf") } ?? 0), "\(way): a linked file")
        }
        #expect(errno { try folder.openBeneath("../out/secret", O_RDONLY) } == EXDEV)
        #expect(errno { try folder.openBeneath(dir + "/out/secret", O_RDONLY) } == EXDEV, "an absolute path is beneath nothing")
    }

    @Test func filesAreMadeUnderRandomNamesAndLinksAreRefused() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let folder = try layout()
        let (a, first) = try folder.makeTemp(for: "page.html")
        let (b, second) = try folder.makeTemp(for: "page.html")
        close(a)
        close(b)
        #expect(first != second && first.hasPrefix(".page.html.") && first.hasSuffix(".part"))
        try folder.write(Data("new".utf8), to: "link")  // replaces the link, not what it points at
        #expect(try String(contentsOfFile: dir + "/out/secret", encoding: .utf8) == "secret")
        #expect(try String(contentsOfFile: dir + "/in/link", encoding: .utf8) == "new")
        #expect(throws: PhotomemoError.self) { try folder.subfolder("a/..", create: false) }
        #expect(throws: PhotomemoError.self) { try folder.open("a/leaf", O_RDONLY) }
        #expect(symlink(dir + "/out/made", dir + "/in/lock") == 0)
        #expect(throws: PhotomemoError.self) { try folder.open("lock", O_RDWR | O_CREAT) }
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/made"))
        #expect(symlink(dir + "/out", dir + "/in/r") == 0)
        #expect(throws: PhotomemoError.self) { try folder.subfolder("r", create: true) }
        #expect(throws: PhotomemoError.self) { try OpenFolder(dir + "/in/r") }
        try folder.remove("r")
        #expect(FileManager.default.fileExists(atPath: dir + "/out/secret"))
    }
}
