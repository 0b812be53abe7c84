import Foundation
import TestSupport
import Testing

/// Issue 25, per-user quotas (`"quota"` in the job definition), on the real daemon with
/// two real uids: bob past his quota is refused at every way in, with `over_quota` and
/// why; alice is not touched by it; `status` shows bob what he uses.
extension WhoMayDoWhatTests {
    func enqueueError(_ user: String, _ d: DaemonHarness) throws -> (code: String?, message: String?) {
        let replies = try raw(user, d, [["id": 1, "cmd": "enqueue", "job": ["memo": "one more"]]], seconds: 2)
        let error = replies.first { $0["id"] == 1 }?["error"]
        return (error?["code"]?.stringValue, error?["message"]?.stringValue)
    }

    @Test(arguments: ["sqlite", "postgres"]) func aUserAtTheirRecordsQuotaIsRefusedAtEveryWayIn(_ engine: String) throws {
        let d = try start(database: engine == "postgres" ? try PostgresServer.freshDatabase() : nil, definition: ["quota": ["records": 2]])
        // Bob's first job waits after index (notify paused): it has its record, counted
        // once, so his second is within his quota of 2 (it was counted as a job too).
        #expect(try DaemonHarness.run(["pause", "notify", "--home", d.home]).0 == 0)
        for i in 0..<2 {
            let (status, _, err) = try cli(bob, d, ["enqueue", "--memo", "bob \(i)"])
            #expect(status == 0, "\(err)")
            try d.waitUntil("bob's record \(i)", timeout: 60) {
                try cliJSON(bob, d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.count == i + 1
            }
        }
        #expect(try DaemonHarness.run(["resume", "notify", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 2, timeout: 60)
        // enqueue: the error, with its code.
        let (code, message) = try enqueueError(bob, d)
        #expect(code == "over_quota" && message?.contains("quota of 2 records") == true, "\(String(describing: code)): \(String(describing: message))")
        // A queue line: quarantined with the reason.
        try appendLine(bob, #"{"memo":"from the file"}"#, to: d.home + "/queue.d/\(bob).jsonl")
        // (Quarantine writes under a dot name, then renames.)
        func saved() -> [String] { d.quarantined().filter { !$0.hasPrefix(".") } }
        try d.waitUntil("bob's line is quarantined") { saved().count == 1 }
        let reason = try String(contentsOfFile: d.home + "/quarantine/" + saved()[0] + ".reason.json", encoding: .utf8)
        #expect(reason.contains("quota of 2 records"), "\(reason)")
        // Status shows him his use of it.
        let quota = try cliJSON(bob, d, ["status"])["quota"]
        #expect(quota?["records"] == 2 && quota?["used"]?["records"] == 2 && quota?["used"]?["bytes"] == 0, "\(String(describing: quota))")
        // Alice is not held by bob's quota.
        #expect(try cli(alice, d, ["enqueue", "--memo", "alice"]).0 == 0)
        try d.waitIdle(jobs: 3, timeout: 60)
    }

    /// Bytes: a stale temporary file (`inbox.stale_temp`) counts toward its owner's bytes;
    /// past the quota, bob's enqueue is refused and his photo waits in the inbox, untaken.
    @Test func staleTemporaryFilesCountTowardTheirOwnersBytesQuota() throws {
        let d = try start(definition: ["quota": ["bytes": 100_000], "inbox": ["stale_temp": "1s"]])
        let fill = d.home + "/inbox/.fill.part"
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", "head -c 150000 /dev/zero > \(fill) && touch -d '1 hour ago' \(fill)"]).0 == 0)
        try d.waitUntil("bob's stale file counts", timeout: 20) {
            try cliJSON(bob, d, ["status"])["quota"]?["used"]?["bytes"]?.intValue ?? 0 >= 150_000
        }
        let (code, message) = try enqueueError(bob, d)
        #expect(code == "over_quota" && message?.contains("quota of 100000 bytes") == true, "\(String(describing: code)): \(String(describing: message))")
        try drop(bob, d, "Nikon_D70.jpg", as: "bob.jpg")
        try drop(alice, d, "Nikon_D70.jpg", as: "alice.jpg")
        try d.waitIdle(jobs: 1, timeout: 90)
        Thread.sleep(forTimeInterval: 3)  // a rescan or two: bob's photo is still not taken
        #expect(try d.jobs().count == 1 && FileManager.default.fileExists(atPath: d.home + "/inbox/bob.jpg"))
        // `photomemo inbox` lists it, with why it waits.
        let waiting = try cliJSON(bob, d, ["inbox"])["skipped"]?.arrayValue?.first { $0["name"] == "bob.jpg" }
        #expect(waiting?["reason"]?.stringValue?.contains("waits, not taken: a photo of 14034 bytes would take \(bob) past their quota of 100000 bytes") == true,
                "\(String(describing: waiting))")
        #expect(d.log.contains("quota of 100000 bytes") && d.log.contains("their inbox files wait"), "\(d.log.suffix(2000))")
    }
}
