import EventLoop
import Foundation
import Journal
import PhotomemoCore

/// Runs each job's stages in order, owning everything stages must not: concurrency
/// limits, retries with back-off, dependency outages, the journal and quarantine.
///
///     pump ─▶ [pool] claim runnable jobs per stage (free slots only) ─▶ dispatch
///     dispatch ─▶ [pool] stage.run(job) ─▶ journal.recordOutcome ─▶ quarantine if failed
///              ─▶ [loop] free the slot, pump again
///     timer ─▶ pump at the next back-off end or join deadline
///
/// Job state lives in the journal, not here: memory holds only the jobs running now, so
/// 100,000 photos in the inbox are 100,000 rows, not 100,000 objects.
final class Scheduler {
    private let loop: EventLoop
    private let journal: Journal
    private let quarantine: Quarantine
    private(set) var definition: JobDefinition
    private var running: [String: Int] = [:]
    private var claiming = false
    private var pumpAgain = false
    private var stopping = false
    private let wakeTimer: LoopTimer
    private var onIdle: (() -> Void)?
    private(set) var paused: Bool

    init(loop: EventLoop, journal: Journal, quarantine: Quarantine, definition: JobDefinition) throws {
        self.loop = loop
        self.journal = journal
        self.quarantine = quarantine
        self.definition = definition
        wakeTimer = try LoopTimer(loop: loop)
        paused = try journal.setting("paused") == "true"
    }

    var runningCount: Int { running.values.reduce(0, +) }

    /// Swaps the job definition; running stages finish with the one they started with.
    func replace(definition: JobDefinition) {
        self.definition = definition
        pump()
    }

    func setPaused(_ value: Bool) throws {
        try journal.setSetting("paused", value ? "true" : nil)
        paused = value
        if !value { pump() }
    }

    /// Moves photos of failed jobs left unquarantined by a crash, then starts pumping.
    func start() {
        let journal = self.journal, quarantine = self.quarantine
        loop.submit({ () -> [String] in
            var errors: [String] = []
            for p in (try? journal.pendingQuarantines()) ?? [] {
                do { try Self.quarantinePhoto(p, journal: journal, quarantine: quarantine) } catch {
                    errors.append("job \(p.job): cannot quarantine \(p.photoPath): \(error)")
                }
            }
            return errors
        }) { [unowned self] errors in
            for e in errors { Log.error(e) }
            self.pump()
        }
    }

    /// Stops claiming work; `done` runs once every running stage has finished.
    func stop(_ done: @escaping () -> Void) {
        stopping = true
        wakeTimer.stop()
        onIdle = done
        checkIdle()
    }

    func close() { wakeTimer.close() }

    private func checkIdle() {
        guard stopping, runningCount == 0, !claiming, let done = onIdle else { return }
        onIdle = nil
        done()
    }

    func pump() {
        guard !stopping, !paused else { return }
        guard !claiming else { pumpAgain = true; return }
        let def = definition
        let free = def.stages.enumerated().map { i, s in (i, s.name, s.concurrency - running[s.name, default: 0]) }
            .filter { $0.2 > 0 }
        claiming = true
        let journal = self.journal
        loop.submit({ () -> Result<([ClaimedJob], Double?), Error> in
            Result {
                let now = unixNow()
                for id in try journal.expireJoins(now: now) { Log.warning("gave up waiting for the photo", job: id) }
                var claimed: [ClaimedJob] = []
                for (index, name, slots) in free {
                    claimed += try journal.claim(stageIndex: index, stageName: name, limit: slots, now: now)
                }
                return (claimed, try journal.nextWakeAt())
            }
        }) { [unowned self] result in
            self.claiming = false
            switch result {
            case .success(let (claimed, wake)):
                for job in claimed { self.dispatch(job, definition: def) }
                self.arm(wake)
            case .failure(let error):
                Log.error("claiming jobs: \(error); retrying in 1 s")
                self.arm(unixNow() + 1)
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

    private func dispatch(_ job: ClaimedJob, definition def: JobDefinition) {
        let entry = def.stages[job.stageIndex]
        running[entry.name, default: 0] += 1
        Log.debug("started (attempt \(job.context.attempt))", job: job.context.id, stage: entry.name)
        let journal = self.journal, quarantine = self.quarantine
        let stageCount = def.stages.count, retry = def.retry
        loop.submit({ () -> Result<Transition, Error> in
            let clock = ContinuousClock()
            let started = clock.now
            let outcome = entry.stage.run(job.context)
            let ms = Double((clock.now - started).milliseconds)
            Failpoint.hit("stage.before_journal")
            return Result {
                let t = try journal.recordOutcome(job: job, stageName: entry.name, outcome: outcome, durationMs: ms,
                                                  stageCount: stageCount, retry: retry)
                if let photo = t.quarantinePhoto, case .failed(let reason) = t.kind {
                    try Self.quarantinePhoto(PendingQuarantine(job: job.context.id, photoPath: photo, stage: entry.name, reason: reason),
                                             journal: journal, quarantine: quarantine)
                }
                return t
            }
        }) { [unowned self] result in
            self.running[entry.name, default: 1] -= 1
            let id = job.context.id
            switch result {
            case .success(let t):
                switch t.kind {
                case .advanced: Log.debug("done", job: id, stage: entry.name)
                case .finished: Log.info("job done", job: id, stage: entry.name)
                case .retrying(let ms): Log.notice("retrying in \(ms) ms", job: id, stage: entry.name)
                case .waitingForDependency(let ms): Log.warning("dependency down; next try in \(ms) ms", job: id, stage: entry.name)
                case .failed(let reason): Log.warning("failed: \(reason)", job: id, stage: entry.name)
                case .abandoned: Log.info("outcome dropped: the job left running state meanwhile", job: id, stage: entry.name)
                }
            case .failure(let error):
                // The journal could not record it: the job stays `running` and resumes at restart.
                Log.error("cannot record the outcome: \(error)", job: id, stage: entry.name)
            }
            self.pump()
            self.checkIdle()
        }
    }

    static func quarantinePhoto(_ p: PendingQuarantine, journal: Journal, quarantine: Quarantine) throws {
        let name = (p.photoPath as NSString).lastPathComponent
        guard p.photoPath.hasPrefix(quarantine.inbox + "/") else {
            try journal.markQuarantined(job: p.job, at: "(not moved: \(p.photoPath) is outside the inbox)")
            return
        }
        let why = Quarantine.reason(p.reason, job: p.job, stage: p.stage, extra: ["source": "inbox", "name": .string(name)])
        let moved = try quarantine.moveFile(at: p.photoPath, name: name, reason: why, job: p.job)
        try journal.markQuarantined(job: p.job, at: moved)
    }
}
