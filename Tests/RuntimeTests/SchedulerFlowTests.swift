import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// A job's way through the stages on a real loop and SQLite journal: what each outcome
/// does to it. Every test ends with the loop closed and no handle left open.
@Suite struct SchedulerFlowTests {
    @Test func continueAdvancesWithTheResultAndTheLastStageFinishesTheJob() throws {
        let first = StageProbe(), second = StageProbe()
        let seen = LockedValue<JSONValue?>(nil)
        let rig = try SchedulerRig([("first", TestStage(first) { _ in .continue(result: ["n": 1]) }, 2),
                                    ("second", TestStage(second) { job in seen.value = job.results["first"]; return .continue() }, 2)])
        let ids = try rig.enqueue(3)
        let run = try rig.run { ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        #expect(seen.value == ["n": 1])  // the second stage sees the first one's result
        for id in ids {
            let job = try #require(try rig.journal.job(id))
            #expect(job.results["first"] == ["n": 1])
            #expect(first.attempts(of: id).count == 1 && second.attempts(of: id).count == 1)
            let events = try rig.journal.history(id).map { "\($0.event)@\($0.stage ?? "-")" }
            #expect(events == ["accepted@-", "started@first", "done@first", "started@second", "done@second", "finished@-"])
        }
    }

    @Test func aJobsEventsReachItsOwnerAndAdminsOnly() throws {
        let rig = try SchedulerRig([("only", TestStage(), 1)])
        let id = try rig.enqueue(1, owner: "alice")[0]
        final class Listener {}
        let alice = Listener(), bob = Listener(), admin = Listener()
        var heard: [String: [String]] = [:]
        for (name, l, viewer) in [("alice", alice, "alice"), ("bob", bob, "bob"), ("admin", admin, nil)] as [(String, Listener, String?)] {
            rig.events.subscribe(l, viewer: viewer) { e in
                if e["job"]?.intValue == id { heard[name, default: []].append(e["event"]?.stringValue ?? "?") }
            }
        }
        let run = try rig.run { heard["alice"]?.last == "job_done" }
        #expect(run.met && run.closed == 0)
        #expect(heard["alice"] == ["stage_started", "stage_done", "job_done"])
        #expect(heard["admin"] == heard["alice"] && heard["bob"] == nil)
    }

    @Test func skipMovesOnToTheNextStageKeepingTheReason() throws {
        let second = StageProbe()
        let rig = try SchedulerRig([("first", TestStage { _ in .skip(reason: "no photo") }, 1), ("second", TestStage(second), 1)])
        let id = try rig.enqueue(1)[0]
        let run = try rig.run { (try? rig.state(id)) == .done }
        #expect(run.met && run.closed == 0)
        #expect(second.attempts(of: id).count == 1)
        #expect(try rig.journal.job(id)?.results["first"] == ["skipped": "no photo"])
        #expect(try rig.journal.history(id).contains { $0.event == "skipped" && $0.message == "no photo" })
    }

    @Test func failRecordsTheReasonAndNoLaterStageRuns() throws {
        let second = StageProbe()
        let rig = try SchedulerRig([("first", TestStage { _ in .fail(reason: "broken beyond repair") }, 1), ("second", TestStage(second), 1)])
        let id = try rig.enqueue(1)[0]
        let run = try rig.run { (try? rig.state(id)) == .failed }
        #expect(run.met && run.closed == 0)
        let job = try #require(try rig.journal.job(id))
        #expect(job.error == "broken beyond repair" && job.stage == "first")
        #expect(second.runs.value.isEmpty)
    }

    @Test func retryWaitsItsDelayThenRunsAgainAndSucceeds() throws {
        let probe = StageProbe()
        let rig = try SchedulerRig([("flaky", TestStage(probe) { job in
            job.attempt < 3 ? .retry(reason: "try later", after: .milliseconds(150)) : .continue()
        }, 1)], retry: .exponentialJitter(maxAttempts: 5, baseMs: 1, maxMs: 1))
        let id = try rig.enqueue(1)[0]
        let run = try rig.run { (try? rig.state(id)) == .done }
        #expect(run.met && run.closed == 0)
        let runs = probe.attempts(of: id)
        #expect(runs.map(\.attempt) == [1, 2, 3])
        for (a, b) in zip(runs, runs.dropFirst()) { #expect(b.at - a.at >= 0.15, "attempt \(b.attempt) came too soon") }
        #expect(try rig.journal.history(id).filter { $0.event == "retry" }.count == 2)
    }

    @Test func retryGivesUpAfterMaxAttemptsWithTheReason() throws {
        let probe = StageProbe()
        let rig = try SchedulerRig([("flaky", TestStage(probe) { _ in .retry(reason: "still down") }, 1)],
                                   retry: .exponentialJitter(maxAttempts: 3, baseMs: 20, maxMs: 40))
        let id = try rig.enqueue(1)[0]
        let run = try rig.run { (try? rig.state(id)) == .failed }
        #expect(run.met && run.closed == 0)
        #expect(probe.attempts(of: id).map(\.attempt) == [1, 2, 3])
        #expect(try rig.journal.job(id)?.error == "still down (gave up after 3 attempts)")
    }

    @Test func unavailableWaitsWithoutSpendingAttempts() throws {
        let probe = StageProbe()
        let rig = try SchedulerRig([("store", TestStage(probe) { job in
            // Down twice, then up: the job's attempt stays 1 (outages are not its fault).
            probe.runs.value.count <= 2 ? .unavailable(dependency: "store", reason: "connection refused") : .continue()
        }, 1)], retry: .exponentialJitter(maxAttempts: 1, baseMs: 10, maxMs: 20))
        let id = try rig.enqueue(1)[0]
        let run = try rig.run { (try? rig.state(id)) == .done }
        #expect(run.met && run.closed == 0)
        #expect(probe.attempts(of: id).map(\.attempt) == [1, 1, 1])
    }
}
