import Foundation
import StageKit
import TestSupport
import Testing

/// A subscription's sink found down shows in `status` to its owner and to admins only: a
/// user's webhook host, and the reason naming its URL, are not another user's to see; it
/// leaves `status` once unsubscribed.
@Suite(.serialized) struct SinkHealthTests {
    let users = WhoMayDoWhatTests()

    @Test func aUsersDeadWebhookIsShownToThemAndAdminsNotToOthers() throws {
        let d = try users.start(["--allow-private-webhooks"])
        defer { d.stop() }
        let url = "http://127.0.0.1:\(try HTTPListener.closedPort())/bobs-secret-token"
        let subscribed = try users.cliJSON(users.bob, d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--webhook", url, "--secret", "s"])
        let id = try #require(subscribed["id"]?.stringValue, "\(subscribed)")
        #expect(try users.cli(users.bob, d, ["enqueue", "--memo", "for bob's hook"]).0 == 0)
        let host = "webhook http://127.0.0.1:\(URL(string: url)!.port!)"
        try d.waitUntil("status shows bob's webhook host down") { try json(d, ["status"])["dependencies"]?[host] == "down" }
        let bobs = try users.cliJSON(users.bob, d, ["status"])
        #expect(bobs["dependencies"]?[host] == "down")
        #expect(bobs["dependency_reasons"]?[host]?.stringValue?.contains(url) == true)
        let (_, alices, _) = try users.cli(users.alice, d, ["status", "--json"])
        #expect(!alices.contains("127.0.0.1") && !alices.contains("bobs-secret-token"), "\(alices)")
        // Unsubscribed, the sink leaves status (it stayed down there until a restart).
        #expect(try users.cli(users.bob, d, ["unsubscribe", id]).0 == 0)
        try d.waitUntil("status forgets bob's unsubscribed webhook", timeout: 15) {
            try json(d, ["status"])["dependencies"]?[host] == nil
        }
        #expect(try users.cliJSON(users.bob, d, ["status"])["dependency_reasons"]?[host] == nil)
    }
}
