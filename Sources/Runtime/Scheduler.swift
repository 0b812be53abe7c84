import EventLoop
import Foundation
import Journal
import PhotomemoCore
import StageKit

/// Runs each job's stages in order, owning everything stages must not: concurrency
/// limits, retries with back-off, dependency outages, the journal and quarantine.
///
///     pump ─▶ [pool] claim runnable jobs per stage (free slots only) ─▶ dispatch
///     dispatch ─▶ [pool] stage.run(jobs) ─▶ JobStateMachine decides ─▶ queue.recordOutcomes (+ next claims) ─▶ quarantine if failed
///              ─▶ [loop] free the slot, pump again
///
/// A slot runs one job, or for a `BatchStage` up to `batchLimit` jobs claimed together
/// (batches form only under load: a lone runnable job goes alone, at once).
///     timer ─▶ pump at the next back-off end or join deadline
///
/// Job state lives in the journal, not here: memory holds only the jobs running now, so
/// 100,000 photos in the inbox are 100,000 rows, not 100,000 objects.
final class Scheduler {
    let loop: EventLoop
    /// The job store (`JobQueue`: the SQLite journal today).
    let journal: any JobQueue
    let quarantine: Quarantine
    /// The definition in force, read at each claim and outcome (no copy of it here: a
    /// reload swaps it in one place). A run keeps the one it started with.
    let live: LiveDefinition
    var definition: JobDefinition { live.current }
    /// Jobs in flight and slots taken per stage (`SlotTable`).
    var slots = SlotTable()
    var claiming = false
    /// A reload is moving waiting jobs to the new stages: no claim until it is done.
    var movingStages = false
    var pumpAgain = false
    var stopping = false
    let wakeTimer: LoopTimer
    /// Stage runs whose outcomes (or jobs to put back in the queue) the journal could not
    /// write yet, and when to try again.
    var unrecorded: [() -> Void] = []
    let recordTimer: LoopTimer
    var onIdle: (() -> Void)?
    let events: EventBus
    /// Carries progress reports from stage threads to the loop.
    let wakeup: LoopWakeup.Sender
    /// The whole pipeline, or single stages, paused: no new stage runs start. Persisted.
    private(set) var paused: Bool
    private(set) var pausedStages: Set<String>
    /// Dependencies a stage (or the journal) reported unreachable, and whether they answer again.
    var health = DependencyHealth()
    var dependencies: [String: Bool] { health.up }
    var dependencyReasons: [String: String] { health.reasons }
    /// Job → stage of every job in flight (leases cover them until recorded).
    var runningJobs: [Int64: String] = [:]
    /// Of those, the jobs whose run returned and whose outcome is being written: not what
    /// a fatal signal's log line names.
    var recording: Set<Int64> = []
    /// The runs started, as the next process will read them after a kill (`StartMarks`):
    /// a job claimed but not started is not charged an attempt. The daemon's; nil in tests.
    var startMarks: StartMarks?
    /// Jobs claimed for their next stage while the loop has not yet heard that their last
    /// stage's outcome was written (the claim saw the commit first): each holds a slot of
    /// its stage and is dispatched right after that stage is reported, so a job's events
    /// keep their order and it is never in two stages at once.
    var parked: [Int64: (job: ClaimedJob, definition: JobDefinition)] = [:]
    /// Stage runs returned whose outcomes wait for the write in flight, and whether one
    /// is (`Scheduler+GroupCommit`: written together, in one transaction).
    var outcomesWaiting: [ReturnedRun] = []
    var writingOutcomes = false
    /// Per stage, the jobs claims in flight may bring (counted against its room): the
    /// pump's, and the outcome write's.
    var pumpClaims: [String: Int] = [:]
    var outcomeClaims: [String: Int] = [:]
    /// Jobs claimed ahead, per stage, in claiming order (`Scheduler+Ahead`): each starts
    /// the moment a slot of its stage is free, without a claim in between.
    var ahead: [String: [(job: ClaimedJob, definition: JobDefinition)]] = [:]
    /// Jobs claimed for a stage paused since (parked, or claimed while the pause was
    /// written) that go back to the queue instead of starting: their writes in flight.
    var releasing = 0
    /// A job that crashed the daemon once runs alone (nothing else starts meanwhile), so
    /// a second crash names it and no bystander.
    var crashSuspectRunning: Int64?
    /// Inbox names whose files are to be taken again (`quarantinePhoto`): set to the inbox's.
    var onUntaken: ([String]) -> Void = { _ in }

    /// Where photos may be: a stage opens a job's photo beneath its folder (`PhotoFile`).
    let photos: PhotoPolicy

