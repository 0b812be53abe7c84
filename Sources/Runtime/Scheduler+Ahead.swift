import Journal
import StageKit

/// Claiming ahead: each stage holds up to a run's worth of claimed jobs per slot beyond those running
/// (`ahead`), so a slot whose run returns starts its next job at once, on the loop,
/// instead of idling through a claim (a pool round trip and the journal's lock, often
/// behind another run's outcome and its fsync). On a backlog of 12 MP photos that wait
/// was most of what kept compress's two slots from keeping two cores busy.
///
/// A job claimed ahead is claimed as any other (`running`, leased, in round-robin order:
/// fair share moves by at most a run a slot), so after a SIGKILL it resumes at its stage
/// like a running job. It starts only as a run would have: not while its stage or the
/// pipeline is paused (it goes back to the queue unstarted, no attempt spent, as it does
/// when the daemon stops) nor while a crash suspect runs alone.
extension Scheduler {
    /// How many more jobs `stage` may hold ahead: a run's worth per slot (a batch stage's
    /// whole batch, or its next run would start with the one job held and batch no more).
    func aheadRoom(_ stage: String, concurrency: Int, jobsPerRun: Int) -> Int {
        max(0, concurrency * jobsPerRun - ahead[stage, default: []].count)
    }

    /// Jobs just claimed (not parked): they wait ahead in claiming order, then those with
    /// a free slot start. Stopping, they go back to the queue instead.
    func hold(_ jobs: [ClaimedJob], definition def: JobDefinition) {
        guard !jobs.isEmpty else { return }
        if stopping { return release(jobs, definition: def, because: "not started: the daemon stopped") }
        for job in jobs { ahead[def.stages[job.stageIndex].name, default: []].append((job, def)) }
        startAhead()
    }

    /// Starts held jobs on their stages' free slots (a batch stage's in batches of its
    /// size); those of a paused stage go back to the queue.
    func startAhead() {
        guard !stopping else { return }
        releaseAhead(because: "not started: the stage was paused after the job was claimed") { self.paused || self.pausedStages.contains($0) }
        guard crashSuspectRunning == nil else { return }
        for stage in ahead.keys.sorted() {
            guard var waiting = ahead[stage], let def = waiting.first?.definition,
                  let entry = def.stages.first(where: { $0.name == stage }) else { continue }
            // The concurrency in force (a reload may have changed it); the run keeps the
            // definition it was claimed with, as a running one does.
            let size = type(of: entry.stage).jobsPerRun
            let concurrency = definition.stages.first(where: { $0.name == stage })?.concurrency ?? entry.concurrency
            var free = slots.free(stage, concurrency: concurrency)
            while free > 0, !waiting.isEmpty {
                let run = Array(waiting.prefix(size))
                waiting.removeFirst(run.count)
                dispatch(run.map(\.job), definition: run[0].definition)
                free -= 1
            }
            ahead[stage] = waiting.isEmpty ? nil : waiting
        }
    }

    /// Jobs cancelled while held ahead: dropped unstarted (the journal has them cancelled;
    /// started, they would run only to have their outcome dropped and leave their files).
    func forgetHeld(_ ids: Set<Int64>) {
        for stage in ahead.keys.sorted() {
            ahead[stage]?.removeAll { ids.contains($0.job.context.id) }
            if ahead[stage]?.isEmpty == true { ahead[stage] = nil }
        }
    }

    /// Puts the held jobs of the stages `which` selects back in the queue, unstarted.
    func releaseAhead(because reason: String, _ which: (String) -> Bool) {
        for stage in ahead.keys.sorted() where which(stage) {
            guard let held = ahead.removeValue(forKey: stage) else { continue }
            release(held.map(\.job), definition: held[0].definition, because: reason)
        }
    }
}
