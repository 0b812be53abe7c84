import EventLoop
import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// What the scheduler owns besides outcomes: concurrency limits, batches, pausing, and a
/// shutdown that lets running stages finish.
/// Serialized: its stages hold libuv work-pool threads (4, shared by every loop in the process).
@Suite(.serialized) struct SchedulerLimitTests {
    @Test func aStageNeverRunsMoreJobsAtOnceThanItsConcurrency() throws {
        let probe = StageProbe()
        // Each run waits (up to 0.5 s) for a third one to join it: one the limit must not let in.
        // (libuv's work pool is shared by every loop in this process: with fewer free
        // threads fewer run at once, never more.)
        probe.gate.value = 3
        let rig = try SchedulerRig([("limited", TestStage(probe), 2)])
        let ids = try rig.enqueue(6)
        let run = try rig.run(timeout: 20) { ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        #expect(probe.runs.value.count == 6)
        #expect(probe.maxInFlight.value <= 2 && probe.maxInFlight.value >= 1)
    }

    /// A slot is free once its run returns: with outcome writes that take 300 ms, a stage of
    /// concurrency 1 starts its next job while the last one's outcome is still being
    /// written. The next stage never starts a job before its outcome here is written, nor
    /// runs more at once than its concurrency (jobs claimed early wait in a slot).
    @Test func aStagesNextJobStartsWhileTheLastOutcomeIsWritten() throws {
        let first = StageProbe(), second = StageProbe()
        second.gate.value = 2  // a run waits (up to 0.5 s) for a second one: the limit must keep it out
        var slow: FaultyDiskQueue?
        let rig = try SchedulerRig([("first", TestStage(first), 1), ("second", TestStage(second), 1)], queue: { j in
            let q = FaultyDiskQueue(j, delay: 0.3)
            slow = q
            return q
        })
        let ids = try rig.enqueue(3)
        let run = try rig.run(timeout: 20) { ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        let starts = first.runs.value.map(\.at).sorted()
        #expect(starts.count == 3)
        for (a, b) in zip(starts, starts.dropFirst()) { #expect(b - a < 0.25, "first's runs \(b - a) s apart: waited on a write") }
        #expect(second.maxInFlight.value == 1)
        let written = try #require(slow).written.value
        for id in ids {
            let began = try #require(second.attempts(of: id).first).at
            #expect(began >= (written["\(id):first"] ?? .infinity), "job \(id) began its second stage before its first was written")
        }
    }

    /// While outcome writes fail but claims still succeed, a run whose outcome waits to be
    /// written again keeps its slot: the stage stops claiming (it used to claim and run
    /// every queued job, their outcomes piling up in memory), and once writes succeed
    /// the rest run, each job once.
    @Test func whileOutcomeWritesFailAStageStopsClaiming() throws {
        let probe = StageProbe()
        var faulty: FaultyDiskQueue?
        let rig = try SchedulerRig([("only", TestStage(probe), 2)], queue: { j in
            let q = FaultyDiskQueue(j)
            q.failing.value = true
            faulty = q
            return q
        })
        let disk = try #require(faulty)
        let ids = try rig.enqueue(12)
        var ranAfter50 = -1, ranAfter150 = -1
        let run = try rig.run(timeout: 20, step: {
            let refused = disk.refused.value
            if ranAfter50 < 0, refused >= 50 { ranAfter50 = probe.runs.value.count }
            if ranAfter150 < 0, refused >= 150 {
                ranAfter150 = probe.runs.value.count
                disk.failing.value = false
            }
        }) { ranAfter150 >= 0 && ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        // Two slots, and runs that returned before their first write failed (a few, on a
        // busy machine), then no more: far from the 12 queued.
        #expect(ranAfter50 >= 2 && ranAfter50 <= 6, "\(ranAfter50) runs while outcomes could not be written")
        #expect(ranAfter150 == ranAfter50, "claims went on: \(ranAfter50) runs, then \(ranAfter150)")
        #expect(probe.runs.value.count == 12 && Set(probe.runs.value.map(\.job)).count == 12)
    }

    @Test func aBatchStageGetsBatchesUnderBacklogAndALoneJobAtOnce() throws {
        let probe = StageProbe()
        let rig = try SchedulerRig([("batch", TestBatchStage(probe), 1)])
        let ids = try rig.enqueue(20)  // all runnable before the first claim
        let run = try rig.run { ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        let sizes = probe.batches.value
        #expect(sizes.reduce(0, +) == 20)
        #expect(sizes.allSatisfy { $0 <= TestBatchStage.batchLimit })
        #expect(sizes.first == TestBatchStage.batchLimit)
        #expect(try rig.journal.history(ids[0]).contains { $0.event == "done" && $0.message == "in a batch of 8" })

        let lone = StageProbe()
        let rig2 = try SchedulerRig([("batch", TestBatchStage(lone), 1)])
        let id = try rig2.enqueue(1)[0]
        let run2 = try rig2.run { (try? rig2.state(id)) == .done }
        #expect(run2.met && run2.closed == 0)
        #expect(lone.batches.value == [1])
    }

    @Test func aPausedStageRunsNothingUntilResumedAndThePauseIsPersisted() throws {
        let first = StageProbe(), second = StageProbe()
        let rig = try SchedulerRig([("first", TestStage(first), 2), ("second", TestStage(second), 2)])
        let ids = try rig.enqueue(4)
        var phase = 0, ticksAfterFirst = 0, ranWhilePaused = -1
        var persisted: String?
        rig.scheduler.setPaused(true, stage: "second") { error in
            #expect(error == nil)
            phase = 1
            rig.scheduler.start()  // paused before anything is claimed
        }
        let run = try rig.run(start: false, step: {
            guard phase == 1, first.runs.value.count == 4,
                  ids.allSatisfy({ (try? rig.journal.job($0))?.results["first"] != nil }) else { return }
            // Every job is past the first stage; give the scheduler 20 more pumps' time to misbehave.
            ticksAfterFirst += 1
            guard ticksAfterFirst == 20 else { return }
            ranWhilePaused = second.runs.value.count
            persisted = try? rig.journal.setting("paused_stages")
            phase = 2
            rig.scheduler.setPaused(false, stage: "second") { error in #expect(error == nil) }
        }) { phase == 2 && ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        #expect(ranWhilePaused == 0)
        #expect(persisted == "second")
        #expect(second.runs.value.count == 4)
        #expect(try rig.journal.setting("paused_stages") == nil)
    }

    /// A job claimed for its next stage while its last outcome is still being written is
    /// parked until that write is reported; if the next stage is paused meanwhile, the job
    /// must not start there: it goes back to the queue unstarted (no attempt spent) and
    /// runs there once — neither lost nor twice — after the resume.
    @Test func aJobParkedForAStagePausedMeanwhileGoesBackToTheQueueUntilTheResume() throws {
        let first = StageProbe(), second = StageProbe()
        var slow: FaultyDiskQueue?
        let rig = try SchedulerRig([("first", TestStage(first), 1), ("second", TestStage(second), 1)], queue: { j in
            let q = FaultyDiskQueue(j, delay: 0.5)
            slow = q
            return q
        })
        let id = try rig.enqueue(1)[0]
        let written = try #require(slow).written
        var phase = 0, ticksReleased = 0, ranWhilePaused = -1
        let run = try rig.run(timeout: 20, step: {
            switch phase {
            case 0:
                // Claimed for "second" before the loop heard that "first" was written: parked.
                guard let j = try? rig.journal.job(id), written.value["\(id):first"] == nil else { return }
                // Queued (for "second", once "first" ran): its first outcome is committed, not
                // yet reported (the write's 0.5 s), and a pump now claims it. Left to the
                // scheduler's own, the one after the run could come before the commit and
                // none in the window: the job was never parked (1 run in 2 to 8 timed out in
                // phase 0).
                if j.state == .queued { rig.scheduler.pump(); return }
                guard j.state == .running, j.stage == "second" else { return }
                phase = 1
                rig.scheduler.setPaused(true, stage: "second") { error in
                    #expect(error == nil)
                    phase = 2
                }
            case 2:
                guard written.value["\(id):first"] != nil, (try? rig.state(id)) == .queued else { return }
                ticksReleased += 1  // 20 more pumps' time to misbehave
                guard ticksReleased == 20 else { return }
                ranWhilePaused = second.runs.value.count
                phase = 3
                rig.scheduler.setPaused(false, stage: "second") { error in #expect(error == nil) }
            default: break
            }
        }) { phase == 3 && (try? rig.state(id)) == .done }
        #expect(run.met && run.closed == 0, "phase \(phase)")
        #expect(ranWhilePaused == 0)
        #expect(second.runs.value.map(\.attempt) == [1])
        let history = try rig.journal.history(id).map { "\($0.event) \($0.stage ?? "-")" }
        #expect(history.filter { $0 == "released second" }.count == 1, "\(history)")
        #expect(history.filter { $0 == "done second" }.count == 1, "\(history)")
    }

    @Test func stopLetsRunningStagesFinishAndStartsNoMore() throws {
        let probe = StageProbe()
        probe.hold.value = true
        let rig = try SchedulerRig([("slow", TestStage(probe), 2)])
        let ids = try rig.enqueue(4)
        let loop = rig.loop
        let poll = try LoopTimer(loop: loop)
        var inFlightWhenDone = -1, statesWhenDone: [JobState?] = []
        let deadline = unixNow() + 10
        rig.scheduler.start()
        poll.start(afterMs: 5, repeatMs: 5) {
            // Two jobs dispatched (the limit), at least one of them running now.
            guard rig.scheduler.runningCount == 2 && probe.inFlight.value >= 1 || unixNow() > deadline else { return }
            poll.close()
            rig.scheduler.stop {
                inFlightWhenDone = probe.inFlight.value
                statesWhenDone = ids.map { try? rig.state($0) }
                rig.scheduler.close()
                rig.wakeup.close()
            }
            probe.hold.value = false  // the two running stages now finish
        }
        loop.run()
        #expect(loop.close() == 0)
        #expect(inFlightWhenDone == 0)
        #expect(probe.runs.value.count == 2)  // both dispatched ones ran, nothing started after stop
        #expect(statesWhenDone.filter { $0 == .done }.count == 2)  // both outcomes recorded before `done`
        #expect(statesWhenDone.filter { $0 == .queued }.count == 2)
    }
}
