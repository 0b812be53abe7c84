import EventLoop
import Foundation
import Journal
import PhotomemoCore

/// Runs each job's stages in order, owning everything stages must not: concurrency
/// limits, retries with back-off, dependency outages, the journal and quarantine.
///
///     pump ─▶ [pool] claim runnable jobs per stage (free slots only) ─▶ dispatch
///     dispatch ─▶ [pool] stage.run(jobs) ─▶ JobStateMachine decides ─▶ queue.recordSteps ─▶ quarantine if failed
///              ─▶ [loop] free the slot, pump again
///
/// A slot runs one job, or for a `BatchStage` up to `batchLimit` jobs claimed together
/// (batches form only under load: a lone runnable job goes alone, at once).
///     timer ─▶ pump at the next back-off end or join deadline
///
/// Job state lives in the journal, not here: memory holds only the jobs running now, so
/// 100,000 photos in the inbox are 100,000 rows, not 100,000 objects.
final class Scheduler {
    private let loop: EventLoop
    /// The job store (`JobQueue`: the SQLite journal today).
    private let journal: any JobQueue
    private let quarantine: Quarantine
    private(set) var definition: JobDefinition
    /// Jobs in flight per stage (running, or their outcome being written), and the slots
    /// (stage runs) taken. A slot is free once its run returns: the next job starts while
    /// the last one's outcome is written (an fsync), so a stage's cores never wait on it.
    private var running: [String: Int] = [:]
    private var slotsInUse: [String: Int] = [:]
    /// Stage runs whose outcome write failed and waits to be tried again: each keeps its
    /// slot, so while the journal cannot record (but can still claim) a stage holds at
    /// most its concurrency of them, instead of claiming and running job after job whose
    /// outcomes pile up in memory (and would all run again after a crash).
    private var unwritten: [String: Int] = [:]
    private var claiming = false
    /// A reload is moving waiting jobs to the new stages: no claim until it is done.
    private var movingStages = false
    private var pumpAgain = false
    private var stopping = false
    private let wakeTimer: LoopTimer
    /// Stage runs whose outcomes (or jobs to put back in the queue) the journal could not
    /// write yet, and when to try again.
    private var unrecorded: [() -> Void] = []
    private let recordTimer: LoopTimer
    private var onIdle: (() -> Void)?
    private let events: EventBus
    /// Carries progress reports from stage threads to the loop.
    private let wakeup: LoopWakeup.Sender
    /// The whole pipeline, or single stages, paused: no new stage runs start. Persisted.
    private(set) var paused: Bool
    private(set) var pausedStages: Set<String>
    /// Dependencies a stage reported unreachable, and whether they answer again.
    private(set) var dependencies: [String: Bool] = [:]
    private var stageDependencies: [String: Set<String>] = [:]
    /// Job → stage of every job in flight (leases cover them until recorded).
    private(set) var runningJobs: [Int64: String] = [:]
    /// Of those, the jobs whose run returned and whose outcome is being written: not what
    /// a fatal signal's log line names.
    private var recording: Set<Int64> = []
    /// Jobs claimed for their next stage while the loop has not yet heard that their last
    /// stage's outcome was written (the claim saw the commit first): each holds a slot of
    /// its stage and is dispatched right after that stage is reported, so a job's events
    /// keep their order and it is never in two stages at once.
    private var parked: [Int64: (job: ClaimedJob, definition: JobDefinition)] = [:]
    /// Jobs claimed for a stage paused since (parked, or claimed while the pause was
    /// written) that go back to the queue instead of starting: their writes in flight.
    private var releasing = 0
    /// A job that crashed the daemon once runs alone (nothing else starts meanwhile), so
    /// a second crash names it and no bystander.
    private var crashSuspectRunning: Int64?
    /// Inbox names whose files are to be taken again (`quarantinePhoto`): set to the inbox's.
    var onUntaken: ([String]) -> Void = { _ in }

    /// Where photos may be: a stage opens a job's photo beneath its folder (`PhotoFile`).
    let photos: PhotoPolicy

