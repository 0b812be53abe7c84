import Foundation
import Index
import IndexStage
import StageKit
import Testing
import TestSupport

/// `index` on a real record store (the home's SQLite file): a record per job key, updated
/// and never duplicated, and no write to a record the job's owner may not change.
@Suite struct IndexStageTests {
    static func job(_ key: String, owner: String = "alice", memo: String = "red shoe", record: String? = nil,
                    sha: String? = String(repeating: "ab", count: 32), fields: [String: JSONValue] = ["salesPrice": 1200]) -> JobContext {
        var m = MemoJob(memo: memo, type: "GoodsMaster", fields: fields, owner: owner)
        m.record = record
        let stored = WorkingSet(files: [.init(role: .rendition("display"), path: "/gone/display.jpg", bytes: 10, storedKey: "sha256/cd/cd/cdcd")])
        return JobContext(id: 1, key: key, photoPath: nil, photoSHA256: sha, memo: m, results: [:], attempt: 1, working: stored)
    }

    func all(_ h: StageHome) throws -> [Record] {
        try h.environment.recordIndex().query(PredicateParser.parse("TRUEPREDICATE"), viewer: .admin).records
    }

    @Test func writesARecordAndARunAgainForTheKeyChangesNothing() throws {
        let h = try StageHome()
        let stage = try h.stage(IndexStage.self)
        let first = try #require(stage.run(Self.job("k1")).result)
        #expect(first["op"] == "create")
        let second = try #require(stage.run(Self.job("k1")).result)
        #expect(second["op"] == "none" && second["record"] == first["record"])
        let records = try all(h)
        #expect(records.count == 1)
        let r = try #require(records.first)
        #expect(r.id == first["record"]?.stringValue && r.type == "GoodsMaster" && r.memo == "red shoe" && r.owner == "alice")
        #expect(r.fields["salesPrice"] == 1200 && r.assets["display"]?["key"] == "sha256/cd/cd/cdcd")
    }

    @Test func aLaterMemoForTheSamePhotoUpdatesItsRecord() throws {
        let h = try StageHome()
        let stage = try h.stage(IndexStage.self)
        let created = try #require(stage.run(Self.job("k1")).result)
        let updated = try #require(stage.run(Self.job("k2", memo: "red shoe, size 42", fields: ["size": 42])).result)
        #expect(updated["op"] == "update" && updated["record"] == created["record"])
        let records = try all(h)
        #expect(records.count == 1)
        #expect(records.first?.memo == "red shoe, size 42" && records.first?.fields == ["salesPrice": 1200, "size": 42])
    }

    @Test func aJobNamingSomeoneElsesRecordFailsAndChangesNothing() throws {
        let h = try StageHome()
        let stage = try h.stage(IndexStage.self)
        let id = try #require(stage.run(Self.job("k1")).result?["record"]?.stringValue)
        // Not visible to bob: answered as if it did not exist.
        guard case .fail(let hidden) = stage.run(Self.job("k2", owner: "bob", memo: "mine now", record: id, sha: nil)) else {
            Issue.record("bob wrote alice's record")
            return
        }
        #expect(hidden.message.contains("does not exist"))
        // Readable by bob, not writable.
        _ = try h.environment.recordIndex().update(id, memo: nil, fields: [:], acl: ACL(readers: ["bob"]), ifTag: nil, viewer: .admin)
        guard case .fail(let refused) = stage.run(Self.job("k3", owner: "bob", memo: "mine now", record: id, sha: nil)) else {
            Issue.record("bob wrote alice's record")
            return
        }
        #expect(refused.message == "record \(id) named by the job may not be changed by bob")
        #expect(try all(h).map(\.memo) == ["red shoe"])
    }

    @Test func inABatchOneBadJobFailsAloneAndTheOthersAreWritten() throws {
        let h = try StageHome()
        let stage = try h.stage(IndexStage.self)
        let outcomes = stage.run(batch: [Self.job("k1", sha: "11"), Self.job("k2", record: "r-nope", sha: nil), Self.job("k3", sha: "33")])
        #expect(outcomes.count == 3)
        #expect(outcomes[0].result?["op"] == "create" && outcomes[2].result?["op"] == "create")
        if case .fail = outcomes[1] {} else { Issue.record("the job naming a missing record did not fail: \(outcomes[1])") }
        #expect(try all(h).count == 2)
    }
}

/// The index's connection learns of a PostgreSQL restart only from the write that fails on
/// it: an outage (DESIGN.md), which waits without spending the job's attempt, not a retry.
@Suite struct IndexStageOutageTests {
    @Test func theFirstWriteAfterAPostgreSQLRestartIsAnOutageOfTheIndex() throws {
        let pg = try PostgresServer()
        defer { pg.shutdown() }
        let h = try StageHome()
        let environment = StageEnvironment(home: URL(fileURLWithPath: h.root), database: try pg.createDatabase("outage"))
        let stage = try IndexStage(options: StageOptions(validating: [:], against: IndexStage.options, place: "test"), environment: environment)
        #expect(stage.run(IndexStageTests.job("k1")).result?["op"] == "create")
        pg.stop(now: true)
        try pg.start()
        let outcome = stage.run(IndexStageTests.job("k2", sha: String(repeating: "cd", count: 32)))
        guard case .unavailable(let dependency, let error) = outcome else { Issue.record("\(outcome)"); return }
        #expect(dependency == "record index" && error.code == .dependency, "\(error)")
        // The next run reconnects and writes.
        #expect(stage.run(IndexStageTests.job("k2", sha: String(repeating: "cd", count: 32))).result?["op"] == "create")
    }
}
