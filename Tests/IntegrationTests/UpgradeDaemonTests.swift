import Foundation
import PhotomemoCore
import SQL
import SQLite
import StageKit
import TestSupport
import Testing
@testable import Index
@testable import Journal

/// Upgrades on a real daemon (DESIGN, "Running for months"): a home whose journal and
/// index are at the first release's schema starts with the current binary and keeps
/// serving its records, assets and jobs; a home newer than the binary is refused, untouched.
@Suite(.serialized) struct UpgradeDaemonTests {
    /// Rewrites the stopped daemon's home file (journal and index in one) as a release at
    /// journal `journal` and index `index` left it: the schema is those migrations, the rows
    /// are the ones the current daemon wrote, cut to that schema's columns.
    static func rewind(_ d: DaemonHarness, journal: Int, index: Int) throws {
        let path = d.home + "/photomemo.sqlite", newestPath = d.root + "/newest.sqlite"
        do { try Database(path: path).exec("PRAGMA wal_checkpoint(TRUNCATE)") }
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        #expect(rename(path, newestPath) == 0)
        let old = try Database(path: path)
        try old.migrate(Schema.migrations, upTo: journal, versionTable: "schema_version")
        try old.migrate(IndexSchema.migrations, upTo: index, versionTable: "index_schema_version")
        let newest = try Database(path: newestPath, readOnly: true)
        try OlderRelease.copyJournal(from: newest, to: old)
        try OlderRelease.copyIndex(from: newest, to: old)
    }

    static func versions(_ d: DaemonHarness) throws -> [Int64?] {
        let db = try Database(path: d.home + "/photomemo.sqlite", readOnly: true)
        return try ["schema_version", "index_schema_version"].map { try db.queryOne("SELECT version FROM \($0)")?.int(0) }
    }

    @Test func aHomeOfTheFirstReleaseStartsWithTheCurrentBinaryAndKeepsItsRecordsAssetsAndJobs() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8))
        try #require(d.database == nil, "the home's SQLite file (PostgreSQL: JournalUpgradeTests, IndexUpgradeTests)")
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
        #expect(try Self.versions(d) == [Int64(Schema.migrations.count), Int64(IndexSchema.migrations.count)])
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
        let (status, _, err) = try DaemonHarness.run(["serve", "--home", d.home, "--job", d.jobFile])
        #expect(status != 0)
        let what = versionTable == "schema_version" ? "journal" : "record index"
        #expect(err.contains("\(what) schema version \(newer) is newer than this photomemo understands (\(newer - 1)): run the newer photomemo"), "\(err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "the file is left as it was")
        #expect(try Self.versions(d)[versionTable == "schema_version" ? 0 : 1] == Int64(newer))
    }
}
