import Foundation
import SQLite
import StageKit
import Testing
@testable import Index

/// One subscription's bad predicate must not break fan-out for everyone: `subscribe`
/// refuses what cannot be evaluated, and one stored anyway is parked at fan-out.
@Suite struct SubscriptionParkingTests {
    static let elevenHundredNOTs = String(repeating: "NOT ", count: 1_100) + "n == 1"
    /// Parses (64 levels) but SQLite's parser stack cannot take the compiled SQL.
    static let tooComplexForSQLite = String(repeating: "(n == 1 OR (code == \"x\" AND ", count: 32) + "n == 2"
        + String(repeating: "))", count: 32)

    func subscription(_ predicate: String, id: String? = nil) -> Subscription {
        var s = Subscription(owner: nil, type: "Memo", predicate: predicate, firesOn: ["create", "update"], alert: nil,
                                         sink: .exec, target: "[\"true\"]", secret: nil)
        if let id { s.id = id }
        return s
    }

    /// A row as an older daemon (or a hand edit) stored it, without subscribe's checks.
    func insertUnchecked(_ db: any SQLConnection, id: String, predicate: String) throws {
        try db.run("INSERT INTO subscriptions(id, owner, type, predicate, fires_on, alert, sink, target, secret, created) VALUES (?, NULL, 'Memo', ?, 'create,update', NULL, 'exec', '[\"true\"]', NULL, 0)",
                   [.text(id), .text(predicate)])
    }

    func listing(_ s: RecordStore) throws -> [String: JSONValue] {
        Dictionary(uniqueKeysWithValues: try s.subscriptions(viewer: .admin).map { ($0["id"]!.stringValue!, $0) })
    }

    @Test(arguments: Engine.allCases) func subscribeRefusesPredicatesThatCannotBeEvaluated(_ engine: Engine) throws {
        try withStore(engine) { s in
            #expect(throws: PredicateSyntaxError(message: "nested deeper than 64 levels", column: 257)) {
                try s.subscribe(subscription(Self.elevenHundredNOTs))
            }
            // Checked against the engine that will evaluate it: PostgreSQL takes this one.
            if engine == .sqlite {
                #expect(throws: PredicateSyntaxError(message: "too complex for the index (SQLite: parser stack overflow)", column: 0)) {
                    try s.subscribe(subscription(Self.tooComplexForSQLite))
                }
                #expect(try s.subscriptions(viewer: .admin).isEmpty)
            } else {
                let deep = try s.subscribe(subscription(Self.tooComplexForSQLite))
                #expect(try listing(s)[deep.id]?["state"] == "active")
            }
            let fine = try s.subscribe(subscription("n > 1"))
            #expect(try listing(s)[fine.id]?["state"] == "active")
        }
    }

    @Test(arguments: Engine.allCases) func aStoredBadSubscriptionIsParkedAndEveryoneElseGoesOn(_ engine: Engine) throws {
        try withStore(engine) { s in
            let good = try s.subscribe(subscription("n > 1"))
            try insertUnchecked(s.db, id: "sbadnots", predicate: Self.elevenHundredNOTs)
            try insertUnchecked(s.db, id: "sbadsqlite", predicate: Self.tooComplexForSQLite)
            let (r, _) = try s.apply(input("1", memo: "first", fields: ["n": 5]))
            #expect(try s.fanOutPending() == 1)  // the good one; the two bad ones parked, not thrown
            let l = try listing(s)
            #expect(l[good.id]?["state"] == "active" && l[good.id]?["error"] == .null)
            #expect(l["sbadnots"]?["state"] == "parked")
            #expect(l["sbadnots"]?["error"] == "predicate: nested deeper than 64 levels at column 257")
            if engine == .sqlite {
                #expect(l["sbadsqlite"]?["error"] == "predicate: too complex for the index (SQLite: parser stack overflow)")
            } else {
                #expect(l["sbadsqlite"]?["state"] == "active")  // PostgreSQL evaluates it (it matches nothing here)
            }
            // Later writes — a socket update fans out in its own transaction — keep working,
            // and the parked ones are skipped from then on.
            _ = try s.update(r.id, memo: "second", fields: [:], ifTag: nil, viewer: .admin)
            _ = try s.apply(input("2", memo: "third", fields: ["n": 7]))  // the pipeline's changes fan out later
            #expect(try s.fanOutPending() == 1)
            #expect(try s.db.queryOne("SELECT count(*) FROM deliveries WHERE subscription_id = ?", [.text(good.id)])?.int(0) == 3)
            #expect(try s.db.queryOne("SELECT count(*) FROM deliveries WHERE subscription_id LIKE 'sbad%'")?.int(0) == 0)
            #expect(try s.db.queryOne("SELECT count(*) FROM changes WHERE fanned_out = 0")?.int(0) == 0)
        }
    }

    @Test func anOldDatabaseWithABadSubscriptionMigratesAndParksIt() throws {
        // An index at schema version 3 (before parking existed) holding a bad predicate.
        let dir = NSTemporaryDirectory() + "pm-index-old-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        do {
            let old = try Database(path: dir + "/index.sqlite")
            try old.exec("CREATE TABLE index_schema_version(version INTEGER NOT NULL); INSERT INTO index_schema_version VALUES (3)")
            for m in IndexSchema.migrations.prefix(3) { try old.exec(m) }
            try insertUnchecked(old, id: "sold", predicate: Self.elevenHundredNOTs)
        }
        let s = try RecordStore(path: dir + "/index.sqlite")
        let good = try s.subscribe(subscription("TRUEPREDICATE"))
        _ = try s.apply(input("1", memo: "after the upgrade", fields: ["n": 5]))
        #expect(try s.fanOutPending() == 1)
        let l = try listing(s)
        #expect(l["sold"]?["state"] == "parked")
        #expect(l[good.id]?["pending"] == 1)
    }
}
