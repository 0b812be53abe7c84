import Foundation
import Testing
@testable import Journal
import StageKit

/// Bulk retry and cancel in the journal (issue #28): 10,000 failed jobs retried 200 a
/// transaction, each batch short, only the filter's jobs touched.
@Suite struct BulkControlTests {
    @Test(arguments: Engine.allCases) func tenThousandFailedJobsAreRetriedInShortBatches(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let memos = (0..<10_000).map { i in
            QueuedMemo(memo: MemoJob(memo: "n\(i)", owner: i % 10 == 0 ? "alice" : "bob"), photo: .none, key: "k\(i)", source: "test")
        }
        for chunk in stride(from: 0, to: memos.count, by: 1000) {
            _ = try f.journal.commitMemos(Array(memos[chunk..<chunk + 1000]), position: nil, joinTimeoutSeconds: 60)
        }
        try f.journal.write { db in try db.run("UPDATE jobs SET state = 'failed', finished = ?, updated = ?", [.double(unixNow()), .double(unixNow())]) }
        let through = try f.journal.newestJobID()
        // alice's 1,000 first, as a user's bulk retry reads them: only hers.
        func retryAll(owner: String?) throws -> (count: Int, slowest: Double, total: Double) {
            var after: Int64 = 0, count = 0, slowest = 0.0, total = 0.0
            while true {
                let page = try f.journal.jobIDs(matching: JobFilter(state: .failed, owner: owner), after: after, through: through, limit: 200)
                guard let last = page.last else { break }
                let t0 = Date()
                let r = try f.journal.retry(jobs: page.map(\.id), state: .failed, joinTimeoutSeconds: 60, photoNeededEnd: 0, now: unixNow()) { _, _, _, _ in }
                slowest = max(slowest, Date().timeIntervalSince(t0))
                total += Date().timeIntervalSince(t0)
                #expect(r.refused.isEmpty)
                #expect(page.allSatisfy { owner == nil || $0.owner == owner })
                count += r.retried.count
                after = last.id
            }
            return (count, slowest, total)
        }
        let alice = try retryAll(owner: "alice")
        #expect(alice.count == 1000)
        #expect(try f.journal.counts()[.failed] == 9000)
        let all = try retryAll(owner: nil)
        #expect(all.count == 9000)
        #expect(try f.journal.counts()[.queued] == 10_000)
        print("\(engine): bulk retry of 10,000 jobs, 200 a transaction: the longest held the writer \(Int(max(alice.slowest, all.slowest) * 1000)) ms")
        // Held a batch at a time, not for the whole: 50 batches, the longest well under a
        // fifth of them all (a ratio, not a time: the machine is shared).
        #expect(max(alice.slowest, all.slowest) * 5 < alice.total + all.total)
        // Cancel by stage and time: none are at stage 3, none changed after now.
        #expect(try f.journal.jobIDs(matching: JobFilter(state: .queued, stageIndex: 3), after: 0, through: through, limit: 10).isEmpty)
        #expect(try f.journal.jobIDs(matching: JobFilter(state: .queued, since: unixNow() + 60), after: 0, through: through, limit: 10).isEmpty)
        let some = try f.journal.jobIDs(matching: JobFilter(state: .queued, stageIndex: 0, since: unixNow() - 600), after: 0, through: through, limit: 200)
        #expect(try f.journal.cancel(jobs: some.map(\.id), state: .queued, now: unixNow()).count == 200)
        #expect(try f.journal.cancel(jobs: some.map(\.id), state: .queued, now: unixNow()).isEmpty)  // already cancelled: left alone
        #expect(try f.journal.counts()[.cancelled] == 200)
    }
}
