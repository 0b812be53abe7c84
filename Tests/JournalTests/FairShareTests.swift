import Foundation
import Testing
@testable import Journal
import StageKit
import SQL

/// Issue 25, fair share per owner: claims take a stage's jobs round robin by owner, so
/// one user's flood delays their own jobs, not everyone's, on both engines.
@Suite struct FairShareTests {
    func memo(_ key: String, _ owner: String?) -> QueuedMemo {
        QueuedMemo(memo: MemoJob(memo: key, owner: owner), photo: .none, key: key, source: "test")
    }

    func owners(_ f: JournalFixture, _ claimed: [ClaimedJob]) throws -> [String] {
        try claimed.map { try f.summary($0.context.id).memo.owner ?? "-" }
    }

    /// Mallory queues 200 jobs, then alice one and bob three: alice's comes with the
    /// second claim, and bob's three alternate with mallory's, one each a turn.
    @Test(arguments: Engine.allCases) func claimsTakeJobsRoundRobinByOwner(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos((0..<200).map { memo("m\($0)", "mallory") }, position: nil, joinTimeoutSeconds: 60)
        _ = try f.journal.commitMemos([memo("a0", "alice")], position: nil, joinTimeoutSeconds: 60)
        _ = try f.journal.commitMemos((0..<3).map { memo("b\($0)", "bob") }, position: nil, joinTimeoutSeconds: 60)
        var order: [String] = []
        for _ in 0..<8 { order += try owners(f, f.journal.claim(stageIndex: 0, stageName: "one", limit: 1)) }
        #expect(order == ["mallory", "alice", "bob", "mallory", "bob", "mallory", "bob", "mallory"], "\(order)")
        // A batch claim is in the same order.
        let batch = try owners(f, f.journal.claim(stageIndex: 0, stageName: "one", limit: 3))
        #expect(batch == ["mallory", "mallory", "mallory"], "\(batch)")
    }

    /// An outcome's transaction claims the next stage as a claim does, by turn: the job
    /// that just advanced goes straight on only when it is first by turn there. Alice's
    /// job, advancing behind mallory's three at stage 1, comes second (mallory's first
    /// job has the same turn and a lower id), and the outcome and claim are one durable
    /// transaction.
    @Test(arguments: Engine.allCases) func anOutcomesClaimTakesTheNextStageByTurn(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos((0..<3).map { memo("m\($0)", "mallory") }, position: nil, joinTimeoutSeconds: 60)
        let mallorys = try f.journal.claim(stageIndex: 0, stageName: "zero", limit: 3)
        _ = try f.journal.recordSteps(JobStateMachine.steps(mallorys.map { ($0, .continue()) }, stageCount: 2, retry: .default),
                                  stageName: "zero", durationMs: 1)
        _ = try f.journal.commitMemos([memo("a0", "alice")], position: nil, joinTimeoutSeconds: 60)
        let alices = try f.journal.claim(stageIndex: 0, stageName: "zero", limit: 1)
        let start = f.journal.committed
        let steps = JobStateMachine.steps(alices.map { ($0, .continue()) }, stageCount: 2, retry: .default)
        let recorded = try f.journal.recordOutcomes([StageRunSteps(steps: steps, stageName: "zero", durationMs: 1)],
                                                    thenClaim: [ClaimRequest(stageIndex: 1, stageName: "one", limit: 2)])
        #expect(recorded.transitions == [[Transition(kind: .advanced(toStage: 1), quarantinePhoto: nil)]])
        #expect(try owners(f, recorded.claimed) == ["mallory", "alice"])
        #expect(recorded.claimed.map(\.context.id) == [mallorys[0].context.id, alices[0].context.id])
        #expect(try f.summary(alices[0].context.id).state == .running)
        let end = f.journal.committed
        #expect(end.transactions - start.transactions == 1 && end.durable - start.durable == 1)
    }

