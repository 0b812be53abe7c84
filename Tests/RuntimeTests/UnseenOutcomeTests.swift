import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// A stage no one outside sees (`Stage.runsUnseen`: validate, compress) has its outcome
/// committed without waiting for the disk when the job moves on to another such stage;
/// into a stage that is seen, or at the end, the commit is durable (`Scheduler.unseen`).
/// Serialized: its stages hold libuv work-pool threads (4, shared by every loop in the process).
@Suite(.serialized) struct UnseenOutcomeTests {
    struct UnseenStage: Stage {
        static let name = "test-unseen"
        static let summary = "a stage written by the test that no one outside sees"
        static let options: [StageOption] = []
        static let workload = StageWorkload.io
        static let runsUnseen = true
        let outcome: StageOutcome
        init(_ outcome: StageOutcome = .continue()) { self.outcome = outcome }
        init(options: StageOptions, environment: StageEnvironment) throws { self.init() }
        func run(_ job: JobContext) -> StageOutcome { outcome }
    }

    /// The journal's transactions (all, durable) while one job goes through `stages`.
    func commits(_ stages: [any Stage]) throws -> (all: Int, durable: Int) {
        let rig = try SchedulerRig(stages.enumerated().map { ("s\($0.offset)", $0.element, 1) })
        let id = try #require(try rig.enqueue(1).first)
        let start = rig.journal.committed
        let run = try rig.run { (try? rig.state(id)) == .done }
        #expect(run.met && run.closed == 0)
        let end = rig.journal.committed
        return (end.transactions - start.transactions, end.durable - start.durable)
    }

    @Test func anUnseenStagesOutcomeWaitsForTheDiskOnlyBeforeASeenStage() throws {
        // unseen → unseen: relaxed; unseen → seen and the end: durable (and the first claim relaxed).
        let mixed = try commits([UnseenStage(), UnseenStage(), TestStage()])
        #expect(mixed.all == 4 && mixed.durable == 2, "\(mixed)")
        // The same hops through stages that are seen: every outcome durable.
        let seen = try commits([TestStage(), TestStage(), TestStage()])
        #expect(seen.all == 4 && seen.durable == 3, "\(seen)")
        // Unseen to the end: finishing is durable.
        let unseen = try commits([UnseenStage(), UnseenStage()])
        #expect(unseen.all == 3 && unseen.durable == 1, "\(unseen)")
    }

    /// A failure ends the job (and may quarantine its photo): durable, unseen stage or not.
    @Test func anUnseenStagesFailureIsDurable() throws {
        let rig = try SchedulerRig([("a", UnseenStage(.fail(.badImage, "no")), 1), ("b", UnseenStage(), 1)])
        let id = try #require(try rig.enqueue(1).first)
        let start = rig.journal.committed
        let run = try rig.run { (try? rig.state(id)) == .failed }
        #expect(run.met && run.closed == 0)
        #expect(rig.journal.committed.durable - start.durable == 1)
    }
}
