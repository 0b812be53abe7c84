import Foundation
import Testing
@testable import Journal
import PhotomemoCore

@Suite struct JournalTests {
    let dir: String
    let journal: Journal

    init() throws {
        dir = NSTemporaryDirectory() + "pm-journal-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        journal = try Journal(path: dir + "/j.sqlite")
    }

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

    @Test func queuePositionIsCommittedWithTheJobs() throws {
        #expect(try journal.queuePosition() == .start)
        let pos = QueuePosition(inode: 42, offset: 100, line: 2)
        let out = try journal.commitMemos([memo("a"), memo("b")], position: pos, joinTimeoutSeconds: 60)
        #expect(out.count == 2)
        #expect(try journal.queuePosition() == pos)
        #expect(try journal.counts()[.queued] == 2)
        // Reopening sees the same (it is on disk, not in memory).
        let again = try Journal(path: dir + "/j.sqlite")
        #expect(try again.queuePosition() == pos)
    }

    @Test func sameKeyTwiceIsOneJobAndADuplicateMarker() throws {
        let first = try journal.commitMemos([memo("k")], position: nil, joinTimeoutSeconds: 60)
        let second = try journal.commitMemos([memo("k")], position: nil, joinTimeoutSeconds: 60)
        guard case .created(let id, _) = first[0], case .duplicate(let dup, let of) = second[0] else {
            Issue.record("\(first) \(second)"); return
        }
        #expect(of == id)
        #expect(try summary(dup).state == .done)
        #expect(try summary(dup).duplicateOf == id)
    }

    @Test func sameBytesTwiceIsOneJob() throws {
        let out = try journal.commitPhotos([photo("a.jpg", sha: "s1"), photo("b.jpg", sha: "s1")])
        guard case .created(let id, .queued) = out[0], case .duplicate(_, let of) = out[1] else { Issue.record("\(out)"); return }
        #expect(of == id)
        // The same file seen again (a rescan) is not taken twice.
        #expect(try journal.commitPhotos([photo("a.jpg", sha: "s1")]) == [.alreadyTaken])
        #expect(try journal.isTaken(name: "a.jpg", identity: "1:a.jpg:s1"))
    }

    @Test func memoBeforePhotoWaitsThenJoins() throws {
        let out = try journal.commitMemos([memo("m", photo: .inbox(name: "p.jpg"), type: "Houses")], position: nil, joinTimeoutSeconds: 60)
        guard case .created(let id, .waiting) = out[0] else { Issue.record("\(out)"); return }
        #expect(try journal.claim(stageIndex: 0, stageName: "s", limit: 10).isEmpty)
        #expect(try journal.commitPhotos([photo("p.jpg", sha: "s2")]) == [.joined(job: id)])
        let claimed = try journal.claim(stageIndex: 0, stageName: "s", limit: 10)
        #expect(claimed.map(\.context.id) == [id])
        #expect(claimed[0].context.memo.type == "Houses")
        #expect(claimed[0].context.photoPath == dir + "/inbox/p.jpg")
        #expect(try journal.counts()[.running] == 1)
    }

