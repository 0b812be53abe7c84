import Foundation
import PhotomemoCore
import StageKit

/// `exec` with `"workers": N`: N long-lived children of the command, each taking up to
/// `in_flight` jobs at a time as JSON lines (docs/exec-workers.md). `run` blocks its pool
/// thread until its job's answer, the job's timeout, or the worker's end; the workers'
/// pipes are read on their own threads (`WorkerProcess`), never on the loop.
///
/// A worker that answers garbage, a line past `maxAnswerBytes`, or not in time is ended
/// (its jobs retry) and started again; one that exits is started again after a back-off
/// that doubles while it never answers. Crashing at start `startFailuresForDown` times in
/// a row makes the stage's dependency down: jobs wait (`.unavailable`, no attempts spent)
/// and a new start is tried after a longer back-off.
final class ExecWorkerPool: @unchecked Sendable {
    struct Config: Sendable {
        let command: [String]
        let environment: [String: String]
        let workers: Int
        let inFlight: Int
        let timeoutMs: Int
        let dependency: String
    }

    private final class Pending {
        var outcome: StageOutcome?
        /// The worker's answer, without its request id.
        var answer: JSONValue?
    }

    private struct Slot {
        var process: WorkerProcess?
        /// Ended by us (garbage, timeout, retire): its exit is no crash at start.
        var dying = false
        var pending: [Int64: Pending] = [:]
        var startedAt: UInt64 = 0
        var answered = false
        var exitsInARow = 0
        var startFailures = 0
        var nextStartAt: UInt64 = 0
        var stderrTail: [String] = []
        /// This second's logged stderr lines, and those not logged since the last one was.
        var stderrSecond: (start: UInt64, logged: Int) = (0, 0)
        var stderrDropped = 0

        var busy: Int { pending.values.filter { $0.outcome == nil }.count }
    }

    static let maxAnswerBytes = 1 << 20  // a control-socket request line's limit
    /// Stderr lines a worker gets into the log a second: one printing a line per pixel
    /// would fill the disk through it. The rest are counted, the count logged with the next.
    static let stderrLinesPerSecond = 100
    static let startFailuresForDown = 3
    static let startWindowNs: UInt64 = 5_000_000_000

    let config: Config
    // Safe: `slots`, `nextRequest`, `down` and `retired` are only touched with `cond` held.
    private let cond = NSCondition()
    private var slots: [Slot]
    private var nextRequest: Int64 = 1
    private var down: (reason: String, until: UInt64)?
    private var retired = false

    init(_ config: Config) {
        self.config = config
        slots = Array(repeating: Slot(), count: config.workers)
    }

    private var program: String { config.command[0] }

    func run(_ job: JobContext) -> StageOutcome {
        let deadline = Subprocess.nowNs() + UInt64(config.timeoutMs) * 1_000_000
        cond.lock()
        let index: Int
        while true {
            let now = Subprocess.nowNs()
            if retired { cond.unlock(); return .retry(.stageError, "\(program) was stopped: the job definition was reloaded") }
            if let d = down, now < d.until { cond.unlock(); return .unavailable(dependency: config.dependency, .dependency, d.reason) }
            if let i = readySlot() { index = i; break }
            if let i = slots.indices.first(where: { slots[$0].process == nil && now >= slots[$0].nextStartAt }) {
                if let stopped = start(i) { cond.unlock(); return stopped }
                continue
            }
            let next = slots.filter { $0.process == nil }.map(\.nextStartAt).min() ?? now + 1_000_000_000
            _ = cond.wait(until: Self.date(min(next, now + 1_000_000_000)))
        }
        let id = nextRequest
        nextRequest += 1
        let pending = Pending()
        slots[index].pending[id] = pending
        let process = slots[index].process!
        cond.unlock()

        var request = job.json.objectValue ?? [:]
        request["request"] = .int(id)
        let sent = process.send(Array((JSONValue.object(request).jsonString + "\n").utf8), deadline: deadline)
        cond.lock()
        defer { slots[index].pending[id] = nil; cond.unlock() }
        if !sent && pending.outcome == nil {
            let why = Subprocess.nowNs() >= deadline ? "did not read its job within \(config.timeoutMs) ms" : "closed its stdin"
            end(index, process, because: "worker pid \(process.pid) \(why)")
        }
        while pending.outcome == nil {
            if !cond.wait(until: Self.date(deadline)) && pending.outcome == nil {
                end(index, process, because: "worker pid \(process.pid) timed out after \(config.timeoutMs) ms", code: .timeout)
            }
        }
        // Its annotations go into the job's working set, here on the job's thread.
        return pending.answer.map { ExecStage.answer($0, job: job) } ?? pending.outcome!
    }

