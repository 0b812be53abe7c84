import Journal
import PhotomemoCore
import StageKit

/// A stage run that returned, its outcomes not yet in the journal.
struct ReturnedRun {
    let jobs: [ClaimedJob]
    let outcomes: [StageOutcome]
    let ms: Double
    let entry: JobDefinition.StageEntry
    /// The definition the run started with (its steps are decided with it).
    let definition: JobDefinition
    /// Writes of these outcomes that failed so far.
    let failures: Int
}

/// Group commit, and claiming in the outcome's transaction. One outcome write is in flight
/// at a time; the runs that return meanwhile wait and go together in the next (one
/// transaction, one fsync, instead of one each behind the other). The same transaction
/// claims what the stages the runs' jobs move to have room for (and, with a job still held
/// there, the runs' own stages: `claimsAfter`): the next stage's job is dispatched as soon
/// as the loop hears of the commit, without a claim round trip of its own. A claim in
/// flight counts against its stage's room (`claimRoom`).
extension Scheduler {
    /// Whether recording `steps` may skip waiting for the disk: each job moves on from a
    /// stage no one outside sees to another such stage (`Stage.runsUnseen`). Not to one
    /// that is seen: upload may remove the inbox photo, which a stage run again after a
    /// power loss undid the outcome would need, so what came before it is durable first.
    static func unseen(_ steps: [JobStep], from stage: any Stage, in definition: JobDefinition) -> Bool {
        type(of: stage).runsUnseen && steps.allSatisfy { step in
            guard case .advance(let next) = step.next, definition.stages.indices.contains(next) else { return false }
            return type(of: definition.stages[next].stage).runsUnseen
        }
    }

    func writeOutcomes() {
        guard !writingOutcomes, !outcomesWaiting.isEmpty else { return }
        let batch = outcomesWaiting
        outcomesWaiting.removeAll()
        writingOutcomes = true
        // Decided with the definition each run started with, then moved to the current one.
        let current = definition, names = current.stages.map(\.name)
        let runs = batch.map { r in
            let old = r.definition.stages.map(\.name)
            let steps = JobStateMachine.steps(Array(zip(r.jobs, r.outcomes)), stageCount: r.definition.stages.count, retry: r.definition.retry)
                .map { ($0.job, $0.step.moved(from: old, to: names)) }
            return StageRunSteps(steps: steps, stageName: r.entry.name, durationMs: r.ms,
                                 durable: !Self.unseen(steps.map(\.1), from: r.entry.stage, in: current))
        }
        let claims = claimsAfter(runs, definition: current)
        reserve(claims, +1, byPump: false)
        let journal = self.journal, quarantine = self.quarantine, copies = photos.daemonsOwn
        loop.submit({ () -> Result<(RecordedOutcomes, [(String, String)], [String]), Error> in
            Failpoint.hit("stage.before_journal")
            return Result {
                let recorded = try journal.recordOutcomes(runs, thenClaim: claims, photoLocalEnd: current.photoLocalEnd, now: unixNow())
                Failpoint.hit("stage.after_journal")  // committed: jobs claimed for their next stage, not started
                // Recorded: a photo that fails to move now is moved at the next start.
                var errors: [(String, String)] = [], untaken: [String] = []
                for (run, transitions) in zip(batch, recorded.transitions) {
                    for (job, t) in zip(run.jobs, transitions) {
                        guard let photo = t.quarantinePhoto, case .failed(let error) = t.kind else { continue }
                        do {
                            untaken += try Self.quarantinePhoto(PendingQuarantine(job: job.context.id, photoPath: photo, stage: run.entry.name,
                                                                                  reason: error.message, code: error.code),
                                                                taken: job.context.photoSHA256,
                                                                takenSize: job.context.photoSeal.flatMap(PhotoSeal.size) ?? current.maxPhotoBytes,
                                                                journal: journal, quarantine: quarantine, copies: copies)
                        } catch { errors.append(("job \(job.context.id): cannot quarantine \(photo): \(error)", run.entry.name)) }
                    }
                }
                return (recorded, errors, untaken)
            }
        }) { [unowned self] result in
            self.writingOutcomes = false
            self.reserve(claims, -1, byPump: false)
            switch result {
            case .success(let (recorded, errors, untaken)):
                if !untaken.isEmpty { self.onUntaken(untaken) }
                if self.health.answers(DependencyHealth.journal) { Log.notice("the journal records again") }
                for (run, transitions) in zip(batch, recorded.transitions) { self.recorded(run, transitions) }
                for (e, stage) in errors { Log.error(e, stage: stage) }
                self.hold(self.parkUnreported(recorded.claimed, definition: current), definition: current)
            case .failure(let error):
                for run in batch { self.notRecorded(run, error) }
                // Not stopping: the retry pumps once it is written.
                if !self.stopping { return self.writeOutcomes() }
            }
            self.writeOutcomes()
            self.pump()
            self.checkIdle()
        }
    }

