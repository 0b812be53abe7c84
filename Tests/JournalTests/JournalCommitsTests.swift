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
}