    /// Stops every worker gracefully: stdin closed, TERM if still there after the grace.
    func retire() {
        cond.lock()
        retired = true
        let processes = slots.compactMap(\.process)
        for i in slots.indices { slots[i].dying = true }
        cond.broadcast()
        cond.unlock()
        for p in processes { p.stop(graceMs: min(config.timeoutMs, 5000)) }
    }

    /// The live worker with the fewest jobs, if one has room.
    private func readySlot() -> Int? {
        slots.indices.filter { slots[$0].process != nil && !slots[$0].dying && slots[$0].busy < config.inFlight }
            .min { slots[$0].busy < slots[$1].busy }
    }

    /// Starts slot `i`'s worker (the lock held); an outcome when the daemon is stopping.
    private func start(_ i: Int) -> StageOutcome? {
        slots[i].startedAt = Subprocess.nowNs()
        slots[i].answered = false
        slots[i].dying = false
        slots[i].stderrTail = []
        let box = LockedValue<WorkerProcess?>(nil)
        do {
            let p = try WorkerProcess(config.command, environment: config.environment, maxLineBytes: Self.maxAnswerBytes) { [weak self] event in
                // Events can come before `init` returns: wait for the process to be known.
                self?.cond.lock()
                let process = box.value
                self?.cond.unlock()
                if let self, let process { self.handle(event, slot: i, process: process) }
            }
            box.value = p
            slots[i].process = p
            Log.info("worker pid \(p.pid) started", stage: ExecStage.name)
            return nil
        } catch let e as PhotomemoError where e.code == .notRunning {
            return .retry(.stageError, "\(program) was stopped: the daemon is shutting down")
        } catch {
            exited(i, how: "cannot start: \(error)")
            return nil
        }
    }

    private func handle(_ event: WorkerProcess.Event, slot i: Int, process: WorkerProcess) {
        cond.lock()
        defer { cond.broadcast(); cond.unlock() }
        guard slots[i].process === process else { return }  // an earlier worker of this slot
        switch event {
        case .line where slots[i].dying, .lineTooLong where slots[i].dying:
            return  // being ended: what else it says is not read, nor logged (a flood of lines wrote 29 MB of log)
        case .line(let bytes):
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { return }
            guard case .object(var answer)? = try? JSONValue.parse(Data(bytes)), let id = answer["request"]?.intValue,
                  let pending = slots[i].pending[id], pending.outcome == nil else {
                let text = String(decoding: bytes.prefix(200), as: UTF8.self)
                return end(i, process, because: "worker pid \(process.pid) answered a line that is not an answer to a job it has: \(text)")
            }
            answer["request"] = nil
            logDroppedStderr(i, "worker pid \(process.pid)")
            pending.answer = .object(answer)
            pending.outcome = ExecStage.parseOutcome(.object(answer))
            slots[i].answered = true
            (slots[i].exitsInARow, slots[i].startFailures) = (0, 0)
            down = nil
        case .lineTooLong:
            end(i, process, because: "worker pid \(process.pid) answered a line longer than \(Self.maxAnswerBytes) bytes")
        case .stderr(let line):
            slots[i].stderrTail = Array((slots[i].stderrTail + [line]).suffix(3))
            let now = Subprocess.nowNs()
            if now - slots[i].stderrSecond.start >= 1_000_000_000 { slots[i].stderrSecond = (now, 0) }
            guard slots[i].stderrSecond.logged < Self.stderrLinesPerSecond else { return slots[i].stderrDropped += 1 }
            slots[i].stderrSecond.logged += 1
            logDroppedStderr(i, "worker pid \(process.pid)")
            Log.info("worker pid \(process.pid): \(line)", stage: ExecStage.name)
        case .exited(let status, let signal):
            let how = signal.map { "was killed by signal \($0)" } ?? "exited with status \(status ?? -1)"
            exited(i, how: "worker pid \(process.pid) \(how)")
        }
    }

