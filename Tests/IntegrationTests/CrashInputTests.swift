import Foundation
import SQLite
import Journal
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Inputs that each once crashed the daemon (an overflow trap, a stack overflow), broke
/// every later write (a subscription SQLite cannot parse) or decoded another photo
/// (`t.jpg[]`), all thrown at ONE daemon process: it stays up, each bad job fails once
/// with a clear reason, and good work goes on.
@Suite(.serialized) struct CrashInputTests {
    /// The default job: the whole pipeline, notify included.
    static func pipeline() throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)
    }

    func write(_ d: DaemonHarness, _ name: String, _ bytes: [UInt8]) throws {
        let tmp = d.home + "/inbox/.\(name).part"
        try Data(bytes).write(to: URL(fileURLWithPath: tmp))
        rename(tmp, d.home + "/inbox/" + name)
    }

    func sha(_ photo: String) throws -> String { SHA256.hex(Data(try testPhoto(photo))) }

    @Test func oneDaemonSurvivesEveryCrashInputAndStillWorks() throws {
        let d = try DaemonHarness(stages: try Self.pipeline())
        try d.start()
        let pid = try #require(d.process?.processIdentifier)

        // Photos: overflowing PNG and HEIC headers, a 1 x 3,000,000 PNG, and t.jpg[] beside a different t.jpg.
        try write(d, "huge.png", Synthetic.png(width: 4_294_967_295, height: 4_294_967_295, withData: false))
        try write(d, "huge.heic", Synthetic.heic(sizes: [(4_294_967_295, 4_294_967_295), (640, 480)]))
        let needle = d.root + "/needle.png"
        try makePNG(needle, mode: "grey", width: 1, height: 3_000_000)
        try write(d, "needle.png", [UInt8](try Data(contentsOf: URL(fileURLWithPath: needle))))
        try d.drop("Canon_40D.jpg", as: "t.jpg")
        try d.drop("orientation_landscape_1.jpg", as: "t.jpg[]")

        // Socket: 300,000 parentheses in a query, 1,100 NOTs in a subscription.
        let client = try SocketClient(path: d.home + "/photomemo.sock")
        let parens = String(repeating: "(", count: 300_000) + "a == 1" + String(repeating: ")", count: 300_000)
        let q = try #require(client.call("query", ["predicate": .string(parens)]))
        #expect(q["ok"] == false && q["error"]?["code"] == "bad_request")
        #expect(q["error"]?["message"] == "predicate: nested deeper than 64 levels at column 65")
        let nots = String(repeating: "NOT ", count: 1_100) + "a == 1"
        let s = try #require(client.call("subscribe", ["type": "Photo", "predicate": .string(nots), "fires_on": "create", "exec": ["true"]], id: 2))
        #expect(s["ok"] == false && s["error"]?["code"] == "bad_request")
        #expect(s["error"]?["message"] == "predicate: nested deeper than 64 levels at column 257")

        try d.waitIdle(jobs: 5, timeout: 90)
        // The same process, never restarted, still answering.
        #expect(d.process?.isRunning == true && d.process?.processIdentifier == pid && kill(pid, 0) == 0)
        #expect(client.call("status", id: 3)?["ok"] == true)

        // Each bad job failed once, with a reason naming the sizes.
        let failed = Dictionary(uniqueKeysWithValues: try d.jobs("state = 'failed'").map { ($0.photo ?? "", $0.error ?? "") })
        #expect(failed["huge.png"] == "image claims 4294967295x4294967295 = more than 2^63 pixels, over max_pixels (100000000): a possible decompression bomb")
        #expect(failed["huge.heic"]?.contains("4294967295x4294967295") == true)
        #expect(failed["needle.png"] == "rendition \"display\" would be 860x2580000000 = 2218800000000 pixels, over compress max_pixels (100000000)")
        let db = try Database(path: d.home + "/photomemo.sqlite", readOnly: true)
        // Runs per job and stage (needle.png passes validate, fails in compress): one each.
        let runs = try db.query("""
            SELECT j.photo || ' ' || e.stage, count(*) FROM jobs j JOIN job_events e ON e.job_id = j.id
            WHERE j.state = 'failed' AND e.event = 'started' GROUP BY j.id, e.stage
            """)
        #expect(Set(runs.compactMap { $0.string(0) }) == ["huge.png validate", "huge.heic validate", "needle.png validate", "needle.png compress"])
        for row in runs { #expect(row.int(1) == 1, "\(row.string(0) ?? "") ran \(row.int(1) ?? 0) times") }

        // t.jpg[] has its own photo's pictures, not t.jpg's.
        let records = try #require(client.call("query", ["predicate": "TRUEPREDICATE"], id: 4)?["result"]?["records"]?.arrayValue)
        func record(of photo: String) -> JSONValue? {
            let hash = try? sha(photo)
            return records.first { $0["assets"]?["original"]?["sha256"]?.stringValue == hash }
        }
        let bracketed = try #require(record(of: "orientation_landscape_1.jpg"))
        let plain = try #require(record(of: "Canon_40D.jpg"))
        #expect(bracketed["assets"]?["display"]?["width"] == 860 && bracketed["assets"]?["display"]?["height"] == 645)
        #expect(plain["assets"]?["display"]?["width"] == 860 && plain["assets"]?["display"]?["height"] == 585)
        #expect(bracketed["assets"]?["display"]?["sha256"] != plain["assets"]?["display"]?["sha256"])

        // A good photo after all this is a done record.
        try d.drop("Nikon_D70.jpg", as: "after.jpg")
        try d.waitIdle(jobs: 6, timeout: 60)
        #expect(try d.jobs("photo = 'after.jpg'").first?.state == "done")
        let after = client.call("query", ["predicate": "TRUEPREDICATE"], id: 5)?["result"]?["records"]?.arrayValue ?? []
        #expect(after.count == 3)
        #expect(after.contains { $0["assets"]?["original"]?["sha256"]?.stringValue == (try? sha("Nikon_D70.jpg")) })
        #expect(d.process?.processIdentifier == pid && d.starts == 1)
        #expect(d.stop().status == 0)
    }

    @Test func aStoredBadSubscriptionIsParkedWhileTheOthersDeliverAndUpdatesWork() throws {
        let d = try DaemonHarness(stages: try Self.pipeline())
        try d.start()
        let events = d.effects + "/events.jsonl"
        let good = try #require(try SocketClient(path: d.home + "/photomemo.sock").call("subscribe", [
            "type": "Photo", "predicate": "TRUEPREDICATE", "fires_on": "create,update",
            "exec": .array(["/bin/sh", "-c", "cat >> \(events); echo >> \(events)"].map(JSONValue.string)),
        ])?["result"]?["id"]?.stringValue)
        #expect(d.stop().status == 0)
        // As an older daemon stored it, before subscribe checked predicates.
        do {
            let db = try Database(path: d.home + "/photomemo.sqlite")
            try db.run("""
                INSERT INTO subscriptions(id, owner, type, predicate, fires_on, alert, sink, target, secret, created)
                VALUES ('sbad', NULL, 'Photo', ?, 'create,update', NULL, 'exec', '["true"]', NULL, 0)
                """, [.text(String(repeating: "NOT ", count: 1_100) + "a == 1")])
        }
        try d.start()
        try d.drop("Canon_40D.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        #expect(try d.stateCounts()["done"] == 1)  // notify included
        try d.waitUntil("the good subscription's delivery") { d.lines("events.jsonl").count == 1 }

        let client = try SocketClient(path: d.home + "/photomemo.sock")
        let subs = try #require(client.call("subscriptions")?["result"]?["subscriptions"]?.arrayValue)
        let bad = try #require(subs.first { $0["id"] == "sbad" })
        #expect(bad["state"] == "parked")
        #expect(bad["error"] == "predicate: nested deeper than 64 levels at column 257")
        #expect(subs.first { $0["id"]?.stringValue == good }?["state"] == "active")

        // A socket update fans out in its own transaction: it works, and reaches the good one.
        let id = try #require(client.call("query", ["predicate": "TRUEPREDICATE"], id: 2)?["result"]?["records"]?.arrayValue?.first?["id"])
        let updated = try #require(client.call("update", ["record": id, "memo": "still works"], id: 3))
        #expect(updated["ok"] == true, "\(updated)")
        try d.waitUntil("the update's delivery") { d.lines("events.jsonl").count == 2 }
        #expect(d.lines("events.jsonl").last?.contains("still works") == true)
        #expect(d.stop().status == 0)
    }
}
