import Foundation
import Testing
@testable import Journal
import StageKit
import Postgres
import TestSupport

/// Several daemons on one PostgreSQL journal: photo stages stay where the photo is,
/// leases expire into reclaims, per-host intake bookkeeping, claims never overlap.
@Suite struct ClusterJournalTests {
    let url: String
    init() throws { url = try PostgresServer.freshDatabase() }

    func host(_ name: String, lease: Double = 30) throws -> Journal {
        try Journal(connection: PostgresDatabase(url: url), path: url, host: name, leaseSeconds: lease)
    }

    /// validate, compress, upload work on the photo's host; index on runs anywhere.
    let photoLocalEnd = 3

    func photo(_ name: String, sha: String, on host: String) -> TakenPhoto {
        TakenPhoto(name: name, path: "/\(host)/inbox/" + name, identity: "1:\(name)", sha256: sha)
    }

    /// A claim's commit skips the WAL flush for its own transaction only: the session
    /// stays durable for intake and outcomes, and a claim that found nothing sets nothing.
    @Test func aClaimsAsynchronousCommitDoesNotLeakIntoTheSession() throws {
        let db = try PostgresDatabase(url: url)
        let j = try Journal(connection: db, path: url, host: "a", leaseSeconds: 30)
        #expect(try j.claim(stageIndex: 0, stageName: "validate", limit: 10).isEmpty)
        _ = try j.commitPhotos([photo("p.jpg", sha: "s1", on: "a")], now: unixNow())
        let claimed = try j.claim(stageIndex: 0, stageName: "validate", limit: 10)
        #expect(claimed.count == 1)
        #expect(try db.queryOne("SHOW synchronous_commit", [])?.string(0) == "on")
        #expect(try db.queryOne("SELECT state FROM jobs WHERE id = ?", [.int(claimed[0].context.id)])?.string(0) == "running")
    }

    /// A claim released because its stage was paused meanwhile is queued again at that
    /// stage with no attempt spent; only this host's claim is undone (another host's is
    /// left alone), and the next claim runs it as its first attempt.
    @Test func aReleasedClaimIsQueuedAgainAtItsStageWithNoAttemptSpent() throws {
        let a = try host("a"), b = try host("b")
        _ = try a.commitPhotos([photo("p.jpg", sha: "s1", on: "a")], now: unixNow())
        let job = try #require(try a.claim(stageIndex: 0, stageName: "validate", limit: 10).first)
        try b.release([(job, "validate")], reason: "paused", now: unixNow())
        #expect(try a.job(job.context.id)?.state == .running, "another host's claim was undone")
        try a.release([(job, "validate")], reason: "paused", now: unixNow())
        let queued = try #require(try a.job(job.context.id))
        #expect(queued.state == .queued && queued.attempts == 0)
        #expect(try a.history(job.context.id).map(\.event) == ["accepted", "started", "released"])
        let again = try a.claim(stageIndex: 0, stageName: "validate", limit: 10)
        #expect(again.map(\.context.id) == [job.context.id] && again.first?.context.attempt == 1)
    }

