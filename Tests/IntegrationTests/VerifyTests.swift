import Foundation
import Glibc
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// `photomemo verify [--repair]` on a local store (DESIGN.md, "Running for months": verify).
@Suite(.serialized) struct VerifyTests {
    func store(_ d: DaemonHarness, _ key: String) -> String { d.home + "/store/" + key }

    /// `photomemo verify ARGS --json` as the admin: (exit status, report).
    func verify(_ d: DaemonHarness, _ args: [String] = []) throws -> (Int32, JSONValue) {
        let (status, out, err) = try DaemonHarness.run(["verify", "--home", d.home, "--json"] + args)
        #expect(status == 0 || status == 1, "\(err)")
        return (status, try JSONValue.parse(out))
    }

    @Test func verifyFindsDamagedMissingAndOrphanedObjectsAndRepairRemakesAndReleasesThem() throws {
        let d = try DaemonHarness(stages: BackupRestoreTests.definition)
        try d.start()
        for p in ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg"] { try d.drop(p) }
        try d.waitIdle(jobs: 3)
        let recs = (try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []).sorted { ($0["id"]?.stringValue ?? "") < ($1["id"]?.stringValue ?? "") }
        try #require(recs.count == 3)
        let (a, b, c) = (recs[0], recs[1], recs[2])
        let damagedKey = try #require(a["assets"]?["display"]?["key"]?.stringValue)
        let missingKey = try #require(b["assets"]?["thumbnail"]?["key"]?.stringValue)
        let goodBytes = try Data(contentsOf: URL(fileURLWithPath: store(d, damagedKey)))
        let fd = open(store(d, damagedKey), O_WRONLY)
        _ = pwrite(fd, "X", 1, 100)
        close(fd)
        unlink(store(d, missingKey))
        // An orphan: an object no record and no job names.
        let orphan = Data("left behind".utf8)
        let orphanKey = "sha256/" + { h in "\(h.prefix(2))/\(h.dropFirst(2).prefix(2))/\(h)" }(SHA256.hex(orphan))
        try FileManager.default.createDirectory(atPath: (store(d, orphanKey) as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try orphan.write(to: URL(fileURLWithPath: store(d, orphanKey)))

        let (status, found) = try verify(d)
        #expect(status == 1)
        #expect(found["checked"]?.intValue == 9 && found["ok"]?.intValue == 7)
        #expect(found["damaged"]?.arrayValue?.map { "\($0["record"]?.stringValue ?? "") \($0["asset"]?.stringValue ?? "")" } == ["\(a["id"]!.stringValue!) display"])
        #expect(found["missing"]?.arrayValue?.map { "\($0["record"]?.stringValue ?? "") \($0["asset"]?.stringValue ?? "")" } == ["\(b["id"]!.stringValue!) thumbnail"])
        #expect(found["orphans"]?.arrayValue?.compactMap { $0["key"]?.stringValue } == [orphanKey])
        #expect(FileManager.default.fileExists(atPath: store(d, orphanKey)), "verify without --repair deletes nothing")

        let (_, repaired) = try verify(d, ["--repair"])
        #expect(repaired["repaired"]?.intValue == 3, "\(repaired.jsonString)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store(d, damagedKey))) == goodBytes)
        #expect(try SHA256.hexOfFile(atPath: store(d, missingKey)).hex == b["assets"]?["thumbnail"]?["sha256"]?.stringValue)
        #expect(!FileManager.default.fileExists(atPath: store(d, orphanKey)))

        let (clean, again) = try verify(d)
        #expect(clean == 0)
        #expect(again["ok"]?.intValue == 9 && again["orphans"]?.arrayValue?.isEmpty == true, "\(again.jsonString)")
        let status2 = try json(d, ["status"])
        #expect(status2["verify"]?["ok"]?.intValue == 9 && status2["verify"]?["damaged"]?.intValue == 0)
        let (_, metrics, _) = try DaemonHarness.run(["metrics", "--home", d.home])
        #expect(metrics.contains("photomemo_verify_assets{result=\"ok\"} 9"))

        // An original cannot be made again: found, and --repair says so.
        let originalKey = try #require(c["assets"]?["original"]?["key"]?.stringValue)
        unlink(store(d, originalKey))
        let (lost, report) = try verify(d, ["--repair"])
        #expect(lost == 1)
        let missing = report["missing"]?.arrayValue ?? []
        #expect(missing.count == 1 && missing.first?["asset"] == "original")
        #expect(missing.first?["repair_error"]?.stringValue?.contains("an original cannot be made again") == true, "\(report.jsonString)")

        // The last run's counts outlive the daemon (SIGKILL, restart): status and metrics
        // still say when it ran and what it found (an alert on its age misfired after restarts).
        let before = try json(d, ["status"])["verify"]
        #expect(before?["missing"]?.intValue == 1)
        d.stop(SIGKILL)
        try d.start()
        #expect(try json(d, ["status"])["verify"] == before)
        let (_, restarted, _) = try DaemonHarness.run(["metrics", "--home", d.home])
        #expect(restarted.contains("photomemo_verify_assets{result=\"missing\"} 1") && restarted.contains("photomemo_verify_last_run_timestamp_seconds"))
    }

    /// A trashed record's assets are checked and repaired like a live one's: it may be
    /// restored (verify read only live records, so a restore brought back a broken photo).
    @Test func aTrashedRecordsAssetsAreVerifiedAndRepaired() throws {
        let d = try DaemonHarness(stages: BackupRestoreTests.definition)
        try d.start()
        try d.drop("Canon_40D.jpg")
        try d.waitIdle(jobs: 1)
        let record = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.first)
        let id = try #require(record["id"]?.stringValue)
        let key = try #require(record["assets"]?["display"]?["key"]?.stringValue)
        #expect(try DaemonHarness.run(["delete", id, "--home", d.home]).0 == 0)
        let fd = open(store(d, key), O_WRONLY)
        _ = pwrite(fd, "X", 1, 100)
        close(fd)
        let (status, found) = try verify(d)
        #expect(status == 1)
        #expect(found["damaged"]?.arrayValue?.map { "\($0["record"]?.stringValue ?? "") \($0["asset"]?.stringValue ?? "")" } == ["\(id) display"],
                "\(found.jsonString)")
        let (_, repaired) = try verify(d, ["--repair"])
        #expect(repaired["repaired"]?.intValue == 1, "\(repaired.jsonString)")
        #expect(try SHA256.hexOfFile(atPath: store(d, key)).hex == record["assets"]?["display"]?["sha256"]?.stringValue)
        #expect(try DaemonHarness.run(["restore-record", id, "--home", d.home]).0 == 0)
        #expect(try verify(d).0 == 0)
        #expect(d.stop().status == 0)
    }

