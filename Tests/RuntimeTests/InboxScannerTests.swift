import Foundation
import Journal
import PhotomemoCore
import Testing
@testable import Runtime

@Suite struct InboxScannerTests {
    func write(_ t: TestHome, _ name: String, _ text: String = "bytes") throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: t.home.inbox + "/" + name))
    }

    @Test func rescanTakesSettledFilesOnceAndLeavesFreshOnesToSettle() throws {
        let t = try TestHome()
        try write(t, "a.jpg", "A")
        try write(t, ".hidden.jpg", "H")
        try write(t, "b.jpg.part", "P")
        var report = t.scanner(settle: 60).rescan()
        #expect(report.unsettled == 1)
        #expect(try t.jobs().isEmpty)
        report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.map(\.name) == ["a.jpg"])
        report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.isEmpty)
        #expect(try t.jobs().count == 1)
    }

    @Test func closedFilesAreTakenAtOnceAndCreatedRegularFilesWaitForTheirCloseEvent() throws {
        let t = try TestHome()
        try write(t, "c.jpg", "C")
        #expect(t.scanner(settle: 60).take([("c.jpg", false)]).outcomes.isEmpty)
        #expect(t.scanner(settle: 60).take([("c.jpg", true)]).outcomes.map(\.name) == ["c.jpg"])
        let job = try #require(try t.jobs().first)
        #expect(job.key == "sha256:" + SHA256.hex(Data("C".utf8)))
    }

    @Test func entriesThatAreNotPhotosGoToQuarantineWithTheirReason() throws {
        let t = try TestHome()
        symlink("/etc/passwd", t.home.inbox + "/pw.jpg")
        mkfifo(t.home.inbox + "/fifo.jpg", 0o644)
        try FileManager.default.createDirectory(atPath: t.home.inbox + "/dir.jpg", withIntermediateDirectories: false)
        try write(t, "real.jpg", "R")
        symlink(t.home.inbox + "/real.jpg", t.home.inbox + "/inside.jpg")
        let report = t.scanner().take([("pw.jpg", false), ("fifo.jpg", false), ("dir.jpg", false), ("inside.jpg", false)])
        #expect(report.rejected.count == 4)
        #expect(try t.quarantined() == ["dir.jpg", "fifo.jpg", "inside.jpg", "pw.jpg"])
        #expect(try t.reason("pw.jpg")["reason"] == "symlink escapes the inbox (points to /etc/passwd)")
        #expect(try t.reason("fifo.jpg")["reason"] == "a FIFO is not a photo")
        #expect(try t.reason("dir.jpg")["reason"] == "a directory is not a photo")
        // A link's owner need not own its target: links are never taken, even inside the inbox.
        #expect(try t.reason("inside.jpg")["reason"]?.stringValue?.hasPrefix("a symlink is not taken") == true)
        #expect(report.outcomes.isEmpty)
        #expect(try t.jobs().filter { $0.state == .failed }.count == 4)
        #expect(!FileManager.default.fileExists(atPath: t.home.inbox + "/fifo.jpg"))
    }

    /// The daemon runs as root: resolving a link would tell its owner what exists, and
    /// where links lead, in folders they cannot read (`/root/.ssh/id_rsa` exists or not).
    /// The reason says only what the link's text says.
    @Test func aSymlinksReasonTellsNothingTheLinkItselfDoesNot() throws {
        let t = try TestHome()
        let hidden = t.home.root + "/private"
        try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: false)
        symlink("/etc/passwd", hidden + "/inner")
        chmod(hidden, 0o700)
        symlink(hidden + "/inner", t.home.inbox + "/chain.jpg")
        symlink("/nonexistent-\(getpid())/id_rsa", t.home.inbox + "/missing.jpg")
        symlink("../../outside.jpg", t.home.inbox + "/up.jpg")
        symlink("./sub/../real.jpg", t.home.inbox + "/near.jpg")
        let report = t.scanner().take([("chain.jpg", false), ("missing.jpg", false), ("up.jpg", false), ("near.jpg", false)])
        #expect(report.rejected.count == 4)
        #expect(try t.reason("chain.jpg")["reason"] == .string("symlink escapes the inbox (points to \(hidden)/inner)"))
        #expect(try t.reason("missing.jpg")["reason"] == .string("symlink escapes the inbox (points to /nonexistent-\(getpid())/id_rsa)"))
        #expect(try t.reason("up.jpg")["reason"] == "symlink escapes the inbox (points to ../../outside.jpg)")
        #expect(try t.reason("near.jpg")["reason"]?.stringValue?.hasPrefix("a symlink is not taken") == true)
    }
}
