import StageKit
import TestSupport
import Testing

/// The job state machine, without SQLite or sleeps: every outcome at a middle and at the
/// last stage, with a seeded random source so back-off delays are exact.
@Suite struct JobStateMachineTests {
    let policy = RetryPolicy.exponentialJitter(maxAttempts: 3, baseMs: 100, maxMs: 1000)

    func step(_ outcome: StageOutcome, attempt: Int = 1, outages: Int = 0, stage: Int = 0, of count: Int = 3, batch: Int = 1,
              seed: UInt64 = 7) -> JobStep {
        var rng = SeededRandom(state: seed)
        return JobStateMachine.step(after: outcome, attempt: attempt, outages: outages, stageIndex: stage, stageCount: count,
                                    batch: batch, retry: policy, using: &rng)
    }

    @Test func continueAdvancesOrFinishesAndKeepsTheResult() {
        #expect(step(.continue(result: ["k": 1])) == JobStep(next: .advance(toStage: 1), event: "done", message: nil, result: ["k": 1]))
        #expect(step(.continue(), stage: 2).next == .finish)
        #expect(step(.continue(), batch: 5).message == "in a batch of 5")
        #expect(step(.skip(reason: "no photo")) == JobStep(next: .advance(toStage: 1), event: "skipped", message: "no photo",
                                                           result: ["skipped": "no photo"]))
    }

    @Test func retryBacksOffWithinTheCeilingThenFails() {
        for attempt in 1...2 {
            guard case .retry(let delay, let attempts, let error) = step(.retry(reason: "flaky"), attempt: attempt).next else {
                Issue.record("attempt \(attempt) did not retry"); continue
            }
            #expect((1...policy.ceilingMs(afterFailures: attempt)).contains(delay) && attempts == attempt && error == "flaky")
        }
        // The same seed, the same delay: nothing depends on the clock.
        #expect(step(.retry(reason: "x"), seed: 42) == step(.retry(reason: "x"), seed: 42))
        // A stage may ask for a longer wait than the back-off.
        guard case .retry(let delay, _, _) = step(.retry(reason: "slow down", after: .seconds(5))).next else { Issue.record(); return }
        #expect(delay == 5000)
        #expect(step(.retry(reason: "flaky"), attempt: 3) ==
                JobStep(next: .fail(reason: "flaky (gave up after 3 attempts)", attempts: 3), event: "failed",
                        message: "flaky (gave up after 3 attempts)", result: nil))
    }

    @Test func anOutageWaitsWithoutSpendingAnAttempt() {
        let s = step(.unavailable(dependency: "store", reason: "connection refused"), attempt: 3, outages: 9)
        guard case .waitForDependency(let delay, let outages, let error) = s.next else { Issue.record("\(s)"); return }
        #expect(outages == 10 && error == "store unavailable: connection refused" && delay <= policy.maxMs)
        #expect(s.event == "unavailable")
    }

    @Test func failIsPermanentAndCountsTheAttemptThatFailed() {
        #expect(step(.fail(reason: "bad"), attempt: 2) == JobStep(next: .fail(reason: "bad", attempts: 2), event: "failed", message: "bad", result: nil))
    }
}
