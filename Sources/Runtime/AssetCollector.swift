import EventLoop
import Index
import Journal
import StageKit

/// Deletes store objects that no record uses any more (released by record deletes and by
/// updates that replace an image), off the loop, a batch every couple of seconds or when
/// poked. A store that is down keeps them queued for the next round. First it purges the
/// trash of what was deleted longer ago than the definition's `"trash"`, in small
/// transactions, so their objects go in the same round. An object a job not done may
/// still need (the same bytes dropped again and stored, its record not made yet: any host's
/// job) stays, as `verify` keeps it: deleting it lost that photo.
final class AssetCollector {
    private let loop: EventLoop
    private let records: any RecordIndex
    private let journal: any JobControl
    private let assets: any AssetStore
    private let timer: LoopTimer
    private var running = false
    private var failures = RepeatingFailureLog("releasing assets")
    /// The definition's `"trash"`, in seconds.
    private let trashSeconds: @Sendable () -> Double
    /// Backups and verify runs under way (`hold`): while any is, nothing is deleted. Read by
    /// a round before each delete too: one already running when a backup began went on
    /// deleting under it.
    private let holds = LockedValue(0)

    /// Trashed records purged per transaction, and at most this many transactions a round:
    /// a purge never holds the index's writer for long, and a round ends.
    static let purgeBatch = 100, purgeBatchesPerRound = 20

    init(loop: EventLoop, records: any RecordIndex, journal: any JobControl, assets: any AssetStore,
         trashSeconds: @escaping @Sendable () -> Double) throws {
        self.loop = loop
        self.journal = journal
        self.trashSeconds = trashSeconds
        self.records = records
        self.assets = assets
        timer = try LoopTimer(loop: loop)
    }

    func start() { timer.start(afterMs: 500, repeatMs: 2000) { [unowned self] in self.collect() } }

    func close() { timer.close() }

    /// A backup copies the objects its database copy names, and verify lists the store
    /// before asking what is needed: neither may see an object vanish meanwhile. On the loop.
    func hold(_ on: Bool) { holds.withLock { $0 += on ? 1 : -1 } }

    func collect() {
        guard !running, holds.value == 0 else { return }
        let (records, journal, store, holds) = (self.records, self.journal, self.assets, self.holds)
        let deletedBefore = unixNow() - trashSeconds()
        running = true
        loop.submit({ () -> [String] in
            var errors: [String] = []
            do {
                for _ in 0..<Self.purgeBatchesPerRound {
                    guard try records.purgeTrash(deletedBefore: deletedBefore, limit: Self.purgeBatch, now: unixNow()).purged == Self.purgeBatch else { break }
                }
            } catch {
                errors.append("purging the trash: \(error)")
            }
            let released = (try? records.releasedAssets(limit: 200)) ?? []
            guard !released.isEmpty else { return errors }
            let needed: Set<String>
            do { needed = try journal.contentHashesOfUnfinishedJobs() } catch {
                return errors + ["asking which objects jobs not done need: \(error)"]
            }
            for key in released where holds.value == 0 {  // the rest wait in released_assets
                do {
                    let jobNeedsIt = key.split(separator: "/").last.map { needed.contains(String($0)) } ?? false
                    if try !jobNeedsIt && !records.isReferenced(key) { try store.delete(key: key) }
                    try records.forgetReleased(key)
                } catch {
                    errors.append("\(key): \(error)")
                }
            }
            return errors
        }) { [unowned self] errors in
            self.running = false
            if errors.isEmpty { self.failures.succeeded() } else { self.failures.failed(errors.prefix(3).joined(separator: "; ")) }
        }
    }
}
