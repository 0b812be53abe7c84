import Foundation
import StageKit
import TestSupport
import Testing

/// Bad input gets a clear reason in quarantine and never blocks the queue.
@Suite(.serialized) struct BadInputTests {
    /// A 1 KB PNG claiming 100,000 x 100,000 pixels.
    static func pixelBomb() -> Data {
        func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for (type, data) in [("IHDR", be32(100_000) + be32(100_000) + [8, 2, 0, 0, 0]), ("IDAT", [UInt8](repeating: 0, count: 1000)), ("IEND", [])] {
            b += be32(UInt32(data.count)) + Array(type.utf8) + data + [0, 0, 0, 0]
        }
        return Data(b)
    }

    @Test func eachBadInputEndsInQuarantineWithAReasonWhileTheRestFinishes() throws {
        let d = try DaemonHarness()
        try d.start()
        try d.drop("corrupted.jpg")
        _ = FileManager.default.createFile(atPath: d.home + "/inbox/empty.jpg", contents: Data())
        _ = FileManager.default.createFile(atPath: d.home + "/inbox/notes.jpg", contents: Data("just some text\n".utf8))
        _ = FileManager.default.createFile(atPath: d.home + "/inbox/bomb.png", contents: Self.pixelBomb())
        symlink("/etc/passwd", d.home + "/inbox/passwd.jpg")
        try d.append("{this is not json\n")
        try d.append(#"{"memo":"fine","fields":{"n":1}}"# + "\n")
        try d.drop("Nikon_D70.jpg")
        try d.drop("Pentax_K10D.jpg")
        try d.waitIdle(jobs: 8)

        let failed = try d.jobs("state = 'failed'")
        #expect(Set(failed.map { $0.photo! }) == ["corrupted.jpg", "empty.jpg", "notes.jpg", "bomb.png", "passwd.jpg"])
        #expect(try d.stateCounts()["done"] == 3)
        let q = d.quarantined()
        #expect(q.count == 6, "\(q)")
        func reason(_ name: String) throws -> String {
            try String(contentsOfFile: d.home + "/quarantine/" + name + ".reason.json", encoding: .utf8)
        }
        #expect(try reason("corrupted.jpg").contains("JPEG is damaged"))
        #expect(try reason("corrupted.jpg").contains(#""stage":"validate""#))
        #expect(try reason("empty.jpg").contains("file is empty (0 bytes)"))
        #expect(try reason("notes.jpg").contains("unrecognised magic bytes"))
        #expect(try reason("bomb.png").contains("decompression bomb"))
        #expect(try reason("passwd.jpg").contains("symlink escapes the inbox"))
        let line = try #require(q.first { $0.hasPrefix("queue-line-") })
        #expect(try reason(line).contains(#""line":1"#))
        #expect(try reason(line).contains("not valid JSON"))
        // Quarantined files left the inbox; /etc/passwd was never touched.
        let inbox = try FileManager.default.contentsOfDirectory(atPath: d.home + "/inbox").sorted()
        #expect(inbox == ["Nikon_D70.jpg", "Pentax_K10D.jpg"])
        #expect(FileManager.default.fileExists(atPath: "/etc/passwd"))
        #expect(d.stop().status == 0)
    }

    /// A photo only decoding finds damaged: libvips' warnings about it went to stderr as
    /// GLib's own lines (`(process:6986): VIPS-WARNING **: ...`, blank lines between), out
    /// of the log's format. The log keeps its one line an event; the failure says why.
    @Test func aDamagedPhotosDecoderWarningsStayInTheLogsFormat() throws {
        let d = try DaemonHarness(stages: #"{"name": "t", "stages": [{"use": "validate", "with": {}}, {"use": "compress", "with": {}}]}"#)
        try d.start()
        let temp = d.root + "/damaged.png"
        try makePNG(temp, mode: "damaged", width: 120, height: 90)
        #expect(rename(temp, d.home + "/inbox/damaged.png") == 0)
        try d.waitIdle(jobs: 1)
        let failed = try #require(try d.jobs().first, "\(d.log)")
        #expect(failed.state == "failed" && failed.error?.contains("libpng read error") == true, "\(failed)")
        #expect(d.stop().status == 0)
        let lines = d.log.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("20") && $0.contains("Z ") }, "\(d.log)")
        #expect(!d.log.contains("VIPS-WARNING"))
    }

    /// Names, memos and fields are anyone's text, and an admin reads them in tables: a
    /// newline must not forge a row, nor an escape sequence clear the screen, retitle the
    /// terminal or write its clipboard (OSC 52). The CLI escapes control characters in
    /// everything it prints that came from someone else; `--json` stays exact.
    @Test func hostileNamesAndMemosReachATerminalEscaped() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start()
        let name = "a\nFORGED  done  -  0  Photo  x.jpg\u{1B}[2J\u{1B}]0;title\u{07}.jpg"
        try d.drop("Nikon_D70.jpg", as: name)
        try d.append(#"{"memo":"m\n\u001b]52;c;cHduZWQ=\u0007\u009b2J","fields":{"k":"v\nFORGED"}}"# + "\n")
        try d.waitIdle(jobs: 2)
        let record = try #require(try json(d, ["query", "TRUEPREDICATE", "--type", "Memo"])["records"]?.arrayValue?.first?["id"]?.stringValue)
        let job = try #require(try d.jobs().first?.id)
        for args in [["jobs"], ["job", String(job)], ["query", "TRUEPREDICATE"], ["get", record], ["changes", "--since", "0"]] {
            let (status, out, _) = try DaemonHarness.run(args + ["--home", d.home])
            #expect(status == 0)
            #expect(!out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B }, "\(args): \(out.debugDescription)")
            #expect(!out.split(separator: "\n").contains { $0.hasPrefix("FORGED") }, "\(args): \(out)")
        }
        let (_, table, _) = try DaemonHarness.run(["jobs", "--home", d.home])
        #expect(table.contains(#"a\nFORGED  done  -  0  Photo  x.jpg\x1B[2J\x1B]0;title\x7.jpg"#), "\(table)")
        #expect(try json(d, ["get", record])["memo"] == "m\n\u{1B}]52;c;cHduZWQ=\u{07}\u{9B}2J", "--json is exact")
        #expect(d.stop().status == 0)
    }

