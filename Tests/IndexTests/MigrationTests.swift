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

    /// SQLite migration 7: a home made before keeps its records' ids and gets a secret,
    /// made once, that keys new ids (no longer sha256 of the job key, which anyone could compute).
    @Test func recordIDsAreKeyedWithASecretMadeOncePerHome() throws {
        let dir = NSTemporaryDirectory() + "pm-index-v6-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let oldID = "r" + SHA256.hex(Data("bob/old".utf8)).prefix(23)
        do {
            let old = try Database(path: dir + "/index.sqlite")
            try old.exec("CREATE TABLE index_schema_version(version INTEGER NOT NULL); INSERT INTO index_schema_version VALUES (6)")
            for m in IndexSchema.migrations.prefix(6) { try old.exec(m) }
            try old.run("INSERT INTO records(id, job_key, type, memo, created, modified, change_tag) VALUES (?, 'bob/old', 'Memo', 'old', 1, 1, '1')",
                        [.text(oldID)])
            try old.run("INSERT INTO applied_jobs(job_key, record_id) VALUES ('bob/old', ?)", [.text(oldID)])
        }
        let s = try RecordStore(path: dir + "/index.sqlite")
        #expect(s.recordIDSecret.count == 64)
        #expect(try s.apply(input("bob/old", memo: "again")).record.id == oldID, "an old job still finds its record")
        let new = try s.apply(input("bob/new", memo: "new")).record.id
        #expect(new != "r" + SHA256.hex(Data("bob/new".utf8)).prefix(23) && new.count == 24)
        // Opened again: the same secret, so the same id for the same key.
        let again = try RecordStore(path: dir + "/index.sqlite")
        #expect(again.recordIDSecret == s.recordIDSecret && again.recordID(jobKey: "bob/new") == new)
        // Another home, another secret.
        let other = try RecordStore(path: dir + "/other.sqlite")
        #expect(other.recordID(jobKey: "bob/new") != new)
    }
}