    init(loop: EventLoop, journal: any JobQueue, quarantine: Quarantine, photos: PhotoPolicy, definition: JobDefinition, events: EventBus,
         wakeup: LoopWakeup.Sender) throws {
        self.wakeup = wakeup
        self.photos = photos
        self.loop = loop
        self.journal = journal
        self.quarantine = quarantine
        self.definition = definition
        self.events = events
        wakeTimer = try LoopTimer(loop: loop)
        recordTimer = try LoopTimer(loop: loop)
        paused = try journal.setting("paused") == "true"
        pausedStages = Set((try journal.setting("paused_stages") ?? "").split(separator: ",").map(String.init))
    }

    var runningCount: Int { running.values.reduce(0, +) }

    func running(stage: String) -> Int { running[stage, default: 0] }

    /// Swaps the job definition; running stages finish with the one they started with and
    /// their jobs go on at the new one's stages. Jobs waiting at a stage the new definition
    /// no longer has move to the next one it has (or are done): none is stranded.
    func replace(definition next: JobDefinition) {
        let old = definition.stages.map(\.name), new = next.stages.map(\.name)
        definition = next
        guard old != new else { return pump() }
        movingStages = true
        let journal = self.journal
        loop.submit({ () -> Result<Int, Error> in Result { try journal.moveStages(from: old, to: new, now: unixNow()) } }) { [unowned self] result in
            self.movingStages = false
            switch result {
            case .success(let moved): if moved > 0 { Log.notice("reload: \(moved) waiting jobs moved to the new stages") }
            case .failure(let error): Log.error("reload: cannot move waiting jobs to the new stages: \(error)")
            }
            self.pump()
        }
    }

    /// Pauses or resumes the whole pipeline (`stage` nil) or one stage. The flag is
    /// written to the journal (off the loop) before it takes effect and `done` runs.
    func setPaused(_ value: Bool, stage: String? = nil, done: @escaping (Error?) -> Void) {
        var changed = pausedStages
        if let stage { if value { changed.insert(stage) } else { changed.remove(stage) } }
        let nextStages = changed
        let journal = self.journal
        loop.submit({ () -> Error? in
            do {
                if stage != nil {
                    try journal.setSetting("paused_stages", nextStages.isEmpty ? nil : nextStages.sorted().joined(separator: ","))
                } else {
                    try journal.setSetting("paused", value ? "true" : nil)
                }
                return nil
            } catch { return error }
        }) { [unowned self] error in
            if error == nil {
                if stage != nil { self.pausedStages = nextStages } else { self.paused = value }
                self.events.publish(value ? "paused" : "resumed", job: nil, stage.map { ["stage": .string($0)] } ?? [:], to: .everyone)
                if !value { self.pump() }
            }
            done(error)
        }
    }

    /// Moves photos of failed jobs left unquarantined by a crash, then starts pumping.
    func start() {
        let journal = self.journal, quarantine = self.quarantine
        loop.submit({ () -> ([String], [String]) in
            var errors: [String] = [], untaken: [String] = []
            for p in (try? journal.pendingQuarantines()) ?? [] {
                do { untaken += try Self.quarantinePhoto(p, journal: journal, quarantine: quarantine) } catch {
                    errors.append("job \(p.job): cannot quarantine \(p.photoPath): \(error)")
                }
            }
            return (errors, untaken)
        }) { [unowned self] errors, untaken in
            for e in errors { Log.error(e) }
            if !untaken.isEmpty { self.onUntaken(untaken) }
            self.pump()
        }
    }

    /// Stops claiming work; `done` runs once every running stage has finished.
    func stop(_ done: @escaping () -> Void) {
        stopping = true
        wakeTimer.stop()
        onIdle = done
        retryUnrecorded()  // once more now; what still fails resumes at the next start
        checkIdle()
    }

    func close() {
        wakeTimer.close()
        recordTimer.close()
    }

    private func retryUnrecorded() {
        recordTimer.stop()
        let pending = unrecorded
        unrecorded.removeAll()
        for retry in pending { retry() }
    }

    private func checkIdle() {
        guard stopping, runningCount == 0, releasing == 0, !claiming, let done = onIdle else { return }
        onIdle = nil
        done()
    }

