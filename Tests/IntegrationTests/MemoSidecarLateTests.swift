import Foundation
import TestSupport
import Testing

/// Issue 26: a memo sidecar that arrives, or changes, after its photo has left a `delete`
/// or `move` inbox updates the photo's record (the ledger's last photo of a name it matches,
/// of its owner), and then leaves as the photo did.
extension WhoMayDoWhatTests {
    /// Jobs/photo-memo.json with `inbox.originals` set to `mode`.
    func originals(_ mode: String) throws -> String {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)
        let changed = text.replacingOccurrences(of: #"{"use": "upload",   "with": {}}"#, with: #"{"use": "upload", "with": {"keep_originals": "\#(mode)"}}"#)
        #expect(changed != text)
        return changed
    }

    @Test func aSidecarAfterItsPhotoLeftADeleteInboxUpdatesTheRecordAndLeaves() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_L.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let id = try #require(try records(alice, d).first?["id"]?.stringValue)
        try d.waitUntil("the photo left the inbox", timeout: 10) { try FileManager.default.contentsOfDirectory(atPath: inbox).isEmpty }
        // bob's sidecar of that name: no memo of alice's photo; it stays, waiting for his own.
        try put(bob, d, #"{"memo": "bob was here"}"#, as: "IMG_L.jpg.json")
        try d.waitUntil("bob's sidecar is listed as waiting", timeout: 10) {
            try inboxReasons(bob, d)["IMG_L.jpg.json"] == "memo sidecar waiting for its photo IMG_L.jpg"
        }
        try FileManager.default.removeItem(atPath: inbox + "/IMG_L.jpg.json")
        // NAME.json (no photo extension) matches the photo last taken as NAME.<any photo extension>.
        try put(alice, d, #"{"memo": "late words", "fields": {"code": "L-1"}}"#, as: "IMG_L.json")
        try d.waitUntil("the record has the late sidecar's memo", timeout: 30) { try records(alice, d).first?["memo"] == "late words" }
        try d.waitUntil("the sidecar left as its photo did", timeout: 10) { try FileManager.default.contentsOfDirectory(atPath: inbox).isEmpty }
        try put(alice, d, #"{"memo": "later still", "fields": {"code": "L-2"}}"#, as: "IMG_L.jpg.json")
        try d.waitUntil("the record has the second sidecar's memo", timeout: 30) { try records(alice, d).first?["memo"] == "later still" }
        try d.waitUntil("the second sidecar left too", timeout: 10) { try FileManager.default.contentsOfDirectory(atPath: inbox).isEmpty }
        let all = try records(alice, d)
        #expect(all.count == 1 && all.first?["id"]?.stringValue == id && all.first?["fields"]?["code"] == "L-2", "\(all)")
        #expect(try records(bob, d).isEmpty)
        #expect(d.quarantined().isEmpty)
    }

    @Test func aSidecarAfterItsNestedPhotoLeftAMoveInboxUpdatesTheRecordAndIsMovedToo() throws {
        let d = try start(stages: try originals("move"))
        let inbox = d.home + "/inbox"
        #expect(try DaemonHarness.run(as: alice, ["/bin/mkdir", "-p", inbox + "/DCIM/100"]).0 == 0)
        try drop(alice, d, "Canon_40D.jpg", as: "DCIM/100/IMG_M.JPG")
        try d.waitIdle(jobs: 1, timeout: 60)
        try d.waitUntil("the photo was moved", timeout: 10) { FileManager.default.fileExists(atPath: d.home + "/done/DCIM%2F100%2FIMG_M.JPG") }
        try put(alice, d, Self.lightroomXMP, as: "DCIM/100/IMG_M.xmp")
        try d.waitUntil("the record has the XMP's memo", timeout: 30) { try records(alice, d).first?["memo"] == "lunch receipt" }
        try d.waitUntil("the sidecar was moved beside it", timeout: 10) {
            FileManager.default.fileExists(atPath: d.home + "/done/DCIM%2F100%2FIMG_M.xmp")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: inbox + "/DCIM/100").isEmpty)
        #expect(try records(alice, d).count == 1)
    }

    /// A sidecar edited in place just before its photo is released (the edit still inside
    /// `inbox.quiet_after_close`, unread): it is not released with the photo; read once
    /// settled, it updates the record, and then leaves.
    @Test func aSidecarEditedJustBeforeItsPhotosReleaseIsNotLost() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        #expect(try DaemonHarness.run(["pause", "upload", "--home", d.home]).0 == 0)
        try put(alice, d, #"{"memo": "first draft"}"#, as: "IMG_R.jpg.json")
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_R.jpg")
        try d.waitUntil("the photo's job waits at upload", timeout: 60) { try d.jobs().first?.results.contains("display") == true }
        #expect(try DaemonHarness.run(as: alice, ["/bin/sh", "-c", #"printf '%s' '{"memo": "final words"}' > \#(inbox)/IMG_R.jpg.json"#]).0 == 0)
        #expect(try DaemonHarness.run(["resume", "upload", "--home", d.home]).0 == 0)
        try d.waitUntil("the record has the edit", timeout: 30) { try records(alice, d).first?["memo"] == "final words" }
        try d.waitUntil("the sidecar left after its photo", timeout: 10) { try FileManager.default.contentsOfDirectory(atPath: inbox).isEmpty }
        #expect(try records(alice, d).count == 1)
    }

    /// A late sidecar names its photo's record; once its owner deleted that record it has
    /// none: it waits for a photo as any sidecar without one does, and makes no record of
    /// the deleted photo's name and bytes (found on the release build: it made one).
    @Test func aLateSidecarDoesNotBringBackARecordItsOwnerDeleted() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        try drop(alice, d, "Canon_40D.jpg", as: "IMG_D.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let id = try #require(try records(alice, d).first?["id"]?.stringValue)
        try d.waitUntil("the photo left the inbox", timeout: 10) { try FileManager.default.contentsOfDirectory(atPath: inbox).isEmpty }
        #expect(try cli(alice, d, ["delete", id]).0 == 0)
        try put(alice, d, #"{"memo": "after the delete"}"#, as: "IMG_D.json")
        try d.waitUntil("the sidecar is listed as waiting", timeout: 10) {
            try inboxReasons(alice, d)["IMG_D.json"]?.hasPrefix("memo sidecar waiting for its photo IMG_D") == true
        }
        Thread.sleep(forTimeInterval: 3)  // a rescan or two: nothing is made of it
        #expect(try records(alice, d).isEmpty)
        #expect(try d.jobs().count == 1)
    }
}