    /// The objects of a job that is not done are not orphans: a failed job's renditions wait
    /// for `retry`, which resumes from them.
    @Test func objectsOfJobsNotDoneAreNotOrphans() throws {
        let d = try DaemonHarness(stages: """
            {"name": "stops-after-upload", "stages": [
              {"use": "validate", "with": {}}, {"use": "compress", "with": {}}, {"use": "upload", "with": {"store": "file:store"}},
              {"use": "exec", "with": {"command": ["/bin/false"]}}],
             "retry": {"max_attempts": 1, "base_ms": 50, "max_ms": 100}}
            """)
        try d.start()
        try d.drop("Canon_40D.jpg")
        try d.waitIdle(jobs: 1)
        #expect(try d.stateCounts()["failed"] == 1)
        let objects = FileManager.default.enumerator(atPath: d.home + "/store/sha256")?.allObjects.compactMap { $0 as? String }.filter { $0.count > 60 } ?? []
        #expect(objects.count == 3)
        let (status, report) = try verify(d, ["--repair"])
        #expect(status == 0)
        #expect(report["orphans"]?.arrayValue?.isEmpty == true, "\(report.jsonString)")
        #expect(FileManager.default.enumerator(atPath: d.home + "/store/sha256")?.allObjects.compactMap { $0 as? String }.filter { $0.count > 60 }.count == 3)
    }
}
