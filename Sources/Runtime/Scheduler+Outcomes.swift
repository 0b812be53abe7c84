import EventLoop
import Foundation
import Journal
import PhotomemoCore
import StageKit

/// The outcome recorder: a stage run's outcomes become journal steps (written with
/// back-off while the journal cannot write), quarantines, events and dependency health.
extension Scheduler {
    /// Writes a stage run's outcomes to the journal (and quarantines failed photos), then
    /// reports them and runs the jobs parked for their next stage. While the journal cannot
    /// write (a full disk), the jobs stay in flight and the write is tried again with
    /// back-off; the journal shows down in `status`.
    func record(_ jobs: [ClaimedJob], _ outcomes: [StageOutcome], ms: Double, entry: JobDefinition.StageEntry,
                        definition def: JobDefinition, failures: Int = 0) {
        let journal = self.journal, quarantine = self.quarantine
        let stageCount = def.stages.count, retry = def.retry
        // Decided with the definition the run started with, then moved to the current one.
        let old = def.stages.map(\.name), now = definition.stages.map(\.name)
        let steps = JobStateMachine.steps(Array(zip(jobs, outcomes)), stageCount: stageCount, retry: retry)
            .map { ($0.job, $0.step.moved(from: old, to: now)) }
        loop.submit({ () -> Result<([Transition], [String], [String]), Error> in
            Failpoint.hit("stage.before_journal")
            return Result {
                let transitions = try journal.recordSteps(steps, stageName: entry.name, durationMs: ms, now: unixNow())
                // Recorded: a photo that fails to move now is moved at the next start.
                var errors: [String] = [], untaken: [String] = []
                for (job, t) in zip(jobs, transitions) {
                    guard let photo = t.quarantinePhoto, case .failed(let error) = t.kind else { continue }
                    do {
                        untaken += try Self.quarantinePhoto(PendingQuarantine(job: job.context.id, photoPath: photo, stage: entry.name,
                                                                              reason: error.message, code: error.code),
                                                 taken: job.context.photoSHA256, journal: journal, quarantine: quarantine)
                    } catch { errors.append("job \(job.context.id): cannot quarantine \(photo): \(error)") }
                }
                return (transitions, errors, untaken)
            }
        }) { [unowned self] result in
            switch result {
            case .success(let (transitions, errors, untaken)):
                if !untaken.isEmpty { self.onUntaken(untaken) }
                if failures > 0 { self.slots.writeSettled(entry.name) }
                if self.health.answers(DependencyHealth.journal) { Log.notice("the journal records again") }
                self.ended(jobs, stage: entry.name)
                for (job, (t, outcome)) in zip(jobs, zip(transitions, outcomes)) {
                    self.report(job: job.context.id, owner: job.context.memo.owner, stage: entry, transition: t, outcome: outcome, ms: ms)
                }
                for e in errors { Log.error(e, stage: entry.name) }
                self.unpark(jobs, run: true)
            case .failure(let error) where !self.stopping:
                self.health.down(DependencyHealth.journal)
                if failures == 0 { self.slots.writeFailed(entry.name) }
                let delay = retry.delayMs(afterFailures: failures + 1)
                for job in jobs { Log.error("cannot record the outcome: \(error); trying again in \(delay) ms", job: job.context.id, stage: entry.name) }
                self.unrecorded.append { [unowned self] in
                    self.record(jobs, outcomes, ms: ms, entry: entry, definition: def, failures: failures + 1)
                }
                self.recordTimer.start(afterMs: UInt64(delay)) { [unowned self] in self.retryUnrecorded() }
                return
            case .failure(let error):
                // Stopping: the jobs stay `running` and resume at the next start (stages are
                // idempotent), and so do any claimed for their next stage meanwhile.
                if failures > 0 { self.slots.writeSettled(entry.name) }
                self.ended(jobs, stage: entry.name, recorded: false)
                self.unpark(jobs, run: false)
                for job in jobs { Log.error("cannot record the outcome: \(error)", job: job.context.id, stage: entry.name) }
            }
            self.pump()
            self.checkIdle()
        }
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
