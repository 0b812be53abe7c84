import StageKit
import Testing

/// "Out of attempts" is one rule for a run that asked to retry and one the daemon's end
/// interrupted (`Journal.resumeInterrupted`, expired leases): both ask `JobStateMachine`.
@Suite struct InterruptedRunTests {
    @Test func anInterruptedRunSpendsAnAttemptAndTheLastOneFailsTheJob() {
        #expect(JobStateMachine.afterInterruption(job: 4, stage: "s", attempt: 2, crashes: 0, signal: "", maxAttempts: 3) == nil)
        #expect(JobStateMachine.afterInterruption(job: 4, stage: "s", attempt: 3, crashes: 0, signal: "", maxAttempts: 3)
                == "interrupted 3 times during stage s (the daemon running it stopped or crashed)")
        // The same limit as a retry's.
        var rng = SystemRandomNumberGenerator()
        let retry = RetryPolicy.exponentialJitter(maxAttempts: 3, baseMs: 1, maxMs: 2)
        guard case .fail = JobStateMachine.step(after: .retry(reason: "x"), attempt: 3, outages: 0, stageIndex: 0, stageCount: 1,
                                                retry: retry, using: &rng).next else { Issue.record("retried past the limit"); return }
    }

    @Test func aSecondCrashFailsTheJobWhateverItsAttempts() {
        let why = JobStateMachine.afterInterruption(job: 4, stage: "s", attempt: 1, crashes: 2, signal: "SIGSEGV", maxAttempts: 9)
        #expect(why == "the daemon died twice while stage s ran on this job (last: SIGSEGV); not retried (photomemo retry 4 runs it again)")
    }
}
