import Foundation
import StageKit
import SQLite
import Testing
@testable import Index

/// What must mean the same on both engines beyond the suites above: full-text tokens,
/// the outbox's and the collector's calls.
@Suite struct EngineParityTests {
    static let samples = ["foo.bar baz", "A-1 code", "Café au lait", "version 1.5", "user@example.com",
                          "naïve 日本語", "running runs", "cafe\u{301} decomposed", "ǅx Straße İ under_score emoji😀ok"]

    /// PostgreSQL's lexemes are cut in Swift: they must be the tokens FTS5 (unicode61) makes.
    @Test func fullTextTokensAreThoseOfSQLitesTokenizer() throws {
        let dir = NSTemporaryDirectory() + "pm-fts-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let db = try Database(path: dir + "/fts.sqlite")
        try db.exec("CREATE VIRTUAL TABLE t USING fts5(m); CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');")
        // Every ASCII byte between letters, too: ASCII text is cut by a path of its own.
        let ascii = (1..<128).map { "aB" + String(UnicodeScalar(UInt8($0))) }.joined() + "Z9"
        for (i, s) in (Self.samples + [ascii]).enumerated() {
            try db.run("INSERT INTO t(rowid, m) VALUES (?, ?)", [.int(Int64(i + 1)), .text(s)])
            let fts5 = try db.query("SELECT term FROM v WHERE doc = ? ORDER BY offset", [.int(Int64(i + 1))]).compactMap { $0.string(0) }
            #expect(FullText.tokens(s) == fts5, "\(s)")
        }
    }

    @Test(arguments: Engine.allCases) func memoContainsMatchesTheSameTokens(_ engine: Engine) throws {
        try withStore(engine) { s in
            for (i, m) in Self.samples.enumerated() { _ = try s.apply(input("\(i)", memo: m)) }
            func memos(_ text: String) throws -> Set<String> {
                let p = try PredicateParser.parse("memo CONTAINS \"\(text)\"")
                return Set(try s.query(p, limit: 100, viewer: .admin).records.map(\.memo))
            }
            // No e-mail, host or hyphenated-word tokens, no stemming, case and accents folded.
            #expect(try memos("foo") == ["foo.bar baz"])
            #expect(try memos("a") == ["A-1 code"])
            #expect(try memos("5") == ["version 1.5"])
            #expect(try memos("example") == ["user@example.com"])
            #expect(try memos("CAFÉ") == ["Café au lait", "cafe\u{301} decomposed"])
            #expect(try memos("lait cafe") == ["Café au lait"])
            #expect(try memos("naive 日本語") == ["naïve 日本語"])
            #expect(try memos("run").isEmpty)
            #expect(try memos("score under") == ["ǅx Straße İ under_score emoji😀ok"])
            #expect(try memos("!!").isEmpty)
            #expect(try memos("it's").isEmpty)
        }
    }

