import EventLoop
import Foundation
import PhotomemoCore

/// Watches `inbox/` and feeds complete photos to the journal.
///
///     inotify (close-write, moved-in) ──▶ pending names ─┐
///     start-up, overflow, every N s, re-arm ─▶ rescan ───┼─▶ intake lane ─▶ InboxScanner ─▶ Journal
///                                                        └─▶ onJobs() (scheduler pump)
///
/// A file closed after writing or renamed in is complete; a file found by a rescan is
/// taken once its size and mtime have settled. Where inotify cannot watch (NFS, SMB), the
/// rescan runs every `pollSeconds` instead.
final class InboxWatcher {
    private let loop: EventLoop
    private let lane: SerialLane
    private let scanner: InboxScanner
    private let onJobs: () -> Void
    private let events: EventBus
    private var watcher: FolderWatcher?
    private let rescanTimer: LoopTimer
    private let rearmTimer: LoopTimer
    private let settleTimer: LoopTimer
    /// Names not yet handed to the scanner, in arrival order, and whether each was
    /// reported complete (a later close event upgrades a "created" entry).
    private var pending: [String] = []
    private var pendingComplete: [String: Bool] = [:]
    private var flushQueued = false
    private var rescanQueued = false
    private let rescanSeconds: Double
    static let pollSeconds: Double = 2

    init(loop: EventLoop, lane: SerialLane, scanner: InboxScanner, rescanSeconds: Double, events: EventBus,
         onJobs: @escaping () -> Void) throws {
        self.events = events
        self.loop = loop
        self.lane = lane
        self.scanner = scanner
        self.rescanSeconds = rescanSeconds
        self.onJobs = onJobs
        rescanTimer = try LoopTimer(loop: loop)
        rearmTimer = try LoopTimer(loop: loop)
        settleTimer = try LoopTimer(loop: loop)
    }

    func start() {
        do {
            watcher = try FolderWatcher(loop: loop, path: scanner.inbox) { [unowned self] events in self.handle(events) }
        } catch {
            Log.warning("cannot watch \(scanner.inbox) with inotify (\(error)); polling every \(Int(Self.pollSeconds)) s")
        }
        let every = watcher == nil ? Self.pollSeconds : rescanSeconds
        rescan()
        rescanTimer.start(afterMs: UInt64(every * 1000), repeatMs: UInt64(every * 1000)) { [unowned self] in self.rescan() }
    }

    /// After close, completions still in flight on the lane schedule nothing new.
    private var closed = false

    func close() {
        closed = true
        watcher?.close()
        rescanTimer.close()
        rearmTimer.close()
        settleTimer.close()
    }

    private var inFlight = 0
    private var unsettled = 0
    /// Back-off of the rescans that retry files the journal could not take (0: none failed).
    private var untakenRetryMs: UInt64 = 0

    /// Files seen but not yet jobs (waiting to settle or to be taken): `status`'s backlog.
    var backlog: Int { pending.count + inFlight + unsettled }

    /// Entries left alone (folders, files that are not photos), as the last look at each
    /// found them: `status` counts them (`backlog.inbox_skipped`, not part of the backlog:
    /// they never become jobs), `photomemo inbox` lists them.
    private(set) var skipped: [String: InboxScanner.SkippedEntry] = [:]
    /// Files under ignored names untouched for the definition's `inbox.stale_temp`, as the
    /// last rescan found them.
    private(set) var stale: [String: InboxScanner.StaleEntry] = [:]
    /// Users whose inbox files wait because they are at their cap of unfinished jobs.
    private var atCap: Set<String> = []
    /// Users over their quota, said once (`QuotaMeter`).
    private var overQuota: Set<String> = []

    private func handle(_ events: [FolderWatcher.Event]) {
        for e in events {
            switch e {
            case .closedAfterWrite(let name), .movedIn(let name):
                enqueue(name, complete: true)
            case .created(let name):
                // A regular file is not complete yet (its close event follows); a FIFO,
                // device or symlink never gets one, so it is looked at now.
                enqueue(name, complete: false)
            case .removed(let name):
                // Looked at again (it is gone, or back already) so that `skipped` never keeps
                // a name that is not there: renaming one file through a million names grew
                // it without bound until the next full rescan.
                enqueue(name, complete: false)
            case .modified:
                break
            case .overflow:
                Log.warning("inotify queue overflowed on \(scanner.inbox): rescanning")
                rescan()
            case .folderGone:
                Log.warning("\(scanner.inbox) went away: re-arming when it is back")
                rearmTimer.start(afterMs: 1000, repeatMs: 1000) { [unowned self] in self.rearm() }
            }
        }
        flush()
    }

