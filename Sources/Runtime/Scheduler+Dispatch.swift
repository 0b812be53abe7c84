import EventLoop
import Foundation
import Journal
import PhotomemoCore
import StageKit

/// Starting claimed jobs: in batches per slot, back to the queue when their stage was
/// paused since the claim, or parked until their last stage is reported.
extension Scheduler {
    /// Runs claimed jobs, a batch stage's in batches of its size; those of a stage paused
    /// since the claim go back to the queue instead (a paused stage starts no run).
    func dispatchClaimed(_ claimed: [ClaimedJob], definition def: JobDefinition) {
        let isPaused = { (job: ClaimedJob) in self.paused || self.pausedStages.contains(def.stages[job.stageIndex].name) }
        release(claimed.filter(isPaused), definition: def, because: "not started: the stage was paused after the job was claimed")
        let runnable = claimed.filter { !isPaused($0) }
        for index in Set(runnable.map(\.stageIndex)).sorted() {
            let jobs = runnable.filter { $0.stageIndex == index }
            let size = type(of: def.stages[index].stage).jobsPerRun
            for start in stride(from: 0, to: jobs.count, by: size) {
                dispatch(Array(jobs[start..<min(jobs.count, start + size)]), definition: def)
            }
        }
    }

    /// Puts claimed jobs back in the queue unstarted (no attempt spent); `reason` goes in
    /// their history. A write that fails is tried again with back-off, like an outcome.
    /// Stopping, they stay claimed and resume at the next start, as parked jobs do.
    func release(_ jobs: [ClaimedJob], definition def: JobDefinition, because reason: String, failures: Int = 0) {
        guard !jobs.isEmpty else { return }
        if failures == 0 { releasing += jobs.count }
        if let suspect = crashSuspectRunning, jobs.contains(where: { $0.context.id == suspect }) { crashSuspectRunning = nil }
        let journal = self.journal
        let claims = jobs.map { (job: $0, stage: def.stages[$0.stageIndex].name) }
        loop.submit({ () -> Error? in
            do {
                try journal.release(claims, reason: reason, now: unixNow())
                return nil
            } catch { return error }
        }) { [unowned self] error in
            if let error, !self.stopping {
                let delay = def.retry.delayMs(afterFailures: failures + 1)
                Log.error("cannot put \(jobs.count) claimed jobs back in the queue: \(error); trying again in \(delay) ms")
                self.unrecorded.append { [unowned self] in self.release(jobs, definition: def, because: reason, failures: failures + 1) }
                self.recordTimer.start(afterMs: UInt64(delay)) { [unowned self] in self.retryUnrecorded() }
                return
            }
            self.releasing -= jobs.count
            for (job, stage) in claims {
                if let error { Log.error("cannot put the job back in the queue: \(error)", job: job.context.id, stage: stage) }
                else { Log.info("back in the queue, \(reason)", job: job.context.id, stage: stage) }
            }
            // Queued again: if the stage was resumed meanwhile, nothing else may wake it
            // (SQLite has no NOTIFY, and the next wake-up looks only at waiting jobs).
            if error == nil { self.pump() }
            self.checkIdle()
        }
    }

    /// The parked jobs among `jobs` (whose stage was just reported): each gives back the
    /// slot it held, and they wait ahead (claimed ahead, they may find no slot free yet).
    func unpark(_ jobs: [ClaimedJob], run: Bool) {
        let next = jobs.compactMap { parked.removeValue(forKey: $0.context.id) }
        for (job, def) in next { slots.unpark(def.stages[job.stageIndex].name) }
        guard run, let def = next.first?.definition else { return }
        hold(next.map(\.job), definition: def)
    }

    /// Runs one slot's jobs (one, or a batch) and records their outcomes in one transaction.
    func dispatch(_ jobs: [ClaimedJob], definition def: JobDefinition) {
        let entry = def.stages[jobs[0].stageIndex]
        slots.started(entry.name, jobs: jobs.count)
        for job in jobs { runningJobs[job.context.id] = entry.name }
        startMarks?.started(jobs.map { ($0.context.id, $0.context.attempt) })
        logRunning()
        let contexts = jobs.map { job in
            Log.debug("started (attempt \(job.context.attempt))", job: job.context.id, stage: entry.name)
            let owner = EventBus.Audience.owner(job.context.memo.owner)
            events.publish("stage_started", job: job.context.id, ["stage": .string(entry.name), "attempt": .int(Int64(job.context.attempt))],
                           to: owner)
            var context = job.context
            context.photoRoot = context.photoPath.flatMap(photos.root(of:))
            context.maxPhotoBytes = def.maxPhotoBytes
            context.photoIsDaemons = context.photoRoot != nil && context.photoRoot == photos.daemonsOwn
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
            self.slots.returned(entry.name)
            self.startAhead()  // the slot's next job first: its run need not wait for this one's outcome
            for job in jobs { self.recording.insert(job.context.id) }
            self.logRunning()
            self.record(jobs, run.outcomes, ms: run.ms, entry: entry, definition: def)
            self.pump()
        }
    }

    /// What a fatal signal would interrupt: the jobs whose stage runs now.
    func logRunning() {
        FatalSignalLog.setRunning(runningJobs.filter { !recording.contains($0.key) }.map { ($0.key, $0.value) })
    }
}
