import Foundation
import Glibc
import Journal
import Testing
@testable import Runtime

/// One read of a queue file is one turn of the intake lane, which the inbox and every
/// user's queue file share: whatever a user writes, a read ends soon and what is left is
/// read at the next turn (`Report.more`).
@Suite struct QueueReaderBudgetTests {
    /// 1.4 million `{}` lines in a 4 MiB file were one transaction and one turn: 650 MB of
    /// memory and a loop blocked for minutes while every other intake waited.
    @Test func manyShortLinesAreReadInTurnsOfBoundedSize() throws {
        let t = try TestHome()
        try t.append(String(repeating: "{}\n", count: 20_000))
        let r = t.queueReader()
        var report = try r.catchUp()
        #expect(report.lines == QueueReader.linesPerRead && report.more)
        #expect(try t.journal.queuePosition().line == Int64(QueueReader.linesPerRead))
        var lines = report.lines, reads = 1
        while report.more && reads < 10 {
            report = try r.catchUp()
            lines += report.lines
            reads += 1
        }
        #expect(lines == 20_000 && !report.more && reads == 3)
        #expect(try t.journal.counts()[.queued] == 20_000)
    }

    /// A file renamed over the one being read, then renamed over in turn before the old
    /// file's rest was read (a rotation by rename, while the reads take turns), loses no
    /// line: each replacement is held open from the first read that saw it.
    @Test func aReplacementReplacedBeforeItsTurnLosesNoLine() throws {
        let t = try TestHome()
        try t.append(String(repeating: "{}\n", count: 20_000))
        let r = t.queueReader()
        func replace(with memo: String) throws {
            let next = t.home.queueFile + ".next"
            try (#"{"memo":"\#(memo)"}"# + "\n").write(toFile: next, atomically: false, encoding: .utf8)
            #expect(rename(next, t.home.queueFile) == 0)
        }
        var report = try r.catchUp()
        #expect(report.more)
        try replace(with: "b")
        report = try r.catchUp()  // the old file's rest, still
        #expect(report.more)
        try replace(with: "c")    // b is unlinked before its turn
        for _ in 0..<5 { report = try r.catchUp() }
        #expect(try t.journal.counts()[.queued] == 20_002)
        #expect(try t.journal.jobs(limit: 30_000).map(\.memo.memo).filter { !$0.isEmpty } == ["b", "c"])
    }

    /// A sparse file costs its writer nothing: 1 TiB with no newline was read whole on every
    /// poll (the intake lane, and every user's photos, stalled; so did SIGTERM). Holes are
    /// skipped, so the line's end is found at once when it comes.
    @Test func aSparseTebibyteWithNoNewlineIsNotRead() throws {
        let t = try TestHome()
        try t.append(#"{"memo":"x"#)
        #expect(truncate(t.home.queueFile, 1 << 40) == 0)
        let r = t.queueReader()
        let started = Date()
        var report = try r.catchUp()
        #expect(report.lines == 0)
        try t.append("\"}\n" + #"{"memo":"after"}"# + "\n")
        for _ in 0..<3 where try t.jobs().isEmpty { report = try r.catchUp() }
        #expect(Date().timeIntervalSince(started) < 20)
        #expect(try t.jobs().map(\.memo.memo) == ["after"])
        #expect(t.quarantinedCount == 1)
    }

    /// A dense over-long line is searched for at most `searchBytesPerRead` a read, each read
    /// going on from where the last one stopped.
    @Test func anOverLongLineIsSearchedInTurnsThatGoOnWhereTheLastStopped() throws {
        let t = try TestHome()
        let length = Int(QueueReader.searchBytesPerRead) * 3 / 2
        try Data(repeating: UInt8(ascii: "x"), count: length).write(to: URL(fileURLWithPath: t.home.queueFile))
        let r = t.queueReader()
        var report = try r.catchUp()
        #expect(report.more && report.lines == 0)
        report = try r.catchUp()
        #expect(report.lines == 0)
        try t.append("\n" + #"{"memo":"after"}"# + "\n")
        for _ in 0..<2 where try t.jobs().isEmpty { report = try r.catchUp() }
        #expect(try t.jobs().map(\.memo.memo) == ["after"])
        let reason = try t.reason(try #require(try t.quarantined().first))
        #expect(reason["reason"]?.stringValue?.hasPrefix("line is \(length) bytes") == true)
    }
}