    func pump() {
        guard !stopping, !paused, !movingStages else { return }
        guard !claiming else { pumpAgain = true; return }
        let def = definition
        let free = def.stages.enumerated()
            .map { i, s in (i, s.name, s.concurrency - slotsInUse[s.name, default: 0] - unwritten[s.name, default: 0]) }
            .filter { $0.2 > 0 && !pausedStages.contains($0.1) }
        guard !free.isEmpty, crashSuspectRunning == nil else { return }
        claiming = true
        let journal = self.journal
        let idle = runningCount == 0
        // Each stage's claim is its own transaction: what was claimed before an error is
        // `running` in the journal and must be dispatched, or it would be stranded there.
        loop.submit({ () -> (claimed: [ClaimedJob], suspect: Bool, wake: Double?, error: Error?) in
            let now = unixNow()
            var claimed: [ClaimedJob] = []
            do {
                for id in try journal.expireJoins(now: now) { Log.warning("gave up waiting for the photo", job: id) }
                if try journal.crashSuspectReady(stageIndexes: free.map(\.0), now: now) {
                    // Let what runs drain, then run the suspect alone.
                    for (index, name, _) in free where idle && claimed.isEmpty {
                        claimed = try journal.claim(stageIndex: index, stageName: name, limit: 1, crashSuspects: true,
                                                    photoLocalEnd: def.photoLocalEnd, now: now)
                    }
                    return (claimed, !claimed.isEmpty, try journal.nextWakeAt(), nil)
                }
                for (index, name, slots) in free {
                    let limit = slots * type(of: def.stages[index].stage).jobsPerRun
                    claimed += try journal.claim(stageIndex: index, stageName: name, limit: limit, crashSuspects: false,
                                                 photoLocalEnd: def.photoLocalEnd, now: now)
                }
                return (claimed, false, try journal.nextWakeAt(), nil)
            } catch {
                return (claimed, false, nil, error)
            }
        }) { [unowned self] result in
            self.claiming = false
            if result.suspect, let job = result.claimed.first {
                Log.notice("running alone: the daemon died of a fatal signal while this stage ran on it once", job: job.context.id,
                           stage: def.stages[job.stageIndex].name)
                self.crashSuspectRunning = job.context.id
            }
            for job in result.claimed where self.runningJobs[job.context.id] != nil {
                self.parked[job.context.id] = (job, def)
                self.slotsInUse[def.stages[job.stageIndex].name, default: 0] += 1
            }
            self.dispatchClaimed(result.claimed.filter { self.parked[$0.context.id] == nil }, definition: def)
            if let error = result.error {
                // The journal cannot write (a full disk, most likely): an outage, shown in status.
                self.dependencies["journal"] = false
                Log.error("claiming jobs: \(error); retrying in 1 s")
                self.arm(unixNow() + 1)
            } else {
                if self.dependencies["journal"] == false, self.unrecorded.isEmpty {
                    self.dependencies["journal"] = true
                    Log.notice("the journal records again")
                }
                self.arm(result.wake)
            }
            if self.pumpAgain {
                self.pumpAgain = false
                self.pump()
            }
            self.checkIdle()
        }
    }

    private func arm(_ at: Double?) {
        guard let at, !stopping else { return }
        let ms = max(0, (at - unixNow()) * 1000)
        wakeTimer.start(afterMs: UInt64(ms.rounded(.up)) + 1) { [unowned self] in self.pump() }
    }

    /// Runs claimed jobs, a batch stage's in batches of its size; those of a stage paused
    /// since the claim go back to the queue instead (a paused stage starts no run).
    private func dispatchClaimed(_ claimed: [ClaimedJob], definition def: JobDefinition) {
        let isPaused = { (job: ClaimedJob) in self.paused || self.pausedStages.contains(def.stages[job.stageIndex].name) }
        release(claimed.filter(isPaused), definition: def)
        let runnable = claimed.filter { !isPaused($0) }
        for index in Set(runnable.map(\.stageIndex)).sorted() {
            let jobs = runnable.filter { $0.stageIndex == index }
            let size = type(of: def.stages[index].stage).jobsPerRun
            for start in stride(from: 0, to: jobs.count, by: size) {
                dispatch(Array(jobs[start..<min(jobs.count, start + size)]), definition: def)
            }
        }
    }

