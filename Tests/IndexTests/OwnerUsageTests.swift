import Foundation
import StageKit
import SQL
import Testing
@testable import Index

/// Issue 25: a quota check reads a user's usage as one row (`owner_usage`, kept by the
/// index's triggers in each record write's transaction), not by counting every record of
/// theirs: its cost does not grow with what they keep. The row must still be what a
/// count of their records says after creates, asset changes, cascades and deletes.
@Suite struct OwnerUsageTests {
    func assets(_ bytes: Int...) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: bytes.enumerated().map { ("r\($0.offset)", ["key": .string("k\($0.element)"), "bytes": .int(Int64($0.element))]) }))
    }

    /// The usage counted from the records themselves (what `usage` read before).
    func counted(_ s: RecordStore, _ owner: String) throws -> (Int, Int64) {
        let bytes = s.dialect == .sqlite
            ? "SELECT coalesce(sum(json_extract(a.value, '$.bytes')), 0) FROM records r, json_each(r.assets) a WHERE r.owner = ?"
            : "SELECT coalesce(sum((a.value->>'bytes')::bigint), 0) FROM records r, jsonb_each(r.assets::jsonb) a WHERE r.owner = ?"
        let row = try s.db.queryOne("SELECT (SELECT count(*) FROM records WHERE owner = ?), (\(bytes))", [.text(owner), .text(owner)])
        return (Int(row?.int(0) ?? 0), row?.int(1) ?? 0)
    }

    @Test(arguments: Engine.allCases) func theUsageRowIsWhatTheRecordsCount(_ engine: Engine) throws {
        try withStore(engine) { s in
            _ = try s.apply(batch: [input("a1", assets: assets(100, 20)), input("a2", sha: "p2", assets: assets(5)),
                                    input("b1", owner: "bob", assets: assets(7)), input("n1", owner: nil, assets: assets(9))], now: 1)
            let a3 = try s.apply(input("a3", memo: "no assets"), now: 2).record.id
            // New assets for a2's photo (a memo job naming the same bytes updates it).
            _ = try s.apply(input("a2again", sha: "p2", assets: assets(50, 60)), now: 3)
            _ = try s.update(a3, memo: "edited", fields: ["x": 1], acl: nil, ifTag: nil, viewer: .admin, now: 4)
            for owner in ["alice", "bob"] {
                let u = try s.usage(owner: owner), c = try counted(s, owner)
                #expect(u.records == c.0 && u.bytes == c.1, "\(owner): \(u) kept, \(c) counted")
            }
            #expect(try s.usage(owner: "alice") == (3, 230))
            _ = try s.delete(a3, viewer: .admin, now: 5)
            #expect(try s.usage(owner: "alice") == (2, 230))
            #expect(try s.usage(owner: "bob") == (1, 7) && s.usage(owner: "carol") == (0, 0))
        }
    }

    /// With 5,000 records of alice's, the check reads one row of one index.
    @Test(arguments: Engine.allCases) func aUsersUsageIsReadFromOneRowWhateverTheyKeep(_ engine: Engine) throws {
        try withStore(engine) { s in
            _ = try s.apply(batch: (0..<5000).map { input("a\($0)", assets: assets(10)) }, now: 1)
            if engine == .postgres { try s.db.run("ANALYZE") }
            let plan = try (engine == .sqlite
                ? s.db.query("EXPLAIN QUERY PLAN " + RecordStore.usageSQL, [.text("alice")]).compactMap { $0.string(3) }
                : s.db.query("EXPLAIN " + RecordStore.usageSQL, [.text("alice")]).compactMap { $0.string(0) }).joined(separator: "\n")
            #expect(!plan.contains("records") && (plan.contains("owner_usage") || plan.contains("PRIMARY KEY")), "\(plan)")
            #expect(!plan.contains("SCAN") && !plan.contains("Seq Scan"), "\(plan)")
            #expect(try s.usage(owner: "alice") == (5000, 50_000))
        }
    }
}