    @Test func photoStagesRunOnlyWhereThePhotoIsAndLaterStagesAnywhere() throws {
        let a = try host("a"), b = try host("b")
        _ = try a.commitPhotos([photo("p.jpg", sha: "s1", on: "a")], now: unixNow())
        #expect(try b.claim(stageIndex: 0, stageName: "validate", limit: 10, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()).isEmpty)
        let job = try #require(try a.claim(stageIndex: 0, stageName: "validate", limit: 10, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()).first)
        // Moved on to the first memo stage, it runs on any host.
        _ = try a.recordSteps([(job, JobStep(next: .advance(toStage: 3), event: "done", message: nil, result: nil))],
                              stageName: "validate", durationMs: 1, now: unixNow())
        #expect(try b.claim(stageIndex: 3, stageName: "index", limit: 10, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()).map(\.context.id)
                == [job.context.id])
    }

    @Test func aMemoOnOneHostJoinsAPhotoDroppedOnAnotherWhichThenRunsItsPhotoStages() throws {
        let a = try host("a"), b = try host("b")
        var m = MemoJob(memo: "from a", type: "Memo")
        m.photo = "p.jpg"
        let out = try a.commitMemos([QueuedMemo(memo: m, photo: .inbox(name: "p.jpg"), key: "k", source: "a")], position: nil,
                                    file: "queue.jsonl", joinTimeoutSeconds: 60, now: unixNow())
        guard case .created(let id, .waiting) = out[0] else { Issue.record("\(out)"); return }
        #expect(try b.commitPhotos([photo("p.jpg", sha: "s2", on: "b")], now: unixNow()) == [.joined(job: id)])
        #expect(try a.claim(stageIndex: 0, stageName: "validate", limit: 10, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()).isEmpty)
        let claimed = try b.claim(stageIndex: 0, stageName: "validate", limit: 10, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow())
        #expect(claimed.map(\.context.id) == [id])
        #expect(claimed.first?.context.photoPath == "/b/inbox/p.jpg")
        #expect(claimed.first?.context.memo.memo == "from a")
    }

    @Test func anExpiredLeaseIsReclaimedAndTheLateOutcomeOfItsOldHostIsNotRecorded() throws {
        let a = try host("a", lease: 0.2), b = try host("b", lease: 0.2)
        _ = try a.commitMemos([QueuedMemo(memo: MemoJob(memo: "x", type: "Memo"), photo: .none, key: "m", source: "a")], position: nil,
                              file: "queue.jsonl", joinTimeoutSeconds: 60, now: unixNow())
        let job = try #require(try a.claim(stageIndex: 0, stageName: "validate", limit: 1, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()).first)
        // Renewed, it holds; not renewed, it expires and any host takes it back.
        try a.renewLeases([job.context.id], now: unixNow() + 0.15)
        #expect(try b.reclaimExpiredLeases(maxAttempts: 5, now: unixNow() + 0.25).resumed == 0)
        let later = unixNow() + 1
        #expect(try b.reclaimExpiredLeases(maxAttempts: 5, now: later).resumed == 1)
        let again = try #require(try b.claim(stageIndex: 0, stageName: "validate", limit: 1, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: later).first)
        #expect(again.context.attempt == 2)
        let late = try a.recordSteps([(job, JobStep(next: .advance(toStage: 1), event: "done", message: nil, result: nil))],
                                     stageName: "validate", durationMs: 1, now: unixNow())
        #expect(late.map(\.kind) == [.abandoned])
        let events = try b.history(job.context.id).map(\.event)
        #expect(events == ["accepted", "started", "resumed", "started"])
        // A restarted host resumes only what it was running itself.
        #expect(try a.resumeInterrupted(maxAttempts: 5, crashed: [:], started: nil, signal: "", now: unixNow()).resumed == 0)
        #expect(try b.resumeInterrupted(maxAttempts: 5, crashed: [:], started: nil, signal: "", now: unixNow()).resumed == 1)
    }

    /// The same host claims the job again after its own lease ran out (stopped past the
    /// lease: SIGSTOP, a database outage): the first run's late outcome is dropped and the
    /// second run's recorded. The check was host and stage only, so the first was recorded
    /// and the live run's dropped (attack review on several hosts).
    @Test func aRunWhoseLeaseRanOutIsDroppedWhenItsOwnHostClaimedTheJobAgain() throws {
        let a = try host("a", lease: 0.2)
        _ = try a.commitMemos([QueuedMemo(memo: MemoJob(memo: "x", type: "Memo"), photo: .none, key: "m", source: "a")], position: nil,
                              file: "queue.jsonl", joinTimeoutSeconds: 60, now: unixNow())
        let first = try #require(try a.claim(stageIndex: 0, stageName: "validate", limit: 1, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()).first)
        let later = unixNow() + 1
        #expect(try a.reclaimExpiredLeases(maxAttempts: 5, now: later).resumed == 1)
        let second = try #require(try a.claim(stageIndex: 0, stageName: "validate", limit: 1, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: later).first)
        #expect(second.context.attempt == 2)
        let step = JobStep(next: .advance(toStage: 1), event: "done", message: nil, result: nil)
        #expect(try a.recordSteps([(first, step)], stageName: "validate", durationMs: 1, now: unixNow()).map(\.kind) == [.abandoned])
        #expect(try a.recordSteps([(second, step)], stageName: "validate", durationMs: 1, now: unixNow()).map(\.kind) != [.abandoned])
        let history = try a.history(first.context.id)
        #expect(history.filter { $0.event == "done" }.map(\.attempt) == [2])
    }

    @Test func queuePositionsAndTakenInboxFilesArePerHost() throws {
        let a = try host("a"), b = try host("b")
        let pos = QueuePosition(inode: 7, offset: 10, line: 1)
        _ = try a.commitMemos([], position: pos, file: "queue.jsonl", joinTimeoutSeconds: 60, now: unixNow())
        #expect(try a.queuePosition(file: "queue.jsonl") == pos)
        #expect(try b.queuePosition(file: "queue.jsonl") == .start)
        _ = try a.commitPhotos([photo("p.jpg", sha: "s3", on: "a")], now: unixNow())
        #expect(try a.isTaken(name: "p.jpg", identity: "1:p.jpg"))
        #expect(try !b.isTaken(name: "p.jpg", identity: "1:p.jpg"))
        // The same bytes on the other host are a duplicate of the first job: one record.
        guard case .duplicate = try b.commitPhotos([photo("q.jpg", sha: "s3", on: "b")], now: unixNow())[0] else {
            Issue.record("not a duplicate"); return
        }
    }

    @Test func claimsFromSeveralHostsAtOnceNeverTakeAJobTwice() throws {
        let setup = try host("setup")
        let memos = (0..<300).map { QueuedMemo(memo: MemoJob(memo: "\($0)", type: "Memo"), photo: .none, key: "k\($0)", source: "t") }
        _ = try setup.commitMemos(memos, position: nil, file: "queue.jsonl", joinTimeoutSeconds: 60, now: unixNow())
        let hosts = try (0..<3).map { try host("h\($0)") }
        let taken = LockedValue<[Int64]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { i in
            while let batch = try? hosts[i].claim(stageIndex: 0, stageName: "validate", limit: 16, crashSuspects: false, photoLocalEnd: photoLocalEnd, now: unixNow()),
                  !batch.isEmpty {
                taken.withLock { $0 += batch.map(\.context.id) }
            }
        }
        let ids = taken.withLock { $0 }
        #expect(ids.count == 300)
        #expect(Set(ids).count == 300)
    }
}