    /// Logs how many of slot `i`'s stderr lines were left out of the log since the last
    /// one logged (the lock held): with the next line logged, an answer, or its exit.
    private func logDroppedStderr(_ i: Int, _ who: String) {
        guard slots[i].stderrDropped > 0 else { return }
        Log.info("\(who): \(slots[i].stderrDropped) stderr lines not logged (over \(Self.stderrLinesPerSecond) a second)", stage: ExecStage.name)
        slots[i].stderrDropped = 0
    }

    /// Ends slot `i`'s worker (the lock held): its unanswered jobs retry with `reason`.
    private func end(_ i: Int, _ process: WorkerProcess, because reason: String, code: PhotomemoError.Code = .stageError) {
        guard slots[i].process === process, !slots[i].dying else { return }
        for p in slots[i].pending.values where p.outcome == nil { p.outcome = .retry(code, reason + tail(i)) }
        slots[i].dying = true
        process.terminate()
        Log.warning("\(reason); ending it", stage: ExecStage.name)
    }

    /// Slot `i`'s worker is gone (or never started): its jobs retry, and it starts again after a back-off.
    private func exited(_ i: Int, how: String) {
        let now = Subprocess.nowNs()
        let why = tail(i)
        logDroppedStderr(i, how)
        defer {
            // Its jobs retry, or wait without spending attempts once the program is down.
            for p in slots[i].pending.values where p.outcome == nil {
                p.outcome = down.map { .unavailable(dependency: config.dependency, .dependency, $0.reason) }
                    ?? .retry(.stageError, "\(program) \(how) mid-job\(why)")
            }
        }
        let crashedAtStart = !slots[i].dying && !slots[i].answered && now - slots[i].startedAt < Self.startWindowNs
        slots[i].process = nil
        slots[i].dying = false
        if retired { return }
        slots[i].exitsInARow += 1
        if crashedAtStart { slots[i].startFailures += 1 }
        let backoffMs = min(10_000, 100 << min(slots[i].exitsInARow - 1, 10))
        slots[i].nextStartAt = now + UInt64(backoffMs) * 1_000_000
        let failures = slots[i].startFailures
        if failures >= Self.startFailuresForDown {
            let waitMs = min(60_000, 5_000 << min(failures - Self.startFailuresForDown, 4))
            down = (reason: "\(program) crashed at start \(failures) times in a row (\(how))\(why)", until: now + UInt64(waitMs) * 1_000_000)
            slots[i].nextStartAt = down!.until
            Log.error("\(down!.reason); jobs wait, next start in \(waitMs) ms", stage: ExecStage.name)
        } else {
            Log.warning("\(program) \(how)\(why); starting it again in \(backoffMs) ms", stage: ExecStage.name)
        }
    }

    private func tail(_ i: Int) -> String {
        slots[i].stderrTail.isEmpty ? "" : ": " + slots[i].stderrTail.joined(separator: " | ")
    }

    private static func date(_ uptimeNs: UInt64) -> Date {
        let now = Subprocess.nowNs()
        return Date(timeIntervalSinceNow: uptimeNs > now ? Double(uptimeNs - now) / 1e9 : 0)
    }
}
