import EventLoop
import Foundation
import Journal
import PhotomemoCore
import StageKit

/// The outcome recorder: a stage run's outcomes become journal steps (written with
/// back-off while the journal cannot write), quarantines, events and dependency health.
extension Scheduler {
    /// Writes a stage run's outcomes to the journal (and quarantines failed photos), then
    /// reports them and runs the jobs parked for their next stage. Runs that return while
    /// an outcome write is in flight are written together after it (`writeOutcomes`).
    /// While the journal cannot write (a full disk), the jobs stay in flight and the write
    /// is tried again with back-off; the journal shows down in `status`.
    func record(_ jobs: [ClaimedJob], _ outcomes: [StageOutcome], ms: Double, entry: JobDefinition.StageEntry,
                        definition def: JobDefinition, failures: Int = 0) {
        outcomesWaiting.append(ReturnedRun(jobs: jobs, outcomes: outcomes, ms: ms, entry: entry, definition: def, failures: failures))
        writeOutcomes()
    }

    /// A run's outcomes are in the journal: report them, run its jobs parked meanwhile.
    func recorded(_ run: ReturnedRun, _ transitions: [Transition]) {
        if run.failures > 0 { slots.writeSettled(run.entry.name) }
        ended(run.jobs, stage: run.entry.name)
        for (job, (t, outcome)) in zip(run.jobs, zip(transitions, run.outcomes)) {
            report(job: job.context.id, owner: job.context.memo.owner, stage: run.entry, transition: t, outcome: outcome, ms: run.ms)
        }
        unpark(run.jobs, run: true)
    }

    /// A run's outcomes could not be written: tried again with back-off; stopping, its
    /// jobs stay `running` and resume at the next start (stages are idempotent), and so do
    /// any claimed for their next stage meanwhile.
    func notRecorded(_ run: ReturnedRun, _ error: Error) {
        let stage = run.entry.name
        guard !stopping else {
            if run.failures > 0 { slots.writeSettled(stage) }
            ended(run.jobs, stage: stage, recorded: false)
            unpark(run.jobs, run: false)
            for job in run.jobs { Log.error("cannot record the outcome: \(error)", job: job.context.id, stage: stage) }
            return
        }
        health.down(DependencyHealth.journal)
        if run.failures == 0 { slots.writeFailed(stage) }
        let delay = run.definition.retry.delayMs(afterFailures: run.failures + 1)
        for job in run.jobs { Log.error("cannot record the outcome: \(error); trying again in \(delay) ms", job: job.context.id, stage: stage) }
        unrecorded.append { [unowned self] in
            self.record(run.jobs, run.outcomes, ms: run.ms, entry: run.entry, definition: run.definition, failures: run.failures + 1)
        }
        recordTimer.start(afterMs: UInt64(delay)) { [unowned self] in self.retryUnrecorded() }
    }

    /// A stage run's jobs are recorded: forget them as in flight (their slot is free since
    /// the run returned). Not `recorded` (stopping with the journal down), their start
    /// marks stay: they ran, and the next start counts the attempt.
    func ended(_ jobs: [ClaimedJob], stage: String, recorded: Bool = true) {
        slots.ended(stage, jobs: jobs.count)
        if recorded { startMarks?.ended(jobs.map(\.context.id)) }
        for job in jobs {
            runningJobs[job.context.id] = nil
            recording.remove(job.context.id)
            if crashSuspectRunning == job.context.id { crashSuspectRunning = nil }
        }
        logRunning()
    }

    /// A progress callback for one stage run: at most one event per 100 ms (and always
    /// the last), published on the loop through the wake-up handle.
    static func progressReporter(job: Int64, stage: String, to audience: EventBus.Audience, wakeup: LoopWakeup.Sender, events: EventBus)
        -> @Sendable (Double, String?) -> Void {
        let last = LockedValue(0.0)
        nonisolated(unsafe) let bus = events  // only touched in closures run on the loop thread
        return { fraction, note in
            let now = unixNow()
            let due = last.withLock { t -> Bool in
                guard fraction >= 1 || now - t >= 0.1 else { return false }
                t = now
                return true
            }
            guard due else { return }
            var fields: [String: JSONValue] = ["stage": .string(stage), "fraction": .double(min(1, max(0, fraction)))]
            if let note { fields["note"] = .string(note) }
            let event = fields
            wakeup.execute { bus.publish("stage_progress", job: job, event, to: audience) }
        }
    }

    /// Logs and publishes what a stage run did, and tracks dependency health.
    func report(job id: Int64, owner: String?, stage entry: JobDefinition.StageEntry, transition t: Transition, outcome: StageOutcome,
                        ms: Double) {
        let stage = entry.name
        let base: [String: JSONValue] = ["stage": .string(stage), "ms": .double(ms)]
        let to = EventBus.Audience.owner(owner)
        switch outcome {
        case .continue, .skip:
            for dep in health.wentThrough(stage) { Log.notice("\(dep) is reachable again", stage: stage) }
            if case .skip(let reason) = outcome {
                events.publish("stage_skipped", job: id, base.merging(["reason": .string(reason)]) { a, _ in a }, to: to)
            } else {
                events.publish("stage_done", job: id, base, to: to)
            }
            // A record the stage wrote (`Stage.writesRecords`): its change, with the receipt, for `watch`.
            if type(of: entry.stage).writesRecords, case .continue(let result) = outcome, let record = result["record"], let op = result["op"]?.stringValue,
               op == "create" || op == "update" {
                var change: [String: JSONValue] = ["record": record]
                for key in ["source", "sha256"] { if let v = result[key] { change[key] = v } }
                events.publish("record_\(op)", job: id, change, to: to)
            }
        case .unavailable(let dep, let error):
            health.down(dep, reportedBy: stage, reason: error.message)
        default: break
        }
        switch t.kind {
        case .advanced:
            Log.debug("done", job: id, stage: stage)
        case .finished:
            Log.info("job done", job: id, stage: stage)
            events.publish("job_done", job: id, to: to)
        case .retrying(let delay):
            Log.notice("retrying in \(delay) ms", job: id, stage: stage)
            events.publish("stage_retry", job: id, base.merging(["delay_ms": .int(Int64(delay)), "reason": .string(reasonOf(outcome)),
                                                                 "code": codeOf(outcome)]) { a, _ in a }, to: to)
        case .waitingForDependency(let delay):
            Log.warning("dependency down; next try in \(delay) ms", job: id, stage: stage)
            events.publish("stage_unavailable", job: id, base.merging(["delay_ms": .int(Int64(delay)), "reason": .string(reasonOf(outcome)),
                                                                       "code": codeOf(outcome)]) { a, _ in a }, to: to)
        case .failed(let error):
            Log.warning("failed: \(error.message) (\(error.code))", job: id, stage: stage)
            let code = JSONValue.string(error.code.rawValue)
            events.publish("stage_failed", job: id, base.merging(["reason": .string(error.message), "code": code]) { a, _ in a }, to: to)
            events.publish("job_failed", job: id, ["stage": .string(stage), "reason": .string(error.message), "code": code], to: to)
        case .abandoned:
            Log.info("outcome dropped: the job left running state meanwhile", job: id, stage: stage)
        }
    }

    func reasonOf(_ o: StageOutcome) -> String {
        switch o {
        case .retry(let e, _), .fail(let e): e.message
        case .skip(let r): r
        case .unavailable(let d, let e): "\(d): \(e.message)"
        case .continue: ""
        }
    }

    /// The outcome's error code for an event, null when it has none.
    func codeOf(_ o: StageOutcome) -> JSONValue { o.error.map { .string($0.code.rawValue) } ?? .null }
}
