import Foundation
import Testing
@testable import Journal
import StageKit
import Postgres
import SQL
import SQLite
import TestSupport

/// Upgrades (DESIGN, "Running for months"): a journal made by any earlier release opens
/// with the current code, migrates, and keeps every job, its history, the queue read
/// positions and the inbox ledger. Each earlier version is made by the migrations
/// themselves (the first N), then filled with what the current code wrote for the same
/// work, cut to the columns version N has. A migration appended later is covered here
/// without a change (the versions are counted, never named).
@Suite struct JournalUpgradeTests {
    /// A journal at the newest schema with one job in each state, history, two queue
    /// files' read positions and the inbox ledger, written through the current API.
    static func newest(_ f: JournalFixture) throws -> (jobs: [Int64], taken: [TakenPhoto], positions: [String: QueuePosition]) {
        let j = f.journal
        let taken = ["a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg"].enumerated().map { i, name in
            TakenPhoto(name: name, path: f.dir + "/inbox/" + name, identity: "1:\(name)", sha256: i == 4 ? "s0" : "s\(i)", owner: "bob")
        }
        _ = try j.commitPhotos(taken)  // e.jpg: the same bytes as a.jpg, a duplicate
        let positions = ["queue.jsonl": QueuePosition(inode: 7, offset: 120, line: 2),
                         "queue.d/bob.jsonl": QueuePosition(inode: 9, generation: 1, offset: 60, line: 1, tail: "abc")]
        func memo(_ key: String) -> QueuedMemo {
            QueuedMemo(memo: MemoJob(memo: "memo \(key)", type: "Note", fields: ["n": 1], owner: "bob"), photo: .none, key: key, source: "queue")
        }
        _ = try j.commitMemos([memo("k1")], position: positions["queue.jsonl"], joinTimeoutSeconds: 60)
        let claimed = try j.claim(stageIndex: 0, stageName: "validate", limit: 10)
        let byPath = Dictionary(uniqueKeysWithValues: claimed.map { ($0.context.memo.photo ?? $0.context.key, $0) })
        func step(_ name: String, _ outcome: StageOutcome, stages: Int) throws {
            let job = try #require(byPath[name], "claimed: \(byPath.keys.sorted())")
            _ = try f.record(job, stageName: "validate", outcome: outcome, durationMs: 3, stageCount: stages, retry: .default)
        }
        try step("a.jpg", .continue(result: ["w": 10]), stages: 3)      // queued at stage 1
        try step("b.jpg", .fail(.stageError, "not a photo"), stages: 3)       // failed
        try step("c.jpg", .retry(.stageError, "busy"), stages: 3)             // waiting
        try step("k1", .continue(), stages: 1)                           // done
        // d.jpg stays running; k2 is cancelled; k3 stays queued at stage 0.
        _ = try j.commitMemos([memo("k2"), memo("k3")], position: positions["queue.d/bob.jsonl"], file: "queue.d/bob.jsonl",
                              joinTimeoutSeconds: 60)
        let all = try j.jobs(limit: 100)
        try j.cancel(job: try #require(all.first { $0.key == "k2" }).id)
        let states = Set(try j.jobs(limit: 100).map(\.state))
        #expect(states == Set(JobState.allCases), "one job in each state: \(states)")
        return (all.map(\.id), taken, positions)
    }

    @Test(arguments: Engine.allCases) func aJournalOfEveryEarlierVersionOpensAndKeepsItsJobs(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let (ids, taken, positions) = try Self.newest(f)
        let newest: any SQLConnection = engine == .sqlite ? try Database(path: f.dir + "/j.sqlite") : try PostgresDatabase(url: f.url!)
        let migrations = engine == .sqlite ? Schema.migrations : Schema.postgresMigrations
        for version in 1...migrations.count {
            let path = f.dir + "/v\(version).sqlite"
            let url = engine == .postgres ? try PostgresServer.freshDatabase("journal_v\(version)") : nil
            do {
                let old: any SQLConnection = engine == .sqlite ? try Database(path: path) : try PostgresDatabase(url: url!)
                try old.migrate(migrations, upTo: version, versionTable: "schema_version")
                try OlderRelease.copyJournal(from: newest, to: old)
            }
            let j = engine == .sqlite ? try Journal(path: path) : try Journal(connection: PostgresDatabase(url: url!), path: url!)
            let at = "from version \(version)"
            for id in ids {
                let was = try #require(try f.journal.job(id)), now = try #require(try j.job(id), "job \(id) \(at)")
                #expect((now.key, now.state, now.stage, now.attempts, now.photo) == (was.key, was.state, was.stage, was.attempts, was.photo), "\(at)")
                #expect((now.duplicateOf, now.error, now.quarantine, now.memo) == (was.duplicateOf, was.error, was.quarantine, was.memo), "\(at)")
                #expect(try j.history(id).map { "\($0.event) \($0.stage ?? "") \($0.message ?? "")" }
                        == (try f.journal.history(id)).map { "\($0.event) \($0.stage ?? "") \($0.message ?? "")" }, "\(at)")
            }
            #expect(try j.unfinishedJobs(owner: "bob", limit: 100) == (try f.journal.unfinishedJobs(owner: "bob", limit: 100)), "\(at)")
            for photo in taken { #expect(try j.isTaken(name: photo.name, identity: photo.identity), "\(photo.name) \(at)") }
            let main = try j.queuePosition(file: "queue.jsonl")
            #expect((main.inode, main.offset, main.line) == (7, 120, 2), "\(at)")
            if engine == .postgres || version > 1 {  // SQLite's version 1 read queue.jsonl alone
                #expect(try j.queuePosition(file: "queue.d/bob.jsonl") == positions["queue.d/bob.jsonl"], "\(at)")
            }
            // The upgraded journal runs: the job queued at stage 1 is claimed, a new line is a new job.
            #expect(try j.claim(stageIndex: 1, stageName: "compress", limit: 10).map(\.context.memo.photo) == ["a.jpg"], "\(at)")
            let fresh = try j.commitMemos([QueuedMemo(memo: MemoJob(memo: "after", owner: "bob"), photo: .none, key: "k9", source: "queue")],
                                          position: nil, joinTimeoutSeconds: 60)
            guard case .created(let id, .queued) = fresh.first else { Issue.record("\(fresh) \(at)"); continue }
            #expect(id > ids.max()!, "\(at)")
        }
    }
}