    /// Puts claimed jobs back in the queue unstarted (no attempt spent); a write that
    /// fails is tried again with back-off, like an outcome. Stopping, they stay claimed and
    /// resume at the next start, as parked jobs do.
    private func release(_ jobs: [ClaimedJob], definition def: JobDefinition, failures: Int = 0) {
        guard !jobs.isEmpty else { return }
        if failures == 0 { releasing += jobs.count }
        if let suspect = crashSuspectRunning, jobs.contains(where: { $0.context.id == suspect }) { crashSuspectRunning = nil }
        let journal = self.journal
        let claims = jobs.map { (job: $0, stage: def.stages[$0.stageIndex].name) }
        loop.submit({ () -> Error? in
            do {
                try journal.release(claims, reason: "not started: the stage was paused after the job was claimed", now: unixNow())
                return nil
            } catch { return error }
        }) { [unowned self] error in
            if let error, !self.stopping {
                let delay = def.retry.delayMs(afterFailures: failures + 1)
                Log.error("cannot put \(jobs.count) jobs of a paused stage back in the queue: \(error); trying again in \(delay) ms")
                self.unrecorded.append { [unowned self] in self.release(jobs, definition: def, failures: failures + 1) }
                self.recordTimer.start(afterMs: UInt64(delay)) { [unowned self] in self.retryUnrecorded() }
                return
            }
            self.releasing -= jobs.count
            for (job, stage) in claims {
                if let error { Log.error("cannot put the job back in the queue: \(error)", job: job.context.id, stage: stage) }
                else { Log.info("back in the queue: the stage was paused after the claim", job: job.context.id, stage: stage) }
            }
            // Queued again: if the stage was resumed meanwhile, nothing else may wake it
            // (SQLite has no NOTIFY, and the next wake-up looks only at waiting jobs).
            if error == nil { self.pump() }
            self.checkIdle()
        }
    }

    /// The parked jobs among `jobs` (whose stage was just reported): each gives back the
    /// slot it held, and they run.
    private func unpark(_ jobs: [ClaimedJob], run: Bool) {
        let next = jobs.compactMap { parked.removeValue(forKey: $0.context.id) }
        for (job, def) in next { slotsInUse[def.stages[job.stageIndex].name, default: 1] -= 1 }
        guard run, let def = next.first?.definition else { return }
        dispatchClaimed(next.map(\.job), definition: def)
    }

    /// Runs one slot's jobs (one, or a batch) and records their outcomes in one transaction.
    private func dispatch(_ jobs: [ClaimedJob], definition def: JobDefinition) {
        let entry = def.stages[jobs[0].stageIndex]
        running[entry.name, default: 0] += jobs.count
        slotsInUse[entry.name, default: 0] += 1
        for job in jobs { runningJobs[job.context.id] = entry.name }
        logRunning()
        let contexts = jobs.map { job in
            Log.debug("started (attempt \(job.context.attempt))", job: job.context.id, stage: entry.name)
            let owner = EventBus.Audience.owner(job.context.memo.owner)
            events.publish("stage_started", job: job.context.id, ["stage": .string(entry.name), "attempt": .int(Int64(job.context.attempt))],
                           to: owner)
            var context = job.context
            context.photoRoot = context.photoPath.flatMap(photos.root(of:))
            context.progress = Self.progressReporter(job: job.context.id, stage: entry.name, to: owner, wakeup: wakeup, events: events)
            return context
        }
        let disk = quarantine.folder  // on the home's filesystem
        loop.submit({ () -> (outcomes: [StageOutcome], ms: Double) in
            let clock = ContinuousClock()
            let started = clock.now, cpu = StageCPU.threadNow()
            FatalSignalLog.prepareThisThread()
            if Failpoint.anyArmed { for c in contexts { Failpoint.hit("stage.run", subject: "\(entry.name):\(c.photoPath.map { ($0 as NSString).lastPathComponent } ?? c.key)") } }
            let outcomes = entry.stage.run(jobs: contexts).map { DiskSpace.classify($0, home: disk) }
            precondition(outcomes.count == jobs.count, "\(entry.name) returned \(outcomes.count) outcomes for \(jobs.count) jobs")
            StageCPU.add(entry.name, seconds: StageCPU.threadNow() - cpu)
            let elapsed = (clock.now - started).components
            return (outcomes, Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15)
        }) { [unowned self] run in
            self.slotsInUse[entry.name, default: 1] -= 1
            for job in jobs { self.recording.insert(job.context.id) }
            self.logRunning()
            self.record(jobs, run.outcomes, ms: run.ms, entry: entry, definition: def)
            self.pump()
        }
    }

    /// What a fatal signal would interrupt: the jobs whose stage runs now.
    private func logRunning() {
        FatalSignalLog.setRunning(runningJobs.filter { !recording.contains($0.key) }.map { ($0.key, $0.value) })
    }

