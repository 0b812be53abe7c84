import Foundation
import Testing
@testable import Journal
import StageKit

/// `photomemo reprocess`'s jobs in the journal, on both engines: a fresh job is claimed
/// before every queued reprocess job of any owner, the same key is queued once, and their
/// count by state is their own.
@Suite struct ReprocessJournalTests {
    func reprocess(_ record: String, _ owner: String) -> ReprocessJob {
        var memo = MemoJob(memo: "m", type: "Photo", owner: owner)
        memo.record = record
        return ReprocessJob(key: ReprocessJob.key(record: record, changeTag: "1", from: "one"), memo: memo, photoPath: "/tmp/\(record).jpg",
                            sha256: String(repeating: "a", count: 64), working: WorkingSet(photoPath: "/tmp/\(record).jpg", sha256: nil))
    }

    @Test(arguments: Engine.allCases) func freshJobsGoFirstAndAKeyIsQueuedOnce(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let batch = (0..<5).map { reprocess("r\($0)", $0 % 2 == 0 ? "alice" : "bob") }
        #expect(try f.journal.enqueueReprocess(batch, stageIndex: 0).count == 5)
        #expect(try f.journal.enqueueReprocess(batch, stageIndex: 0).isEmpty, "the same keys again")
        #expect(try f.journal.existingKeys(batch.map(\.key)).count == 5)
        // Fresh jobs of both owners, after the reprocess jobs: claimed first, by owner.
        _ = try f.journal.commitMemos([QueuedMemo(memo: MemoJob(memo: "new", owner: "bob"), photo: .none, key: "b-new", source: "test"),
                                       QueuedMemo(memo: MemoJob(memo: "new", owner: "alice"), photo: .none, key: "a-new", source: "test")],
                                      position: nil, joinTimeoutSeconds: 60)
        let claimed = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 3).map(\.context.key)
        #expect(claimed.prefix(2).sorted() == ["a-new", "b-new"] && claimed[2].hasPrefix("reprocess:"), "\(claimed)")
        let counts = try f.journal.reprocessCounts()
        #expect(counts[.queued] == 4 && counts[.running] == 1, "\(counts)")
        #expect(try f.journal.counts()[.running] == 3)
    }
}
