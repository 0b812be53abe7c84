import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// validate → compress → upload in the real daemon, to the local store and to a real
/// S3-compatible server.
@Suite(.serialized) struct UploadTests {
    static func definition(store: String) -> String {
        """
        {"name": "upload-test", "store": "\(store)", "stages": [
          {"use": "validate", "with": {}},
          {"use": "compress", "with": {}},
          {"use": "upload", "with": {}}],
         "retry": {"max_attempts": 4, "base_ms": 50, "max_ms": 300}}
        """
    }

    /// Every object under the local store is complete: its bytes hash to its name.
    func expectWholeObjects(_ d: DaemonHarness) throws -> Int {
        let root = d.home + "/store/sha256"
        var count = 0
        for rel in FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? [] {
            let path = root + "/" + rel
            guard (try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType) == .typeRegular else { continue }
            #expect(try SHA256.hexOfFile(atPath: path).hex == (rel as NSString).lastPathComponent, "partial object \(rel)")
            count += 1
        }
        return count
    }

    @Test func samePhotoTwiceIsOneObjectAndTheInboxEmpties() throws {
        let d = try DaemonHarness(stages: Self.definition(store: "file:store"))
        try d.start()
        let watcher = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(watcher.call("watch")?["ok"] == true)
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1)
        // Stages report progress; watch shows it, ending at 1 for the upload.
        // (Progress travels from the stage's thread through the wake-up handle, so it may
        // land next to the stage's done event rather than strictly before it.)
        var progress: [JSONValue] = []
        var deadline = Date().addingTimeInterval(10)
        while Date() < deadline, let e = watcher.readLine(timeout: deadline.timeIntervalSinceNow) {
            if e["event"] == "stage_progress" { progress.append(e) }
            if e["event"] == "job_done" { deadline = min(deadline, Date().addingTimeInterval(0.5)) }
        }
        #expect(progress.contains { $0["stage"] == "compress" })
        #expect(progress.last?["stage"] == "upload" && progress.last?["fraction"] == 1.0, "\(progress)")
        try d.drop("Nikon_D70.jpg", as: "again.jpg")
        try d.waitIdle(jobs: 2)
        let job = try JSONValue.parse(try #require(try d.jobs("duplicate_of IS NULL").first).results)
        let assets = try #require(job["upload"]?["assets"])
        #expect(Set(assets.objectValue?.keys ?? [:].keys) == ["original", "display", "thumbnail"])
        #expect(try expectWholeObjects(d) == 3)  // original + 2 renditions, once
        #expect(!FileManager.default.fileExists(atPath: d.home + "/inbox/Nikon_D70.jpg"))
        // The copy leaves the inbox at the next rescan: its bytes are in the store.
        try d.waitUntil("the duplicate leaves the inbox") { !FileManager.default.fileExists(atPath: d.home + "/inbox/again.jpg") }
        let original = try #require(assets["original"]?["key"]?.stringValue)
        #expect(try SHA256.hexOfFile(atPath: d.home + "/store/" + original).hex
            == SHA256.hex(try Data(contentsOf: testPhotos.appendingPathComponent("Nikon_D70.jpg"))))
        #expect(d.stop().status == 0)
    }

    @Test func killedDuringALocalWriteLeavesNoPartialObjectAndFinishesAfterRestart() throws {
        let d = try DaemonHarness(stages: Self.definition(store: "file:store"))
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "store.before_rename=2"])
        for p in ["Nikon_D70.jpg", "Pentax_K10D.jpg"] { try d.drop(p) }
        let end = try d.waitForExit()
        #expect(end.status == SIGKILL)
        _ = try expectWholeObjects(d)
        try d.start()
        try d.waitIdle(jobs: 2)
        #expect(try d.stateCounts()["done"] == 2)
        #expect(try expectWholeObjects(d) == 6)
        #expect(d.stop().status == 0)
    }

    /// compress writes its renditions together and fsyncs their folder once: SIGKILL with
    /// them renamed in and the folder not yet fsync'd (compress's outcome not written).
    /// After the restart compress runs again over the same names: each job is done once,
    /// its renditions whole in the store, no temp file left beside them.
    @Test func killedBeforeTheRenditionsFolderFsyncFinishesAfterRestart() throws {
        let d = try DaemonHarness(stages: Self.definition(store: "file:store"))
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "files.before_folder_fsync=2"])
        for p in ["Nikon_D70.jpg", "Pentax_K10D.jpg"] { try d.drop(p) }
        #expect(try d.waitForExit().status == SIGKILL)
        #expect(d.log.contains("failpoint files.before_folder_fsync hit"))
        try d.start()
        try d.waitIdle(jobs: 2)
        #expect(try d.stateCounts()["done"] == 2)
        #expect(try expectWholeObjects(d) == 6)
        let left = FileManager.default.enumerator(atPath: d.home + "/renditions")?.allObjects as? [String] ?? []
        #expect(!left.contains { $0.hasSuffix(".tmp") }, "\(left)")
        #expect(d.stop().status == 0)
    }

    @Test func toARealS3ServerThroughAnOutageAndBack() throws {
        let s3 = try SeaweedFS()
        let d = try DaemonHarness(stages: Self.definition(store: s3.storeURL))
        try d.start(env: s3.environment)
        try d.drop("orientation_landscape_1.jpg")
        try d.waitIdle(jobs: 1)
        let first = try JSONValue.parse(try #require(try d.jobs().first).results)
        for (name, asset) in first["upload"]?["assets"]?.objectValue ?? [:] {
            let key = try #require(asset["key"]?.stringValue)
            let bytes = try #require(s3.fetchWithCurl("pm/" + key), "\(name) not readable with curl")
            #expect(SHA256.hex(bytes) == asset["sha256"]?.stringValue, "\(name)")
        }
        // The daemon counts its store requests: on a first attempt, one PUT per object and no HEAD.
        let assets = first["upload"]?["assets"]?.objectValue?.count ?? 0
        let (_, metrics, _) = try DaemonHarness.run(["metrics", "--home", d.home])
        #expect(assets == 3)
        #expect(metrics.contains("photomemo_store_requests_total{method=\"PUT\"} \(assets)\n"), "\(metrics)")
        #expect(!metrics.contains("photomemo_store_requests_total{method=\"HEAD\"}"), "\(metrics)")
        // The server goes away: jobs wait without spending attempts, the store shows down.
        s3.stop()
        for p in ["orientation_landscape_2.jpg", "orientation_landscape_3.jpg", "Nikon_D70.jpg"] { try d.drop(p) }
        try d.waitUntil("jobs wait for the store") {
            try d.jobs("state = 'waiting'").count == 3
        }
        let (_, statusText, _) = try DaemonHarness.run(["status", "--json", "--home", d.home])
        #expect(try JSONValue.parse(statusText)["dependencies"]?[s3.storeURL.components(separatedBy: "?")[0]] == "down")
        try s3.start()
        try d.waitIdle(jobs: 4, timeout: 90)
        #expect(try d.stateCounts()["done"] == 4)
        #expect(try d.jobs().allSatisfy { $0.error == nil })
        // Runs after an outage ask first: a HEAD before each of the 3 jobs' 3 objects.
        let (_, after, _) = try DaemonHarness.run(["metrics", "--home", d.home])
        let heads = after.split(separator: "\n").first { $0.hasPrefix("photomemo_store_requests_total{method=\"HEAD\"} ") }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        #expect(heads >= 9, "\(after)")
        #expect(d.stop().status == 0)
    }

    @Test func wrongCredentialsFailPermanentlyWithAClearMessage() throws {
        let s3 = try SeaweedFS()
        let d = try DaemonHarness(stages: Self.definition(store: s3.storeURL))
        var env = s3.environment
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        try d.start(env: env)
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1)
        let job = try #require(try d.jobs().first)
        #expect(job.state == "failed")
        // A first attempt's PUT (no HEAD before it) brings the server's own words.
        #expect(job.error?.contains("SignatureDoesNotMatch") == true, "\(job.error ?? "")")
        #expect(d.stop().status == 0)
    }
}
