import Foundation
import Testing
@testable import Journal
import StageKit
import SQL

/// Questions the scheduler asks on every pump must not walk the whole backlog: one user's
/// 4 MiB queue file of `{}` lines is 1.4 million queued jobs.
@Suite struct BigBacklogTests {
    /// SQLite has no statistics: with 1.4 million jobs queued, the crash-suspect check
    /// walked `jobs_runnable` (every runnable job) on each pump, 1.3 s each, and the daemon
    /// ran about one job a second. It must look only at jobs that crashed.
    @Test func theCrashSuspectCheckReadsOnlyJobsThatCrashed() throws {
        let f = try JournalFixture(.sqlite)
        _ = try f.journal.commitMemos((0..<50).map { f.memo("k\($0)") }, position: nil, joinTimeoutSeconds: 60)
        let plan = try f.journal.read { db in
            try db.query("EXPLAIN QUERY PLAN " + Journal.crashSuspectQuery(stageIndexes: [0, 1, 2], dialect: .sqlite), [.double(unixNow())])
                .compactMap { $0.string(3) }
        }
        #expect(plan.contains { $0.contains("jobs_crashed") }, "plan: \(plan)")
        #expect(!plan.contains { $0.contains("jobs_turns") || $0.contains("jobs_backoff") || $0.contains("jobs_state") }, "plan: \(plan)")
        // And it still answers: nothing crashed, then one job that did.
        #expect(try !f.journal.crashSuspectReady(stageIndexes: [0]))
        let claimed = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1).map(\.context.id)
        _ = try f.journal.resumeInterrupted(maxAttempts: 6, crashed: [claimed[0]: "one"], signal: "SIGSEGV")
        #expect(try f.journal.crashSuspectReady(stageIndexes: [0]))
        #expect(try !f.journal.crashSuspectReady(stageIndexes: [1]))
    }

    /// Read before each turn of a user's queue file: only their unfinished jobs, up to the limit.
    @Test(arguments: Engine.allCases) func unfinishedJobsCountsOneOwnersOpenJobsUpToTheLimit(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        func memo(_ key: String, _ owner: String) -> QueuedMemo {
            QueuedMemo(memo: MemoJob(memo: key, owner: owner), photo: .none, key: key, source: "test")
        }
        _ = try f.journal.commitMemos((0..<5).map { memo("a\($0)", "alice") } + (0..<3).map { memo("m\($0)", "mallory") },
                                      position: nil, joinTimeoutSeconds: 60)
        let first = try #require(try f.journal.jobs(limit: 100).first { $0.memo.owner == "alice" })
        try f.journal.cancel(job: first.id)
        #expect(try f.journal.unfinishedJobs(owner: "alice", limit: 100) == 4)
        #expect(try f.journal.unfinishedJobs(owner: "alice", limit: 2) == 2)
        #expect(try f.journal.unfinishedJobs(owner: "mallory", limit: 100) == 3)
        #expect(try f.journal.unfinishedJobs(owner: "bob", limit: 100) == 0)
    }
}
