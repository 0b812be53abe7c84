import Foundation
import PhotomemoCore
import Postgres
import SQL
import SQLite
import StageKit
import TestSupport
import Testing
@testable import Index
@testable import Journal

/// Upgrades on a real daemon (DESIGN, "Running for months"): a home whose journal and
/// index are at the first release's schema (SQLite, or PostgreSQL) starts with the current binary and keeps
/// serving its records, assets and jobs; a home newer than the binary is refused, untouched.
@Suite(.serialized) struct UpgradeDaemonTests {
    /// Rewrites the stopped daemon's journal and index (one SQLite file in the home, or its
    /// PostgreSQL database) as a release at journal `journal` and index `index` left them:
    /// the schema is those migrations, the rows are the ones the current daemon wrote, cut
    /// to that schema's columns. On PostgreSQL the daemon then runs on the rewound database.
    static func rewind(_ d: DaemonHarness, journal: Int, index: Int) throws {
        let newest: any SQLConnection, old: any SQLConnection
        if let url = d.database {
            newest = try PostgresDatabase(url: url)
            d.database = try PostgresServer.freshDatabase("upgrade_home")
            old = try PostgresDatabase(url: d.database!)
        } else {
            let path = d.home + "/photomemo.sqlite", newestPath = d.root + "/newest.sqlite"
            do { try Database(path: path).exec("PRAGMA wal_checkpoint(TRUNCATE)") }
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            #expect(rename(path, newestPath) == 0)
            old = try Database(path: path)
            newest = try Database(path: newestPath, readOnly: true)
        }
        let postgres = old.dialect == .postgres
        try old.migrate(postgres ? Schema.postgresMigrations : Schema.migrations, upTo: journal, versionTable: "schema_version")
        try old.migrate(postgres ? IndexSchema.postgresMigrations : IndexSchema.migrations, upTo: index, versionTable: "index_schema_version")
        try OlderRelease.copyJournal(from: newest, to: old)
        try OlderRelease.copyIndex(from: newest, to: old)
    }

    static func versions(_ d: DaemonHarness) throws -> [Int64?] {
        let db: any SQLConnection = try d.database.map { try PostgresDatabase(url: $0) } ?? Database(path: d.home + "/photomemo.sqlite", readOnly: true)
        return try ["schema_version", "index_schema_version"].map { try db.queryOne("SELECT version FROM \($0)")?.int(0) }
    }

    @Test(arguments: ["sqlite", "postgres"])
    func aHomeOfTheFirstReleaseStartsWithTheCurrentBinaryAndKeepsItsRecordsAssetsAndJobs(_ engine: String) throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8))
        if engine == "postgres", d.database == nil { d.database = try PostgresServer.freshDatabase("upgrade_newest") }
        if engine == "sqlite", d.database != nil { return }  // PHOTOMEMO_TEST_BACKEND=postgres+s3: the PostgreSQL case runs
        try d.start()
        try d.append(#"{"photo":"Nikon_D70.jpg","type":"Goods","memo":"old camera","fields":{"price":80}}"# + "\n")
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1, timeout: 90)
        let before = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.first)
        let id = try #require(before["id"]?.stringValue)
        let jobID = try #require(try d.jobs().first?.id)
        let jobBefore = try json(d, ["job", String(jobID)])
        #expect(d.stop().status == 0)

        try Self.rewind(d, journal: 1, index: 1)
        try d.start()
        let newestVersions = engine == "postgres" ? [Schema.postgresMigrations.count, IndexSchema.postgresMigrations.count]
            : [Schema.migrations.count, IndexSchema.migrations.count]
        #expect(try Self.versions(d) == newestVersions.map(Int64.init))
        let after = try json(d, ["get", id])
        for key in ["id", "type", "memo", "fields", "owner", "acl", "assets", "exif", "created", "change_tag", "sha256"] {
            #expect(after[key] == before[key], "\(key)")
        }
        #expect(try json(d, ["query", "price == 80"])["records"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [id])
        let out = d.root + "/display.jpg"
        _ = try json(d, ["asset", id, "display", "-o", out])
        #expect(SHA256.hex(try Data(contentsOf: URL(fileURLWithPath: out))) == before["assets"]?["display"]?["sha256"]?.stringValue)
        let jobAfter = try json(d, ["job", String(jobID)])
        #expect(jobAfter["state"] == "done" && jobAfter["state"] == jobBefore["state"])
        #expect(jobAfter["history"]?.arrayValue?.map { $0["event"] } == jobBefore["history"]?.arrayValue?.map { $0["event"] })

        // It takes a new photo, after the old record.
        try d.drop("orientation_landscape_1.jpg")
        try d.waitIdle(jobs: 2, timeout: 90)
        let ids = try json(d, ["query", "TRUEPREDICATE", "--sort", "created"])["records"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
        #expect(ids?.count == 2 && ids?.first == id)
    }

    @Test(arguments: ["schema_version", "index_schema_version"])
    func aHomeNewerThanTheBinaryIsRefusedWithWhatToDoAndLeftAsItWas(_ versionTable: String) throws {
        let d = try DaemonHarness()
        try #require(d.database == nil)
        try d.start()
        #expect(d.stop().status == 0)
        let path = d.home + "/photomemo.sqlite"
        let newer = (versionTable == "schema_version" ? Schema.migrations.count : IndexSchema.migrations.count) + 1
        do {
            let db = try Database(path: path)
            _ = try db.run("UPDATE \(versionTable) SET version = ?", [.int(Int64(newer))])
            try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // Bounded: a binary that started instead would serve until stopped.
        let (status, _, err) = try DaemonHarness.spawn(["/usr/bin/timeout", "30", DaemonHarness.binary, "serve", "--home", d.home, "--job", d.jobFile])
        #expect(status != 0)
        let what = versionTable == "schema_version" ? "journal" : "record index"
        #expect(err.contains("\(what) schema version \(newer) is newer than this photomemo understands (\(newer - 1)): run the newer photomemo"), "\(err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "the file is left as it was")
        #expect(try Self.versions(d)[versionTable == "schema_version" ? 0 : 1] == Int64(newer))
    }
}
