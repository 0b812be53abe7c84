import Foundation
import TestSupport
import Testing

/// The real daemon, real files, real queue lines: each is taken exactly once, complete.
@Suite(.serialized) struct IntakeTests {
    @Test func photosRenamedInAndWrittenInPlaceWithPausesAreEachTakenOnceComplete() throws {
        let d = try DaemonHarness()
        try d.start()
        let renamed = (1...8).map { "orientation_landscape_\($0).jpg" } + ["Nikon_D70.jpg", "Pentax_K10D.jpg"]
        for name in renamed { try d.drop(name) }
        let inPlace = (1...3).map { "orientation_portrait_\($0).jpg" }
        for name in inPlace {
            try d.writeInPlace(Data(contentsOf: testPhotos.appendingPathComponent(name)), as: name)
        }
        try d.waitIdle(jobs: 13)
        let jobs = try d.jobs()
        #expect(jobs.allSatisfy { $0.state == "done" }, "\(jobs.filter { $0.state != "done" })")
        // Complete: validate saw every byte of every file.
        for j in jobs {
            let size = try FileManager.default.attributesOfItem(atPath: testPhotos.appendingPathComponent(j.photo!).path)[.size] as! Int
            #expect(j.results.contains("\"bytes\":\(size)"), "\(j.photo!): \(j.results)")
        }
        #expect(Set(jobs.map { $0.photo! }) == Set(renamed + inPlace))
        // Once: one run and one effect per photo.
        #expect(d.lines("runs.log").count == 13)
        #expect(Set(d.lines("effects.log")).count == 13)
        #expect(d.stop().status == 0)
    }

    @Test func memoLinesInBurstsAndByteByByteAreEachTakenOnce() throws {
        let d = try DaemonHarness()
        try d.start()
        try d.append((0..<300).map { #"{"memo":"burst \#($0)","fields":{"n":\#($0)}}"# + "\n" }.joined())
        for i in 0..<4 {
            for byte in (#"{"memo":"slow \#(i)"}"# + "\n").utf8 {
                try d.append(String(decoding: [byte], as: UTF8.self))
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
        try d.waitIdle(jobs: 304)
        let memos = try d.jobs().map { $0.memo }
        #expect(memos.filter { $0.contains("burst") }.count == 300)
        #expect(memos.filter { $0.contains("slow") }.count == 4)
        #expect(d.lines("effects.log").count == 304)
        #expect(Set(d.lines("effects.log")).count == 304)
        #expect(d.stop().status == 0)
    }

    @Test func aMemoWaitsForItsPhotoAndTheTwoBecomeOneJob() throws {
        let d = try DaemonHarness()
        try d.start()
        try d.append(#"{"photo":"house.jpg","memo":"red roof","type":"Houses","fields":{"address":"Tokyo"}}"# + "\n")
        try d.waitUntil("the memo waits") { try d.stateCounts()["waiting"] == 1 }
        try d.drop("Canon_40D.jpg", as: "house.jpg")
        try d.waitIdle(jobs: 1)
        let job = try #require(try d.jobs().first)
        #expect(job.state == "done")
        #expect(job.memo.contains(#""type":"Houses""#))
        #expect(job.photo == "house.jpg")
        // The same bytes again under another name: one job, the second is a duplicate.
        try d.drop("Canon_40D.jpg", as: "again.jpg")
        try d.waitIdle(jobs: 2)
        #expect(try d.jobs("duplicate_of = \(job.id)").count == 1)
        #expect(d.lines("effects.log").count == 1)
        #expect(d.stop().status == 0)
    }

    /// A queue file that is refused (writable by others) is not backlog — it will not be
    /// read as it is — so `queue_unread_bytes` does not count it and the daemon can be idle;
    /// `queue_files` still shows its unread bytes and why. Fixed, what was written while
    /// others could write it goes to quarantine (it could be anyone's), and what follows is read.
    @Test func aRefusedQueueFileIsNotCountedAsUnreadBacklog() throws {
        let d = try DaemonHarness()
        try d.start()
        let line = #"{"memo":"from an open file"}"# + "\n"
        let tmp = d.home + "/.queue.jsonl.tmp"
        _ = FileManager.default.createFile(atPath: tmp, contents: Data(line.utf8))
        chmod(tmp, 0o666)
        rename(tmp, d.home + "/queue.jsonl")
        try d.waitUntil("status names the refused file") {
            try json(d, ["status"])["queue_files"]?.arrayValue?.first?["error"]?.stringValue?.contains("chmod go-w") == true
        }
        let status = try json(d, ["status"])
        #expect(status["queue_files"]?.arrayValue?.first?["unread_bytes"] == .int(Int64(line.utf8.count)))
        #expect(status["backlog"]?["queue_unread_bytes"] == 0)
        #expect(try DaemonHarness.run(["metrics", "--home", d.home]).1.contains("photomemo_backlog_queue_unread_bytes 0"))
        chmod(d.home + "/queue.jsonl", 0o644)
        try d.waitUntil("the open file's line is quarantined") { d.quarantined().count == 1 }
        try d.waitUntil("status shows the file read again") { try json(d, ["status"])["queue_files"]?.arrayValue?.first?["error"] == .null }
        try d.append(#"{"memo":"once it is safe"}"# + "\n")
        try d.waitIdle(jobs: 1)
        #expect(try json(d, ["status"])["backlog"]?["queue_unread_bytes"] == 0)
        #expect(d.stop().status == 0)
    }

    @Test func filesPresentAtStartUpAreTaken() throws {
        let d = try DaemonHarness()
        try FileManager.default.createDirectory(atPath: d.home + "/inbox", withIntermediateDirectories: true)
        chmod(d.home, 0o750)
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Nikon_D70.jpg").path, toPath: d.home + "/inbox/early.jpg")
        try d.append(#"{"memo":"written before the daemon started"}"# + "\n")
        try d.start()
        try d.waitIdle(jobs: 2)
        #expect(try d.stateCounts()["done"] == 2)
        #expect(d.stop().status == 0)
    }
}
