import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// Fewer journal transactions a stage hop (`Scheduler+GroupCommit`): an outcome's
/// transaction claims the job's next stage, and runs that return while an outcome write
/// is in flight are written together.
/// Serialized: its stages hold libuv work-pool threads (4, shared by every loop in the process).
@Suite(.serialized) struct SchedulerGroupCommitTests {
    /// A lone job through three stages: one claim of its own (the first stage's); each
    /// hop after it is claimed in the outcome's transaction, and the job still runs each
    /// stage once, in order, after the last one's outcome is written.
    @Test func aJobGoesOnToItsNextStagesWithoutClaimsOfTheirOwn() throws {
        let probes = [StageProbe(), StageProbe(), StageProbe()]
        var disk: FaultyDiskQueue?
        let rig = try SchedulerRig([("a", TestStage(probes[0]), 1), ("b", TestStage(probes[1]), 1), ("c", TestStage(probes[2]), 1)],
                                   queue: { j in let q = FaultyDiskQueue(j); disk = q; return q })
        let id = try #require(try rig.enqueue(1).first)
        let run = try rig.run { (try? rig.state(id)) == .done }
        #expect(run.met && run.closed == 0)
        let q = try #require(disk)
        #expect(q.claimedByClaims.value == 1, "claims of their own: \(q.claimedByClaims.value)")
        #expect(probes.map { $0.runs.value.map(\.job) } == [[id], [id], [id]])
        let written = q.written.value
        #expect(try #require(probes[1].runs.value.first).at >= written["\(id):a"] ?? .infinity)
        #expect(try #require(probes[2].runs.value.first).at >= written["\(id):b"] ?? .infinity)
    }

    /// On a backlog a stage's own room is refilled in its outcome's transaction too, while
    /// a job is still held for its next free slot: some of twelve jobs are claimed so,
    /// each runs once, and the stage never runs more than its concurrency at once.
    @Test func aBacklogIsRefilledInTheOutcomesTransaction() throws {
        let probe = StageProbe()
        var disk: FaultyDiskQueue?
        let rig = try SchedulerRig([("only", TestStage(probe) { _ in usleep(30_000); return .continue() }, 2)],
                                   queue: { j in let q = FaultyDiskQueue(j); disk = q; return q })
        let ids = try rig.enqueue(12)
        let run = try rig.run(timeout: 20) { ids.allSatisfy { (try? rig.state($0)) == .done } }
        #expect(run.met && run.closed == 0)
        #expect(Set(probe.runs.value.map(\.job)) == Set(ids) && probe.runs.value.count == 12 && probe.maxInFlight.value <= 2)
        // Some came with an outcome (typically 4 to 7 of 12 here; none without: every claim was the pump's).
        let own = try #require(disk).claimedByClaims.value
        #expect(own < 12, "\(own) of 12 jobs claimed by claims of their own")
    }

    /// Three runs return together: the first one's outcome is written at once, and the
    /// two that return while it is written (a slow disk) go together after it, in one
    /// transaction, not one each.
    @Test func runsReturningDuringAnOutcomeWriteAreWrittenTogether() throws {
        let probe = StageProbe()
        probe.hold.value = true  // released once all three run
        var disk: FaultyDiskQueue?
        let rig = try SchedulerRig([("only", TestStage(probe), 3)], queue: { j in let q = FaultyDiskQueue(j, delay: 0.2); disk = q; return q })
        let ids = try rig.enqueue(3)
        let run = try rig.run(timeout: 20, step: { if probe.inFlight.value == 3 { probe.hold.value = false } }) {
            ids.allSatisfy { (try? rig.state($0)) == .done }
        }
        #expect(run.met && run.closed == 0)
        let writes = try #require(disk).outcomeWrites.value
        #expect(writes == [1, 2], "runs per outcome write: \(writes)")
    }
}
