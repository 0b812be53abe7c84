import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit

/// backup and verify (admins only, `AccessPolicy`): one run at a time, off the loop on
/// one thread of the pool (`Daemon` sizes the pool with one thread for it), while the
/// daemon serves. A run holds the asset collector, so no object is deleted under a backup
/// or between verify's listing and its checks; the last verify's counts feed `status`
/// and `metrics`. Stopping the daemon stops a run between two steps.
final class MaintenanceHandlers: ControlHandler, ClosingService {
    let commands: Set<ControlCommand> = [.backup, .verify]
    /// What a run reads: the engines and store the daemon opened, its definition's
    /// compress stage, and where verify fetches an original to.
    struct Parts {
        let backup: BackupWriter.Source
        let journal: Journal?
        let records: any RecordIndex
        let store: any AssetStore
        let scratch: String
        let definition: () -> JobDefinition
        let collector: AssetCollector
        /// Folders the daemon takes files from or removes them in: no backup goes there.
        var daemonFolders: [String] = []
    }

    /// Bytes a second verify reads from the store unless the request names a rate.
    static let defaultVerifyRate: Int64 = 32 << 20

    private let loop: EventLoop
    private let parts: Parts
    private var running: String?
    private let stopping = LockedValue(false)
    /// The last verify's counts, read by status and metrics, and kept in `lastVerifyFile`.
    let lastVerify: LockedValue<VerifySummary?>
    private let lastVerifyFile: String

    init(loop: EventLoop, parts: Parts, lastVerifyFile: String) {
        self.loop = loop
        self.parts = parts
        self.lastVerifyFile = lastVerifyFile
        lastVerify = LockedValue(VerifySummary.load(from: lastVerifyFile))
    }

    func close() { stopping.value = true }

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        if let running {
            throw PhotomemoError(.busy, "a \(running) is running; one backup or verify at a time")
        }
        let stopping = self.stopping
        let work: @Sendable () throws -> JSONValue
        switch command {
        case .backup:
            let dir = try req.requiredString(ControlArgument.folder)
            guard dir.hasPrefix("/"), !dir.split(separator: "/").contains("..") else {
                throw PhotomemoError(.badRequest, "backup needs an absolute folder without '..', got \"\(dir)\"")
            }
            let writer = BackupWriter(source: parts.backup, store: parts.store, definitionSource: parts.definition().source,
                                      cancelled: { stopping.value }, daemonFolders: parts.daemonFolders)
            work = {
                let m = try writer.write(to: dir)
                Log.notice("backup to \(dir): \(m.objects.count) objects, \(m.damaged.count) damaged left out, \(m.missing.count) missing")
                return ["folder": .string(dir), "manifest": m.json]
            }
        default:
            let rate = try req.int(ControlArgument.rate).map { $0 << 20 } ?? Self.defaultVerifyRate
            guard rate >= 0 else { throw PhotomemoError(.badRequest, "rate must be 0 (no cap) or a positive number of MiB/s") }
            let verifier = StoreVerifier(records: parts.records, journal: parts.journal, store: parts.store,
                                         maker: parts.definition().stages.lazy.compactMap { $0.stage as? any RenditionMaker }.first,
                                         scratch: parts.scratch, repair: req.values[ControlArgument.repair] == .bool(true),
                                         bytesPerSecond: rate, cancelled: { stopping.value })
            let (last, file) = (lastVerify, lastVerifyFile)
            work = {
                let report = try verifier.run()
                let summary = VerifySummary(report)
                last.value = summary
                do { try summary.save(to: file) } catch { Log.warning("verify: cannot keep the counts in \(file): \(error)") }
                Log.notice("verify: \(report.checked) assets checked, \(report.damaged.count) damaged, \(report.missing.count) missing, \(report.orphans.count) orphans, \(report.repaired) repaired")
                return report.json
            }
        }
        running = command.rawValue
        parts.collector.hold(true)
        loop.reply({ [weak self] result in
            self?.running = nil
            self?.parts.collector.hold(false)
            reply(result)
        }, work)
    }
}
