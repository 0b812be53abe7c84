import Foundation
import StageKit
import TestSupport
import Testing

/// A memo that arrives while its photo's job is already past the stage that writes the
/// record (found by `scripts/torture`: the memo joined the job, the record was written
/// without it, and the memo was lost). It must still reach the record.
@Suite(.serialized) struct LateMemoTests {
    @Test func aMemoForAPhotoAlreadyIndexedButUnfinishedUpdatesItsRecord() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start()
        _ = try json(d, ["pause", "notify"])  // holds the photo's job between index and notify
        try d.drop("Canon_40D.jpg", as: "late.jpg")
        try d.waitUntil("the photo's record is written") {
            try d.jobs("photo = 'late.jpg'").first.map { try JSONValue.parse($0.results)["index"] != nil } == true
        }
        try d.append(#"{"photo": "late.jpg", "type": "Houses", "memo": "came late", "fields": {"n": 7}}"# + "\n")
        try d.waitUntil("the memo line is read") { try json(d, ["status"])["backlog"]?["queue_unread_bytes"] == 0 }
        _ = try json(d, ["resume", "notify"])
        try d.waitUntil("idle") {
            let c = try d.stateCounts()
            return (c["queued"] ?? 0) + (c["running"] ?? 0) + (c["waiting"] ?? 0) == 0 && !c.isEmpty
        }
        let records = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue)
        #expect(records.count == 1)
        #expect(records.first?["type"] == "Houses" && records.first?["memo"] == "came late")
        #expect(records.first?["fields"]?["n"] == 7)
        #expect(records.first?["assets"]?["original"] != nil)
        #expect(try d.jobs("state != 'done'").isEmpty)
        d.stop()
    }
}
