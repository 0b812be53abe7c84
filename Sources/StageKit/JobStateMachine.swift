/// What happens to a job after a stage run, decided without I/O: (the job's attempt and
/// outages, the stage's outcome, the retry policy, a random source) → the next state, the
/// history entry and what to keep. The scheduler decides; the journal only persists.
///
///     continue ─▶ next stage (attempts reset) │ last stage ─▶ done
///     skip     ─▶ the same, the reason kept as the stage's result
///     retry    ─▶ waiting (back-off with jitter) │ out of attempts ─▶ failed
///     unavailable ─▶ waiting for the dependency (capped back-off, no attempt spent)
///     fail     ─▶ failed
public struct JobStep: Sendable, Equatable {
    public enum Next: Sendable, Equatable {
        /// Queued at stage `toStage` with fresh attempts.
        case advance(toStage: Int)
        case finish
        /// Waiting `afterMs` for attempt `attempts + 1`.
        case retry(afterMs: Int, attempts: Int, error: String)
        /// Waiting `afterMs` for a dependency; `outages` counts the waits so far.
        case waitForDependency(afterMs: Int, outages: Int, error: String)
        case fail(reason: String, attempts: Int)
    }

    public let next: Next
    /// The history entry: done, skipped, retry, unavailable or failed.
    public let event: String
    public let message: String?
    /// Kept under the stage's name in the job's results (continue and skip only).
    public let result: JSONValue?
    /// The job's working set as the run left it, kept for the next stage (continue only;
    /// nil: the journal keeps the one it has).
    public var workingSet: WorkingSet?

    public init(next: Next, event: String, message: String?, result: JSONValue?, workingSet: WorkingSet? = nil) {
        self.next = next
        self.event = event
        self.message = message
        self.result = result
        self.workingSet = workingSet
    }
}

public enum JobStateMachine {
    /// - `attempt`: this run's attempt (1-based); `outages`: dependency waits so far at this stage;
    /// - `batch`: how many jobs ran together (a history note when more than one).
    public static func step<G: RandomNumberGenerator>(after outcome: StageOutcome, attempt: Int, outages: Int, stageIndex: Int,
                                                      stageCount: Int, batch: Int = 1, retry: RetryPolicy,
                                                      using rng: inout G) -> JobStep {
        let next: JobStep.Next = stageIndex + 1 < stageCount ? .advance(toStage: stageIndex + 1) : .finish
        switch outcome {
        case .continue(let result):
            return JobStep(next: next, event: "done", message: batch > 1 ? "in a batch of \(batch)" : nil, result: result)
        case .skip(let reason):
            return JobStep(next: next, event: "skipped", message: reason, result: ["skipped": .string(reason)])
        case .retry(let reason, let after):
            if outOfAttempts(after: attempt, maxAttempts: retry.maxAttempts) {
                let why = "\(reason) (gave up after \(attempt) attempts)"
                return JobStep(next: .fail(reason: why, attempts: attempt), event: "failed", message: why, result: nil)
            }
            var delay = retry.delayMs(afterFailures: attempt, using: &rng)
            if let after { delay = max(delay, after.milliseconds) }
            return JobStep(next: .retry(afterMs: delay, attempts: attempt, error: reason), event: "retry",
                           message: "\(reason); next attempt in \(delay) ms", result: nil)
        case .unavailable(let dependency, let reason):
            // An outage is not the job's fault: back off (capped) without spending an attempt.
            let delay = retry.delayMs(afterFailures: outages + 1, using: &rng)
            return JobStep(next: .waitForDependency(afterMs: delay, outages: outages + 1, error: "\(dependency) unavailable: \(reason)"),
                           event: "unavailable", message: "\(dependency): \(reason); next try in \(delay) ms", result: nil)
        case .fail(let reason):
            return JobStep(next: .fail(reason: reason, attempts: attempt), event: "failed", message: reason, result: nil)
        }
    }
}

extension JobStateMachine {
    /// Whether run number `attempt` of a stage was the last the policy allows: the one
    /// rule for a run that asked to retry and for one the daemon's end interrupted.
    public static func outOfAttempts(after attempt: Int, maxAttempts: Int) -> Bool { attempt >= maxAttempts }

    /// A run of `stage` interrupted by its daemon's end (a stop, a crash, a lease run out)
    /// counts as attempt `attempt`; `crashes`: fatal signals while this stage ran on the
    /// job, this one included. nil: it runs again; else why the job fails.
    public static func afterInterruption(job id: Int64, stage: String, attempt: Int, crashes: Int, signal: String,
                                         maxAttempts: Int) -> String? {
        if crashes >= 2 {
            return "the daemon died twice while stage \(stage) ran on this job (last: \(signal)); not retried (photomemo retry \(id) runs it again)"
        }
        if outOfAttempts(after: attempt, maxAttempts: maxAttempts) {
            return "interrupted \(attempt) times during stage \(stage) (the daemon running it stopped or crashed)"
        }
        return nil
    }

    /// Where a job at stage `index` of the `old` stage list stands in the `new` one after a
    /// reload: at the same stage by name, else at the first later stage that is still
    /// there, else past the end (nothing left to do: the job is done).
    public static func stage(_ index: Int, from old: [String], to new: [String]) -> Int {
        guard index < old.count else { return new.count }
        for name in old[index...] {
            if let j = new.firstIndex(of: name) { return j }
        }
        return new.count
    }
}

extension JobStep {
    /// The step with its next stage moved from the `old` stage list to the `new` one (a
    /// run that started before a reload ends after it).
    public func moved(from old: [String], to new: [String]) -> JobStep {
        guard old != new, case .advance(let next) = self.next else { return self }
        let n = JobStateMachine.stage(next, from: old, to: new)
        return JobStep(next: n < new.count ? .advance(toStage: n) : .finish, event: event, message: message, result: result,
                       workingSet: workingSet)
    }
}