    init(loop: EventLoop, journal: any JobQueue, quarantine: Quarantine, photos: PhotoPolicy, live: LiveDefinition, events: EventBus,
         wakeup: LoopWakeup.Sender) throws {
        self.wakeup = wakeup
        self.photos = photos
        self.loop = loop
        self.journal = journal
        self.quarantine = quarantine
        self.live = live
        self.events = events
        wakeTimer = try LoopTimer(loop: loop)
        recordTimer = try LoopTimer(loop: loop)
        paused = try journal.setting("paused") == "true"
        pausedStages = Set((try journal.setting("paused_stages") ?? "").split(separator: ",").map(String.init))
    }

    var runningCount: Int { slots.jobCount }
    var runsStarted: Int { slots.runsStarted }

    /// Every job this host holds a claim on: running, parked for its next stage, or
    /// claimed ahead. Their leases are renewed (`LeaseKeeper`).
    var leasedJobs: [Int64] { Array(runningJobs.keys) + parked.keys.map { $0 } + ahead.values.flatMap { $0.map(\.job.context.id) } }

    func running(stage: String) -> Int { slots.jobs(stage: stage) }

    /// The definition in force was swapped (`LiveDefinition.replace`), `previous` was the
    /// one before: running stages finish with the one they started with and their jobs go
    /// on at the new one's stages. Jobs waiting at a stage the new definition no longer has
    /// move to the next one it has (or are done): none is stranded.
    func definitionReplaced(previous: JobDefinition) {
        let old = previous.stages.map(\.name), new = definition.stages.map(\.name)
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
                if value { self.startAhead() } else { self.pump() }
            }
            done(error)
        }
    }

    /// Moves photos of failed jobs left unquarantined by a crash, then starts pumping.
    func start() {
        let journal = self.journal, quarantine = self.quarantine, copies = photos.daemonsOwn
        loop.submit({ () -> ([String], [String]) in
            var errors: [String] = [], untaken: [String] = []
            for p in (try? journal.pendingQuarantines()) ?? [] {
                do { untaken += try Self.quarantinePhoto(p, journal: journal, quarantine: quarantine, copies: copies) } catch {
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
        releaseAhead(because: "not started: the daemon stopped") { _ in true }
        retryUnrecorded()  // once more now; what still fails resumes at the next start
        checkIdle()
    }

    func close() {
        wakeTimer.close()
        recordTimer.close()
    }

    func retryUnrecorded() {
        recordTimer.stop()
        let pending = unrecorded
        unrecorded.removeAll()
        for retry in pending { retry() }
    }

    func checkIdle() {
        guard stopping, runningCount == 0, releasing == 0, !claiming, let done = onIdle else { return }
        onIdle = nil
        done()
    }

    func pump() {
        startAhead()
        guard !stopping, !paused, !movingStages else { return }
        guard !claiming else { pumpAgain = true; return }
        let def = definition
        // Per stage, the jobs to claim: a run's worth per free slot, and while every
        // outcome is written, up to a run's worth per slot more to hold ahead.
        let free = def.stages.enumerated()
            .map { i, s in (i, s.name, claimRoom(s)) }
            .filter { $0.2 > 0 && !pausedStages.contains($0.1) }
        guard !free.isEmpty, crashSuspectRunning == nil else { return }
        claiming = true
        let reserved = free.map { ClaimRequest(stageIndex: $0.0, stageName: $0.1, limit: $0.2) }
        reserve(reserved, +1, byPump: true)
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
                for (index, name, limit) in free {
                    claimed += try journal.claim(stageIndex: index, stageName: name, limit: limit, crashSuspects: false,
                                                 photoLocalEnd: def.photoLocalEnd, now: now)
                }
                return (claimed, false, try journal.nextWakeAt(), nil)
            } catch {
                return (claimed, false, nil, error)
            }
        }) { [unowned self] result in
            self.claiming = false
            self.reserve(reserved, -1, byPump: true)
            if result.suspect, let job = result.claimed.first {
                Log.notice("running alone: the daemon died of a fatal signal while this stage ran on it once", job: job.context.id,
                           stage: def.stages[job.stageIndex].name)
                self.crashSuspectRunning = job.context.id
            }
            let unparked = self.parkUnreported(result.claimed, definition: def)
            if result.suspect { self.dispatchClaimed(unparked, definition: def) } else { self.hold(unparked, definition: def) }
            if let error = result.error {
                // The journal cannot write (a full disk, most likely): an outage, shown in status.
                self.health.down(DependencyHealth.journal)
                Log.error("claiming jobs: \(error); retrying in 1 s")
                self.arm(unixNow() + 1)
            } else {
                if self.unrecorded.isEmpty, self.health.answers(DependencyHealth.journal) { Log.notice("the journal records again") }
                self.arm(result.wake)
            }
            if self.pumpAgain {
                self.pumpAgain = false
                self.pump()
            }
            self.checkIdle()
        }
    }

    func arm(_ at: Double?) {
        guard let at, !stopping else { return }
        let ms = max(0, (at - unixNow()) * 1000)
        wakeTimer.start(afterMs: UInt64(ms.rounded(.up)) + 1) { [unowned self] in self.pump() }
    }
}
