import Foundation
import PhotomemoCore
import SQLite
import Testing
@testable import Index

/// SQLite migration 5: creation order moves from the rowid to `ord`.
@Suite struct IndexMigrationTests {
    @Test func recordsFromBeforeOrdKeepTheirOrderAndNewOnesComeAfter() throws {
        let dir = NSTemporaryDirectory() + "pm-index-v4-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        do {
            // An index at version 4 with two records (and their create changes), as that
            // schema's store wrote them.
            let old = try Database(path: dir + "/index.sqlite")
            try old.exec("CREATE TABLE index_schema_version(version INTEGER NOT NULL); INSERT INTO index_schema_version VALUES (4)")
            for m in IndexSchema.migrations.prefix(4) { try old.exec(m) }
            for (i, id) in ["rold2", "rold1"].enumerated() {
                try old.run("INSERT INTO records(id, type, memo, created, modified, change_tag) VALUES (?, 'Memo', ?, 1, 1, ?)",
                            [.text(id), .text("old \(id)"), .text(String(i + 1))])
                try old.run("INSERT INTO records_fts(rowid, memo) SELECT rowid, memo FROM records WHERE id = ?", [.text(id)])
                try old.run("INSERT INTO changes(record_id, type, op, at, record) VALUES (?, 'Memo', 'create', 1, '{}')", [.text(id)])
            }
        }
        let s = try RecordStore(path: dir + "/index.sqlite")
        _ = try s.apply(input("new", memo: "new one"))
        let all = try s.query(.always, limit: 10, viewer: .admin).records.map(\.id)
        #expect(all.prefix(2) == ["rold2", "rold1"] && all.count == 3)
        // Paging one at a time walks the same order; full text still finds the old ones.
        var paged: [String] = []
        var cursor: String?
        repeat {
            let page = try s.query(.always, limit: 1, cursor: cursor, viewer: .admin)
            paged += page.records.map(\.id)
            cursor = page.cursor
        } while cursor != nil
        #expect(paged == all)
        #expect(try s.query(PredicateParser.parse(#"memo CONTAINS "old""#), limit: 10, viewer: .admin).records.count == 2)
    }
}
