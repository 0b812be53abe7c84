import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// What a user learns of others' records through replies (issue 24, item 6), tried as bob
/// ("nobody") beside alice ("daemon") on one daemon run by root, as WhoMayDoWhatTests do.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct OracleTests {
    let users = WhoMayDoWhatTests()
    var bob: String { users.bob }
    var alice: String { users.alice }

    func recordID(_ user: String, _ d: DaemonHarness, _ predicate: String) throws -> String {
        let records = try users.cliJSON(user, d, ["query", predicate])["records"]?.arrayValue ?? []
        return try #require(records.first?["id"]?.stringValue, "\(user) has no record matching \(predicate)")
    }

    /// `delete` told a user "released 0 assets" when someone else had stored the same
    /// bytes (and 3 when no one had): whether others hold a photo is not theirs to learn.
    @Test func aUsersDeleteSaysNothingOfOthersCopies() throws {
        let d = try users.start()
        try users.drop(alice, d, "Nikon_D70.jpg", as: "alice.jpg")
        try users.drop(bob, d, "Nikon_D70.jpg", as: "bob.jpg")
        try d.waitIdle(jobs: 2, timeout: 90)
        let bobs = try recordID(bob, d, "TRUEPREDICATE")
        let reply = try users.cliJSON(bob, d, ["delete", bobs])
        #expect(reply["deleted"]?.arrayValue == [.string(bobs)])
        #expect(reply["released_assets"] == nil, "a user's reply depends on others' records: \(reply)")
        // An admin sees what left the store: alice's assets, no one else's now.
        let alices = try recordID(alice, d, "TRUEPREDICATE")
        let (status, out, _) = try users.cli("root", d, ["delete", alices])
        #expect(status == 0 && out.contains("released 3 assets"), "\(out)")
        #expect(d.stop().status == 0)
    }

    /// Record ids were "r" + sha256("OWNER/KEY")[:23]: anyone could compute another's from
    /// a guessed key. Now keyed with a secret the home made once (index migration 8; PostgreSQL 3).
    @Test func aRecordIDCannotBeComputedFromItsKey() throws {
        let d = try users.start()
        #expect(try users.cli(alice, d, ["enqueue", "--memo", "keyed", "--key", "k1"]).0 == 0)
        try d.waitIdle(jobs: 1)
        let id = try recordID(alice, d, #"memo CONTAINS "keyed""#)
        let guessed = "r" + SHA256.hex(Data("\(alice)/k1".utf8)).prefix(23)
        #expect(id != guessed)
        #expect(id.count == 24 && id.hasPrefix("r"))
        // The same key again is the same job (idempotent), after a restart too.
        #expect(d.stop().status == 0)
        try d.start(args: ["--socket-group", "nogroup"])
        _ = try users.cli(alice, d, ["enqueue", "--memo", "keyed", "--key", "k1"])
        try d.waitUntil("no job left to run") { try d.jobs("state IN ('queued', 'running', 'waiting')").isEmpty }
        let all = try users.cliJSON(alice, d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []
        #expect(all.compactMap { $0["id"]?.stringValue } == [id])
        #expect(d.stop().status == 0)
    }

    /// A sort of 1,000 keys answered `database` with the raw SQL; a database error a user
    /// meets now says only that (its code stays), and the detail goes to the log.
    @Test func usersGetNoSQLInErrors() throws {
        let d = try users.start()
        #expect(try users.cli(bob, d, ["enqueue", "--memo", "mine", "--field", "code=A"]).0 == 0)
        try d.waitIdle(jobs: 1)
        let keys = (0..<1000).map { "f\($0)" }.joined(separator: ",")
        let sorted = try users.raw(bob, d, [["id": 1, "cmd": "query", "predicate": "TRUEPREDICATE", "sort": .string(keys)]])
        let sortError = try #require(sorted.first?["error"])
        #expect(sortError["code"] == "bad_request")
        #expect(sortError["message"] == "sort: 1000 keys; at most 32 may be given")

        // The index breaks under the daemon (a table gone): bob's query meets a database error.
        let (rc, _, err) = try DaemonHarness.spawn(["/usr/bin/sqlite3", d.home + "/photomemo.sqlite",
                                                    "ALTER TABLE record_fields RENAME TO record_fields_gone"])
        #expect(rc == 0, "\(err)")
        let request: JSONValue = ["id": 2, "cmd": "query", "predicate": #"code == "A""#]
        let broken = try #require(try users.raw(bob, d, [request]).first?["error"])
        #expect(broken["code"] == "database")
        let message = broken["message"]?.stringValue ?? ""
        #expect(!message.contains("SELECT") && !message.contains("record_fields"), "\(message)")
        #expect(d.log.contains("record_fields"), "the detail is logged for the admin")
        // An admin still reads the engine's words.
        let rootsError = try #require(try users.raw("root", d, [request]).first?["error"])
        #expect(rootsError["message"]?.stringValue?.contains("record_fields") == true)
        #expect(d.stop().status == 0)
    }
}
