import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Nothing handed over is lost (issue #13, "Lost input"): each way a photo or a line used
/// to be dropped, misread or held back, against the real daemon and the default job.
@Suite(.serialized) struct IntakeNeverLosesTests {
    func start(env: [String: String] = [:]) throws -> DaemonHarness {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start(env: env)
        return d
    }

    func records(_ d: DaemonHarness) throws -> [JSONValue] {
        try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []
    }

    func truncate(_ d: DaemonHarness, to text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: d.home + "/queue.jsonl"))
    }

    @Test func aTruncatedQueueFileRegrownShorterOrLongerLosesNoLine() throws {
        let d = try start()
        try d.append(#"{"memo":"the first line, rather long"}"# + "\n")
        try d.waitIdle(jobs: 1)
        try truncate(d, to: #"{"memo":"short"}"# + "\n")
        try d.waitIdle(jobs: 2)
        try truncate(d, to: #"{"memo":"a line much longer than anything read before it"}"# + "\n")
        try d.waitIdle(jobs: 3)
        #expect(Set(try records(d).compactMap { $0["memo"]?.stringValue })
                == ["the first line, rather long", "short", "a line much longer than anything read before it"])
        #expect(try d.jobs("duplicate_of IS NOT NULL").isEmpty)
        #expect(d.quarantined().isEmpty)
        #expect(d.stop().status == 0)
    }

    /// A photo renamed over another right after it was dropped (a client that re-sends, or
    /// a user who picked the wrong file): the first job's bytes are gone, so it fails, but
    /// the second photo is a drop of its own and must become its record — failing the first
    /// used to move the second into quarantine, and its own job then failed as "gone".
    @Test func aPhotoReplacedAfterItWasTakenIsNotLostWithTheFirst() throws {
        let d = try start()
        #expect(try DaemonHarness.run(["pause", "validate", "--home", d.home]).0 == 0)
        try d.drop("orientation_portrait_1.jpg", as: "swap.jpg")
        try d.waitUntil("the first photo is a job") { try d.jobs().count == 1 }
        try d.drop("orientation_portrait_2.jpg", as: "swap.jpg")
        try d.waitUntil("the second photo is a job") { try d.jobs().count == 2 }
        #expect(try DaemonHarness.run(["resume", "validate", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 2, timeout: 60)
        let jobs = try d.jobs()
        #expect(jobs[0].state == "failed" && jobs[0].error?.contains("changed") == true, "\(jobs[0])")
        #expect(jobs[1].state == "done", "\(jobs[1])")
        let second = try SHA256.hexOfFile(atPath: testPhotos.appendingPathComponent("orientation_portrait_2.jpg").path).hex
        #expect(try records(d).map { $0["assets"]?["original"]?["sha256"]?.stringValue } == [second])
        #expect(d.quarantined().isEmpty)
        #expect(d.stop().status == 0)
    }

    /// A photo renamed over one whose upload has stored it and is about to release it (an
    /// rsync update; in a sticky inbox, another user's drop at a name its owner just freed):
    /// upload removed whatever stood at the name, so the newer photo was lost and its own job
    /// failed with `photo file is gone`. Both become records; the second leaves the inbox
    /// through its own job. (`upload.before_release` holds the window open.)
    @Test func aPhotoRenamedOverOneBeingReleasedBecomesItsOwnRecord() throws {
        let d = try start(env: ["PHOTOMEMO_FAILPOINTS": "upload.before_release=pause:1500"])
        try d.drop("orientation_portrait_1.jpg", as: "update.jpg")
        try d.waitUntil("the first is stored, not yet released") { d.log.contains("failpoint upload.before_release hit") }
        try d.drop("orientation_portrait_2.jpg", as: "update.jpg")
        try d.waitIdle(jobs: 2, timeout: 60)
        let jobs = try d.jobs()
        #expect(jobs.map(\.state) == ["done", "done"], "\(jobs)")
        let shas = try ["orientation_portrait_1.jpg", "orientation_portrait_2.jpg"].map {
            try SHA256.hexOfFile(atPath: testPhotos.appendingPathComponent($0).path).hex
        }
        #expect(Set(try records(d).compactMap { $0["assets"]?["original"]?["sha256"]?.stringValue }) == Set(shas))
        #expect(!FileManager.default.fileExists(atPath: d.home + "/inbox/update.jpg"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/inbox").filter { $0.hasPrefix(".photomemo-release") }.isEmpty)
        #expect(d.quarantined().isEmpty)
        #expect(d.stop().status == 0)
    }

    /// The same bytes renamed over a photo just taken (a client that sends twice) are that
    /// job's photo, not a second job (`addPhoto`): the job goes on with the new file. A stage
    /// claimed before intake saw the second file refused it as "not the file taken" (the seal
    /// it was claimed with named the first), and the photo went to quarantine with no record
    /// (attack review: 7 of 12). `stage.run@validate:PHOTO` holds the claimed run back.
    @Test func theSameBytesRenamedOverAPhotoJustTakenAreThatJobsPhoto() throws {
        let d = try start(env: ["PHOTOMEMO_FAILPOINTS": "stage.run@validate:twice.jpg=pause:1500"])
        try d.drop("Canon_40D.jpg", as: "twice.jpg")
        try d.waitUntil("validate is claimed and held") { d.log.contains("failpoint stage.run hit") }
        try d.drop("Canon_40D.jpg", as: "twice.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let jobs = try d.jobs()
        #expect(jobs.map(\.state) == ["done"], "\(jobs)")
        #expect(try records(d).count == 1)
        #expect(d.quarantined().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: d.home + "/inbox/twice.jpg"))
        #expect(d.stop().status == 0)
    }

    func hidden(_ d: DaemonHarness) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: d.home + "/inbox").filter { $0.hasPrefix(".photomemo-release") }
    }

    /// A daemon killed between renaming a stored photo aside and removing it (`release.aside`)
    /// left its bytes hidden in the inbox for good. The next start puts the file back, and it
    /// leaves as the stored photo it is: one record, nothing left.
    @Test func aPhotoADaemonWasKilledReleasingLeavesAfterTheNextStart() throws {
        let d = try start(env: ["PHOTOMEMO_FAILPOINTS": "release.aside=1"])
        try d.drop("Canon_40D.jpg", as: "killed.jpg")
        _ = try d.waitForExit(timeout: 60)
        #expect(try hidden(d).count == 1)
        try d.start()
        try d.waitIdle(jobs: 1, timeout: 60)
        try d.waitUntil("the inbox is empty") { try FileManager.default.contentsOfDirectory(atPath: d.home + "/inbox").isEmpty }
        #expect(d.log.contains("put back .photomemo-release-"))
        #expect(try records(d).count == 1)
        #expect(try d.jobs().map(\.state) == ["done"])
        #expect(d.quarantined().isEmpty)
        #expect(d.stop().status == 0)
    }

    /// Another drop renamed over a photo being released goes aside with it, and back under
    /// its name; a daemon killed before that left it hidden, lost. The next start puts it
    /// back: a record of its own.
    @Test func aDropLeftAsideByAKilledDaemonBecomesARecord() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try FileManager.default.createDirectory(atPath: d.home + "/inbox", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Nikon_D70.jpg").path,
                                         toPath: d.home + "/inbox/.photomemo-release-c0ffee-5eed-update.jpg")
        try d.start()
        try d.waitIdle(jobs: 1, timeout: 60)
        #expect(try d.jobs().map(\.photo) == ["update.jpg"])
        #expect(try records(d).count == 1)
        #expect(try hidden(d).isEmpty)
        #expect(d.stop().status == 0)
    }

    /// A `keep` inbox is never written (a sync tool's mirror): a hidden release name in it
    /// is not the daemon's to put back (attack review: planted ones were renamed).
    @Test func aKeepInboxPutsNothingBack() throws {
        var job = try #require(try JSONValue.parse(Data(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"))).objectValue)
        job["inbox"] = ["originals": "keep"]
        let d = try DaemonHarness(stages: JSONValue.object(job).jsonString)
        try FileManager.default.createDirectory(atPath: d.home + "/inbox", withIntermediateDirectories: true)
        let planted = d.home + "/inbox/.photomemo-release-12345-5eed-mirror.jpg"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Nikon_D70.jpg").path, toPath: planted)
        try d.start()
        try d.drop("Canon_40D.jpg")
        try d.waitIdle(jobs: 1)
        Thread.sleep(forTimeInterval: 2.5)  // a rescan (every 2 s here) has walked past it
        #expect(FileManager.default.fileExists(atPath: planted) && !FileManager.default.fileExists(atPath: d.home + "/inbox/mirror.jpg"))
        #expect(d.stop().status == 0)
    }

    @Test func aPhotoDroppedAgainAfterItsRecordWasDeletedIsANewRecord() throws {
        let d = try start()
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        try d.waitIdle(jobs: 1)
        let first = try #require(try records(d).first?["id"]?.stringValue)
        #expect(try DaemonHarness.run(["delete", first, "--home", d.home]).0 == 0)
        try d.drop("Nikon_D70.jpg", as: "b.jpg")
        try d.waitIdle(jobs: 2)
        let again = try records(d)
        #expect(again.count == 1 && again[0]["id"]?.stringValue != first)
        #expect(again.first?["assets"]?["original"]?["key"] != nil)
        #expect(FileManager.default.fileExists(atPath: d.home + "/inbox/b.jpg") == false)
        #expect(d.stop().status == 0)
    }

    @Test func aFailedPhotosBytesDroppedAgainNeverHoldBackAGoodPhotoBesideIt() throws {
        let d = try start()
        try d.drop("corrupted.jpg", as: "bad.jpg")
        try d.waitIdle(jobs: 1)
        #expect(d.stop().status == 0)
        // While it is stopped: the same bad bytes again, and a good photo, in one rescan batch.
        try d.drop("corrupted.jpg", as: "bad-again.jpg")
        try d.drop("Pentax_K10D.jpg", as: "good.jpg")
        try d.start()
        try d.waitIdle(jobs: 3, timeout: 90)
        let jobs = try d.jobs()
        #expect(jobs.first { $0.photo == "good.jpg" }?.state == "done")
        let again = try #require(jobs.first { $0.photo == "bad-again.jpg" })
        // The default job leaves a JPEG's image data to the decoder (validate's scan_data: false).
        #expect(again.state == "failed" && again.error?.contains("Corrupt JPEG data") == true, "\(again)")
        #expect(!d.log.contains("UNIQUE constraint failed"))
        #expect(d.stop().status == 0)
    }

    @Test func aNameThatIsNotUTF8IsQuarantinedWithItsReason() throws {
        let d = try start()
        let path = Array((d.home + "/inbox/").utf8) + [0x66, 0xFF, 0xFE, 0x2E, 0x6A, 0x70, 0x67, 0]  // "f\xFF\xFE.jpg"
        let fd = path.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT, 0o644) }
        #expect(fd >= 0)
        close(fd)
        // Quarantined first, recorded as a failed job right after.
        try d.waitUntil("the file is quarantined and its job failed") {
            let failed = try d.jobs("state = 'failed'").count
            return d.quarantined().contains("inbox-name-66fffe2e6a7067") && failed == 1
        }
        let reason = try String(contentsOfFile: d.home + "/quarantine/inbox-name-66fffe2e6a7067.reason.json", encoding: .utf8)
        #expect(reason.contains(#"is not valid UTF-8"#) && reason.contains(#"f\\xFF\\xFE.jpg"#), "\(reason)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/inbox").isEmpty)
        #expect(d.stop().status == 0)
    }

    @Test func anOverLongLineIsQuarantinedWhole() throws {
        let d = try start()
        let long = #"{"memo":""# + String(repeating: "x", count: 1_500_000) + #""}"#
        try d.append(long + "\n" + #"{"memo":"after it"}"# + "\n")
        try d.waitIdle(jobs: 1)
        let q = try #require(d.quarantined().first { $0.hasPrefix("queue-line-") })
        let size = try FileManager.default.attributesOfItem(atPath: d.home + "/quarantine/" + q)[.size] as? Int
        #expect(size == long.utf8.count)
        #expect(try records(d).map { $0["memo"] } == ["after it"])
        #expect(d.stop().status == 0)
    }

    @Test func aMemoForAPhotoAlreadyIndexedUpdatesItsRecord() throws {
        let d = try start()
        try d.drop("Nikon_D70.jpg", as: "pic.jpg")
        try d.waitIdle(jobs: 1)
        try d.append(#"{"photo":"pic.jpg","type":"Memo","memo":"described later","fields":{"n":2}}"# + "\n")
        try d.waitIdle(jobs: 2)
        let all = try records(d)
        #expect(all.count == 1, "\(all)")
        #expect(all.first?["memo"] == "described later" && all.first?["fields"]?["n"] == 2 && all.first?["type"] == "Memo")
        #expect(all.first?["assets"]?["display"]?["key"] != nil)
        #expect(try d.jobs("state = 'failed'").isEmpty)
        #expect(d.stop().status == 0)
    }

    @Test func aHomeOthersMayWriteIsRefusedAndLeftUntouched() throws {
        let home = NSTemporaryDirectory() + "pm-open-home-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        chmod(home, 0o1777)
        let (status, _, err) = try DaemonHarness.run(["serve", "--home", home])
        #expect(status != 0 && err.contains("writable by other users"), "\(err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: home).isEmpty)
    }
}
