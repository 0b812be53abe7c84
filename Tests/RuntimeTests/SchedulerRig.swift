import EventLoop
import Foundation
import Journal
@testable import PhotomemoCore
@testable import StageKit
@testable import Runtime

/// A stage written by the test: `body` decides each run's outcome. It counts the runs
/// in flight (and the most seen at once) and logs every run with its time.
struct TestStage: Stage {
    static let name = "test"
    static let summary = "a stage written by the test"
    static let options: [StageOption] = []
    static let workload = StageWorkload.io

    let probe: StageProbe
    let body: @Sendable (JobContext) -> StageOutcome

    init(_ probe: StageProbe = StageProbe(), _ body: @escaping @Sendable (JobContext) -> StageOutcome = { _ in .continue() }) {
        self.probe = probe
        self.body = body
    }

    init(options: StageOptions, environment: StageEnvironment) throws { self.init() }

    func run(_ job: JobContext) -> StageOutcome { probe.around([job]) { [body(job)] }[0] }
}

/// A batch stage written by the test, that logs the size of each batch it gets.
struct TestBatchStage: BatchStage {
    static let name = "test-batch"
    static let summary = "a batch stage written by the test"
    static let options: [StageOption] = []
    static let workload = StageWorkload.io
    static let batchLimit = 8

    let probe: StageProbe
    init(_ probe: StageProbe) { self.probe = probe }
    init(options: StageOptions, environment: StageEnvironment) throws { probe = StageProbe() }

    func run(batch jobs: [JobContext]) -> [StageOutcome] { probe.around(jobs) { jobs.map { _ in .continue() } } }
}

/// What a test stage saw, from the stage's threads.
final class StageProbe: Sendable {
    struct Run: Sendable { let job: Int64, attempt: Int, at: Double }
    let runs = LockedValue<[Run]>([])
    let batches = LockedValue<[Int]>([])
    let inFlight = LockedValue(0), maxInFlight = LockedValue(0)
    /// While set, runs wait (with a deadline) before they return: work that takes a while.
    let hold = LockedValue(false)
    /// Runs wait (up to 0.5 s) until this many are in flight together.
    let gate = LockedValue(0)

    func around(_ jobs: [JobContext], _ body: () -> [StageOutcome]) -> [StageOutcome] {
        let now = unixNow()
        runs.withLock { $0 += jobs.map { Run(job: $0.id, attempt: $0.attempt, at: now) } }
        batches.withLock { $0.append(jobs.count) }
        let n = inFlight.withLock { v -> Int in v += 1; return v }
        maxInFlight.withLock { $0 = max($0, n) }
        let deadline = unixNow() + 10, gateDeadline = unixNow() + 0.5
        // A stage's own blocking work (what the scheduler must wait for), not test synchronisation.
        while hold.value && unixNow() < deadline { usleep(1000) }
        while inFlight.value < gate.value && unixNow() < gateDeadline { usleep(1000) }
        defer { inFlight.withLock { $0 -= 1 } }
        return body()
    }

    func attempts(of job: Int64) -> [Run] { runs.value.filter { $0.job == job } }
}

/// A journal in a temp home, a real loop and the scheduler as the daemon wires it.
final class SchedulerRig {
    let t: TestHome
    let loop: EventLoop
    let events = EventBus()
    let wakeup: LoopWakeup
    let scheduler: Scheduler
    /// The definition in force, as the daemon's reload swaps it.
    let live: LiveDefinition
    var journal: Journal { t.journal }
    /// What else the test opened on the loop, closed when `run` stops.
    var closers: [() -> Void] = []

    /// `paused`: the pipeline starts paused (as after `photomemo pause`), so nothing runs.
    /// `queue`: what the scheduler writes through, given the rig's journal (default: it).
    init(_ stages: [(name: String, stage: any Stage, concurrency: Int)], retry: RetryPolicy = .exponentialJitter(maxAttempts: 3, baseMs: 1, maxMs: 1),
         paused: Bool = false, queue: (Journal) -> any JobQueue = { $0 }) throws {
        t = try TestHome()
        if paused { try t.journal.setSetting("paused", "true") }
        loop = try EventLoop()
        wakeup = try LoopWakeup(loop: loop)
        let def = JobDefinition(name: "test", stages: stages.map { .init(name: $0.name, stage: $0.stage, concurrency: $0.concurrency) },
                                retry: retry, joinTimeoutSeconds: 600, source: "test", database: StageEnvironment.defaultDatabase,
                                store: StageEnvironment.defaultStore, inbox: InboxOptions())
        live = LiveDefinition(def)
        scheduler = try Scheduler(loop: loop, journal: queue(t.journal), quarantine: t.quarantine, photos: t.photos, live: live, events: events,
                                  wakeup: wakeup.sender)
    }

    /// Queues `n` memo jobs (no photo); returns their ids.
    @discardableResult
    func enqueue(_ n: Int, owner: String? = nil) throws -> [Int64] {
        let memos = (0..<n).map { i in
            QueuedMemo(memo: MemoJob(memo: "m\(i)", owner: owner), photo: .none, key: "k-\(UUID().uuidString)", source: "test")
        }
        return try journal.commitMemos(memos, position: nil, joinTimeoutSeconds: 600).map {
            guard case .created(let id, _) = $0 else { throw PhotomemoError(.internalError, "not created: \($0)") }
            return id
        }
    }

    func state(_ id: Int64) throws -> JobState? { try journal.job(id)?.state }

    /// Runs the loop with the scheduler started until `done` holds (checked every 5 ms on
    /// the loop thread) or `timeout` passes, then stops the scheduler (letting running
    /// stages finish) and closes every handle. `step` runs on each check, for tests that
    /// act while the loop runs; `start` false leaves starting the scheduler to the test. Returns whether `done` held and the loop's close status.
    func run(timeout: Double = 10, start: Bool = true, step: (() -> Void)? = nil, until done: @escaping () -> Bool) throws -> (met: Bool, closed: Int32) {
        let poll = try LoopTimer(loop: loop)
        let deadline = unixNow() + timeout
        var met = false
        if start { scheduler.start() }
        poll.start(afterMs: 5, repeatMs: 5) { [self] in
            step?()
            met = done()
            guard met || unixNow() > deadline else { return }
            poll.close()
            scheduler.stop { [self] in
                for close in closers { close() }
                scheduler.close()
                wakeup.close()
            }
        }
        loop.run()
        return (met, loop.close())
    }
}
