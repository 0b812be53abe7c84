import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Testing
@testable import Runtime

/// Quarantine files older than retention's `failed` go with their reasons; younger stay.
@Suite struct QuarantineRetentionTests {
    @Test func removesWhatWasQuarantinedBeforeTheCutoffAndKeepsTheRest() throws {
        let dir = NSTemporaryDirectory() + "pm-quarantine-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["old.jpg", "old.jpg.reason.json", "young.jpg", "young.jpg.reason.json", "gone.jpg.reason.json", "bare.txt"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/" + name))
        }
        let longAgo = Date().addingTimeInterval(-7200)
        for name in ["old.jpg.reason.json", "gone.jpg.reason.json", "young.jpg"] {  // a photo's own mtime says nothing
            try FileManager.default.setAttributes([.modificationDate: longAgo], ofItemAtPath: dir + "/" + name)
        }
        let q = Quarantine(folder: dir, inbox: dir + "/inbox")
        let result = q.prune(before: unixNow() - 3600)
        #expect(result.removed == 3 && result.errors.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["bare.txt", "young.jpg", "young.jpg.reason.json"])
        #expect(q.prune(before: unixNow() + 60).removed == 3)  // everything, by the reasons' and ctime's age
    }

    /// A quarantined symlink or FIFO (a user's `shadow.jpg -> /etc/shadow`, `fifo.jpg`) goes
    /// with its reason too, the link and not what it names: they stayed forever, each with
    /// its reason, however old.
    @Test func aQuarantinedLinkOrFIFOGoesWithItsReason() throws {
        let dir = NSTemporaryDirectory() + "pm-quarantine-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("kept".utf8).write(to: URL(fileURLWithPath: dir + "/elsewhere/target"))
        #expect(symlink(dir + "/elsewhere/target", dir + "/link.jpg") == 0 && symlink(dir + "/elsewhere", dir + "/folder.jpg") == 0)
        #expect(mkfifo(dir + "/fifo.jpg", 0o644) == 0)
        let longAgo = Date().addingTimeInterval(-7200)
        for name in ["link.jpg", "folder.jpg", "fifo.jpg"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/" + name + ".reason.json"))
            try FileManager.default.setAttributes([.modificationDate: longAgo], ofItemAtPath: dir + "/" + name + ".reason.json")
        }
        let result = Quarantine(folder: dir, inbox: dir + "/inbox").prune(before: unixNow() - 3600)
        #expect(result.removed == 6 && result.errors.isEmpty, "\(result)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["elsewhere"])
        #expect(FileManager.default.contents(atPath: dir + "/elsewhere/target") == Data("kept".utf8))
    }
}
