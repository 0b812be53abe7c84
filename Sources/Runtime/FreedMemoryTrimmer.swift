import EventLoop
import PhotomemoCore

/// Gives freed memory back once the daemon is quiet. While photos flow, glibc keeps what a
/// photo freed for the next (`keepFreedMemory`'s pad: no page faulted in again); each tick
/// (a second) in which no stage started or ran, the work pool trims it away, so RSS goes
/// back to its baseline after a burst or a storm (issue 25) without each photo paying for
/// it. Queries are not counted: a quiet second after a query storm trims as well.
final class FreedMemoryTrimmer: ClosingService {
    /// Stage runs started so far and running now (the scheduler's).
    typealias Activity = () -> (started: Int, running: Int)

    private let loop: EventLoop
    private let timer: LoopTimer
    private let periodMs: UInt64
    private let activity: Activity
    private let trim: @Sendable () -> Void
    private var lastStarted = -1
    private var trimming = false
    /// Trims done so far (tests).
    private(set) var trims = 0

    init(loop: EventLoop, periodMs: UInt64 = 1000, activity: @escaping Activity,
         trim: @escaping @Sendable () -> Void = giveBackFreedMemory) throws {
        self.loop = loop
        self.periodMs = periodMs
        self.activity = activity
        self.trim = trim
        timer = try LoopTimer(loop: loop)
    }

    func start() {
        timer.start(afterMs: periodMs, repeatMs: periodMs) { [unowned self] in self.tick() }
    }

    func close() { timer.close() }

    private func tick() {
        let now = activity()
        defer { lastStarted = now.started }
        guard !trimming, now.running == 0, now.started == lastStarted else { return }
        trimming = true
        loop.submit(trim) { [weak self] in
            self?.trimming = false
            self?.trims += 1
        }
    }
}
