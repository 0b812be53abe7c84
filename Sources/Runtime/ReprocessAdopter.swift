import EventLoop
import Foundation
import Journal
import StageKit

/// On a shared database, a reprocess job queued by a host that is gone (no heartbeat for
/// three leases) would wait for that host for ever: its copy of the original is on that
/// host's disk. The original is in the shared store, so this host makes its own copy and
/// takes the job (`Journal.adoptReprocess`: one host wins; the loser's copy goes). An inbox
/// photo's job stays with its host: its only file is there. Off the loop, a few jobs a
/// round, on its own timer (copying never delays a lease renewal).
final class ReprocessAdopter: ClosingService {
    private let loop: EventLoop
    private let journal: any JobJournal
    private let assets: any AssetStore
    private let scheduler: Scheduler
    private let definition: LiveDefinition
    /// `HOME/reprocess`.
    private let folder: String
    private let window: Double
    private let timer: LoopTimer
    private var busy = false
    private var failures = RepeatingFailureLog("taking over a gone host's reprocess jobs")

    static let perRound = 20

    init?(loop: EventLoop, journal: any JobJournal, assets: any AssetStore, scheduler: Scheduler, definition: LiveDefinition,
          folder: String) throws {
        guard let lease = journal.leaseSeconds else { return nil }
        (self.loop, self.journal, self.assets, self.scheduler, self.definition, self.folder) = (loop, journal, assets, scheduler, definition, folder)
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
        let (journal, assets, folder, window) = (self.journal, self.assets, self.folder, self.window)
        let photoLocalEnd = definition.current.photoLocalEnd
        loop.submit({ () -> Result<[(Int64, String)], Error> in
            Result {
                var taken: [(Int64, String)] = []
                let stranded = try journal.strandedReprocessJobs(window: window, photoLocalEnd: photoLocalEnd, limit: Self.perRound, now: unixNow())
                guard !stranded.isEmpty else { return [] }
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for job in stranded {
                    guard let original = job.working.original, let stored = original.storedKey else { continue }
                    let copy = ReprocessHandler.copyPath(key: job.key, format: original.format ?? "jpeg", in: folder)
                    try assets.get(key: stored, to: copy)
                    if try journal.adoptReprocess(job, copy: copy, now: unixNow()) { taken.append((job.id, job.host)) } else { unlink(copy) }
                }
                return taken
            }
        }) { [unowned self] result in
            self.busy = false
            switch result {
            case .success(let taken):
                self.failures.succeeded()
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
