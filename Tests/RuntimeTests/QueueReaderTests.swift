import Foundation
import Journal
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
        #expect(reasons.contains { $0["reason"]?.stringValue?.contains("must be a path in the inbox") == true })
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
        #expect(report.notes.contains("queue.jsonl replaced"))
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

    /// A photo path over max_bytes fails its job from its size alone (a sparse 3 GB file:
    /// hashing it would take seconds), and stays where it is: it is not the daemon's file.
    @Test func anAbsolutePhotoOverMaxBytesFailsUnread() throws {
        let allowed = NSTemporaryDirectory() + "pm-allowed-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: allowed, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: allowed) }
        let huge = allowed + "/huge.jpg"
        #expect(FileManager.default.createFile(atPath: huge, contents: nil) && truncate(huge, 3 << 30) == 0)
        let t = try TestHome(allowRoots: [allowed])
        try t.append(#"{"photo":"\#(huge)","memo":"too big"}"# + "\n")
        let started = Date()
        _ = try QueueReader(path: t.home.queueFile, name: "queue.jsonl", journal: t.journal, quarantine: t.quarantine,
                            intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 60, maxPhotoBytes: 52_428_800)).catchUp()
        #expect(Date().timeIntervalSince(started) < 1)
        let jobs = try t.jobs()
        #expect(jobs.map(\.state) == [.failed])
        #expect(jobs.first?.error == "photo \(huge): file is \(3 << 30) bytes, over max_bytes (52428800)")
        #expect(FileManager.default.fileExists(atPath: huge))
    }

    /// Truncated and regrown, to a shorter or a longer line, or rewritten to the same size:
    /// each new line is read from the start of the file, as a new job with a key of its own.
    @Test func aTruncatedOrRewrittenFileIsReadAgainAndNoNewLineIsTakenForAnOldOne() throws {
        let t = try TestHome()
        let r = t.queueReader()
        let truncate = { (text: String) in try Data(text.utf8).write(to: URL(fileURLWithPath: t.home.queueFile)) }
        try t.append(#"{"memo":"first line, quite long"}"# + "\n")
        _ = try r.catchUp()
        try truncate(#"{"memo":"short"}"# + "\n")        // shorter than what was read
        _ = try r.catchUp()
        try truncate(#"{"memo":"a much longer line than the first one was"}"# + "\n")  // longer
        _ = try r.catchUp()
        try truncate(#"{"memo":"SHORT"}"# + "\n")        // same size as an earlier one
        var report = try r.catchUp()
        #expect(report.notes.contains { $0.contains("rewritten") || $0.contains("truncated") })
        // A restart reads nothing again.
        report = try t.queueReader().catchUp()
        #expect(report.lines == 0)
        let jobs = try t.jobs()
        #expect(jobs.map(\.memo.memo) == ["first line, quite long", "short", "a much longer line than the first one was", "SHORT"])
        #expect(jobs.allSatisfy { $0.duplicateOf == nil && $0.state == .queued })
        #expect(Set(jobs.compactMap(\.key)).count == 4)
        #expect(t.quarantinedCount == 0)
    }

    /// StrictModes: a file others may write is not read (its lines could be anyone's) until
    /// its mode is fixed; then nothing in it is lost.
    @Test func aQueueFileOthersMayWriteIsNotReadUntilItsModeIsFixed() throws {
        let t = try TestHome()
        try t.append(#"{"memo":"held back"}"# + "\n")
        chmod(t.home.queueFile, 0o666)
        var report = try t.queueReader().catchUp()
        #expect(report.refused?.contains("writable by users other than its owner (mode 666)") == true)
        #expect(report.unreadBytes > 0)
        #expect(try t.jobs().isEmpty)
        chmod(t.home.queueFile, 0o644)
        report = try t.queueReader().catchUp()
        #expect(report.refused == nil)
        #expect(try t.jobs().map(\.memo.memo) == ["held back"])
        // A symlink in its place is not followed.
        let real = t.home.root + "/elsewhere.jsonl"
        try t.append(#"{"memo":"via a link"}"# + "\n", to: real)
        unlink(t.home.queueFile)
        symlink(real, t.home.queueFile)
        report = try t.queueReader().catchUp()
        #expect(report.refused?.contains("is a symlink") == true)
        #expect(try t.jobs().count == 1)
    }

    /// A queue file's lines are its owner's; "owner" in a line counts only in an admin's file.
    @Test func linesBelongToTheFilesOwnerAndOnlyAnAdminsFileNamesAnother() throws {
        guard getuid() == 0, let nobody = getpwnam("nobody")?.pointee.pw_uid else { return }
        let t = try TestHome()
        let file = t.home.queueFolder + "/nobody.jsonl"
        try t.append(#"{"memo":"mine","key":"k"}"# + "\n" + #"{"memo":"posing","owner":"root"}"# + "\n", to: file)
        chown(file, nobody, UInt32.max)
        try t.append(#"{"memo":"for nobody","owner":"nobody","key":"k"}"# + "\n")
        let users = QueueReader(path: file, name: "queue.d/nobody.jsonl", journal: t.journal, quarantine: t.quarantine,
                                intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 60))
        _ = try users.catchUp()
        _ = try t.queueReader().catchUp()
        let jobs = try t.jobs()
        #expect(jobs.map(\.memo.owner) == ["nobody", "nobody", "nobody"])
        // The same client key from nobody's file and from root's file (on nobody's behalf) is one job.
        #expect(jobs[0].key == "nobody/k" && jobs[2].duplicateOf == jobs[0].id)
    }

    /// A sparse file costs its writer nothing: the daemon keeps at most 16 MiB of a line.
    @Test func aHugeSparseLineKeepsOnlyItsHeadInQuarantine() throws {
        let t = try TestHome()
        _ = FileManager.default.createFile(atPath: t.home.queueFile, contents: nil)
        let fd = open(t.home.queueFile, O_WRONLY)
        #expect(ftruncate(fd, 40 << 20) == 0)  // 40 MiB of holes, then a newline
        #expect(pwrite(fd, "\n\n", 2, 40 << 20) == 2)
        close(fd)
        try t.append(#"{"memo":"after it"}"# + "\n")
        let report = try t.queueReader().catchUp()
        #expect(report.quarantined.count == 1 && report.quarantined[0].contains("its first 16 MiB are kept"), "\(report.quarantined)")
        let kept = try #require(try t.quarantined().first)
        let size = try FileManager.default.attributesOfItem(atPath: t.home.quarantine + "/" + kept)[.size] as? Int
        #expect(size == 16 << 20)
        #expect(try t.jobs().map(\.memo.memo) == ["after it"])
    }

    /// A line's holes stay holes in its quarantined copy: lines of 15 MiB of holes each, a
    /// newline apart, cost their writer a block each and were copied as 15 MiB of zeros each
    /// (48 KB of a user's file filled 184 MB of the daemon's disk).
    @Test func aSparseLineCostsTheDiskInQuarantineWhatItCostItsWriter() throws {
        let t = try TestHome()
        FileManager.default.createFile(atPath: t.home.queueFile, contents: nil)
        let fd = open(t.home.queueFile, O_WRONLY)
        for k in 1...4 { #expect(pwrite(fd, "\n", 1, off_t(k * (15 << 20))) == 1) }
        #expect(pwrite(fd, "x", 1, 22 << 20) == 1)  // in the second line, kept where it was
        close(fd)
        let report = try t.queueReader().catchUp()
        #expect(report.quarantined.count == 4, "\(report.quarantined)")
        var allocated = 0, second: Data?
        for name in try t.quarantined() {
            var st = stat()
            #expect(stat(t.home.quarantine + "/" + name, &st) == 0 && st.st_size >= 15 << 20 - 1)
            allocated += Int(st.st_blocks) * 512
            if name.hasSuffix("-\((15 << 20) + 1).jsonl") { second = FileManager.default.contents(atPath: t.home.quarantine + "/" + name) }
        }
        #expect(allocated < 1 << 20, "the copies take \(allocated) bytes of disk")
        let copy = try #require(second)
        #expect(copy[(22 << 20) - (15 << 20) - 1] == UInt8(ascii: "x") && copy.filter { $0 != 0 }.count == 1)
    }

    /// A line found over-long and still without its newline is not read again at every
    /// read, only searched on from where the search stopped: its first 4 MiB read and framed
    /// again at each read kept the daemon at 70% CPU while anyone appended to a queue file.
    /// (`rchar`: bytes this process read; 200 reads of a 4 MiB line read 800 MiB before.)
    @Test func aStuckOverlongLineIsNotReadAgainAtEveryRead() throws {
        let t = try TestHome()
        try t.append(String(repeating: "a", count: 4 << 20))
        let r = t.queueReader()
        _ = try r.catchUp()
        func readBytes() throws -> Int {
            let io = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
            return Int(io.split(separator: "\n").first { $0.hasPrefix("rchar:") }!.split(separator: " ")[1])!
        }
        let before = try readBytes()
        for _ in 0..<200 { _ = try r.catchUp() }
        #expect(try readBytes() - before < 200 << 20)
        try t.append("b\n" + #"{"memo":"after it"}"# + "\n")
        let report = try r.catchUp()
        #expect(report.quarantined.count == 1 && report.quarantined[0].contains("longer than the 1 MiB limit"), "\(report.quarantined)")
        #expect(try t.jobs().map(\.memo.memo) == ["after it"])
    }

    /// Its owner cutting the file back to the stuck line and writing on is read anew: the
    /// search went on from where it stopped, and quarantined the lines written since as part
    /// of the old line (attack review of the change above).
    @Test func aStuckLineCutAwayByItsOwnerLeavesTheLinesWrittenSinceToBeRead() throws {
        let t = try TestHome()
        try t.append(#"{"memo":"first"}"# + "\n")
        let r = t.queueReader()
        _ = try r.catchUp()
        let start = try #require(try FileManager.default.attributesOfItem(atPath: t.home.queueFile)[.size] as? Int)
        try t.append(String(repeating: "x", count: 1_200_000))
        _ = try r.catchUp()  // stuck: over-long, no newline yet
        #expect(truncate(t.home.queueFile, off_t(start)) == 0)
        _ = try r.catchUp()
        try t.append(#"{"memo":"short"}"# + "\n")  // (a) one short line after the cut
        var report = try r.catchUp()
        #expect(report.quarantined.isEmpty, "\(report.quarantined)")
        // (b) cut back again under a stuck line, then rewritten past the old search at once.
        try t.append(String(repeating: "x", count: 1_200_000))
        _ = try r.catchUp()
        let cut = try #require(try FileManager.default.attributesOfItem(atPath: t.home.queueFile)[.size] as? Int) - 1_200_000
        #expect(truncate(t.home.queueFile, off_t(cut)) == 0)
        try t.append((0..<100).map { #"{"memo":"line \#($0)"}"# + "\n" }.joined() + String(repeating: "y", count: 1_300_000) + "\n")
        report = try r.catchUp()
        #expect(report.quarantined.count == 1 && report.quarantined[0].contains("line is 1300000 bytes"), "\(report.quarantined)")
        #expect(try t.jobs().map(\.memo.memo) == ["first", "short"] + (0..<100).map { "line \($0)" })
    }

    /// So do the holes of a line short enough to hold in memory (under 1 MiB): 300 such
    /// lines of a sparse file, a block of the writer's disk, were 300 MB in quarantine.
    @Test func aShortSparseLineKeepsItsHolesInQuarantineAndItsBytes() throws {
        let t = try TestHome()
        FileManager.default.createFile(atPath: t.home.queueFile, contents: nil)
        let fd = open(t.home.queueFile, O_WRONLY)
        #expect(pwrite(fd, "ab", 2, 0) == 2)
        #expect(pwrite(fd, "y", 1, 500_000) == 1)
        #expect(pwrite(fd, "\n", 1, 900_000) == 1)
        close(fd)
        let report = try t.queueReader().catchUp()
        #expect(report.quarantined.count == 1, "\(report.quarantined)")
        let name = try #require(try t.quarantined().first)
        var st = stat()
        #expect(stat(t.home.quarantine + "/" + name, &st) == 0 && st.st_size == 900_000)
        #expect(Int(st.st_blocks) * 512 <= 64 << 10, "the copy takes \(Int(st.st_blocks) * 512) bytes of disk")
        let copy = try #require(FileManager.default.contents(atPath: t.home.quarantine + "/" + name))
        #expect(copy.prefix(2) == Data("ab".utf8) && copy[500_000] == UInt8(ascii: "y") && copy.filter { $0 != 0 }.count == 3)
    }

    /// StrictModes holds for a replaced file too: one made writable by others after it was
    /// read, then replaced, was drained through the descriptor without the check, so lines
    /// anyone had appended meanwhile became its owner's jobs.
    @Test func aReplacedFileOthersCouldWriteIsNotDrained() throws {
        let t = try TestHome()
        let r = t.queueReader()
        try t.append(#"{"memo":"mine"}"# + "\n")
        _ = try r.catchUp()
        chmod(t.home.queueFile, 0o666)
        try t.append(#"{"memo":"anyone's"}"# + "\n")
        let next = t.home.root + "/queue.next"
        try t.append(#"{"memo":"new file"}"# + "\n", to: next)
        rename(next, t.home.queueFile)
        let report = try r.catchUp()
        #expect(try t.jobs().map(\.memo.memo) == ["mine", "new file"])
        #expect(report.notes.contains { $0.hasPrefix("queue.jsonl replaced; the rest of the old file is not read: ") && $0.contains("mode 666") })
    }
}
