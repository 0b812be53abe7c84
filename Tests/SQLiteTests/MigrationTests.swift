import Foundation
import StageKit
import SQLite
import Testing

@Suite struct MigrationTests {
    let path = NSTemporaryDirectory() + "pm-sqlite-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite"

    @Test func migrationsRunOnceInOrderAndAResumedRunAddsOnlyTheNewOnes() throws {
        defer { unlink(path) }
        let v1 = ["CREATE TABLE a(x INTEGER)"], v2 = v1 + ["ALTER TABLE a ADD COLUMN y TEXT; INSERT INTO a(x, y) VALUES (1, 'one')"]
        try Database(path: path).migrate(v1, versionTable: "v", what: "test")
        let db = try Database(path: path)
        try db.migrate(v2, versionTable: "v", what: "test")
        try db.migrate(v2, versionTable: "v", what: "test")  // nothing left to do
        #expect(try db.queryOne("SELECT version FROM v")?.int(0) == 2)
        #expect(try db.query("SELECT y FROM a").map { $0.string(0) } == ["one"])
    }

    @Test func aSchemaNewerThanThisBinaryIsRefusedNotTrapped() throws {
        defer { unlink(path) }
        try Database(path: path).migrate(["CREATE TABLE a(x)", "CREATE TABLE b(x)"], versionTable: "v", what: "record index")
        let e = try #require(throws: PhotomemoError.self) {
            try Database(path: path).migrate(["CREATE TABLE a(x)"], versionTable: "v", what: "record index")
        }
        #expect(e.message.contains("record index schema version 2 is newer than this photomemo understands (1)"))
    }

    @Test func aFailingMigrationLeavesTheVersionWhereItWas() throws {
        defer { unlink(path) }
        let db = try Database(path: path)
        #expect(throws: PhotomemoError.self) { try db.migrate(["CREATE TABLE a(x)", "NOT SQL"], versionTable: "v", what: "test") }
        #expect(try db.queryOne("SELECT version FROM v")?.int(0) == 1)
    }
}
