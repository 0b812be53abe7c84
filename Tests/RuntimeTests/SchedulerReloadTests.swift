import EventLoop
import Foundation
import Journal
@testable import PhotomemoCore
@testable import StageKit
import Testing
@testable import Runtime

/// A reload is one swap of the live definition (`LiveDefinition.replace`): the scheduler
/// reads it at its next claim and keeps no copy of its own that could go stale.
@Suite(.serialized) struct SchedulerReloadTests {
    @Test func theNextClaimAfterAReloadUsesTheNewConcurrency() throws {
        let probe = StageProbe()
        probe.hold.value = true  // the first run holds the stage's one slot
        let stage = TestStage(probe)
        let rig = try SchedulerRig([("held", stage, 1)])
        try rig.enqueue(3)
        var reloaded = false
        let run = try rig.run(timeout: 10, step: {
            guard !reloaded, rig.scheduler.running(stage: "held") == 1 else { return }
            reloaded = true
            let now = rig.live.current
            let wider = JobDefinition(name: now.name, stages: [.init(name: "held", stage: stage, concurrency: 2)], retry: now.retry,
                                      joinTimeoutSeconds: now.joinTimeoutSeconds, source: now.source, database: now.database,
                                      store: now.store, inbox: now.inbox)
            #expect(throws: Never.self) { try rig.live.replace(with: wider) }
            rig.scheduler.pump()
        }) {
            // Counted when claimed and dispatched, before a work-pool thread runs it.
            guard rig.scheduler.running(stage: "held") == 2 else { return false }
            probe.hold.value = false
            return true
        }
        probe.hold.value = false
        #expect(reloaded)
        #expect(run.met, "the scheduler's next claim kept the old concurrency (1)")
        #expect(run.closed == 0)
    }
}
