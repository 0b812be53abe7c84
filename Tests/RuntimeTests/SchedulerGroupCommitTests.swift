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