    private func enqueue(_ name: String, complete: Bool) {
        guard !PhotoPolicy.isIgnoredInboxName(name) else { return }
        if let was = pendingComplete[name] {
            pendingComplete[name] = was || complete
        } else {
            pendingComplete[name] = complete
            pending.append(name)
        }
    }

    /// Files the journal no longer counts as taken (their job stored nothing): looked at
    /// now, as if just moved in, rather than at the next periodic rescan.
    func retake(_ names: [String]) {
        for n in names { enqueue(n, complete: true) }
        flush()
    }

    private func rearm() {
        guard let watcher, (try? watcher.rearm()) != nil else { return }
        rearmTimer.stop()
        Log.notice("watching \(scanner.inbox) again")
        rescan()
    }

    private func flush() {
        guard !closed, !flushQueued, !pending.isEmpty else { return }
        flushQueued = true
        // Hand the names over now: an event arriving while they are scanned queues the
        // name again (the journal's "already taken" check makes the repeat harmless).
        let names = pending.prefix(InboxScanner.batchSize).map { ($0, pendingComplete.removeValue(forKey: $0)!) }
        pending.removeFirst(names.count)
        inFlight = names.count
        let scanner = self.scanner
        lane.enqueue({ scanner.take(names) }) { [unowned self] report in
            self.flushQueued = false
            self.inFlight = 0
            self.skipped.merge(report.skipped) { $1 }
            for name in report.notSkipped { self.skipped[name] = nil }
            self.log(report)
            if report.untaken > 0 {
                self.unsettled += report.untaken
                self.retryUntaken()
            }
            self.flush()
        }
    }

    func rescan() {
        guard !closed, !rescanQueued else { return }
        rescanQueued = true
        let scanner = self.scanner
        lane.enqueue({ scanner.rescan() }) { [unowned self] report in
            self.rescanQueued = false
            self.skipped = report.skipped  // a whole walk: what is gone is gone
            self.stale = report.stale
            self.unsettled = report.unsettled + report.untaken
            self.log(report)
            self.atCap = report.atCap  // a whole walk: who is still at the cap
            self.overQuota = Set(report.overQuota.keys)
            if report.untaken > 0 {
                self.retryUntaken()
                return
            }
            self.untakenRetryMs = 0
            if report.unsettled > 0 && !self.closed {
                // Look again once the unsettled files have had time to settle.
                self.settleTimer.start(afterMs: UInt64(scanner.settleSeconds * 1000) + 100) { [unowned self] in self.rescan() }
            }
        }
    }

    /// Files the journal could not take (a full disk) are rescanned with back-off (0.5 s
    /// doubling to 30 s): taken soon after space returns, without hashing them over and
    /// over while it does not.
    private func retryUntaken() {
        guard !closed else { return }
        untakenRetryMs = min(max(untakenRetryMs * 2, 500), 30_000)
        settleTimer.start(afterMs: untakenRetryMs) { [unowned self] in self.rescan() }
    }

    private func log(_ report: InboxScanner.Report) {
        for (name, outcome, owner) in report.outcomes {
            switch outcome {
            case .created(let job, _): Log.info("took \(name)", job: job)
            case .joined(let job): Log.info("took \(name): joined its memo", job: job)
            case .duplicate(let job, let of): Log.info("took \(name): same bytes as job \(of)", job: job)
            case .failed(let job, let reason): Log.warning("\(name): \(reason)", job: job)
            case .alreadyTaken: break
            }
            events.publish(outcome, source: "inbox/\(name)", owner: owner)
        }
        for r in report.rejected { Log.warning("quarantined inbox entry \(r)") }
        for n in report.removedDuplicates { Log.info("removed \(n) from the inbox: a copy of a finished job's photo") }
        for e in report.errors { Log.error("inbox: \(e)") }
        // Said once as a user reaches the cap, not at every look while they stay there.
        for owner in report.atCap.subtracting(atCap).sorted() {
            Log.notice("inbox: \(owner) has \(MemoIntake.maxUnfinishedPerUser) unfinished jobs, the most a user may have; their inbox files are taken as those finish")
        }
        atCap.formUnion(report.atCap)
        for (owner, why) in report.overQuota where !overQuota.contains(owner) { Log.notice("inbox: \(why); their inbox files wait") }
        overQuota.formUnion(report.overQuota.keys)
        if report.outcomes.contains(where: { $0.outcome != .alreadyTaken }) { onJobs() }
    }
}
