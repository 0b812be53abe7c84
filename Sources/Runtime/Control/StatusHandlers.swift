import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit

/// status, metrics, hosts and inbox: counts from the journal (the whole cluster's, on a shared
/// database), live state from the loop (this host's).
final class StatusHandlers: ControlHandler {
    static let withheld = "the journal's error is shown to admins"
    /// A dependency's reason, as a user who is no admin sees it.
    static let withheldReason = "the reason is shown to admins"
    let commands: Set<ControlCommand> = [.status, .metrics, .hosts, .inbox]
    /// The live state a report reads, as the daemon wires it.
    struct Sources {
        let backlog: () -> (inboxFiles: Int, queueUnreadBytes: Int64)
        /// Inbox entries left alone (folders, files that are not photos), by name.
        let inboxSkipped: () -> SkippedEntries
        /// Files under ignored names untouched for `inbox.stale_temp`, by name.
        let inboxStale: () -> StaleEntries
        /// The queue files' state (queue.jsonl and queue.d/*).
        let queueFiles: () -> [QueueTailer.FileState]
        let clients: () -> Int
        let watching: () -> Int
        /// This daemon's name on a shared database ('' alone on SQLite), its engine, and
        /// how long a silent host counts as alive.
        let host: String
        let database: String
        let hostWindowSeconds: Double
        /// Per-user quotas, when set: a user's `status` shows what they use of theirs.
        var quota: QuotaMeter? = nil
        /// Records in the trash: an owner's, or everyone's for nil.
        var trashCount: (@Sendable (_ owner: String?) throws -> Int)? = nil
        /// The last `verify` run, when there was one since the daemon started.
        var lastVerify: () -> VerifySummary? = { nil }
        /// Webhook hosts and exec sinks found down or up (`NotificationDeliverer`).
        var sinks: () -> [SinkHealth.Key: SinkHealth] = { [:] }
    }

    let loop: EventLoop
    let journal: any JobControl
    private let scheduler: Scheduler
    private let live: Sources
    private let started = unixNow()

