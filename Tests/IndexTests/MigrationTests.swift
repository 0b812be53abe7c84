import Foundation
import PhotomemoCore
import Postgres
import SQL
import SQLite
import TestSupport
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

    /// SQLite migration 8 (PostgreSQL 3): a home made before keeps its records' ids and gets a secret,
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

/// SQLite migration 7 / PostgreSQL 2: who may read each record (and, on SQLite, each
/// record's memo tokens) filled in from the records an earlier release wrote, so a user's
/// queries on an old home answer as before.
@Suite struct ReadersMigrationTests {
    @Test(arguments: Engine.allCases) func aHomeFromBeforeRecordReadersAnswersUsersAsBefore(_ engine: Engine) throws {
        let url: String
        let old: any SQLConnection
        switch engine {
        case .sqlite:
            let dir = NSTemporaryDirectory() + "pm-index-v6-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            url = dir + "/index.sqlite"
            old = try Database(path: url)
            try old.migrate(Array(IndexSchema.migrations.prefix(6)), versionTable: "index_schema_version", what: "record index")
        case .postgres:
            url = try PostgresServer.freshDatabase()
            old = try PostgresDatabase(url: url)
            try old.migrate(Array(IndexSchema.postgresMigrations.prefix(1)), versionTable: "index_schema_version", what: "record index")
        }
        // As the earlier store wrote them: alice's, bob's public, bob's shared with alice, bob's own.
        let rows: [(id: String, owner: String, memo: String, code: String, isPublic: Bool, sharedWith: String?)] = [
            ("ra", "alice", "alice lunch", "A-1", false, nil), ("rb", "bob", "bob public dinner", "B-1", true, nil),
            ("rc", "bob", "bob shared", "B-2", false, "alice"), ("rd", "bob", "bob secret", "A-1", false, nil)]
        for (i, r) in rows.enumerated() {
            try old.run("INSERT INTO records(id, type, memo, owner, public_read, created, modified, change_tag, ord) VALUES (?, 'Memo', ?, ?, ?, 1, 1, '1', ?)",
                        [.text(r.id), .text(r.memo), .text(r.owner), .int(r.isPublic ? 1 : 0), .int(Int64(i + 1))])
            if engine == .postgres {
                try old.run("UPDATE records SET memo_tsv = \(FullText.lexemesSQL) WHERE id = ?", [.text(MemoTerms(r.memo).lexemes), .text(r.id)])
            } else {
                try old.run("INSERT INTO records_fts(rowid, memo) SELECT rowid, memo FROM records WHERE id = ?", [.text(r.id)])
            }
            try old.run("INSERT INTO record_fields(record_id, name, kind, text_value) VALUES (?, 'code', 's', ?)", [.text(r.id), .text(r.code)])
            if let u = r.sharedWith { try old.run("INSERT INTO record_acl(record_id, \"user\", can_write) VALUES (?, ?, 0)", [.text(r.id), .text(u)]) }
        }
        let s = engine == .sqlite ? try RecordStore(path: url) : try RecordStore(connection: PostgresDatabase(url: url), path: url)
        func ids(_ p: String, _ who: String) throws -> [String] {
            try s.query(PredicateParser.parse(p), limit: 100, viewer: .user(who)).records.map(\.id)
        }
        #expect(try ids("TRUEPREDICATE", "alice") == ["ra", "rb", "rc"])
        #expect(try ids("TRUEPREDICATE", "carol") == ["rb"])
        #expect(try ids(#"code == "A-1""#, "alice") == ["ra"])
        #expect(try ids(#"memo CONTAINS "DINNER""#, "alice") == ["rb"])
        #expect(try ids(#"memo CONTAINS "secret""#, "alice").isEmpty && ids(#"memo CONTAINS "secret""#, "bob") == ["rd"])
        #expect(try s.get("rc", viewer: .user("alice")) != nil && s.get("rd", viewer: .user("alice")) == nil)
    }
}

/// SQLite migration 9 / PostgreSQL 4: records get `source`; a record from before has none
/// (null in its JSON) and reads, queries and updates as before.
@Suite struct SourceMigrationTests {
    @Test(arguments: Engine.allCases) func aRecordFromBeforeSourceReadsWithNoneAndNewOnesHaveOne(_ engine: Engine) throws {
        let url: String
        let old: any SQLConnection
        switch engine {
        case .sqlite:
            let dir = NSTemporaryDirectory() + "pm-index-v8-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            url = dir + "/index.sqlite"
            old = try Database(path: url)
            try old.migrate(Array(IndexSchema.migrations.prefix(8)), versionTable: "index_schema_version", what: "record index")
        case .postgres:
            url = try PostgresServer.freshDatabase()
            old = try PostgresDatabase(url: url)
            try old.migrate(Array(IndexSchema.postgresMigrations.prefix(3)), versionTable: "index_schema_version", what: "record index")
        }
        try old.run("INSERT INTO records(id, job_key, photo_sha256, type, memo, owner, created, modified, change_tag, ord) VALUES ('rold', 'k-old', 'aa', 'Memo', 'old', 'alice', 1, 1, '1', -1)")
        try old.run("INSERT INTO applied_jobs(job_key, record_id) VALUES ('k-old', 'rold')")
        let s = engine == .sqlite ? try RecordStore(path: url) : try RecordStore(connection: PostgresDatabase(url: url), path: url)
        let before = try #require(try s.get("rold", viewer: .admin))
        #expect(before.source == nil && before.sha256 == "aa" && before.json["source"] == .null)
        var new = input("k-new", memo: "new", sha: "bb")
        new.source = "DCIM/IMG_1.jpg"
        #expect(try s.apply(new).record.source == "DCIM/IMG_1.jpg")
        #expect(try s.query(PredicateParser.parse(#"source BEGINSWITH "DCIM/""#), viewer: .admin).records.map(\.memo) == ["new"])
        #expect(try s.query(PredicateParser.parse(#"sha256 == "aa""#), viewer: .admin).records.map(\.id) == ["rold"])
    }
}
