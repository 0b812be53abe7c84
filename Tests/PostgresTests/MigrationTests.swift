import Foundation
import StageKit
import Postgres
import SQL
import Synchronization
import Testing

@Suite struct PostgresMigrationTests {
    /// Not idempotent on purpose: applied twice, the CREATE TABLE fails.
    static let migrations = [
        "CREATE TABLE applied(step integer NOT NULL); SELECT pg_sleep(0.3); INSERT INTO applied VALUES (1)",
        "INSERT INTO applied VALUES (2)",
        "ALTER TABLE applied ADD COLUMN note text; INSERT INTO applied VALUES (3, 'three')",
    ]

    @Test func twoDaemonsRacingOnAnEmptyDatabaseApplyEachStepOnce() throws {
        let url = try Shared.database()
        let failures = Mutex<[String]>([])
        onThreads(2) { _ in
            do {
                let db = try PostgresDatabase(url: url)
                try db.migrate(Self.migrations, versionTable: "schema_version", what: "test")
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        #expect(failures.withLock { $0 } == [])
        let db = try PostgresDatabase(url: url)
        #expect(try db.query("SELECT step FROM applied ORDER BY step").map { $0.int(0) } == [1, 2, 3])
        #expect(try db.queryOne("SELECT version FROM schema_version")?.int(0) == 3)
        #expect(try db.queryOne("SELECT count(*) FROM schema_version")?.int(0) == 1)
        // Again: nothing to do.
        try db.migrate(Self.migrations, versionTable: "schema_version", what: "test")
        #expect(try db.queryOne("SELECT count(*) FROM applied")?.int(0) == 3)
    }

    @Test func aFailingStepLeavesTheVersionBeforeIt() throws {
        let db = try PostgresDatabase(url: Shared.database())
        #expect(try db.queryOne("SELECT to_regclass('v') IS NULL")?.int(0) == 1)
        #expect(throws: PostgresError.self) {
            try db.migrate([Self.migrations[0], "INSERT INTO missing VALUES (1)"], versionTable: "v", what: "test")
        }
        #expect(try db.queryOne("SELECT version FROM v")?.int(0) == 1)
        try db.migrate([Self.migrations[0], Self.migrations[1]], versionTable: "v", what: "test")
        #expect(try db.queryOne("SELECT version FROM v")?.int(0) == 2)
    }

    @Test func aNewerSchemaIsRefused() throws {
        let db = try PostgresDatabase(url: Shared.database())
        try db.migrate(Self.migrations, versionTable: "schema_version", what: "journal")
        let e = try #require(throws: PhotomemoError.self) {
            try db.migrate(Array(Self.migrations.prefix(2)), versionTable: "schema_version", what: "journal")
        }
        #expect(e.code == .database)
        #expect(e.message.contains("journal schema version 3 is newer than this photomemo understands (2)"))
        #expect(try db.queryOne("SELECT version FROM schema_version")?.int(0) == 3)
    }
}
