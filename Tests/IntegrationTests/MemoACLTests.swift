import Foundation
import TestSupport
import Testing

/// Issue 26: `acl` in a memo line and a memo sidecar (DESIGN: a sidecar has the memo-line
/// fields) shares the record it makes, as `update --acl` does; the owner is still the line's
/// or the files' owner, and only the owner may change a record's ACL.
extension WhoMayDoWhatTests {
    @Test func anACLInASidecarOrAMemoLineSharesTheRecordItsOwnerMakes() throws {
        let d = try start()
        // alice's sidecar shares her photo's record with bob, read-only.
        try put(alice, d, #"{"memo": "for bob to see", "acl": {"read": ["\#(bob)"]}}"#, as: "IMG_S.jpg.json")
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_S.jpg")
        // Her queue line makes a record bob may write.
        try appendLine(alice, #"{"memo":"shared task","type":"Task","acl":{"write":["\#(bob)"]}}"#, to: d.home + "/queue.d/alice.jsonl")
        // And `enqueue --acl` shares one as her line does.
        #expect(try cli(alice, d, ["enqueue", "--memo", "enqueued for bob", "--acl", #"{"read": ["\#(bob)"]}"#]).0 == 0)
        let (badStatus, _, badErr) = try cli(alice, d, ["enqueue", "--memo", "x", "--acl", "[1]"])
        #expect(badStatus != 0 && badErr.contains("--acl needs a JSON object"), "\(badErr)")
        try d.waitIdle(jobs: 3, timeout: 60)
        let seen = try records(bob, d)
        #expect(Set(seen.compactMap { $0["memo"]?.stringValue }) == ["for bob to see", "shared task", "enqueued for bob"], "\(seen)")
        #expect(seen.allSatisfy { $0["owner"] == .string(alice) }, "the owner is the file's or line's owner: \(seen)")
        let task = try #require(seen.first { $0["type"] == "Task" }?["id"]?.stringValue)
        // bob may write the task, but not change whom it is shared with: his line fails.
        try appendLine(bob, #"{"record":"\#(task)","memo":"mine now","acl":{"read":[],"write":[]}}"#, to: d.home + "/queue.d/bob.jsonl")
        try d.waitIdle(jobs: 4, timeout: 30)
        let refused = try #require(try d.jobs().last)
        #expect(refused.state == "failed" && refused.error == "record \(task) named by the job may not be changed by \(bob) (an \"acl\" only by its owner)",
                "\(refused)")
        #expect(try records(alice, d).first { $0["type"] == "Task" }?["memo"] == "shared task")
        // alice's sidecar edited to share no more: bob no longer sees her photo.
        try put(alice, d, #"{"memo": "private again", "acl": {"read": []}}"#, as: "IMG_S.json")
        try d.waitUntil("bob no longer sees the photo's record", timeout: 30) { try records(bob, d).count == 2 }
        #expect(try records(alice, d).contains { $0["memo"] == "private again" })
    }
}
