import Foundation
import TestSupport
import Testing

/// Issue 25, rendered output bounded per event: a follower of a socket subscription gets
/// a record too big for one event (a 100 KB memo) as its id, type and owner, marked
/// `truncated`, in a line of at most 64 KiB; `get` still reads the whole record.
extension WhoMayDoWhatTests {
    @Test func aFollowersEventIsBoundedAndSaysWhenItCutTheRecord() throws {
        let d = try start()
        let listen = try rawInBackground(bob, d, [["id": 1, "cmd": "subscribe", "type": "Memo", "fires_on": "create"]], seconds: 8)
        Thread.sleep(forTimeInterval: 1.5)
        let memo = String(repeating: "long memo ", count: 10_000)  // 100 KB: one argument of the request script must stay under 128 KiB
        let small = try raw(bob, d, [["id": 1, "cmd": "enqueue", "job": ["memo": "short"]]], seconds: 1)
        let big = try raw(bob, d, [["id": 2, "cmd": "enqueue", "job": ["memo": .string(memo)]]], seconds: 1)
        #expect(small.first?["ok"] == true && big.first?["ok"] == true, "\(small) \(big)")
        let creates = listen().filter { $0["op"] == "create" }
        #expect(creates.count == 2, "\(creates.map { $0.jsonString.prefix(200) })")
        #expect(creates.allSatisfy { $0.jsonString.utf8.count <= 64 << 10 }, "\(creates.map { $0.jsonString.utf8.count })")
        let cut = try #require(creates.first { $0["truncated"] != nil })
        let id = try #require(cut["record"]?["id"]?.stringValue)
        #expect(cut["record"]?["owner"] == .string(bob) && cut["truncated"]?.stringValue?.contains("photomemo get \(id)") == true, "\(cut)")
        #expect(creates.contains { $0["record"]?["memo"] == "short" })
        #expect(try cliJSON(bob, d, ["get", id])["memo"]?.stringValue == memo)
    }
}
