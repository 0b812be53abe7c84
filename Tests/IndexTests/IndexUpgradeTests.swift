import Foundation
import Postgres
import SQL
import SQLite
import TestSupport
import Testing
@testable import Index
import StageKit

/// Upgrades (DESIGN, "Running for months"): a record index made by any earlier release
/// opens with the current code, migrates, and keeps its records (fields, assets, ACL,
/// full text), change numbers, subscriptions and each owner's usage. Each earlier version
/// is the first N migrations, filled with what the current code wrote for the same work,
/// cut to the columns version N has; later migrations are covered without a change here.
@Suite struct IndexUpgradeTests {
    /// An index at the newest schema with the records, changes and subscriptions a few
    /// photos and memos leave, written through the current API.
    static func newest(_ s: RecordStore) throws {
        func asset(_ key: String, _ bytes: Int64) -> JSONValue { ["key": .string(key), "bytes": .int(bytes)] }
        _ = try s.subscribe(Subscription(owner: "alice", type: "Photo", predicate: "rooms > 2", firesOn: ["create", "update"],
                                         alert: "{address}", sink: .socket, target: nil, secret: nil))
        let roof = try s.apply(input("alice/1", type: "Photo", memo: "red roof in Tokyo", fields: ["address": "Tokyo", "rooms": 3, "tags": ["a", "b"]],
                                     sha: "s1", assets: ["original": asset("o/s1", 1000), "display": asset("d/s1", 200)])).record
        let shared = try s.apply(input("bob/1", type: "Note", memo: "shared note", owner: "bob", sha: "s2", assets: ["original": asset("o/s2", 50)])).record
        _ = try s.update(shared.id, memo: nil, fields: [:], acl: ACL(readers: ["alice"], publicRead: false), ifTag: nil, viewer: .admin)
        _ = try s.update(roof.id, memo: "red roof in Kyoto", fields: ["address": "Kyoto"], acl: nil, ifTag: nil, viewer: .user("alice"))
        let gone = try s.apply(input("alice/2", memo: "to delete", sha: "s3", assets: ["original": asset("o/s3", 10)])).record
        _ = try s.delete(gone.id, viewer: .admin)
        _ = try s.fanOutPending()
    }

    static func connect(_ engine: Engine, _ where_: String) throws -> any SQLConnection {
        engine == .sqlite ? try Database(path: where_) : try PostgresDatabase(url: where_)
    }

    static func open(_ engine: Engine, _ where_: String) throws -> RecordStore {
        engine == .sqlite ? try RecordStore(path: where_) : try postgresStore(url: where_)
    }

    @Test(arguments: Engine.allCases) func anIndexOfEveryEarlierVersionOpensAndKeepsItsRecords(_ engine: Engine) throws {
        let dir = NSTemporaryDirectory() + "pm-index-upgrade-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = engine == .sqlite ? dir + "/newest.sqlite" : try PostgresServer.freshDatabase("index_newest")
        let s = try Self.open(engine, source)
        try Self.newest(s)
        let newest = try Self.connect(engine, source)
        let migrations = engine == .sqlite ? IndexSchema.migrations : IndexSchema.postgresMigrations
        let records = try s.query(.always, limit: 100, viewer: .admin).records
        let changes = try s.changes(since: 0, limit: 100, viewer: .admin)
        #expect(records.count == 2 && changes.count == 6)
        for version in 1...migrations.count {
            let target = engine == .sqlite ? dir + "/v\(version).sqlite" : try PostgresServer.freshDatabase("index_v\(version)")
            let hadSource: Bool, hadSubscriptions: Bool
            do {
                let old = try Self.connect(engine, target)
                try old.migrate(migrations, upTo: version, versionTable: "index_schema_version")
                try OlderRelease.copyIndex(from: newest, to: old)
                hadSource = try old.columnNames("records").contains("source")
                hadSubscriptions = try !old.columnNames("subscriptions").isEmpty
            }
            let u = try Self.open(engine, target)
            let at = "from version \(version)"
            for r in records {
                var was = r
                if !hadSource { was.source = nil }
                #expect(try u.get(r.id, viewer: .admin) == was, "\(at)")
            }
            #expect(try u.query(.always, limit: 100, viewer: .admin).records.map(\.id) == records.map(\.id), "creation order \(at)")
            #expect(try u.changes(since: 0, limit: 100, viewer: .admin).map { "\($0.seq) \($0.op) \($0.recordID)" }
                    == changes.map { "\($0.seq) \($0.op) \($0.recordID)" }, "\(at)")
            let subscriptions = hadSubscriptions ? try s.subscriptions(viewer: .admin) : []
            #expect(try u.subscriptions(viewer: .admin) == subscriptions, "\(at)")
            for owner in ["alice", "bob"] { #expect(try u.usage(owner: owner) == (try s.usage(owner: owner)), "\(owner) \(at)") }
            // Who may read what, and full text, as before.
            let alice = try u.query(PredicateParser.parse("TRUEPREDICATE"), limit: 100, viewer: .user("alice")).records.map(\.id)
            let carol = try u.query(.always, limit: 100, viewer: .user("carol")).records
            #expect(alice.count == 2 && carol.isEmpty, "\(at)")
            #expect(try u.query(PredicateParser.parse(#"memo CONTAINS "kyoto""#), limit: 10, viewer: .user("alice")).records.count == 1, "\(at)")
            #expect(try u.query(PredicateParser.parse("rooms > 2"), limit: 10, viewer: .user("alice")).records.count == 1, "\(at)")
            // The upgraded index takes new records after the old ones, with new change numbers.
            let fresh = try u.apply(input("alice/3", memo: "after the upgrade")).record
            #expect(try u.query(.always, limit: 100, viewer: .admin).records.last?.id == fresh.id, "\(at)")
            #expect(try u.changes(since: changes.last!.seq, limit: 10, viewer: .admin).map(\.recordID) == [fresh.id], "\(at)")
            #expect(try u.apply(input("alice/1", type: "Photo", sha: "s1")).op == "none", "an applied job stays applied \(at)")
        }
    }
}
