import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// The trash on a real daemon with two real uids (DESIGN.md, "Running for months"): alice
/// ("daemon") deletes her photo's record, bob ("nobody") can neither see nor restore it;
/// restoring brings it back with its assets and a `create` change; after `"trash": "2s"`
/// the record is purged and its objects leave the store; `delete --purge` skips the trash.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct TrashDaemonTests {
    let users = WhoMayDoWhatTests()
    var alice: String { users.alice }
    var bob: String { users.bob }

    /// Alice's photo's record (through the pipeline), and its original's store file.
    func alicesPhoto(_ d: DaemonHarness, _ photo: String = "Nikon_D70.jpg", as name: String = "alice.jpg") throws -> (id: String, original: String) {
        try users.drop(alice, d, photo, as: name)
        var found: JSONValue?
        try d.waitUntil("alice's photo is a record", timeout: 60) {
            found = try users.records(alice, d).first { $0["source"]?.stringValue == name }
            return found != nil
        }
        let r = try #require(found)
        let key = try #require(r["assets"]?["original"]?["key"]?.stringValue)
        return (try #require(r["id"]?.stringValue), d.home + "/store/" + key)
    }

    @Test func deleteTrashesRestoreBringsBackAndOthersCannotTouchIt() throws {
        let d = try users.start()
        let (id, original) = try alicesPhoto(d)
        // Alice follows her subscription on Photo deletes and creates while she deletes and restores.
        let heard = try users.rawInBackground(alice, d, [["id": 1, "cmd": "subscribe", "type": "Photo", "fires_on": "create,delete"]], seconds: 10)
        Thread.sleep(forTimeInterval: 1)

        let deleted = try users.cliJSON(alice, d, ["delete", id])
        #expect(deleted["trashed"] == [.string(id)])
        #expect(try users.records(alice, d).isEmpty)
        #expect(try users.cli(alice, d, ["get", id]).0 == 1)
        let trashed = try users.cliJSON(alice, d, ["get", id, "--trashed"])
        #expect(trashed["id"]?.stringValue == id && trashed["deleted"] != nil && trashed["purge_after"] != nil)
        let listed = try users.cliJSON(alice, d, ["trash"])["records"]?.arrayValue ?? []
        #expect(listed.map { $0["id"] } == [.string(id)] && listed[0]["type"] == "Photo")
        // status counts the trash: alice's own, everyone's for an admin, none for bob.
        #expect(try users.cliJSON(alice, d, ["status"])["trash"]?["records"] == 1)
        #expect(try users.cliJSON(bob, d, ["status"])["trash"]?["records"] == 0)
        #expect(try json(d, ["status"])["trash"]?["records"] == 1)
        Thread.sleep(forTimeInterval: 2.5)  // two collector rounds: the object stays while it is in the trash
        #expect(FileManager.default.fileExists(atPath: original))

        // Bob sees nothing of it and cannot bring it back, nor purge it.
        #expect(try users.cliJSON(bob, d, ["trash"])["records"]?.arrayValue?.isEmpty == true)
        let (bobStatus, _, bobErr) = try users.cli(bob, d, ["restore-record", id])
        #expect(bobStatus == 1 && bobErr.contains("no such record"), "\(bobErr)")
        #expect(try users.cli(bob, d, ["get", id, "--trashed"]).0 == 1)
        #expect(try users.cli(bob, d, ["delete", id, "--purge"]).0 == 1)

        let restored = try users.cliJSON(alice, d, ["restore-record", id])
        #expect(restored["restored"] == [.string(id)])
        #expect(try users.records(alice, d).map { $0["id"] } == [.string(id)])
        #expect(try users.cliJSON(alice, d, ["status"])["trash"]?["records"] == 0)
        let out = d.root + "/restored.jpg"
        #expect(try DaemonHarness.run(["asset", id, "original", "-o", out, "--home", d.home]).0 == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(contentsOf: testPhotos.appendingPathComponent("Nikon_D70.jpg")))

        let events = heard().filter { $0["op"] != nil }
        #expect(events.map { $0["op"] } == ["delete", "create"] && events.allSatisfy { $0["record"]?["id"]?.stringValue == id }, "\(events)")
        let ops = (try users.cliJSON(alice, d, ["changes", "--since", "0"])["changes"]?.arrayValue ?? []).filter { $0["record_id"]?.stringValue == id }
        #expect(ops.map { $0["op"] } == ["create", "delete", "create"])
        #expect(d.stop().status == 0)
    }

    @Test func afterTheTrashTimeTheRecordIsPurgedAndItsObjectsLeaveTheStore() throws {
        let d = try users.start(definition: ["trash": "2s"])
        let (id, original) = try alicesPhoto(d)
        #expect(try users.cliJSON(alice, d, ["delete", id])["trashed"] == [.string(id)])
        #expect(FileManager.default.fileExists(atPath: original))
        try d.waitUntil("the purge releases the original", timeout: 15) { !FileManager.default.fileExists(atPath: original) }
        #expect(try users.cliJSON(alice, d, ["trash"])["records"]?.arrayValue?.isEmpty == true)
        let (status, _, err) = try users.cli(alice, d, ["restore-record", id])
        #expect(status == 1 && err.contains("no such record"), "\(err)")

        // delete --purge: gone at once, never in the trash.
        let (second, secondOriginal) = try alicesPhoto(d, "Pentax_K10D.jpg", as: "second.jpg")
        let purged = try users.cliJSON(alice, d, ["delete", second, "--purge"])
        #expect(purged["deleted"] == [.string(second)] && purged["trashed"] == [])
        #expect(try users.cli(alice, d, ["get", second, "--trashed"]).0 == 1)
        try d.waitUntil("--purge releases the original", timeout: 10) { !FileManager.default.fileExists(atPath: secondOriginal) }
        #expect(d.stop().status == 0)
    }

    /// Purging a record whose bytes a job not done has stored again (the same photo dropped
    /// anew, its job not yet at index): the object stays, and the new record's original is
    /// there. The collector asked only the records: it deleted the object and the new
    /// record pointed at nothing, the photo lost (attack review, on several hosts).
    @Test func aPurgeKeepsAnObjectAJobNotDoneStoredAgain() throws {
        let d = try users.start()
        let (id, original) = try alicesPhoto(d)
        #expect(try users.cli(alice, d, ["delete", id]).0 == 0)
        #expect(try DaemonHarness.run(["pause", "index", "--home", d.home]).0 == 0)
        try users.drop(alice, d, "Nikon_D70.jpg", as: "again.jpg")
        try d.waitUntil("the new job has stored its photo and waits for index") {
            try d.jobs("photo = 'again.jpg' AND state = 'queued' AND stage_index = 3").count == 1
        }
        #expect(try users.cli(alice, d, ["delete", id, "--purge"]).0 == 0)
        Thread.sleep(forTimeInterval: 2.5)  // a collector round or two
        #expect(FileManager.default.fileExists(atPath: original), "the object a job not done needs was deleted")
        #expect(try DaemonHarness.run(["resume", "index", "--home", d.home]).0 == 0)
        try d.waitUntil("the new record is made", timeout: 30) {
            try users.records(alice, d).contains { $0["source"]?.stringValue == "again.jpg" }
        }
        #expect(try json(d, ["verify"])["damaged"]?.arrayValue?.isEmpty == true)
        #expect(FileManager.default.fileExists(atPath: original))
    }
}
