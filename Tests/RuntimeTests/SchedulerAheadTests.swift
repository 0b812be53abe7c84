import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// Claiming ahead (`Scheduler+Ahead`): a stage holds a claimed job per slot beyond those
/// running, which starts the moment a slot is free; held jobs keep every guarantee of a
/// claim (leases, pause, fair share, stop).
@Suite struct SchedulerAheadTests {
    /// Running jobs in the journal (running now, or claimed ahead).
    func claimed(_ rig: SchedulerRig) throws -> Int { try rig.journal.counts()[.running] ?? 0 }

    @Test func whileASlotRunsItsNextJobIsClaimedAheadAndLeased() throws {
        let probe = StageProbe()
        probe.hold.value = true
        let rig = try SchedulerRig([("only", TestStage(probe), 1)])
        let ids = try rig.enqueue(3)
        var heldAhead = -1, leased: [Int64] = []
        let run = try rig.run(step: {
            guard heldAhead < 0, probe.inFlight.value == 1, (try? self.claimed(rig)) == 2 else { return }
            heldAhead = 2
            leased = rig.scheduler.leasedJobs
            probe.hold.value = false
        }) { ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        #expect(heldAhead == 2, "no job was claimed ahead of the running one")
        #expect(Set(leased) == Set(ids.prefix(2)), "leases renewed for \(leased)")
        #expect(probe.runs.value.map(\.job) == ids && probe.runs.value.allSatisfy { $0.attempt == 1 })
    }

    /// A job held ahead for a stage paused since goes back to the queue unstarted (no
    /// attempt spent) and runs once after the resume.
    @Test func aJobHeldAheadForAStagePausedMeanwhileGoesBackUnstarted() throws {
        let probe = StageProbe()
        probe.hold.value = true
        let rig = try SchedulerRig([("only", TestStage(probe), 1)])
        let ids = try rig.enqueue(2)
        var phase = 0, ticks = 0, ranWhilePaused = -1
        let run = try rig.run(timeout: 20, step: {
            switch phase {
            case 0:
                guard probe.inFlight.value == 1, (try? self.claimed(rig)) == 2 else { return }
                phase = 1
                rig.scheduler.setPaused(true, stage: "only") { error in
                    #expect(error == nil)
                    phase = 2
                    probe.hold.value = false
                }
            case 2:
                guard (try? rig.state(ids[0])) == .done, (try? rig.state(ids[1])) == .queued else { return }
                ticks += 1  // 20 more pumps' time to misbehave
                guard ticks == 20 else { return }
                ranWhilePaused = probe.runs.value.count
                phase = 3
                rig.scheduler.setPaused(false, stage: "only") { error in #expect(error == nil) }
            default: break
            }
        }) { phase == 3 && ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0, "phase \(phase)")
        #expect(ranWhilePaused == 1)
        #expect(probe.attempts(of: ids[1]).map(\.attempt) == [1])
        let history = try rig.journal.history(ids[1])
        #expect(history.filter { $0.event == "released" }.map(\.message) == ["not started: the stage was paused after the job was claimed"])
    }

    /// Stopping puts held jobs back in the queue unstarted, with no attempt spent.
    @Test func stopPutsHeldJobsBackUnstarted() throws {
        let probe = StageProbe()
        probe.hold.value = true
        let rig = try SchedulerRig([("only", TestStage(probe), 1)])
        let ids = try rig.enqueue(3)
        let run = try rig.run(step: { if probe.inFlight.value == 1, (try? self.claimed(rig)) == 2 { probe.hold.value = false } }) {
            (try? rig.state(ids[0])) == .done
        }
        #expect(run.met && run.closed == 0)
        for id in ids.dropFirst() {
            let job = try #require(try rig.journal.job(id))
            if job.state == .done { continue }  // ran before the stop
            #expect(job.state == .queued && job.attempts == 0, "job \(id): \(job.state), \(job.attempts) attempts")
            #expect(try rig.journal.history(id).contains { $0.event == "released" && $0.message == "not started: the daemon stopped" }
                    || !(try rig.journal.history(id).contains { $0.event == "started" }))
        }
    }

    /// Round robin by owner still holds: a job of a second owner queued behind a backlog
    /// of the first's runs after at most the running job and the one held ahead.
    @Test func anotherOwnersJobWaitsAtMostForTheJobHeldAhead() throws {
        let probe = StageProbe()
        probe.hold.value = true
        let rig = try SchedulerRig([("only", TestStage(probe), 1)])
        let first = try rig.enqueue(8, owner: "alice")
        var second: [Int64] = []
        let run = try rig.run(timeout: 20, step: {
            guard second.isEmpty, probe.inFlight.value == 1, (try? self.claimed(rig)) == 2 else { return }
            second = (try? rig.enqueue(1, owner: "bob")) ?? [-1]
            probe.hold.value = false
        }) { !second.isEmpty && (first + second).allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        let order = probe.runs.value.map(\.job)
        let at = try #require(order.firstIndex(of: second[0]))
        #expect(at <= 2, "bob's job ran \(at + 1)th: \(order)")
    }
}
