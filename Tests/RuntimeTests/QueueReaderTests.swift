import Foundation
import Journal
import PhotomemoCore
import Testing
@testable import Runtime

@Suite struct QueueReaderTests {
    @Test func partialLastLineWaitsForItsNewline() throws {
        let t = try TestHome()
        let r = t.queueReader()
        try t.append(#"{"memo":"a"}"# + "\n" + #"{"memo":"b"#)
        var report = try r.catchUp()
        #expect(report.lines == 1)
        #expect(report.unreadBytes == Int64(#"{"memo":"b"#.utf8.count))
        #expect(try t.jobs().map(\.memo.memo) == ["a"])
        try t.append("\"}\n")
        report = try r.catchUp()
        #expect(report.lines == 1)
        #expect(try t.jobs().map(\.memo.memo) == ["a", "b"])
        #expect(try t.journal.queuePosition().line == 2)
    }

    @Test func aLineWrittenByteByByteIsTakenOnce() throws {
        let t = try TestHome()
        let r = t.queueReader()
        for byte in (#"{"memo":"slow","fields":{"n":1}}"# + "\n").utf8 {
            try t.append(String(decoding: [byte], as: UTF8.self))
            _ = try r.catchUp()
        }
        #expect(try t.jobs().map(\.memo.memo) == ["slow"])
    }

    @Test func aBurstIsTakenOnceEachInOrder() throws {
        let t = try TestHome()
        try t.append((0..<500).map { #"{"memo":"m\#($0)"}"# + "\n" }.joined())
        _ = try t.queueReader().catchUp()
        // A fresh reader (a restart) resumes from the committed position: nothing twice.
        _ = try t.queueReader().catchUp()
        let memos = try t.jobs().map(\.memo.memo)
        #expect(memos == (0..<500).map { "m\($0)" })
    }

    @Test func badLinesGoToQuarantineWithLineOffsetAndReasonAndTheRestGoesOn() throws {
        let t = try TestHome()
        let lines = [
            #"{"memo":"first"}"#, "not json", #"{"memo":"x","colour":"red"}"#, #"{"photo":"../../etc/passwd"}"#,
            #"{"memo":5}"#, "", #"{"memo":"last"}"#,
        ]
        try t.append(lines.joined(separator: "\n") + "\n")
        let report = try t.queueReader().catchUp()
        #expect(report.quarantined.count == 4)
        #expect(try t.jobs().map(\.memo.memo) == ["first", "last"])
        let files = try t.quarantined()
        #expect(files.count == 4)
        let reasons = try files.map { try t.reason($0) }
        #expect(reasons.compactMap { $0["line"]?.intValue }.sorted() == [2, 3, 4, 5])
        let secondLine = try #require(reasons.first { $0["line"] == 2 })
        #expect(secondLine["offset"] == .int(Int64(lines[0].utf8.count + 1)))
        #expect(secondLine["reason"]?.stringValue?.hasPrefix("not valid JSON") == true)
        #expect(reasons.contains { $0["reason"]?.stringValue?.contains("unknown key \"colour\"") == true })
        #expect(reasons.contains { $0["reason"]?.stringValue?.contains("must be a file name in the inbox") == true })
        let q = try String(contentsOfFile: t.home.quarantine + "/" + files.first { try! t.reason($0)["line"] == 2 }!, encoding: .utf8)
        #expect(q == "not json")
    }

    @Test func aLineOverOneMebibyteIsQuarantinedAndSkipped() throws {
        let t = try TestHome()
        try t.append(#"{"memo":""# + String(repeating: "x", count: (1 << 20) + 10) + "\"}\n" + #"{"memo":"after"}"# + "\n")
        let report = try t.queueReader().catchUp()
        #expect(report.quarantined.count == 1)
        #expect(report.quarantined[0].contains("longer than the 1 MiB limit"))
        #expect(try t.jobs().map(\.memo.memo) == ["after"])
    }

    @Test func truncationStartsOverAndReplacementDrainsTheOldFileFirst() throws {
        let t = try TestHome()
        let r = t.queueReader()
        try t.append(#"{"memo":"one"}"# + "\n" + #"{"memo":"two"}"# + "\n")
        _ = try r.catchUp()
        // Truncated in place (same inode): read from the start again.
        try Data((#"{"memo":"three"}"# + "\n").utf8).write(to: URL(fileURLWithPath: t.home.queueFile))
        var report = try r.catchUp()
        #expect(report.notes.contains { $0.contains("truncated") })
        // Replaced: a line appended to the old file just before the swap is not lost.
        try t.append(#"{"memo":"four"}"# + "\n")
        let next = t.home.root + "/queue.next"
        try t.append(#"{"memo":"five"}"# + "\n", to: next)
        rename(next, t.home.queueFile)
        report = try r.catchUp()
        #expect(report.notes.contains("queue file replaced"))
        #expect(try t.jobs().map(\.memo.memo) == ["one", "two", "three", "four", "five"])
    }

    @Test func memoLinesJoinPhotosAndAbsolutePathsNeedAnAllowedRoot() throws {
        let allowed = NSTemporaryDirectory() + "pm-allowed-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: allowed, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: allowed) }
        try Data("img".utf8).write(to: URL(fileURLWithPath: allowed + "/a.jpg"))
        let t = try TestHome(allowRoots: [allowed])
        try t.append([
            #"{"photo":"later.jpg","memo":"waits"}"#,
            #"{"photo":"\#(allowed)/a.jpg","memo":"absolute"}"#,
            #"{"photo":"\#(allowed)/missing.jpg","memo":"missing"}"#,
            #"{"photo":"/etc/passwd","memo":"escape"}"#,
            #"{"photo":"x.jpg.part","memo":"partial name"}"#,
        ].joined(separator: "\n") + "\n")
        let report = try t.queueReader().catchUp()
        #expect(report.quarantined.count == 2)
        let jobs = try t.jobs()
        #expect(jobs.map(\.state) == [.waiting, .queued, .failed])
        #expect(jobs[2].error == "photo \(allowed)/missing.jpg not found")
    }
}