    /// A NUL (U+0000) in a memo or a field value is a bad line at intake, on either engine:
    /// it used to be taken, then stored by SQLite but refused by PostgreSQL's index write,
    /// so the job failed late, and on one engine only. The line after them goes on.
    @Test(arguments: ["sqlite", "postgres"])
    func aNULInAMemoOrAFieldIsABadLineOnEitherEngine(_ engine: String) throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        if engine == "postgres" { d.database = try PostgresServer.freshDatabase() }
        try d.start()
        try d.append(#"{"memo":"a\u0000b"}"# + "\n")
        try d.append(#"{"memo":"fine","fields":{"code":"A\u0000"}}"# + "\n")
        try d.append(#"{"memo":"after them","fields":{"code":"A-1"}}"# + "\n")
        try d.waitIdle(jobs: 1)
        #expect(try d.stateCounts()["done"] == 1)
        let q = d.quarantined()
        #expect(q.count == 2 && q.allSatisfy { $0.hasPrefix("queue-line-") }, "\(q)")
        let reasons = try q.map { try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: d.home + "/quarantine/" + $0 + ".reason.json"))) }
            .sorted { ($0["line"]?.intValue ?? 0) < ($1["line"]?.intValue ?? 0) }
        #expect(reasons.map { $0["line"]?.intValue } == [1, 2])
        #expect(reasons.first?["reason"]?.stringValue == #""memo" contains a NUL character (U+0000), which a job or record cannot hold"#)
        #expect(reasons.last?["reason"]?.stringValue?.hasPrefix(#"field "code" contains a NUL character"#) == true)
        let records = try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []
        #expect(records.map { $0["memo"]?.stringValue } == ["after them"])
        #expect(d.stop().status == 0)
    }

    /// A photo deleted before its stage ran fails as gone; the quarantine entry of an
    /// earlier photo of the same name keeps its own reason (it used to be overwritten
    /// with the later job's "gone", so the quarantined file no longer said why it was there).
    @Test func aPhotoGoneBeforeItsStageRanLeavesAnEarlierQuarantinedFileItsReason() throws {
        let d = try DaemonHarness()
        try d.start()
        try d.drop("corrupted.jpg", as: "bad.jpg")
        try d.waitIdle(jobs: 1)
        #expect(try DaemonHarness.run(["pause", "validate", "--home", d.home]).0 == 0)
        try d.drop("Nikon_D70.jpg", as: "bad.jpg")
        try d.waitUntil("the second photo is a job") { try d.jobs().count == 2 }
        unlink(d.home + "/inbox/bad.jpg")
        #expect(try DaemonHarness.run(["resume", "validate", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 2)
        // The reason is written after the failure is committed.
        try d.waitUntil("the second job's reason is written") { FileManager.default.fileExists(atPath: d.home + "/quarantine/bad.jpg~job2.reason.json") }
        let first = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: d.home + "/quarantine/bad.jpg.reason.json")))
        #expect(first["job"]?.intValue == 1 && first["reason"]?.stringValue?.contains("damaged") == true, "\(first)")
        let second = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: d.home + "/quarantine/bad.jpg~job2.reason.json")))
        #expect(second["job"]?.intValue == 2, "\(second)")
        #expect(try d.jobs()[1].state == "failed")
        #expect(d.stop().status == 0)
    }

    /// A multi-GB drop over validate's max_bytes is refused at intake from its size alone:
    /// quarantined by the inbox (no stage ran, nothing was read or hashed), and the photo
    /// dropped after it goes through.
    @Test func aFileOverMaxBytesIsQuarantinedUnreadAndTheQueueMovesOn() throws {
        let d = try DaemonHarness()
        try d.start()
        let size: Int64 = 3 << 30
        let tmp = d.home + "/inbox/.huge.jpg.part"
        let fd = open(tmp, O_WRONLY | O_CREAT, 0o644)
        #expect(fd >= 0 && ftruncate(fd, off_t(size)) == 0)  // sparse: instant, no disk
        close(fd)
        let started = Date()
        rename(tmp, d.home + "/inbox/huge.jpg")
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 2, timeout: 20)
        // Hashing 3 GB takes seconds here; a size check, milliseconds.
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(d.quarantined() == ["huge.jpg"])
        let reason = try String(contentsOfFile: d.home + "/quarantine/huge.jpg.reason.json", encoding: .utf8)
        #expect(reason.contains("file is \(size) bytes, over max_bytes (52428800)"))
        #expect(reason.contains(#""source":"inbox""#) && !reason.contains(#""stage""#), "\(reason)")
        let failed = try d.jobs("state = 'failed'")
        #expect(failed.map(\.photo) == ["huge.jpg"])
        #expect(failed.first?.error == "file is \(size) bytes, over max_bytes (52428800)")
        #expect(try d.stateCounts()["done"] == 1)
        #expect(d.stop().status == 0)
    }
}
