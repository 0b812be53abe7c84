import Foundation
import Testing
@testable import Journal
import StageKit
import Postgres
import SQLite
import TestSupport

/// Where a test's journal lives: every test runs on both engines.
enum Engine: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A fresh journal in a folder of its own, removed with the fixture (the suites ran
/// hundreds of them a day into /tmp).
final class JournalFixture {
    let engine: Engine
    let dir: String
    let url: String?
    let journal: Journal

    init(_ engine: Engine, test: String = #function) throws {
        self.engine = engine
        dir = NSTemporaryDirectory() + "pm-journal-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        url = engine == .postgres ? try PostgresServer.freshDatabase(test) : nil
        journal = try Self.open(engine, dir: dir, url: url)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    static func open(_ engine: Engine, dir: String, url: String?) throws -> Journal {
        switch engine {
        case .sqlite: try Journal(path: dir + "/j.sqlite")
        case .postgres: try Journal(connection: PostgresDatabase(url: url!), path: url!)
        }
    }

    /// The same journal opened again (it is on disk or on the server, not in memory).
    func reopen() throws -> Journal { try Self.open(engine, dir: dir, url: url) }

    func memo(_ key: String, photo: QueuedMemo.Photo = .none, type: String = "Memo") -> QueuedMemo {
        var m = MemoJob(memo: "m-\(key)", type: type)
        if case .inbox(let n) = photo { m.photo = n }
        return QueuedMemo(memo: m, photo: photo, key: key, source: "test")
    }

    func photo(_ name: String, sha: String) -> TakenPhoto {
        TakenPhoto(name: name, path: dir + "/inbox/" + name, identity: "1:\(name):\(sha)", sha256: sha)
    }

    func summary(_ id: Int64) throws -> JobSummary { try #require(try journal.job(id)) }

    /// One job's outcome, recorded as a run of one.
    func record(_ job: ClaimedJob, stageName: String, outcome: StageOutcome, durationMs: Double, stageCount: Int,
                retry: RetryPolicy) throws -> Transition {
        try journal.recordSteps(JobStateMachine.steps([(job, outcome)], stageCount: stageCount, retry: retry),
                                stageName: stageName, durationMs: durationMs)[0]
    }
}

@Suite struct JournalTests {
    /// SQLite: a claim commits without an fsync of its own (`synchronous=NORMAL`, which
    /// still syncs checkpoints), and every other write is `FULL` again; the claim is there
    /// for the next reader, and the seal intake recorded comes with it.
    @Test func aClaimSkipsItsOwnFsyncAndEveryOtherWriteIsDurable() throws {
        let dir = NSTemporaryDirectory() + "pm-journal-sync-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = try Database(path: dir + "/j.sqlite")
        try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")
        let j = try Journal(connection: db, path: dir + "/j.sqlite")
        let seal = "1:2:3:4:5"
        _ = try j.commitPhotos([TakenPhoto(name: "p.jpg", path: dir + "/p.jpg", identity: "1:2:3:4", seal: seal, sha256: "s1")],
                               now: unixNow())
        let claimed = try j.claim(stageIndex: 0, stageName: "validate", limit: 10)
        #expect(claimed.map(\.context.photoSeal) == [seal])
        #expect(try db.queryOne("PRAGMA synchronous", [])?.int(0) == 1, "NORMAL for the claim")
        let other = try Journal(path: dir + "/j.sqlite")
        #expect(try other.job(claimed[0].context.id)?.state == .running)
        _ = try j.commitPhotos([TakenPhoto(name: "q.jpg", path: dir + "/q.jpg", identity: "1:2:3:5", sha256: "s2")], now: unixNow())
        #expect(try db.queryOne("PRAGMA synchronous", [])?.int(0) == 2, "FULL for intake")
    }

    @Test(arguments: Engine.allCases) func queuePositionIsCommittedWithTheJobs(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        #expect(try f.journal.queuePosition() == .start)
        let pos = QueuePosition(inode: 42, offset: 100, line: 2)
        let out = try f.journal.commitMemos([f.memo("a"), f.memo("b")], position: pos, joinTimeoutSeconds: 60)
        #expect(out.count == 2)
        #expect(try f.journal.queuePosition() == pos)
        #expect(try f.journal.counts()[.queued] == 2)
        // Reopening sees the same (it is on disk, not in memory).
        let again = try f.reopen()
        #expect(try again.queuePosition() == pos)
    }

    @Test(arguments: Engine.allCases) func sameKeyTwiceIsOneJobAndADuplicateMarker(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let first = try f.journal.commitMemos([f.memo("k")], position: nil, joinTimeoutSeconds: 60)
        let second = try f.journal.commitMemos([f.memo("k")], position: nil, joinTimeoutSeconds: 60)
        guard case .created(let id, _) = first[0], case .duplicate(let dup, let of) = second[0] else {
            Issue.record("\(first) \(second)"); return
        }
        #expect(of == id)
        #expect(try f.summary(dup).state == .done)
        #expect(try f.summary(dup).duplicateOf == id)
    }

    @Test(arguments: Engine.allCases) func sameBytesTwiceIsOneJob(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let out = try f.journal.commitPhotos([f.photo("a.jpg", sha: "s1"), f.photo("b.jpg", sha: "s1")])
        guard case .created(let id, .queued) = out[0], case .duplicate(_, let of) = out[1] else { Issue.record("\(out)"); return }
        #expect(of == id)
        // The same file seen again (a rescan) is not taken twice.
        #expect(try f.journal.commitPhotos([f.photo("a.jpg", sha: "s1")]) == [.alreadyTaken])
        #expect(try f.journal.isTaken(name: "a.jpg", identity: "1:a.jpg:s1"))
    }

    /// A memo line naming a duplicate whose copy has left the inbox (forgotten by the
    /// ledger) updates the record of its bytes, as it did while the copy was there (an
    /// attacker's finding: it waited for the photo up to the join timeout).
    @Test(arguments: Engine.allCases) func aMemoForADuplicateThatLeftTheInboxUpdatesTheRecordOfItsBytes(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let out = try f.journal.commitPhotos([f.photo("a.jpg", sha: "s1"), f.photo("b.jpg", sha: "s1")])
        guard case .created(let first, .queued) = out[0], case .duplicate(let copy, _) = out[1] else { Issue.record("\(out)"); return }
        try f.journal.write { db in
            try db.run("UPDATE jobs SET state = 'done', finished = ?, ready_at = NULL WHERE id IN (?, ?)", [.double(unixNow()), .int(first), .int(copy)])
        }
        try f.journal.forgetTaken(name: "b.jpg")  // the copy left the inbox
        var m = MemoJob(memo: "memo for b", type: "Memo")
        m.photo = "b.jpg"
        let memo = try f.journal.commitMemos([QueuedMemo(memo: m, photo: .inbox(name: "b.jpg"), key: "k", source: "queue.jsonl")], position: nil,
                                             joinTimeoutSeconds: 600)
        guard case .created(let id, .queued) = memo[0] else { Issue.record("the memo waits: \(memo)"); return }
        #expect(try f.journal.history(id).contains { $0.event == "updates" && $0.message == "job \(copy)" })
        #expect(try f.journal.read { db in try db.queryOne("SELECT photo_sha256 FROM jobs WHERE id = ?", [.int(id)])?.string(0) } == "s1")
        // Once the record of those bytes is deleted, a memo for the copy waits for a photo (a
        // record of no assets would take the same bytes dropped again as its duplicate).
        try f.journal.write { db in try db.run("UPDATE jobs SET record_deleted = ? WHERE id IN (?, ?)", [.double(unixNow()), .int(first), .int(copy)]) }
        let late = try f.journal.commitMemos([QueuedMemo(memo: m, photo: .inbox(name: "b.jpg"), key: "k2", source: "queue.jsonl")], position: nil,
                                             joinTimeoutSeconds: 600)
        guard case .created(_, .waiting) = late[0] else { Issue.record("after the delete: \(late)"); return }
    }

    /// A `keep` inbox's path: the same bytes under a new identity (touched, or rewritten
    /// by a sync tool) are not taken again; other bytes are a job of their own that runs
    /// after the path's earlier job (whose record it updates). Without `keep`, the same
    /// bytes again are a duplicate, as before (the copy then leaves the inbox).
    @Test(arguments: Engine.allCases) func aKeptPathIsTakenAgainOnlyForOtherBytes(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        func kept(_ identity: String, _ sha: String) -> TakenPhoto {
            TakenPhoto(name: "DCIM/a.jpg", path: f.dir + "/inbox/DCIM/a.jpg", identity: identity, sha256: sha, keep: true)
        }
        guard case .created(let first, .queued) = try f.journal.commitPhotos([kept("1", "s1")])[0] else { Issue.record("not created"); return }
        #expect(try f.journal.commitPhotos([kept("2", "s1")]) == [.alreadyTaken])
        #expect(try f.journal.isTaken(name: "DCIM/a.jpg", identity: "2"), "the ledger knows the file by its new identity")
        guard case .created(let second, .queued) = try f.journal.commitPhotos([kept("3", "s2")])[0] else { Issue.record("not created"); return }
        #expect(try f.journal.claim(stageIndex: 0, stageName: "s", limit: 10).map(\.context.id) == [first], "the edit waits for the first job")
        #expect(try f.journal.history(second).contains { $0.event == "updates" && $0.message == "job \(first)" })
        #expect(try f.journal.takenFailure(name: "DCIM/a.jpg", identity: "3") == "")
        let plain = TakenPhoto(name: "b.jpg", path: f.dir + "/inbox/b.jpg", identity: "4", sha256: "s9")
        _ = try f.journal.commitPhotos([plain])
        // A plain inbox's file whose job has not finished is still that job's photo: touched
        // (a tool setting its time late), it is not a second job of the same bytes.
        #expect(try f.journal.commitPhotos([TakenPhoto(name: "b.jpg", path: plain.path, identity: "5", sha256: "s9")]) == [.alreadyTaken])
        #expect(try f.journal.isTaken(name: "b.jpg", identity: "5"))
        // The same bytes under another name are a duplicate, as before.
        guard case .duplicate = try f.journal.commitPhotos([TakenPhoto(name: "c.jpg", path: f.dir + "/inbox/c.jpg", identity: "6", sha256: "s9")])[0] else {
            Issue.record("not a duplicate"); return
        }
    }

    @Test(arguments: Engine.allCases) func memoBeforePhotoWaitsThenJoins(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let out = try f.journal.commitMemos([f.memo("m", photo: .inbox(name: "p.jpg"), type: "Houses")], position: nil, joinTimeoutSeconds: 60)
        guard case .created(let id, .waiting) = out[0] else { Issue.record("\(out)"); return }
        #expect(try f.journal.claim(stageIndex: 0, stageName: "s", limit: 10).isEmpty)
        #expect(try f.journal.commitPhotos([f.photo("p.jpg", sha: "s2")]) == [.joined(job: id)])
        let claimed = try f.journal.claim(stageIndex: 0, stageName: "s", limit: 10)
        #expect(claimed.map(\.context.id) == [id])
        #expect(claimed[0].context.memo.type == "Houses")
        #expect(claimed[0].context.photoPath == f.dir + "/inbox/p.jpg")
        #expect(try f.journal.counts()[.running] == 1)
    }

    @Test(arguments: Engine.allCases) func photoBeforeMemoBecomesOneJobWithTheMemosType(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let p = try f.journal.commitPhotos([f.photo("p.jpg", sha: "s3")])
        guard case .created(let id, _) = p[0] else { Issue.record("\(p)"); return }
        #expect(try f.journal.commitMemos([f.memo("m", photo: .inbox(name: "p.jpg"), type: "Task")], position: nil,
                                        joinTimeoutSeconds: 60) == [.joined(job: id)])
        #expect(try f.summary(id).memo.type == "Task")
        #expect(try f.journal.counts()[.queued] == 1)
    }

    @Test(arguments: Engine.allCases) func memoForARejectedPhotoFailsAtOnceWithThePhotosReason(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let id = try f.journal.recordRejectedEntry(name: "fifo.jpg", identity: "x", owner: nil, reason: "a FIFO is not a photo", quarantinePath: "/q")
        #expect(try f.summary(id).state == .failed)
        let out = try f.journal.commitMemos([f.memo("m", photo: .inbox(name: "fifo.jpg"))], position: nil, joinTimeoutSeconds: 60)
        guard case .failed(_, let reason) = out[0] else { Issue.record("\(out)"); return }
        #expect(reason == "photo fifo.jpg was rejected: a FIFO is not a photo")
    }

    @Test(arguments: Engine.allCases) func joinTimeoutFailsTheWaitingMemo(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let now = unixNow()
        _ = try f.journal.commitMemos([f.memo("m", photo: .inbox(name: "never.jpg"))], position: nil, joinTimeoutSeconds: 10, now: now)
        #expect(try f.journal.expireJoins(now: now + 5).isEmpty)
        #expect(try f.journal.nextWakeAt() == now + 10)
        let expired = try f.journal.expireJoins(now: now + 11)
        #expect(expired.count == 1)
        #expect(try f.summary(expired[0]).error == "photo never.jpg did not arrive within the join timeout")
    }

    /// A stage's outcome written twice (a retried write whose first try committed, the
    /// job meanwhile claimed for its next stage) is recorded once: the second finds the
    /// job past that stage and leaves it running there.
    @Test(arguments: Engine.allCases) func anOutcomeForAStageTheJobHasLeftIsNotRecorded(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let policy = RetryPolicy.exponentialJitter(maxAttempts: 2, baseMs: 1, maxMs: 2)
        _ = try f.journal.commitPhotos([f.photo("a.jpg", sha: "x1")])
        let first = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1)[0]
        #expect(try f.record(first, stageName: "one", outcome: .continue(), durationMs: 1, stageCount: 3, retry: policy).kind
                == .advanced(toStage: 1))
        let second = try f.journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(try f.record(first, stageName: "one", outcome: .continue(), durationMs: 1, stageCount: 3, retry: policy).kind
                == .abandoned)
        let job = try f.summary(second.context.id)
        #expect(job.state == .running && job.stage == "two", "\(job)")
    }

    @Test(arguments: Engine.allCases) func outcomesAdvanceFinishRetryAndFail(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let policy = RetryPolicy.exponentialJitter(maxAttempts: 2, baseMs: 1, maxMs: 2)
        _ = try f.journal.commitPhotos([f.photo("a.jpg", sha: "x1")])
        var job = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1)[0]
        #expect(try f.record(job, stageName: "one", outcome: .continue(result: ["w": 3]), durationMs: 1,
                                          stageCount: 2, retry: policy).kind == .advanced(toStage: 1))
        #expect(try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1).isEmpty)
        job = try f.journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(job.context.results["one"] == ["w": 3])
        #expect(job.context.attempt == 1)
        // A dependency outage does not spend the attempt.
        guard case .waitingForDependency = try f.record(job, stageName: "two",
            outcome: .unavailable(dependency: "store", .dependency, "refused"), durationMs: 1, stageCount: 2, retry: policy).kind
        else { Issue.record("not waiting"); return }
        Thread.sleep(forTimeInterval: 0.01)
        job = try f.journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(job.context.attempt == 1)
        guard case .retrying = try f.record(job, stageName: "two", outcome: .retry(.io, "flaky"),
                                                         durationMs: 1, stageCount: 2, retry: policy).kind
        else { Issue.record("not retrying"); return }
        Thread.sleep(forTimeInterval: 0.01)
        job = try f.journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(job.context.attempt == 2)
        let t = try f.record(job, stageName: "two", outcome: .retry(.io, "flaky"), durationMs: 1,
                                          stageCount: 2, retry: policy)
        #expect(t.kind == .failed(PhotomemoError(.io, "flaky (gave up after 2 attempts)")))
        #expect(try f.summary(job.context.id).attempts == 2)  // as many as the history shows
        #expect(t.quarantinePhoto == f.dir + "/inbox/a.jpg")
        #expect(try f.journal.pendingQuarantines().map(\.job) == [job.context.id])
        try f.journal.markQuarantined(job: job.context.id, at: "/q/a.jpg")
        #expect(try f.journal.pendingQuarantines().isEmpty)
        // The whole history is kept.
        let events = try f.journal.history(job.context.id).map(\.event)
        #expect(events == ["accepted", "started", "done", "started", "unavailable", "started", "retry", "started", "failed", "quarantined"])
    }

    @Test(arguments: Engine.allCases) func aBatchsOutcomesAreEachTheirJobsInOneRecording(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos([f.memo("b1"), f.memo("b2"), f.memo("b3")], position: nil, joinTimeoutSeconds: 60)
        let jobs = try f.journal.claim(stageIndex: 0, stageName: "index", limit: 10)
        #expect(jobs.count == 3)
        let t = try f.journal.recordSteps(JobStateMachine.steps([(jobs[0], .continue(result: ["r": 1])), (jobs[1], .fail(.notFound, "no such record")),
                                                               (jobs[2], .retry(.io, "busy"))], stageCount: 2, retry: .default),
                                        stageName: "index", durationMs: 4)
        #expect(t.map(\.kind) == [.advanced(toStage: 1), .failed(PhotomemoError(.notFound, "no such record")), t[2].kind])
        guard case .retrying = t[2].kind else { Issue.record("\(t[2])"); return }
        #expect(try f.summary(jobs[1].context.id).state == .failed)
        // A job done in a batch says so in its history.
        let done = try f.journal.history(jobs[0].context.id).first { $0.event == "done" }
        #expect(done?.message == "in a batch of 3")
        #expect(done?.durationMs == 4)
    }

    /// Every kind of step in one batch, with text a PostgreSQL array literal must escape:
    /// on PostgreSQL the batch is one statement per kind over arrays (`RowSource`).
    @Test(arguments: Engine.allCases) func aMixedBatchKeepsEachJobsTextExactlyAndItsEventsInOrder(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let hostile = "a \"quoted\" \\back\\slash, {braces}, NULL, é\n2nd line"
        _ = try f.journal.commitMemos((1...6).map { f.memo("m\($0)") }, position: nil, joinTimeoutSeconds: 60)
        let jobs = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 10)
        #expect(jobs.count == 6)
        try f.journal.cancel(job: jobs[5].context.id)  // moved on while the stage ran
        let t = try f.journal.recordSteps(JobStateMachine.steps([
            (jobs[0], .continue(result: ["note": .string(hostile)])),
            (jobs[1], .fail(.badImage, hostile)),
            (jobs[2], .retry(.noSpace, hostile)),
            (jobs[3], .unavailable(dependency: "store", .dependency, hostile)),
            (jobs[4], .continue(result: ["n": 1])),
            (jobs[5], .continue(result: ["n": 2])),
        ], stageCount: 2, retry: .default), stageName: "one", durationMs: 2)
        #expect(t[0].kind == .advanced(toStage: 1))
        #expect(t[1].kind == .failed(PhotomemoError(.badImage, hostile)))
        #expect(t[5].kind == .abandoned)
        #expect(try f.summary(jobs[0].context.id).results["one"]?["note"]?.stringValue == hostile)
        #expect(try f.summary(jobs[1].context.id).error == hostile)
        #expect(try f.summary(jobs[2].context.id).error == hostile)
        #expect(try f.summary(jobs[3].context.id).error == "store unavailable: \(hostile)")
        // Each error keeps its code beside its text; a job that went on has neither.
        #expect(try [0, 1, 2, 3].map { try f.summary(jobs[$0].context.id).errorCode } == [nil, "bad_image", "no_space", "dependency"])
        #expect(try f.summary(jobs[3].context.id).state == .waiting)
        #expect(try f.summary(jobs[5].context.id).state == .cancelled)
        #expect(try f.journal.history(jobs[1].context.id).map(\.event) == ["accepted", "started", "failed"])
        #expect(try f.journal.history(jobs[1].context.id).last?.message == hostile)
        // The last stage: done, then finished, in that order.
        let last = try f.journal.claim(stageIndex: 1, stageName: "two", limit: 10)
        #expect(Set(last.map(\.context.id)) == [jobs[0].context.id, jobs[4].context.id])
        _ = try f.journal.recordSteps(JobStateMachine.steps(last.map { ($0, .continue()) }, stageCount: 2, retry: .default),
                                      stageName: "two", durationMs: 1)
        #expect(try f.summary(jobs[4].context.id).state == .done)
        #expect(try f.summary(jobs[4].context.id).results["one"] == ["n": 1])
        #expect(try f.journal.history(jobs[4].context.id).map(\.event) == ["accepted", "started", "done", "started", "done", "finished"])
    }

    @Test(arguments: Engine.allCases) func permanentFailureSkipsRetriesAndMemoOnlyJobsFinish(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos([f.memo("n")], position: nil, joinTimeoutSeconds: 60)
        let job = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1)[0]
        #expect(job.context.photoPath == nil)
        let t = try f.record(job, stageName: "one", outcome: .fail(.badInput, "bad"), durationMs: 1,
                                          stageCount: 3, retry: .default)
        #expect(t == Transition(kind: .failed(PhotomemoError(.badInput, "bad")), quarantinePhoto: nil))
        #expect(try f.summary(job.context.id).attempts == 1)  // the run that failed, as its history says
    }

    @Test(arguments: Engine.allCases) func interruptedJobsResumeAndCrashLoopersFail(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos([f.memo("r")], position: nil, joinTimeoutSeconds: 60)
        for round in 1...3 {
            let claimed = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1)
            #expect(claimed.count == 1)
            #expect(claimed.first?.context.attempt == round)
            let r = try f.journal.resumeInterrupted(maxAttempts: 3)
            #expect((r.resumed, r.failed) == (round < 3 ? (1, 0) : (0, 1)))
        }
        #expect(try f.journal.counts()[.failed] == 1)
    }

    /// A job claimed but never started (held ahead when the daemon was killed) resumes with
    /// no attempt counted, however often that happens; one that started at its attempt is
    /// charged, and a mark of an earlier attempt does not count as this one's.
    @Test(arguments: Engine.allCases) func claimedJobsThatNeverStartedAreNotCharged(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos([f.memo("ran"), f.memo("held")], position: nil, joinTimeoutSeconds: 60)
        for _ in 1...3 {
            let claimed = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 2)
            #expect(claimed.count == 2)
            let ran = try #require(claimed.first { $0.context.key == "ran" })
            // The held job's stale mark (an attempt it never reached) is no start either.
            let r = try f.journal.resumeInterrupted(maxAttempts: 3, started: [ran.context.id: ran.context.attempt, 2: 7])
            #expect(r.resumed + r.failed == 2)
        }
        #expect(try f.summary(1).state == .failed)  // three starts, three interruptions: out of attempts
        #expect(try f.summary(2).state == .queued)
        #expect(try f.summary(2).attempts == 0)
        #expect(try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1).first?.context.attempt == 1)
    }

    @Test(arguments: Engine.allCases) func twoFatalSignalsAtOneStageFailTheJobAndSuspectsAreClaimedApart(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos([f.memo("poison"), f.memo("bystander")], position: nil, joinTimeoutSeconds: 60)
        let both = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 2).map(\.context.id)
        #expect(both.count == 2)
        // The first crash names both running jobs: each is resumed once, as a suspect.
        var r = try f.journal.resumeInterrupted(maxAttempts: 6, crashed: [both[0]: "one", both[1]: "one"], signal: "SIGSEGV")
        #expect(r.resumed == 2 && r.crashLooped.isEmpty)
        #expect(try f.journal.crashSuspectReady(stageIndexes: [0]))
        #expect(try f.journal.claim(stageIndex: 0, stageName: "one", limit: 2).isEmpty)  // suspects run alone
        let alone = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1, crashSuspects: true)
        #expect(alone.map(\.context.id) == [both[0]])
        // The second crash while it ran alone fails it, with the reason; the bystander waits its turn.
        r = try f.journal.resumeInterrupted(maxAttempts: 6, crashed: [both[0]: "one"], signal: "SIGSEGV")
        #expect(r.crashLooped == [both[0]])
        let failed = try f.summary(both[0])
        #expect(failed.state == .failed)
        #expect(failed.error == "the daemon died twice while stage one ran on this job (last: SIGSEGV); not retried (photomemo retry \(both[0]) runs it again)")
        #expect(try f.summary(both[1]).state == .queued)
        // A crash at another stage, or a kill that left no crash log, does not count at this one.
        let next = try f.journal.claim(stageIndex: 0, stageName: "one", limit: 1, crashSuspects: true)
        #expect(next.map(\.context.id) == [both[1]])
        r = try f.journal.resumeInterrupted(maxAttempts: 6, crashed: [both[1]: "two"])
        #expect(r.resumed == 1 && r.crashLooped.isEmpty)
        #expect(try f.summary(both[1]).state == .queued)
    }

    @Test(arguments: Engine.allCases) func claimRespectsTheLimitAndOrder(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        _ = try f.journal.commitMemos((0..<10).map { f.memo("c\($0)") }, position: nil, joinTimeoutSeconds: 60)
        let first = try f.journal.claim(stageIndex: 0, stageName: "s", limit: 4)
        #expect(first.map(\.context.id) == [1, 2, 3, 4])
        #expect(try f.journal.claim(stageIndex: 0, stageName: "s", limit: 100).count == 6)
        #expect(try f.journal.counts()[.running] == 10)
    }
}