    @Test(arguments: Engine.allCases) func outboxRetriesSocketCatchUpAndReleasedAssets(_ engine: Engine) throws {
        try withStore(engine) { s in
            let hook = try s.subscribe(.init(owner: nil, type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create", "delete"],
                                             alert: "new {memo}", sink: .webhook, target: "http://x", secret: "k"))
            let socket = try s.subscribe(.init(owner: "alice", type: "Memo", predicate: "memo CONTAINS \"lunch\"", firesOn: ["create"],
                                               alert: nil, sink: .socket, target: nil, secret: nil))
            let (r, _) = try s.apply(input("1", memo: "lunch", assets: ["original": ["key": "k1"]]))
            #expect(try s.fanOutPending() == 2)
            let first = try #require(try s.dueDeliveries(limit: 10).first)
            #expect(first.event["alert"] == "new lunch")
            try s.finishDelivery(first.id, delivered: false, error: "HTTP 500", retryAt: nil)
            #expect(try s.dueDeliveries(limit: 10).isEmpty)
            let listed = try s.subscriptions(viewer: .admin).first { $0["id"]?.stringValue == hook.id }
            #expect(listed?["failed"] == 1 && listed?["last_error"] == "HTTP 500")
            #expect(try s.retryFailedDeliveries(subscription: hook.id, viewer: .admin) == 1)
            try s.finishDelivery(try #require(try s.dueDeliveries(limit: 10).first).id, delivered: true, error: nil, retryAt: nil)
            #expect(try s.socketEvents(subscription: socket, since: 0).map { $0["record"]?["memo"] } == ["lunch"])
            // The collector: a deleted record's object is released once, then forgotten.
            #expect(try s.isReferenced("k1"))
            #expect(try s.delete(r.id, viewer: .admin).releasedAssets == ["k1"])
            #expect(try s.releasedAssets(limit: 10) == ["k1"] && !(try s.isReferenced("k1")))
            try s.forgetReleased("k1")
            #expect(try s.releasedAssets(limit: 10).isEmpty)
            #expect(try s.dueDeliveries(limit: 10).map { $0.event["op"] } == ["delete"])
            try s.unsubscribe(socket.id, viewer: .user("alice"))
            #expect(try s.subscription(socket.id) == nil)
        }
    }

    /// Daemons sharing a database: a delivery one claimed is not sent by another, nor the
    /// next of its subscription (change order), until it is finished, released or expired.
    @Test(arguments: Engine.allCases) func aClaimedDeliveryIsOneDaemonsUntilFinishedReleasedOrExpired(_ engine: Engine) throws {
        try withStore(engine) { s in
            _ = try s.subscribe(.init(owner: nil, type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create"],
                                      alert: nil, sink: .webhook, target: "http://x", secret: "k"))
            for i in 1...2 { _ = try s.apply(input("\(i)", memo: "m\(i)")) }
            _ = try s.fanOutPending()
            let now = unixNow()
            let a = try s.claimDueDeliveries(limit: 10, claimant: "a", until: now + 30, now: now)
            #expect(a.map { $0.event["record"]?["memo"] } == ["m1"])
            #expect(try s.claimDueDeliveries(limit: 10, claimant: "b", until: now + 30, now: now).isEmpty)
            // Expired (its host died mid-send): another host takes it.
            let late = try s.claimDueDeliveries(limit: 10, claimant: "b", until: now + 90, now: now + 31)
            #expect(late.map(\.id) == a.map(\.id))
            try s.releaseDeliveryClaims(of: "b", ids: late.map(\.id))
            #expect(try s.claimDueDeliveries(limit: 10, claimant: "c", until: now + 30, now: now).map(\.id) == a.map(\.id))
            try s.finishDelivery(a[0].id, delivered: true, error: nil, retryAt: nil, now: now)
            #expect(try s.claimDueDeliveries(limit: 10, claimant: "b", until: now + 30, now: now).map { $0.event["record"]?["memo"] } == ["m2"])
        }
    }

    /// A sink that hangs holds its subscription: every pending delivery waits until the
    /// hold, on every host (it is in the database), including the one after a parked one.
    @Test(arguments: Engine.allCases) func aHeldSubscriptionsDeliveriesWaitForTheHold(_ engine: Engine) throws {
        try withStore(engine) { s in
            let sub = try s.subscribe(.init(owner: nil, type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create"],
                                            alert: nil, sink: .exec, target: "[\"true\"]", secret: nil))
            for i in 1...2 { _ = try s.apply(input("\(i)", memo: "m\(i)")) }
            _ = try s.fanOutPending()
            let now = unixNow()
            let first = try s.claimDueDeliveries(limit: 10, claimant: "a", until: now + 30, now: now)
            try s.finishDelivery(first[0].id, delivered: false, error: "timed out", retryAt: nil, now: now)  // parked
            try s.holdDeliveries(subscription: sub.id, until: now + 60)
            #expect(try s.claimDueDeliveries(limit: 10, claimant: "b", until: now + 30, now: now + 59).isEmpty)
            #expect(try s.claimDueDeliveries(limit: 10, claimant: "b", until: now + 90, now: now + 61).map { $0.event["record"]?["memo"] } == ["m2"])
        }
    }
}
