import Foundation
import EventLoop
import Index
import Journal
import PhotomemoCore
import StageKit

/// Retention (DESIGN.md, "Running for months"): jobs finished longer ago than the
/// definition's `retention`, with their history, deliveries delivered or failed as long ago
/// (`RecordStore.pruneDeliveries`), and quarantine files older than its `failed`, pruned on the work pool (never the loop), at least once a minute. With
/// them go the copies in `HOME/reprocess` of reprocess jobs another host ended (a cancel
/// there removes only its own; this one's would wait for a restart). Each batch
/// is its own journal transaction (`Journal.pruneBatch`), so intake waits for one short
/// batch at most. Several hosts on one PostgreSQL journal may prune at once: a batch
/// picks and changes its jobs under the journal's write lock.
final class Pruner {
    private let loop: EventLoop
    private let journal: any JobJournal
    private let records: any RecordIndex
    private let quarantine: Quarantine
    private let retention: () -> Retention
    /// `HOME/reprocess`.
    private let reprocessCopies: String
    private let timer: LoopTimer
    private var running = false
    private var nextRun = 0.0

    /// Jobs per transaction, and batches per run (the rest waits for the next run).
    static let batchSize = 500
    static let batchesPerRun = 40

    init(loop: EventLoop, journal: any JobJournal, records: any RecordIndex, quarantine: Quarantine, reprocessCopies: String,
         retention: @escaping () -> Retention) throws {
        (self.loop, self.journal, self.records, self.quarantine, self.retention) = (loop, journal, records, quarantine, retention)
        self.reprocessCopies = reprocessCopies
        timer = try LoopTimer(loop: loop)
    }

    func start() { timer.start(afterMs: 1000, repeatMs: 1000) { [unowned self] in self.tick() } }

    func close() { timer.close() }

    /// How often it runs: once a minute, or at half the shortest retention (a second at least).
    static func interval(_ r: Retention) -> Double { max(1, min(60, r.shortest / 2)) }

    private func tick() {
        let now = unixNow()
        guard !running, now >= nextRun else { return }
        let retention = self.retention()
        nextRun = now + Self.interval(retention)
        running = true
        let (journal, records, quarantine, copies) = (self.journal, self.records, self.quarantine, self.reprocessCopies)
        loop.submit({ () -> (jobs: Int, deliveries: Int, files: Int, errors: [String]) in
            var jobs = 0, deliveries = 0
            var errors: [String] = []
            // Before the jobs: a job pruned now no longer names its copy.
            var copiesRemoved = 0
            do {
                let paths = ((try? FileManager.default.contentsOfDirectory(atPath: copies)) ?? []).map { copies + "/" + $0 }
                for chunk in stride(from: 0, to: paths.count, by: Self.batchSize).map({ paths[$0..<min($0 + Self.batchSize, paths.count)] }) {
                    for path in try journal.reprocessCopiesEnded(Array(chunk)) where unlink(path) == 0 { copiesRemoved += 1 }
                }
            } catch {
                errors.append("reprocess copies: \(error)")
            }
            do {
                for _ in 0..<Self.batchesPerRun {
                    let batch = try journal.pruneBatch(retention: retention, limit: Self.batchSize, now: unixNow())
                    jobs += batch.pruned
                    if batch.pruned < Self.batchSize { break }
                }
            } catch {
                errors.append("journal: \(error)")
            }
            do {
                for _ in 0..<Self.batchesPerRun {
                    let now = unixNow()
                    let n = try records.pruneDeliveries(deliveredBefore: now - retention.done, failedBefore: now - retention.failed,
                                                        limit: Self.batchSize)
                    deliveries += n
                    if n < Self.batchSize { break }
                }
            } catch {
                errors.append("deliveries: \(error)")
            }
            let files = quarantine.prune(before: unixNow() - retention.failed)
            return (jobs, deliveries, files.removed + copiesRemoved, errors + files.errors)
        }) { [unowned self] result in
            self.running = false
            if result.jobs + result.deliveries + result.files > 0 {
                Log.info("retention: pruned \(result.jobs) finished jobs, \(result.deliveries) finished deliveries and \(result.files) quarantine files and reprocess copies")
            }
            for e in result.errors.prefix(3) { Log.warning("retention: \(e)") }
        }
    }
}

extension Pruner: ClosingService {}
