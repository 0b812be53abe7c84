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

/// The copies a user's unfinished reprocess jobs run from (`ReprocessRoom` adds them up).
extension ReprocessJournalTests {
    @Test(arguments: Engine.allCases) func aUsersUnfinishedJobsCopiesAreListed(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        #expect(try f.journal.enqueueReprocess([reprocess("r0", "alice"), reprocess("r1", "bob"), reprocess("r2", "alice")], stageIndex: 0).count == 3)
        #expect(try f.journal.reprocessCopies(owner: "alice").sorted() == ["/tmp/r0.jpg", "/tmp/r2.jpg"])
        let r2 = try #require(try f.journal.jobs(limit: 10).first { $0.key?.contains("r2") == true }?.id)
        try f.journal.cancel(job: r2)
        #expect(try f.journal.reprocessCopies(owner: "alice") == ["/tmp/r0.jpg"])
        #expect(try f.journal.reprocessCopies(owner: "carol").isEmpty)
    }
}

/// A cancelled reprocess job does not hold its record back: asking again queues it again,
/// after the cancel and after retention made the cancelled job a tombstone.
extension ReprocessJournalTests {
    @Test(arguments: Engine.allCases) func aCancelledJobGivesItsKeyUp(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let job = reprocess("r1", "alice")
        #expect(try f.journal.enqueueReprocess([job], stageIndex: 0).count == 1)
        let first = try #require(try f.journal.jobs(limit: 10).first { $0.key == job.key }?.id)
        try f.journal.cancel(job: first)
        #expect(try f.journal.existingKeys([job.key]).isEmpty)
        #expect(try f.journal.enqueueReprocess([job], stageIndex: 0) == [job.key])
        #expect(try f.journal.existingKeys([job.key]) == [job.key])
        #expect(try f.journal.enqueueReprocess([job], stageIndex: 0).isEmpty, "the new job holds the key")
        let second = try #require(try f.journal.jobs(limit: 10).first { $0.key == job.key }?.id)
        #expect(second != first)
        #expect(try f.journal.job(first)?.key == job.key + "#\(first)" && f.journal.job(first)?.state == .cancelled)
        // The replaced job is not retried: two jobs would update the record twice.
        #expect(throws: PhotomemoError.self) {
            try f.journal.retry(job: first, joinTimeoutSeconds: 60) { _, _, _ in }
        }
        // Cancelled again and pruned to a tombstone: still given up.
        try f.journal.cancel(job: second)
        var retention = Retention()
        retention.cancelled = 0
        #expect(try f.journal.pruneBatch(retention: retention, now: unixNow() + 10).pruned == 2)
        #expect(try f.journal.enqueueReprocess([job], stageIndex: 0) == [job.key])
    }
}

/// A failed job gives its key up too (it is cancelled: one job a record at a time), and a
/// deleted record's jobs, a writer's too, pin nothing in the store.
extension ReprocessJournalTests {
    @Test(arguments: Engine.allCases) func aFailedJobGivesItsKeyUpAndADeletedRecordsJobsPinNothing(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let job = reprocess("r1", "alice")
        _ = try f.journal.enqueueReprocess([job], stageIndex: 0)
        let claimed = try #require(try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1).first)
        _ = try f.record(claimed, stageName: "one", outcome: .fail(.badImage, "no"), durationMs: 1, stageCount: 2, retry: .default)
        #expect(try f.journal.job(claimed.context.id)?.state == .failed)
        // Its failure removed its copy: one left by an earlier release goes at the next start.
        #expect(try f.journal.reprocessCopiesInUse().isEmpty)
        #expect(try f.journal.enqueueReprocess([job], stageIndex: 0) == [job.key])
        #expect(try f.journal.job(claimed.context.id)?.state == .cancelled)
        #expect(try f.journal.contentHashesOfUnfinishedJobs().contains(job.sha256))
        // The record is deleted: its job (the writer's "bob" here, not the owner's) is
        // cancelled and pins the photo no more; its copy is returned for removal.
        var writer = job.memo
        writer.owner = "bob"
        let bobs = ReprocessJob(key: ReprocessJob.key(record: "r1", changeTag: "2", from: "one"), memo: writer, photoPath: "/tmp/r1-bob.jpg",
                                sha256: job.sha256, working: job.working)
        _ = try f.journal.enqueueReprocess([bobs], stageIndex: 0)
        #expect(Set(try f.journal.cancelReprocess(ofRecords: ["r1"])) == [job.photoPath, bobs.photoPath])
        #expect(!(try f.journal.contentHashesOfUnfinishedJobs().contains(job.sha256)))
    }
}

