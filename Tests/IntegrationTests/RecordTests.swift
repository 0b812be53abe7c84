import Foundation
import SQLite
import Journal
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Records end to end: the whole pipeline (validate → compress → upload → index), then the
/// record commands through the real socket.
@Suite(.serialized) struct RecordTests {
    @Test func goodsMasterQueryUpdateDeleteAndTheChangeFeed() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8))
        try d.start()
        let goods: [(String, String, Int, Double)] = [
            ("orientation_landscape_1.jpg", "A-001", 1200, 0.35), ("orientation_landscape_2.jpg", "A-002", 300, 0.5),
            ("orientation_portrait_1.jpg", "B-001", 300, 0.2), ("Nikon_D70.jpg", "B-002", 80, 0.1),
        ]
        for (photo, code, price, rate) in goods {
            try d.append(#"{"photo":"\#(photo)","type":"GoodsMaster","memo":"item \#(code)","fields":{"code":"\#(code)","name":"n\#(code)","salesPrice":\#(price),"costRate":\#(rate)}}"# + "\n")
            try d.drop(photo)
        }
        try d.waitIdle(jobs: 4, timeout: 90)
        #expect(try d.stateCounts()["done"] == 4)
        let q = try json(d, ["query", "salesPrice >= 100 AND salesPrice <= 1500", "--type", "GoodsMaster", "--sort", "-salesPrice,costRate"])
        let codes = (q["records"]?.arrayValue ?? []).compactMap { $0["fields"]?["code"]?.stringValue }
        #expect(codes == ["A-001", "B-001", "A-002"])
        let first = try #require(q["records"]?.arrayValue?.first)
        #expect(first["assets"]?["display"]?["width"] == 860)
        #expect(first["type"] == "GoodsMaster")
        let id = try #require(first["id"]?.stringValue)
        let tag = try #require(first["change_tag"]?.stringValue)

        // Update with the current tag, then a stale one is refused.
        let updated = try json(d, ["update", id, "--field", "salesPrice=1500", "--field", "name=renamed", "--if-tag", tag])
        #expect(updated["fields"]?["salesPrice"] == 1500)
        let (status, _, err) = try DaemonHarness.run(["update", id, "--memo", "x", "--if-tag", tag, "--home", d.home])
        #expect(status == 1)
        #expect(err.contains("the record changed since that tag"))

        // The asset comes back byte for byte.
        let out = d.root + "/display.jpg"
        _ = try json(d, ["asset", id, "display", "-o", out])
        #expect(SHA256.hex(try Data(contentsOf: URL(fileURLWithPath: out))) == first["assets"]?["display"]?["sha256"]?.stringValue)

        // Delete by code: the record and its assets go.
        let byCode = try json(d, ["query", #"code == "B-002""#])
        let doomed = try #require(byCode["records"]?.arrayValue?.first)
        let keys = (doomed["assets"]?.objectValue ?? [:]).values.compactMap { $0["key"]?.stringValue }
        let del = try json(d, ["delete", try #require(doomed["id"]?.stringValue)])
        #expect(Set((del["released_assets"]?.arrayValue ?? []).compactMap(\.stringValue)) == Set(keys))
        try d.waitUntil("the released assets leave the store") {
            keys.allSatisfy { !FileManager.default.fileExists(atPath: d.home + "/store/" + $0) }
        }
        #expect(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.count == 3)

        let changes = try json(d, ["changes", "--since", "0"])
        #expect((changes["changes"]?.arrayValue ?? []).compactMap { $0["op"]?.stringValue } == ["create", "create", "create", "create", "update", "delete"])
        // Malformed predicates are errors with the column; unknown fields match nothing.
        let (bad, _, badErr) = try DaemonHarness.run(["query", "salesPrice >= ", "--home", d.home])
        #expect(bad == 1 && badErr.contains("column 15"))
        #expect(try json(d, ["query", "noSuchField == 3"])["records"] == [])
        #expect(d.stop().status == 0)
    }

    @Test func aBacklogAtTheIndexStageIsWrittenInBatchesAndABadJobFailsAlone() throws {
        let d = try DaemonHarness(stages: #"{"name": "index-only", "stages": [{"use": "index", "concurrency": 1}]}"#)
        try d.start()
        #expect(try json(d, ["pause", "index"])["paused_stages"] == ["index"])
        // 150 memos pile up at the paused stage; one names a record that does not exist.
        var lines = (0..<150).map { #"{"key":"m\#($0)","type":"Note","memo":"note \#($0)","fields":{"n":\#($0)}}"# }
        lines[70] = #"{"key":"bad","record":"rnosuchrecord","memo":"x"}"#
        try d.append(lines.joined(separator: "\n") + "\n")
        try d.waitUntil("150 jobs queued") { try d.stateCounts()["queued"] == 150 }
        #expect(try json(d, ["resume", "index"])["paused_stages"] == [])
        try d.waitIdle(jobs: 150)
        #expect(try d.stateCounts() == ["done": 149, "failed": 1])
        #expect(try d.jobs("state = 'failed'").first?.error?.contains("record rnosuchrecord named by the job does not exist") == true)
        #expect(try json(d, ["query", "n >= 0", "--type", "Note", "--limit", "500"])["records"]?.arrayValue?.count == 149)
        // The index stage took them in batches (at most 64 each), not one run per job.
        let db = try Database(path: d.home + "/photomemo.sqlite", readOnly: true)
        let batched = try db.query("SELECT message FROM job_events WHERE stage = 'index' AND event = 'done'").compactMap { $0.string(0) }
        #expect(batched.count >= 100, "\(batched.count) jobs done in batches")
        #expect(batched.allSatisfy { $0.hasPrefix("in a batch of ") && Int($0.dropFirst(14))! <= 64 })
        #expect(d.stop().status == 0)
    }
}

/// Two real uids on the socket (root's runuser): each sees only its own and public records.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct RecordACLTests {
    func run(as user: String, _ d: DaemonHarness, _ args: [String]) throws -> (Int32, JSONValue?) {
        // The socket is 0660 group nogroup: both users run with that group.
        let (status, out, _) = try DaemonHarness.run(as: user, group: "nogroup", [DaemonHarness.binary] + args + ["--home", d.home, "--json"])
        return (status, try? JSONValue.parse(out))
    }

    @Test func eachUserSeesOnlyTheirOwnAndPublicRecords() throws {
        let d = try DaemonHarness(stages: #"{"name": "idx", "stages": [{"use": "index", "with": {}}]}"#)
        for dir in [d.root, d.home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o751)
        }
        try d.start(args: ["--socket-group", "nogroup"])
        for (user, memo) in [("nobody", "nobody one"), ("nobody", "nobody two"), ("daemon", "daemon one")] {
            #expect(try run(as: user, d, ["enqueue", "--memo", memo, "--type", "Memo"]).0 == 0)
        }
        #expect(try DaemonHarness.run(["enqueue", "--memo", "for everyone", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 4)
        let all = try JSONValue.parse(try DaemonHarness.run(["query", "TRUEPREDICATE", "--home", d.home, "--json"]).1)
        let everyone = try #require(all["records"]?.arrayValue?.first { $0["memo"] == "for everyone" }?["id"]?.stringValue)
        #expect(try DaemonHarness.run(["update", everyone, "--acl", #"{"public": true}"#, "--home", d.home]).0 == 0)

        func memos(_ user: String) throws -> Set<String> {
            Set((try run(as: user, d, ["query", "TRUEPREDICATE", "--type", "Memo"]).1?["records"]?.arrayValue ?? []).compactMap { $0["memo"]?.stringValue })
        }
        #expect(try memos("nobody") == ["nobody one", "nobody two", "for everyone"])
        #expect(try memos("daemon") == ["daemon one", "for everyone"])
        let nobodysID = try #require(all["records"]?.arrayValue?.first { $0["memo"] == "nobody one" }?["id"]?.stringValue)
        #expect(try run(as: "daemon", d, ["get", nobodysID]).0 == 1)
        #expect(try run(as: "daemon", d, ["delete", nobodysID]).0 == 1)
        #expect(try run(as: "daemon", d, ["update", everyone, "--memo", "mine now"]).0 == 1)  // public is read-only
        #expect(try run(as: "nobody", d, ["get", nobodysID]).0 == 0)
        let feed = try run(as: "daemon", d, ["changes", "--since", "0"]).1?["changes"]?.arrayValue ?? []
        let seen = Set(feed.compactMap { $0["record"]?["memo"]?.stringValue })
        #expect(seen.isSubset(of: ["daemon one", "for everyone"]), "\(seen)")
        #expect(seen.contains("daemon one"))
        #expect(d.stop().status == 0)
    }
}
