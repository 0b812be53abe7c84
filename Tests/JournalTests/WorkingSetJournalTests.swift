import Foundation
import StageKit
import Postgres
import SQL
import SQLite
import TestSupport
import Testing
@testable import Journal

/// The job's working set (`WorkingSet`) is journalled with each stage that continues: the
/// next stage, on this daemon or after a restart, gets the set the last one left.
@Suite struct WorkingSetJournalTests {
    static let display = WorkingSet.File(role: .rendition("display"), path: "/h/renditions/d.jpg", sha256: "d1", bytes: 10,
                                         width: 860, height: 645, format: "jpeg")

    @Test(arguments: Engine.allCases) func theNextStageAfterARestartGetsTheSetTheLastOneLeft(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let policy = RetryPolicy.exponentialJitter(maxAttempts: 2, baseMs: 1, maxMs: 2)
        _ = try f.journal.commitPhotos([f.photo("a.jpg", sha: "x1")])
        let first = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1)[0]
        // A new job's set is its photo.
        #expect(first.context.working == WorkingSet(photoPath: f.dir + "/inbox/a.jpg", sha256: "x1"))
        try first.context.update { set in
            set.change(.original) { $0.width = 4032 }
            set.put(Self.display)
            set.exif = ["make": "Canon"]
            try set.annotate("text", "SALE")
        }
        let expected = first.context.working
        _ = try f.record(first, stageName: "one", outcome: .continue(), durationMs: 1, stageCount: 3, retry: policy)

        let second = try f.reopen().claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(second.context.working == expected)
        // A run that retries keeps none of its changes; the next attempt starts from the set.
        second.context.update { $0.put(WorkingSet.File(role: .rendition("display"), path: "/elsewhere", sha256: "d2")) }
        _ = try f.record(second, stageName: "two", outcome: .retry(reason: "busy"), durationMs: 1, stageCount: 3, retry: policy)
        let again = try f.journal.claim(stageIndex: 1, stageName: "two", limit: 1, now: unixNow() + 60)[0]
        #expect(again.context.working == expected)
        // A stage that replaces a rendition: the next one gets its new path and hash.
        again.context.update { $0.put(WorkingSet.File(role: .rendition("display"), path: "/h/renditions/g.jpg", sha256: "g1")) }
        _ = try f.record(again, stageName: "two", outcome: .continue(), durationMs: 1, stageCount: 3, retry: policy)
        let third = try f.journal.claim(stageIndex: 2, stageName: "three", limit: 1)[0]
        #expect(third.context.working[.rendition("display")]?.sha256 == "g1")
        #expect(third.context.working.files.map(\.role) == [.original, .rendition("display")])
    }

    /// Migration 9 (PostgreSQL 6) adds the column to a journal with jobs in it: a job
    /// queued before it gets the set a new job starts with.
    @Test(arguments: Engine.allCases) func aJournalFromBeforeTheWorkingSetKeepsItsJobs(_ engine: Engine) throws {
        let dir = NSTemporaryDirectory() + "pm-journal-ws-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let url = engine == .postgres ? try PostgresServer.freshDatabase() : nil
        func connect() throws -> any SQLConnection {
            engine == .sqlite ? try Database(path: dir + "/j.sqlite") : try PostgresDatabase(url: url!)
        }
        let migrations = engine == .sqlite ? Schema.migrations : Schema.postgresMigrations
        do {
            // A job queued by the schema before, with the columns it had.
            let old = try connect()
            try old.migrate(Array(migrations.dropLast()), versionTable: "schema_version", what: "journal")
            try old.run("""
                INSERT INTO jobs(key, origin, photo, photo_path, photo_sha256, memo, state, stage_index, ready_at, results, created, updated, turn)
                VALUES ('k', 'inbox', 'a.jpg', ?, 'x1', '{}', 'queued', 1, 0, '{"one": {"w": 3}}', 0, 0, 1)
                """, [.text(dir + "/a.jpg")])
        }
        let journal = try Journal(connection: try connect(), path: "upgraded")
        #expect(try connect().queryOne("SELECT version FROM schema_version")?.int(0) == Int64(migrations.count))
        let job = try #require(try journal.claim(stageIndex: 1, stageName: "two", limit: 1).first)
        #expect(job.context.working == WorkingSet(photoPath: dir + "/a.jpg", sha256: "x1"))
        #expect(job.context.results["one"] == ["w": 3])
    }

    /// A job that was between compress and upload at the upgrade: its renditions come
    /// from compress's result, so upload stores them and the record lists them.
    @Test(arguments: Engine.allCases) func aJobBetweenStagesAtTheUpgradeKeepsItsRenditions(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitPhotos([f.photo("a.jpg", sha: "x1")])
        let results: JSONValue = [
            "validate": ["format": "jpeg", "width": 40, "height": 30, "bytes": 99],
            "compress": ["original": ["width": 40, "height": 30, "format": "jpeg"], "exif": ["make": "Canon"],
                         "renditions": ["display": ["path": "/h/renditions/d.jpg", "sha256": "d1", "bytes": 10, "width": 20,
                                                    "height": 15, "format": "jpeg"]]],
        ]
        let db: any SQLConnection = f.engine == .sqlite ? try Database(path: f.dir + "/j.sqlite") : try PostgresDatabase(url: f.url!)
        try db.run("UPDATE jobs SET stage_index = 2, results = ?, working_set = NULL", [.text(results.jsonString)])
        let job = try #require(try f.journal.claim(stageIndex: 2, stageName: "upload", limit: 1).first)
        let set = job.context.working
        #expect(set.original == WorkingSet.File(role: .original, path: f.dir + "/inbox/a.jpg", sha256: "x1", bytes: 99, width: 40, height: 30,
                                                format: "jpeg"))
        #expect(set[.rendition("display")] == WorkingSet.File(role: .rendition("display"), path: "/h/renditions/d.jpg", sha256: "d1", bytes: 10,
                                                             width: 20, height: 15, format: "jpeg"))
        #expect(set.exif == ["make": "Canon"])
    }
}
