import EventLoop
import Index
import StageKit

/// Deletes store objects that no record uses any more (released by record deletes and by
/// updates that replace an image), off the loop, a batch every couple of seconds or when
/// poked. A store that is down keeps them queued for the next round.
final class AssetCollector {
    private let loop: EventLoop
    private let records: any RecordIndex
    private let assets: any AssetStore
    private let timer: LoopTimer
    private var running = false

    init(loop: EventLoop, records: any RecordIndex, assets: any AssetStore) throws {
        self.loop = loop
        self.records = records
        self.assets = assets
        timer = try LoopTimer(loop: loop)
    }

    func start() { timer.start(afterMs: 500, repeatMs: 2000) { [unowned self] in self.collect() } }

    func close() { timer.close() }

    func collect() {
        guard !running else { return }
        let records = self.records, store = self.assets
        running = true
        loop.submit({ () -> [String] in
            var errors: [String] = []
            for key in (try? records.releasedAssets(limit: 200)) ?? [] {
                do {
                    if try !records.isReferenced(key) { try store.delete(key: key) }
                    try records.forgetReleased(key)
                } catch {
                    errors.append("\(key): \(error)")
                }
            }
            return errors
        }) { [unowned self] errors in
            self.running = false
            for e in errors.prefix(3) { Log.warning("releasing assets: \(e)") }
        }
    }
}
