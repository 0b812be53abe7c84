import Foundation
import StageKit
import Testing

/// Issue 24, item 4: bob deleting his own public record must not cascade into alice's
/// record that refers to it, nor tell him its id; a reference may name only a record its
/// writer may read (`enqueue` and `update` answer `bad_reference`; a queue line's job fails).
extension WhoMayDoWhatTests {
    @Test func referencesReachOnlyWhatTheWriterMayReadAndCascadesOnlyWhatTheDeleterMayWrite() throws {
        let d = try start()
        #expect(try cli(bob, d, ["enqueue", "--memo", "bob's place", "--type", "Restaurant"]).0 == 0)
        #expect(try cli(alice, d, ["enqueue", "--memo", "alice private", "--type", "Diary"]).0 == 0)
        try d.waitIdle(jobs: 2, timeout: 60)
        let place = try #require(try records(bob, d, "Restaurant").first?["id"]?.stringValue)
        let diary = try #require(try records(alice, d, "Diary").first?["id"]?.stringValue)
        let opened = try raw(bob, d, [["id": 1, "cmd": "update", "record": .string(place), "acl": ["public": true]]], seconds: 1)
        #expect(opened.first?["ok"] == true, "\(opened)")
        // Alice's visit (a line: no quote in it) refers to bob's public place, to be deleted with it.
        let visit = #"{"type":"Visit","memo":"alice visits","fields":{"place":{"ref":"\#(place)","action":"deleteSelf"}}}"#
        try appendLine(alice, visit, to: d.home + "/queue.d/alice.jsonl")
        // Bob's references to alice's private diary, and to nothing, over the socket and in his file.
        let toDiary: JSONValue = ["memo": "bob points at the diary", "fields": ["x": ["ref": .string(diary), "action": "deleteSelf"]]]
        let sent = try raw(bob, d, [["id": 2, "cmd": "enqueue", "job": toDiary]], seconds: 1)
        #expect(sent.first?["error"]?["code"] == "bad_reference", "\(sent)")
        #expect(sent.first?["error"]?["message"]?.stringValue?.contains("no such record, or not one you may read") == true, "\(sent)")
        try appendLine(bob, #"{"memo":"bob points at nothing","fields":{"x":{"ref":"r00000000000000000000000"}}}"#, to: d.home + "/queue.d/bob.jsonl")
        try d.waitIdle(jobs: 4, timeout: 60)
        let refused = try d.jobs("state = 'failed'")
        #expect(refused.count == 1 && refused.allSatisfy { $0.error?.contains("no such record, or not one you may read") == true },
                "\(refused.map(\.error))")
        #expect(try records(bob, d).count == 1)
        // An update of bob's own record pointing at the diary is refused with a stable code.
        let updated = try raw(bob, d, [["id": 3, "cmd": "update", "record": .string(place), "fields": ["x": ["ref": .string(diary)]]]], seconds: 1)
        #expect(updated.first?["error"]?["code"] == "bad_reference", "\(updated)")

        let visitID = try #require(try records(alice, d, "Visit").first?["id"]?.stringValue)
        let deleted = try cliJSON(bob, d, ["delete", place])
        #expect(deleted["deleted"] == [.string(place)], "\(deleted)")  // alice's visit is neither deleted nor named
        let kept = try cliJSON(alice, d, ["get", visitID])
        #expect(kept["fields"]?["place"]?["ref"] == .string(place) && kept["dangling"] == ["place"], "\(kept)")
        let (_, shown, _) = try cli(alice, d, ["get", visitID])
        #expect(shown.contains("(dangling"), "\(shown)")
        #expect(d.stop().status == 0)
    }
}
