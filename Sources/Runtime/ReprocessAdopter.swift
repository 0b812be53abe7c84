import EventLoop
import Foundation
import Journal
import StageKit

/// On a shared database, a reprocess job queued by a host that is gone (no heartbeat for
/// three leases) would wait for that host for ever: its copy of the original is on that
/// host's disk. The original is in the shared store, so this host makes its own copy and
/// takes the job (`Journal.adoptReprocess`: one host wins; the loser's copy goes). An inbox
/// photo's job stays with its host: its only file is there. Off the loop, a few jobs a
/// round, on its own timer (copying never delays a lease renewal). Its copies take their
/// turn in the room requests copy in (`ReprocessRoom`, the disk's bound): unbounded, a big
/// host's jobs, taken over by a small one, filled its disk. A job with no room yet stays
/// the gone host's, taken at a later round (oldest first).
final class ReprocessAdopter: ClosingService {
    private let loop: EventLoop
    private let journal: any JobJournal
    private let assets: any AssetStore
    private let scheduler: Scheduler
    private let definition: LiveDefinition
    /// `HOME/reprocess` and how much more it may hold.
    private let room: ReprocessRoom
    private let window: Double
    private let timer: LoopTimer
    private var busy = false
    private var failures = RepeatingFailureLog("taking over a gone host's reprocess jobs")

    static let perRound = 20

    init?(loop: EventLoop, journal: any JobJournal, assets: any AssetStore, scheduler: Scheduler, definition: LiveDefinition,
          room: ReprocessRoom) throws {
        guard let lease = journal.leaseSeconds else { return nil }
        (self.loop, self.journal, self.assets, self.scheduler, self.definition, self.room) = (loop, journal, assets, scheduler, definition, room)
        window = 3 * lease
        timer = try LoopTimer(loop: loop)
    }

    func start() {
        let every = UInt64(window * 1000 / 2)
        timer.start(afterMs: every, repeatMs: every) { [unowned self] in self.tick() }
    }

    func close() { timer.close() }

    private func tick() {
        guard !busy else { return }
        busy = true
        let (journal, assets, room, window) = (self.journal, self.assets, self.room, self.window)
        let photoLocalEnd = definition.current.photoLocalEnd
        loop.submit({ () -> Result<(taken: [(Int64, String)], full: String?), Error> in
            Result {
                let stranded = try journal.strandedReprocessJobs(window: window, photoLocalEnd: photoLocalEnd, limit: Self.perRound, now: unixNow())
                guard !stranded.isEmpty else { return ([], nil) }
                return try room.turn(for: nil) { copies in
                    var taken: [(Int64, String)] = []
                    for job in stranded {
                        guard let original = job.working.original, let stored = original.storedKey else { continue }
                        if let full = copies.take(original.bytes ?? 0) { return (taken, full) }
                        let copy = ReprocessHandler.copyPath(key: job.key, format: original.format ?? "jpeg", in: room.folder)
                        try assets.get(key: stored, to: copy)
                        if try journal.adoptReprocess(job, copy: copy, now: unixNow()) { taken.append((job.id, job.host)) } else { unlink(copy) }
                    }
                    return (taken, nil)
                }
            }
        }) { [unowned self] result in
            self.busy = false
            switch result {
            case .success(let (taken, full)):
                if let full {
                    self.failures.failed("\(full): the others are taken once there is room")
                } else {
                    self.failures.succeeded()
                }
                guard !taken.isEmpty else { return }
                let hosts = Set(taken.map(\.1)).sorted().joined(separator: ", ")
                Log.notice("took \(taken.count) reprocess jobs of host \(hosts), gone for over \(Int(window)) s: copies of their originals made here from the store")
                self.scheduler.pump()
            case .failure(let e):
                self.failures.failed("\(e)")
            }
        }
    }
}
