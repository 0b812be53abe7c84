import EventLoop
import Foundation
import PhotomemoCore

/// Tails `HOME/queue.jsonl` by watching its folder, filtered by name: works before the
/// file exists and survives replacement. Every event means "read to the end now"; reads
/// run on the intake lane and coalesce (one in flight, at most one more queued).
final class QueueTailer {
    private let loop: EventLoop
    private let lane: SerialLane
    private let reader: QueueReader
    private let onJobs: () -> Void
    private let events: EventBus
    private var watcher: FolderWatcher?
    private let pollTimer: LoopTimer
    private var reading = false
    private var again = false
    private let fileName: String
    /// Bytes of the queue file not yet read, as of the last read.
    private(set) var unreadBytes: Int64 = 0

    init(loop: EventLoop, lane: SerialLane, reader: QueueReader, events: EventBus, onJobs: @escaping () -> Void) throws {
        self.events = events
        self.loop = loop
        self.lane = lane
        self.reader = reader
        self.onJobs = onJobs
        fileName = (reader.path as NSString).lastPathComponent
        pollTimer = try LoopTimer(loop: loop)
    }

    func start(pollSeconds: Double) {
        let folder = (reader.path as NSString).deletingLastPathComponent
        do {
            watcher = try FolderWatcher(loop: loop, path: folder, modifications: true) { [unowned self] events in
                let relevant = events.contains {
                    switch $0 {
                    case .closedAfterWrite(let n), .movedIn(let n), .created(let n), .modified(let n): n == self.fileName
                    case .overflow, .folderGone: true
                    }
                }
                if relevant { self.read() }
            }
        } catch {
            Log.warning("cannot watch \(folder) with inotify (\(error)); polling \(fileName)")
        }
        read()
        // A safety net for missed events (and the only trigger without inotify).
        let every = UInt64((watcher == nil ? min(pollSeconds, 1) : pollSeconds) * 1000)
        pollTimer.start(afterMs: every, repeatMs: every) { [unowned self] in self.read() }
    }

    /// After close, a read in flight finishes but schedules no other.
    private var closed = false

    func close() {
        closed = true
        watcher?.close()
        pollTimer.close()
    }

    func read() {
        guard !closed else { return }
        guard !reading else { again = true; return }
        reading = true
        let reader = self.reader
        lane.enqueue({ Result { try reader.catchUp() } }) { [unowned self] result in
            self.reading = false
            switch result {
            case .success(let report):
                self.unreadBytes = report.unreadBytes
                for n in report.notes { Log.notice(n) }
                for q in report.quarantined { Log.warning("quarantined \(q)") }
                for o in report.outcomes {
                    switch o {
                    case .created(let job, let state): Log.info("memo accepted (\(state.rawValue))", job: job)
                    case .joined(let job): Log.info("memo joined its photo's job", job: job)
                    case .duplicate(let job, let of): Log.info("memo key already used by job \(of)", job: job)
                    case .failed(let job, let reason): Log.warning(reason, job: job)
                    case .alreadyTaken: break
                    }
                    self.events.publish(o, source: "queue.jsonl")
                }
                if !report.outcomes.isEmpty { self.onJobs() }
            case .failure(let error):
                Log.error("reading \(self.reader.path): \(error); will retry")
            }
            if self.again {
                self.again = false
                self.read()
            }
        }
    }
}
