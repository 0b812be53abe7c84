import Foundation
import Testing
@testable import Journal
import StageKit

/// The journal counts its committed write transactions, and which waited for the disk
/// (`photomemo_journal_transactions_total`): what the bench divides by photos.
@Suite struct JournalCommitsTests {
    @Test(arguments: Engine.allCases) func writesAreCountedAndOnlySQLiteClaimsSkipTheDisk(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let start = f.journal.committed
        _ = try f.journal.commitMemos([f.memo("a"), f.memo("b")], position: nil, joinTimeoutSeconds: 60)
        let claimed = try f.journal.claim(stageIndex: 0, stageName: "s", limit: 2)
        #expect(claimed.count == 2)
        _ = try f.journal.recordSteps(JobStateMachine.steps(claimed.map { ($0, .continue()) }, stageCount: 1, retry: .default),
                                  stageName: "s", durationMs: 1)
        let end = f.journal.committed
        // Intake and the two outcomes' one transaction wait for the disk; the claim is a
        // relaxed transaction on SQLite and one statement outside `write` on PostgreSQL.
        #expect(end.durable - start.durable == 2)
        #expect(end.transactions - start.transactions == (engine == .sqlite ? 3 : 2))
    }

    /// Outcomes whose runs all say they need not reach the disk commit without waiting for
    /// it (SQLite `synchronous=NORMAL`, PostgreSQL `synchronous_commit` off); one durable
    /// run among them makes the whole transaction durable, and the relaxed one is kept.
    @Test(arguments: Engine.allCases) func outcomesOfUnseenRunsSkipTheDiskUnlessOneIsSeen(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos([f.memo("a"), f.memo("b")], position: nil, joinTimeoutSeconds: 60)
        let claimed = try f.journal.claim(stageIndex: 0, stageName: "s", limit: 2)
        try #require(claimed.count == 2)
        let steps = JobStateMachine.steps(claimed.map { ($0, .continue()) }, stageCount: 2, retry: .default)
        let start = f.journal.committed
        _ = try f.journal.recordOutcomes([StageRunSteps(steps: [steps[0]], stageName: "s", durationMs: 1, durable: false)], thenClaim: [])
        let relaxed = f.journal.committed
        #expect(relaxed.transactions - start.transactions == 1 && relaxed.durable == start.durable)
        _ = try f.journal.recordOutcomes([StageRunSteps(steps: [steps[1]], stageName: "s", durationMs: 1, durable: false),
                                          StageRunSteps(steps: [], stageName: "t", durationMs: 1)], thenClaim: [])
        let end = f.journal.committed
        #expect(end.transactions - relaxed.transactions == 1 && end.durable - relaxed.durable == 1)
        // Both recorded: each job waits at the next stage.
        #expect(try f.journal.claim(stageIndex: 1, stageName: "t", limit: 5).count == 2)
    }
}