    /// What the outcome's transaction claims: the room of the stages the runs' jobs move
    /// to, and of the runs' own stages while a job is still held there for the next free
    /// slot; none while nothing may start. A run's own stage with nothing held is left to
    /// `pump`, which refills it at once: this write may wait on a slow disk, holding that
    /// room meanwhile, and the stage's next slot could idle.
    func claimsAfter(_ runs: [StageRunSteps], definition def: JobDefinition) -> [ClaimRequest] {
        guard !stopping, !paused, !movingStages, crashSuspectRunning == nil else { return [] }
        var next = Set<Int>(), own = Set<Int>()
        for run in runs {
            if ahead[run.stageName]?.isEmpty == false, let i = def.stages.firstIndex(where: { $0.name == run.stageName }) { own.insert(i) }
            for (_, step) in run.steps { if case .advance(let n) = step.next, n < def.stages.count { next.insert(n) } }
        }
        return next.union(own).sorted().compactMap { i in
            let entry = def.stages[i]
            // A next stage's claim does not wait for a pump's claim in flight (`claimRoom`);
            // the own stage's room is the pump's first.
            let room = pausedStages.contains(entry.name) ? 0 : claimRoom(entry, pumping: !next.contains(i))
            return room > 0 ? ClaimRequest(stageIndex: i, stageName: entry.name, limit: room) : nil
        }
    }

    /// How many jobs `stage` may claim now: a run's worth per free slot, and while every
    /// outcome is written, a run's worth per slot more to hold ahead; less what claims in
    /// flight will bring. An outcome's claim does not wait for a pump's claim in flight
    /// (`pumping`: it would leave the job to that claim, or to the next, a round trip
    /// later); if both find jobs the stage holds up to a run a slot more for a while, in
    /// turn order all the same.
    func claimRoom(_ entry: JobDefinition.StageEntry, pumping: Bool = true) -> Int {
        let perRun = type(of: entry.stage).jobsPerRun
        let room = max(0, slots.free(entry.name, concurrency: entry.concurrency)) * perRun
            + (unrecorded.isEmpty ? aheadRoom(entry.name, concurrency: entry.concurrency, jobsPerRun: perRun) : 0)
        return max(0, room - outcomeClaims[entry.name, default: 0] - (pumping ? pumpClaims[entry.name, default: 0] : 0))
    }

    /// Counts claims in flight (`sign` +1) or done (-1) against their stages' room.
    func reserve(_ claims: [ClaimRequest], _ sign: Int, byPump: Bool) {
        for c in claims {
            let n = (byPump ? pumpClaims : outcomeClaims)[c.stageName, default: 0] + sign * c.limit
            if byPump { pumpClaims[c.stageName] = n > 0 ? n : nil } else { outcomeClaims[c.stageName] = n > 0 ? n : nil }
        }
    }

    /// Of jobs just claimed, those whose last stage's outcome the loop has not heard of
    /// yet (the claim saw its commit first) park until it has; returns the others.
    func parkUnreported(_ claimed: [ClaimedJob], definition def: JobDefinition) -> [ClaimedJob] {
        claimed.filter { job in
            guard runningJobs[job.context.id] != nil else { return true }
            parked[job.context.id] = (job, def)
            slots.park(def.stages[job.stageIndex].name)
            return false
        }
    }
}