    /// A user who queued a lot yesterday (all done) is not behind today's flood of
    /// someone else: only unfinished jobs hold a turn. The daemon's own user (no owner)
    /// is an owner like the others.
    @Test(arguments: Engine.allCases) func finishedJobsHoldNoTurn(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos((0..<30).map { memo("old\($0)", "alice") }, position: nil, joinTimeoutSeconds: 60)
        while try !f.journal.claim(stageIndex: 0, stageName: "one", limit: 10).isEmpty {}
        for j in try f.journal.jobs(state: .running, limit: 100) { try f.journal.cancel(job: j.id) }
        _ = try f.journal.commitMemos((0..<50).map { memo("m\($0)", "mallory") }, position: nil, joinTimeoutSeconds: 60)
        _ = try f.journal.commitMemos([memo("a", "alice"), memo("d", nil)], position: nil, joinTimeoutSeconds: 60)
        let first = try owners(f, f.journal.claim(stageIndex: 0, stageName: "one", limit: 4))
        #expect(first == ["mallory", "alice", "-", "mallory"], "\(first)")
    }

    /// A bulk retry of a user's failed jobs queues them behind their own and others' next
    /// jobs, not ahead of everyone at the turns they had.
    @Test(arguments: Engine.allCases) func aRetriedJobTakesANewTurn(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos((0..<5).map { memo("m\($0)", "mallory") }, position: nil, joinTimeoutSeconds: 60)
        let early = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 5)
        for j in early { try f.journal.cancel(job: j.context.id) }
        _ = try f.journal.commitMemos((0..<3).map { memo("m2-\($0)", "mallory") } + [memo("a", "alice")], position: nil,
                                      joinTimeoutSeconds: 60)
        try f.journal.retry(job: early[0].context.id, joinTimeoutSeconds: 60) { _, _, _ in }
        let order = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 5).map(\.context.id)
        #expect(order.last == early[0].context.id, "\(order)")
    }

    /// 25,000 jobs of 7 owners (every fifth waiting out an hour's back-off), with
    /// statistics on PostgreSQL.
    func backlog(_ f: JournalFixture) throws {
        try f.journal.write { db in
            try db.run("""
                INSERT INTO jobs(key, origin, memo, state, ready_at, created, updated, owner, turn)
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000)
                SELECT 'q' || i, 'queue', '{}', 'queued', 1, 1, 1, 'u' || (i % 7), i / 7 FROM n
                """)
            try db.run("UPDATE jobs SET state = 'waiting', wait_reason = 'backoff', ready_at = ? WHERE id % 5 = 0", [.double(unixNow() + 3600)])
            if f.engine == .postgres { try db.run("ANALYZE jobs") }
        }
    }

    /// Intake asks two questions per new job: both read an index, whatever the backlog
    /// (SQLite answered the front from every unfinished job).
    @Test(arguments: Engine.allCases) func intakesTurnLookupsReadOneEndOfAnIndex(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        try backlog(f)
        for owner in ["u3", nil] {
            let (last, front) = Journal.turnQueries(dialect: engine == .sqlite ? .sqlite : .postgres, owner: owner)
            let plans = try f.journal.read { db in
                let band = [SQLValue.int(Journal.reprocessBand)]
                return try [(last, (owner.map { [SQLValue.text($0)] } ?? []) + band), (front, band)].map { sql, params in
                    try db.query((engine == .sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + sql, params)
                        .compactMap { $0.string(engine == .sqlite ? 3 : 0) }.joined(separator: "\n")
                }
            }
            // SQLite: the indexes named; PostgreSQL plans from statistics (an owner with
            // many jobs is found from the front's end of jobs_front), never a scan of them all.
            #expect(engine == .postgres || (plans[0].contains("jobs_owner_turn") && plans[1].contains("jobs_front")), "\(plans)")
            #expect(plans.allSatisfy { $0.contains("Index") || $0.contains("INDEX") }, "\(plans)")
            #expect(!plans.joined().contains("jobs_state") && !plans.joined().contains("Seq Scan"), "\(plans)")
        }
    }

    /// The daemon's own user (no owner: its queue file, root's drops) with a large open
    /// backlog — 20,000 of 25,000 jobs — and another user's 5,000 at later turns: its turn
    /// lookup reads one end of the (owner, turn) index. PostgreSQL, with statistics, walked
    /// jobs_front down past the other user's 5,000 for max(turn) of `owner IS NULL`.
    @Test(arguments: Engine.allCases) func theDaemonUsersTurnLookupReadsOneEndOfAnIndexWhateverItsBacklog(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        try backlog(f)
        try f.journal.write { db in
            try db.run("UPDATE jobs SET owner = NULL WHERE id % 5 <> 0")
            try db.run("UPDATE jobs SET turn = turn + 100000 WHERE id % 5 = 0")
            if engine == .postgres { try db.run("ANALYZE jobs") }
        }
        let (last, _) = Journal.turnQueries(dialect: engine == .sqlite ? .sqlite : .postgres, owner: nil)
        let plan = try f.journal.read { db in
            try db.query((engine == .sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + last, [.int(Journal.reprocessBand)]).compactMap { $0.string(engine == .sqlite ? 3 : 0) }
        }.joined(separator: "\n")
        #expect(plan.contains("jobs_owner_turn") && !plan.contains("Seq Scan") && !plan.contains("SCAN jobs\n") && !plan.contains("Sort"), "\(plan)")
        let (got, want) = try f.journal.read { db in
            (try db.queryOne(last, [.int(Journal.reprocessBand)])?.int(0), try db.queryOne("SELECT max(turn) FROM jobs WHERE owner IS NULL AND \(Journal.unfinished)")?.int(0))
        }
        #expect(got != nil && got == want, "the last turn: \(String(describing: got)), not \(String(describing: want))")
    }

    /// With a big backlog — 20,000 queued and 5,000 waiting out a back-off at the stage —
    /// a claim reads its two indexes up to its limit: no scan of the jobs, no sort of them.
    @Test(arguments: Engine.allCases) func aClaimReadsItsIndexesUpToItsLimit(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        try backlog(f)
        let (sql, params) = Journal.runnableQuery(dialect: engine == .sqlite ? .sqlite : .postgres, stageIndex: 0, limit: 4,
                                                  crashSuspects: false, host: "", photoLocalEnd: 3, now: unixNow())
        let plan = try f.journal.read { db in
            engine == .sqlite
                ? try db.query("EXPLAIN QUERY PLAN WITH \(sql) SELECT * FROM picked", params).compactMap { $0.string(3) }
                : try db.query("EXPLAIN WITH \(sql) SELECT * FROM picked", params).compactMap { $0.string(0) }
        }.joined(separator: "\n")
        #expect(plan.contains("jobs_turns") && plan.contains("jobs_backoff"), "\(plan)")
        #expect(!plan.contains("SCAN jobs") && !plan.contains("Seq Scan"), "\(plan)")
        // Each part reads in its index's order: only the few rows picked are sorted.
        func part(_ from: String, _ to: String) -> Substring {
            guard let a = plan.range(of: from), let b = plan.range(of: to, range: a.upperBound..<plan.endIndex) else { return "" }
            return plan[a.upperBound..<b.lowerBound]
        }
        let parts = engine == .sqlite ? [part("CO-ROUTINE queued", "SCAN queued"), part("CO-ROUTINE due", "SCAN due")]
            : [part("CTE queued", "CTE due"), part("CTE due", "->  Sort  (")]
        #expect(parts.allSatisfy { $0.lowercased().contains("index") && !$0.contains("TEMP B-TREE") && !$0.contains("Sort") }, "\(plan)")
        let t0 = Date()
        let claimed = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 4)
        #expect(claimed.count == 4 && Date().timeIntervalSince(t0) < 0.5)
    }
}