    @Test func photoBeforeMemoBecomesOneJobWithTheMemosType() throws {
        let p = try journal.commitPhotos([photo("p.jpg", sha: "s3")])
        guard case .created(let id, _) = p[0] else { Issue.record("\(p)"); return }
        #expect(try journal.commitMemos([memo("m", photo: .inbox(name: "p.jpg"), type: "Task")], position: nil,
                                        joinTimeoutSeconds: 60) == [.joined(job: id)])
        #expect(try summary(id).memo.type == "Task")
        #expect(try journal.counts()[.queued] == 1)
    }

    @Test func memoForARejectedPhotoFailsAtOnceWithThePhotosReason() throws {
        let id = try journal.recordRejectedEntry(name: "fifo.jpg", identity: "x", owner: nil, reason: "a FIFO is not a photo", quarantinePath: "/q")
        #expect(try summary(id).state == .failed)
        let out = try journal.commitMemos([memo("m", photo: .inbox(name: "fifo.jpg"))], position: nil, joinTimeoutSeconds: 60)
        guard case .failed(_, let reason) = out[0] else { Issue.record("\(out)"); return }
        #expect(reason == "photo fifo.jpg was rejected: a FIFO is not a photo")
    }

    @Test func joinTimeoutFailsTheWaitingMemo() throws {
        let now = unixNow()
        _ = try journal.commitMemos([memo("m", photo: .inbox(name: "never.jpg"))], position: nil, joinTimeoutSeconds: 10, now: now)
        #expect(try journal.expireJoins(now: now + 5).isEmpty)
        #expect(try journal.nextWakeAt() == now + 10)
        let expired = try journal.expireJoins(now: now + 11)
        #expect(expired.count == 1)
        #expect(try summary(expired[0]).error == "photo never.jpg did not arrive within the join timeout")
    }

    @Test func outcomesAdvanceFinishRetryAndFail() throws {
        let policy = RetryPolicy.exponentialJitter(maxAttempts: 2, baseMs: 1, maxMs: 2)
        _ = try journal.commitPhotos([photo("a.jpg", sha: "x1")])
        var job = try journal.claim(stageIndex: 0, stageName: "one", limit: 1)[0]
        #expect(try record(job, stageName: "one", outcome: .continue(result: ["w": 3]), durationMs: 1,
                                          stageCount: 2, retry: policy).kind == .advanced(toStage: 1))
        #expect(try journal.claim(stageIndex: 0, stageName: "one", limit: 1).isEmpty)
        job = try journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(job.context.results["one"] == ["w": 3])
        #expect(job.context.attempt == 1)
        // A dependency outage does not spend the attempt.
        guard case .waitingForDependency = try record(job, stageName: "two",
            outcome: .unavailable(dependency: "store", reason: "refused"), durationMs: 1, stageCount: 2, retry: policy).kind
        else { Issue.record("not waiting"); return }
        Thread.sleep(forTimeInterval: 0.01)
        job = try journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(job.context.attempt == 1)
        guard case .retrying = try record(job, stageName: "two", outcome: .retry(reason: "flaky"),
                                                         durationMs: 1, stageCount: 2, retry: policy).kind
        else { Issue.record("not retrying"); return }
        Thread.sleep(forTimeInterval: 0.01)
        job = try journal.claim(stageIndex: 1, stageName: "two", limit: 1)[0]
        #expect(job.context.attempt == 2)
        let t = try record(job, stageName: "two", outcome: .retry(reason: "flaky"), durationMs: 1,
                                          stageCount: 2, retry: policy)
        #expect(t.kind == .failed(reason: "flaky (gave up after 2 attempts)"))
        #expect(try summary(job.context.id).attempts == 2)  // as many as the history shows
        #expect(t.quarantinePhoto == dir + "/inbox/a.jpg")
        #expect(try journal.pendingQuarantines().map(\.job) == [job.context.id])
        try journal.markQuarantined(job: job.context.id, at: "/q/a.jpg")
        #expect(try journal.pendingQuarantines().isEmpty)
        // The whole history is kept.
        let events = try journal.history(job.context.id).map(\.event)
        #expect(events == ["accepted", "started", "done", "started", "unavailable", "started", "retry", "started", "failed", "quarantined"])
    }

    @Test func aBatchsOutcomesAreEachTheirJobsInOneRecording() throws {
        _ = try journal.commitMemos([memo("b1"), memo("b2"), memo("b3")], position: nil, joinTimeoutSeconds: 60)
        let jobs = try journal.claim(stageIndex: 0, stageName: "index", limit: 10)
        #expect(jobs.count == 3)
        let t = try journal.recordSteps(JobStateMachine.steps([(jobs[0], .continue(result: ["r": 1])), (jobs[1], .fail(reason: "no such record")),
                                                               (jobs[2], .retry(reason: "busy"))], stageCount: 2, retry: .default),
                                        stageName: "index", durationMs: 4)
        #expect(t.map(\.kind) == [.advanced(toStage: 1), .failed(reason: "no such record"), t[2].kind])
        guard case .retrying = t[2].kind else { Issue.record("\(t[2])"); return }
        #expect(try summary(jobs[1].context.id).state == .failed)
        // A job done in a batch says so in its history.
        let done = try journal.history(jobs[0].context.id).first { $0.event == "done" }
        #expect(done?.message == "in a batch of 3")
        #expect(done?.durationMs == 4)
    }

    @Test func permanentFailureSkipsRetriesAndMemoOnlyJobsFinish() throws {
        _ = try journal.commitMemos([memo("n")], position: nil, joinTimeoutSeconds: 60)
        let job = try journal.claim(stageIndex: 0, stageName: "one", limit: 1)[0]
        #expect(job.context.photoPath == nil)
        let t = try record(job, stageName: "one", outcome: .fail(reason: "bad"), durationMs: 1,
                                          stageCount: 3, retry: .default)
        #expect(t == Transition(kind: .failed(reason: "bad"), quarantinePhoto: nil))
        #expect(try summary(job.context.id).attempts == 1)  // the run that failed, as its history says
    }

    @Test func interruptedJobsResumeAndCrashLoopersFail() throws {
        _ = try journal.commitMemos([memo("r")], position: nil, joinTimeoutSeconds: 60)
        for round in 1...3 {
            let claimed = try journal.claim(stageIndex: 0, stageName: "one", limit: 1)
            #expect(claimed.count == 1)
            #expect(claimed.first?.context.attempt == round)
            let r = try journal.resumeInterrupted(maxAttempts: 3)
            #expect((r.resumed, r.failed) == (round < 3 ? (1, 0) : (0, 1)))
        }
        #expect(try journal.counts()[.failed] == 1)
    }

    @Test func twoFatalSignalsAtOneStageFailTheJobAndSuspectsAreClaimedApart() throws {
        _ = try journal.commitMemos([memo("poison"), memo("bystander")], position: nil, joinTimeoutSeconds: 60)
        let both = try journal.claim(stageIndex: 0, stageName: "one", limit: 2).map(\.context.id)
        #expect(both.count == 2)
        // The first crash names both running jobs: each is resumed once, as a suspect.
        var r = try journal.resumeInterrupted(maxAttempts: 6, crashed: [both[0]: "one", both[1]: "one"], signal: "SIGSEGV")
        #expect(r.resumed == 2 && r.crashLooped.isEmpty)
        #expect(try journal.crashSuspectReady(stageIndexes: [0]))
        #expect(try journal.claim(stageIndex: 0, stageName: "one", limit: 2).isEmpty)  // suspects run alone
        let alone = try journal.claim(stageIndex: 0, stageName: "one", limit: 1, crashSuspects: true)
        #expect(alone.map(\.context.id) == [both[0]])
        // The second crash while it ran alone fails it, with the reason; the bystander waits its turn.
        r = try journal.resumeInterrupted(maxAttempts: 6, crashed: [both[0]: "one"], signal: "SIGSEGV")
        #expect(r.crashLooped == [both[0]])
        let failed = try summary(both[0])
        #expect(failed.state == .failed)
        #expect(failed.error == "the daemon died twice while stage one ran on this job (last: SIGSEGV); not retried (photomemo retry \(both[0]) runs it again)")
        #expect(try summary(both[1]).state == .queued)
        // A crash at another stage, or a kill that left no crash log, does not count at this one.
        let next = try journal.claim(stageIndex: 0, stageName: "one", limit: 1, crashSuspects: true)
        #expect(next.map(\.context.id) == [both[1]])
        r = try journal.resumeInterrupted(maxAttempts: 6, crashed: [both[1]: "two"])
        #expect(r.resumed == 1 && r.crashLooped.isEmpty)
        #expect(try summary(both[1]).state == .queued)
    }

    @Test func claimRespectsTheLimitAndOrder() throws {
        _ = try journal.commitMemos((0..<10).map { memo("c\($0)") }, position: nil, joinTimeoutSeconds: 60)
        let first = try journal.claim(stageIndex: 0, stageName: "s", limit: 4)
        #expect(first.map(\.context.id) == [1, 2, 3, 4])
        #expect(try journal.claim(stageIndex: 0, stageName: "s", limit: 100).count == 6)
        #expect(try journal.counts()[.running] == 10)
    }
}