    /// Writes a stage run's outcomes to the journal (and quarantines failed photos), then
    /// reports them and runs the jobs parked for their next stage. While the journal cannot
    /// write (a full disk), the jobs stay in flight and the write is tried again with
    /// back-off; the journal shows down in `status`.
    private func record(_ jobs: [ClaimedJob], _ outcomes: [StageOutcome], ms: Double, entry: JobDefinition.StageEntry,
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
                    guard let photo = t.quarantinePhoto, case .failed(let reason) = t.kind else { continue }
                    do {
                        untaken += try Self.quarantinePhoto(PendingQuarantine(job: job.context.id, photoPath: photo, stage: entry.name, reason: reason),
                                                 taken: job.context.photoSHA256, journal: journal, quarantine: quarantine)
                    } catch { errors.append("job \(job.context.id): cannot quarantine \(photo): \(error)") }
                }
                return (transitions, errors, untaken)
            }
        }) { [unowned self] result in
            switch result {
            case .success(let (transitions, errors, untaken)):
                if !untaken.isEmpty { self.onUntaken(untaken) }
                if failures > 0 { self.unwritten[entry.name, default: 1] -= 1 }
                if self.dependencies["journal"] == false {
                    self.dependencies["journal"] = true
                    Log.notice("the journal records again")
                }
                self.ended(jobs, stage: entry.name)
                for (job, (t, outcome)) in zip(jobs, zip(transitions, outcomes)) {
                    self.report(job: job.context.id, owner: job.context.memo.owner, stage: entry, transition: t, outcome: outcome, ms: ms)
                }
                for e in errors { Log.error(e, stage: entry.name) }
                self.unpark(jobs, run: true)
            case .failure(let error) where !self.stopping:
                self.dependencies["journal"] = false
                if failures == 0 { self.unwritten[entry.name, default: 0] += 1 }
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
                if failures > 0 { self.unwritten[entry.name, default: 1] -= 1 }
                self.ended(jobs, stage: entry.name)
                self.unpark(jobs, run: false)
                for job in jobs { Log.error("cannot record the outcome: \(error)", job: job.context.id, stage: entry.name) }
            }
            self.pump()
            self.checkIdle()
        }
    }

    /// A stage run's jobs are recorded: forget them as in flight (their slot is free since
    /// the run returned).
    private func ended(_ jobs: [ClaimedJob], stage: String) {
        running[stage, default: jobs.count] -= jobs.count
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
    private func report(job id: Int64, owner: String?, stage entry: JobDefinition.StageEntry, transition t: Transition, outcome: StageOutcome,
                        ms: Double) {
        let stage = entry.name
        let base: [String: JSONValue] = ["stage": .string(stage), "ms": .double(ms)]
        let to = EventBus.Audience.owner(owner)
        switch outcome {
        case .continue, .skip:
            for dep in stageDependencies[stage] ?? [] where dependencies[dep] == false {
                dependencies[dep] = true
                Log.notice("\(dep) is reachable again", stage: stage)
            }
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
        case .unavailable(let dep, _):
            stageDependencies[stage, default: []].insert(dep)
            dependencies[dep] = false
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
            events.publish("stage_retry", job: id, base.merging(["delay_ms": .int(Int64(delay)), "reason": .string(reasonOf(outcome))]) { a, _ in a }, to: to)
        case .waitingForDependency(let delay):
            Log.warning("dependency down; next try in \(delay) ms", job: id, stage: stage)
            events.publish("stage_unavailable", job: id, base.merging(["delay_ms": .int(Int64(delay)), "reason": .string(reasonOf(outcome))]) { a, _ in a }, to: to)
        case .failed(let reason):
            Log.warning("failed: \(reason)", job: id, stage: stage)
            events.publish("stage_failed", job: id, base.merging(["reason": .string(reason)]) { a, _ in a }, to: to)
            events.publish("job_failed", job: id, ["stage": .string(stage), "reason": .string(reason)], to: to)
        case .abandoned:
            Log.info("outcome dropped: the job left running state meanwhile", job: id, stage: stage)
        }
    }

    private func reasonOf(_ o: StageOutcome) -> String {
        switch o {
        case .retry(let r, _), .fail(let r), .skip(let r): r
        case .unavailable(let d, let r): "\(d): \(r)"
        case .continue: ""
        }
    }
}