    init(loop: EventLoop, journal: any JobControl, scheduler: Scheduler, live: Sources) {
        self.loop = loop
        self.journal = journal
        self.scheduler = scheduler
        self.live = live
    }

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        switch command {
        case .status: status(caller, reply)
        case .hosts: hosts(reply)
        case .inbox: inbox(caller, reply)
        default: metrics(reply)
        }
    }

    /// The inbox entries left alone, with why, and the stale files under ignored names: a
    /// user's own (a file's owner is whoever owns it), every one for an admin; of each, the
    /// first `maxListedSkipped` by name (of those named: `OwnedEntries`), and how many in all
    /// (`total`, `stale_total`).
    /// Filtered and sorted off the loop: 100,000 entries take it tens of milliseconds.
    func inbox(_ caller: Caller, _ reply: @escaping Reply) {
        let (allSkipped, allStale) = (live.inboxSkipped(), live.inboxStale())
        loop.reply(reply) {
            let entries = allSkipped.named.filter { caller.isAdmin || $0.value.owner == caller.name }
            let stale = allStale.named.filter { caller.isAdmin || $0.value.owner == caller.name }
            let listed = entries.sorted { $0.key < $1.key }.prefix(Self.maxListedSkipped)
            let listedStale = stale.sorted { $0.key < $1.key }.prefix(Self.maxListedSkipped)
            return ["skipped": .array(listed.map { ["name": .string($0.key), "reason": .string($0.value.reason),
                                                    "owner": .string($0.value.owner)] }),
                    "total": .int(Int64(allSkipped.count(of: caller.isAdmin ? nil : caller.name))),
                    "stale": .array(listedStale.map { ["name": .string($0.key), "owner": .string($0.value.owner),
                                                       "bytes": .int($0.value.bytes), "idle_s": .int(Int64(max(-1e15, min($0.value.idleSeconds, 1e15))))] }),
                    "stale_total": .int(Int64(allStale.count(of: caller.isAdmin ? nil : caller.name)))]
        }
    }

    /// A reply listing 100,000 entries was 11.7 MB: more than a connection may leave unread
    /// (8 MiB), so the client was disconnected and never saw its list.
    static let maxListedSkipped = 1000

    /// The daemons on this journal: their leases and recent rate.
    func hosts(_ reply: @escaping Reply) {
        let journal = self.journal, window = live.hostWindowSeconds
        loop.reply(reply) {
            let now = unixNow()
            return ["hosts": .array(try journal.hosts(window: window, now: now).map { h in
                ["host": .string(h.host), "pid": h.pid.map { .int(Int64($0)) } ?? .null,
                 "started": h.started.map { .string(isoTimestamp($0)) } ?? .null,
                 "seen_s_ago": h.seen.map { .double(((now - $0) * 10).rounded() / 10) } ?? .null,
                 "leases": .int(Int64(h.leases)), "stage_runs_last_minute": .int(Int64(h.stageRunsLastMinute))]
            })]
        }
    }

    /// Counts for everyone; the queue files' state only for their owners (and admins).
    func status(_ caller: Caller, _ reply: @escaping Reply) {
        let journal = self.journal, host = live.host, database = live.database
        let loopState = loopSnapshot()
        // A subscription's sink is its owner's business (and admins'): down if any of theirs to it is.
        let sinks = live.sinks().filter { caller.isAdmin || $0.key.owner == caller.name }
            .reduce(into: [String: SinkHealth]()) { seen, sink in
                if seen[sink.key.name]?.reason == nil { seen[sink.key.name] = sink.value }
            }
        let quota = live.quota, trashCount = live.trashCount
        let queueFiles = live.queueFiles().filter { caller.isAdmin || $0.owner == caller.uid }.sorted { $0.name < $1.name }.map { f in
            JSONValue.object(["name": .string(f.name), "owner": f.owner.map { .string(UnixUser.nameOrNumber($0)) } ?? .null,
                              "unread_bytes": .int(f.unreadBytes), "error": f.refused.map(JSONValue.string) ?? .null])
        }
        loop.reply(reply) {
            let snapshot = loopState.seeingTheDisk()
            // A journal that cannot be read (PostgreSQL down) is shown down, with what the
            // loop knows; the counts come back with it.
            var journalError: String?
            func read<T>(_ fallback: T, _ body: () throws -> T) -> T {
                do { return try body() } catch {
                    journalError = journalError ?? "\(error)"
                    return fallback
                }
            }
            let counts = read([:]) { try journal.counts() }
            let pruned = read([:]) { try journal.prunedCounts() }
            let reprocess = read([:]) { try journal.reprocessCounts() }
            let stats = read([:]) { try journal.stageStats(window: 1000) }
            let lastMinute = read(0) { try journal.finishedCount(since: unixNow() - 60) }
            let reprocessLastMinute = read(0) { try journal.reprocessFinishedCount(since: unixNow() - 60) }
            var stages: [String: JSONValue] = [:]
            for name in snapshot.stageNames {
                let s = stats[name] ?? StageStats()
                stages[name] = [
                    "done": .int(Int64(s.done)), "failed": .int(Int64(s.failed)), "retried": .int(Int64(s.retried)),
                    "skipped": .int(Int64(s.skipped)), "unavailable": .int(Int64(s.unavailable)),
                    "running": .int(Int64(snapshot.running[name] ?? 0)), "held": .int(Int64(snapshot.held[name] ?? 0)),
                    "paused": .bool(snapshot.pausedStages.contains(name)),
                    "p50_ms": s.percentile(0.5).map(JSONValue.double) ?? .null,
                    "p99_ms": s.percentile(0.99).map(JSONValue.double) ?? .null,
                ]
            }
            let quotaReport = quota.map { meter -> JSONValue in
                let limits = meter.limits.value
                guard limits.isSet else { return .null }
                var out: [String: JSONValue] = ["records": limits.records.map { .int(Int64($0)) } ?? .null,
                                                "bytes": limits.bytes.map(JSONValue.int) ?? .null]
                if !caller.isAdmin {
                    let used = read((records: 0, bytes: Int64(0))) { try meter.usage(owner: caller.name) }
                    out["used"] = ["records": .int(Int64(used.records)), "bytes": .int(used.bytes)]
                }
                return .object(out)
            } ?? .null
            var deps: [String: JSONValue] = [:]
            for (d, up) in snapshot.dependencies { deps[d] = up ? "up" : "down" }
            for (d, sink) in sinks { deps[d] = sink.reason == nil ? "up" : "down" }
            if journalError != nil { deps["journal"] = "down" }
            let writeError = snapshot.journalWriteFailure.map { f -> JSONValue in
                ["since": .string(isoTimestamp(f.since)), "error": .string(f.error)]
            }
            return [
                "version": .string(PhotomemoVersion.current),
                "host": .string(host),
                "database": .string(database),
                "uptime_s": .double((unixNow() - snapshot.started).rounded()),
                "paused": .bool(snapshot.paused),
                "job_definition": .string(snapshot.definition),
                "jobs": .object(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, JSONValue.int(Int64($0.value))) })),
                // Finished jobs removed by retention (`jobs` counts those the journal holds).
                "pruned": .object(Dictionary(uniqueKeysWithValues: [JobState.done, .failed, .cancelled].map {
                    ($0.rawValue, JSONValue.int(Int64(pruned[$0] ?? 0))) })),
                // `photomemo reprocess`'s jobs, also counted in `jobs`.
                "reprocess": .object(Dictionary(uniqueKeysWithValues: reprocess.map { ($0.key.rawValue, JSONValue.int(Int64($0.value))) })),
                "stages": .object(stages),
                "stage_order": .array(snapshot.stageNames.map(JSONValue.string)),
                "backlog": ["inbox_files": .int(Int64(snapshot.backlog.inboxFiles)),
                            "queue_unread_bytes": .int(snapshot.backlog.queueUnreadBytes),
                            "inbox_skipped": .int(Int64(snapshot.inboxSkipped)),
                            "inbox_stale": .int(Int64(snapshot.inboxStale.count)),
                            "inbox_stale_bytes": .int(snapshot.inboxStale.bytes)],
                "dependencies": .object(deps),
                // A stage's reason can quote its program's stderr: an admin's to read, like the journal's errors.
                "dependency_reasons": .object(snapshot.dependencyReasons.mapValues { .string(caller.isAdmin ? $0 : Self.withheldReason) }
                    .merging(sinks.compactMapValues { $0.reason.map(JSONValue.string) }) { a, _ in a }),
                "queue_files": .array(queueFiles),
                "quota": quotaReport,
                "verify": snapshot.lastVerify?.json ?? .null,
                // Deleted records kept for the `"trash"` time: the caller's own, an admin's all.
                "trash": trashCount.map { count in ["records": .int(Int64(read(0) { try count(caller.isAdmin ? nil : caller.name) }))] } ?? .null,
                "throughput": ["jobs_last_minute": .int(Int64(lastMinute)), "jobs_per_s": .double(Double(lastMinute) / 60),
                               "reprocess_last_minute": .int(Int64(reprocessLastMinute)), "reprocess_per_s": .double(Double(reprocessLastMinute) / 60)],
                "clients": ["connected": .int(Int64(snapshot.clients)), "watching": .int(Int64(snapshot.watchers))],
                // The engine's own words can name another user's keys (PostgreSQL's DETAIL):
                // an admin's to read. Anyone sees that, and since when, the journal fails.
                "journal_error": journalError.map { .string(caller.isAdmin ? $0 : Self.withheld) } ?? .null,
                "journal_write_error": writeError.map { caller.isAdmin ? $0 : ["since": $0["since"] ?? .null, "error": .string(Self.withheld)] } ?? .null,
            ]
        }
    }

    struct LoopSnapshot: Sendable {
        let started: Double
        let paused: Bool
        let pausedStages: Set<String>
        let definition: String
        let stageNames: [String]
        let running: [String: Int]
        /// Jobs claimed ahead per stage: `running` in the journal, not started yet.
        let held: [String: Int]
        /// Every dependency seen, `journal` always: down while its writes fail.
        var dependencies: [String: Bool]
        /// Why those a stage reported are down (its outcome's reason).
        let dependencyReasons: [String: String]
        let journalWriteFailure: JournalWriteFailure?
        let backlog: (inboxFiles: Int, queueUnreadBytes: Int64)
        /// Inbox entries left alone: not backlog, they never become jobs.
        let inboxSkipped: Int
        /// Stale files under ignored names: how many, and their bytes.
        let inboxStale: (count: Int, bytes: Int64)
        let clients: Int
        let watchers: Int
        let lastVerify: VerifySummary?
        /// A folder on the home's filesystem, whose room `seeingTheDisk` looks at.
        let homeFolder: String

        /// With `disk` down while the home's filesystem is full: a stage reports the disk
        /// only when one of its jobs meets it, but a full disk refuses requests' writes too
        /// (an `enqueue`'s `no_space`). statvfs: called off the loop.
        func seeingTheDisk() -> LoopSnapshot {
            var seen = self
            if DiskSpace.isFull(homeFolder) { seen.dependencies[DiskSpace.dependency] = false }
            return seen
        }
    }

    /// The loop-owned state status and metrics report, copied so workers can read it.
    func loopSnapshot() -> LoopSnapshot {
        let s = scheduler
        let names = s.definition.stages.map(\.name)
        let writeFailure = journal.writeFailure
        var deps = s.dependencies
        deps["journal"] = deps["journal", default: true] && writeFailure == nil
        return LoopSnapshot(started: started, paused: s.paused, pausedStages: s.pausedStages, definition: s.definition.name,
                            stageNames: names, running: Dictionary(uniqueKeysWithValues: names.map { ($0, s.running(stage: $0)) }),
                            held: s.ahead.mapValues(\.count),
                            dependencies: deps, dependencyReasons: s.dependencyReasons, journalWriteFailure: writeFailure, backlog: live.backlog(), inboxSkipped: live.inboxSkipped().count(),
                            inboxStale: live.inboxStale().byOwner().values.reduce((0, 0)) { ($0.0 + $1.count, $0.1.addingSaturated($1.bytes)) }, clients: live.clients(),
                            watchers: live.watching(), lastVerify: live.lastVerify(), homeFolder: s.quarantine.folder)
    }

    func metrics(_ reply: @escaping Reply) {
        let journal = self.journal
        let snapshot = loopSnapshot()
        loop.reply(reply) {
            .object(["text": .string(try Metrics.render(journal: journal, snapshot: snapshot.seeingTheDisk()))])
        }
    }
}
