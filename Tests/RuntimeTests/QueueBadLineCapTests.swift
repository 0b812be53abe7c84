import Foundation
import Journal
import Testing
@testable import Runtime

/// One user's bad queue lines cannot fill the disk: each costs the daemon two files in
/// quarantine, so at `QuarantinedLines.maxPerUser` of them (3 here) their next bad line
/// and the rest of the file wait unread, said once; once some are removed (retention, an
/// admin) the file is read on, and nothing is lost or taken twice.
@Suite struct QueueBadLineCapTests {
    @Test func badLinesWaitUnreadAtTheCapAndTheFileGoesOnOnceSomeAreRemoved() throws {
        let t = try TestHome()
        let quarantine = Quarantine(folder: t.home.quarantine, inbox: t.home.inbox,
                                    lines: QuarantinedLines(folder: t.home.quarantine, maxPerUser: 3, rescanSeconds: 0))
        let reader = QueueReader(path: t.home.queueFile, name: "queue.jsonl", journal: t.journal, quarantine: quarantine,
                                 intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 600))
        try t.append(#"{"memo":"before"}"# + "\n" + (1...5).map { "bad \($0)\n" }.joined() + #"{"memo":"after"}"# + "\n")
        var report = try reader.catchUp()
        #expect(report.quarantined.count == 3)
        #expect(report.notes.contains { $0.contains("3 bad queue lines in quarantine, the most a user may have") }, "\(report.notes)")
        #expect(try t.jobs().map(\.memo.memo) == ["before"])
        #expect(try t.journal.queuePosition().line == 4)  // up to the third bad line, not past the fourth
        #expect(t.quarantinedCount == 3)

        report = try reader.catchUp()  // still at the cap: nothing taken, not said again
        #expect(report.quarantined.isEmpty && report.notes.isEmpty)

        // An admin removes one: one more goes in, and the reader holds again.
        let first = try t.quarantined()[0]
        try FileManager.default.removeItem(atPath: t.home.quarantine + "/" + first)
        report = try reader.catchUp()
        #expect(report.quarantined.count == 1)
        #expect(t.quarantinedCount == 3)
        #expect(try t.jobs().map(\.memo.memo) == ["before"])

        // Retention takes them all: the last bad line and the good one after it are read.
        for f in try FileManager.default.contentsOfDirectory(atPath: t.home.quarantine) {
            try FileManager.default.removeItem(atPath: t.home.quarantine + "/" + f)
        }
        report = try reader.catchUp()
        #expect(report.quarantined.count == 1)
        #expect(try t.jobs().map(\.memo.memo) == ["before", "after"])
        #expect(try t.journal.queuePosition().line == 7)
        // Each bad line went to quarantine exactly once, by line number.
        let lineNumbers = try t.quarantined().compactMap { try t.reason($0)["line"]?.intValue }
        #expect(lineNumbers == [6])
    }
}