/// The copies a host's retention round removes: those every naming job ended, never one
/// a job still needs (a cancelled job's key queued again names the same copy) nor one no
/// job names yet (a request's page being queued).
extension ReprocessJournalTests {
    @Test(arguments: Engine.allCases) func copiesOfEndedJobsOnly(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let (a, b) = (reprocess("ra", "alice"), reprocess("rb", "alice"))
        _ = try f.journal.enqueueReprocess([a, b], stageIndex: 0)
        let paths = [a.photoPath, b.photoPath, "/tmp/queued-meanwhile.jpg"]
        #expect(try f.journal.reprocessCopiesEnded(paths).isEmpty)
        let ids = try f.journal.jobs(limit: 10).filter { $0.key == a.key || $0.key == b.key }.map(\.id)
        for id in ids { try f.journal.cancel(job: id) }
        #expect(try f.journal.reprocessCopiesEnded(paths) == [a.photoPath, b.photoPath])
        _ = try f.journal.enqueueReprocess([a], stageIndex: 0)  // asked again: the same copy
        #expect(try f.journal.reprocessCopiesEnded(paths) == [b.photoPath])
    }
}

/// A records quota counts a user's records and the unfinished jobs that will add one.
extension ReprocessJournalTests {
    /// A job past the stage that writes records has its record (counted as a record); a
    /// reprocess job updates one. Counting them too refused a user one below their quota
    /// while a job ran notify (QuotaTests on PostgreSQL saw "quota of 2 records: 2" after 1).
    @Test(arguments: Engine.allCases) func aQuotaCountsOnlyTheJobsThatWillAddARecord(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let hers = (0..<3).map { QueuedMemo(memo: MemoJob(memo: "m", owner: "alice"), photo: .none, key: "a\($0)", source: "test") }
        _ = try f.journal.commitMemos(hers, position: nil, joinTimeoutSeconds: 60)
        #expect(try f.journal.enqueueReprocess([reprocess("r0", "alice")], stageIndex: 0).count == 1)
        // One of her fresh jobs goes through stages 0 and 1 (1: the record's, here) to 2.
        for stage in 0..<2 {
            let job = try #require(try f.journal.claim(stageIndex: stage, stageName: "s\(stage)", limit: 1).first)
            #expect(job.context.key.hasPrefix("a"))
            _ = try f.record(job, stageName: "s\(stage)", outcome: .continue(), durationMs: 1, stageCount: 3, retry: .default)
        }
        // Her reprocess job counts toward her reprocess cap, not toward the cap on fresh jobs.
        #expect(try f.journal.unfinishedJobs(owner: "alice", limit: 100) == 3)
        #expect(try f.journal.unfinishedJobs(owner: "alice", reprocess: true, limit: 100) == 1)
        #expect(try f.journal.jobsBeforeTheirRecord(owner: "alice", recordStage: 1, limit: 100) == 2)
        #expect(try f.journal.jobsBeforeTheirRecord(owner: "alice", recordStage: 2, limit: 100) == 3)  // at the record's stage: not written yet
        #expect(try f.journal.jobsBeforeTheirRecord(owner: "alice", recordStage: 1, limit: 1) == 1)
        #expect(try f.journal.jobsBeforeTheirRecord(owner: "bob", recordStage: 1, limit: 100) == 0)
    }
}
