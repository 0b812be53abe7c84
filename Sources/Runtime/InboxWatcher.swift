import EventLoop
import Foundation
import StageKit

/// Watches the `inbox/` tree and feeds complete photos to the journal.
///
///     inotify (close-write, moved-in) ──▶ pending names ─┐
///     start-up, overflow, every N s, re-arm ─▶ walks ────┼─▶ intake lane ─▶ InboxScanner ─▶ Journal
///     a folder made or moved in ─▶ walk of its subtree ──┤
///                                                        └─▶ onJobs() (scheduler pump)
///
/// A file renamed in is complete; one closed after writing in place is once nothing has
/// touched it for `inbox.quiet_after_close` (rsync --inplace, rclone and Samba set its
/// time just after they close it: taken at once, it was gone and their transfer failed);
/// a file found by a walk is taken once its size and mtime have settled. One inotify watch per folder, added as a walk
/// opens it. A walk goes a turn at a time (`inbox.entries_per_turn` entries), pending
/// names first: a huge tree never keeps a new drop waiting. Walks of new folders go before
/// the walk of the whole tree. Where inotify cannot watch (NFS, SMB), the whole tree is
/// walked every `pollSeconds` instead.
final class InboxWatcher {
    private let loop: EventLoop
    private let lane: SerialLane
    private let scanner: InboxScanner
    let onJobs: () -> Void
    let events: EventBus
    private var watcher: FolderWatcher?
    private let rescanTimer: LoopTimer
    private let rearmTimer: LoopTimer
    private let settleTimer: LoopTimer
    /// Its own timer: a new folder's files settling must not put off the retry of files
    /// the journal could not take.
    private let retryTimer: LoopTimer
    /// Files closed after writing in place, each with the time it may be taken if nothing
    /// touches it first (a change of its attributes starts the wait again). Set by `wait`.
    private var closing: [String: UInt64] = [:]
    private let quietTimer: LoopTimer
    /// Names not yet handed to the scanner, in arrival order, and whether each was
    /// reported complete (a later close event upgrades a "created" entry).
    private var pending: [String] = []
    private var pendingComplete: [String: Bool] = [:]
    private var flushQueued = false
    /// Walks to go: new folders' subtrees first (in order), then the whole tree's (`under`
    /// ""); one turn of one of them on the lane at a time.
    private var walks: [InboxWalk] = []
    private var stepQueued = false
    /// Folders where a walk found files not settled yet, looked at again once they may be.
    private var settling: Set<String> = []
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
        retryTimer = try LoopTimer(loop: loop)
        quietTimer = try LoopTimer(loop: loop)
    }

    func start() {
        do {
            let watcher = try FolderWatcher(loop: loop, path: scanner.inbox, attributes: true, recursive: true) { [unowned self] events in self.handle(events) }
            self.watcher = watcher
            var told = false
            scanner.watchFolder = { [weak watcher] fd, relative in
                do { try watcher?.watch(folder: fd, as: relative) } catch {
                    // Once, not per folder: past fs.inotify.max_user_watches every new folder fails alike.
                    if !told { Log.warning("cannot watch \(relative) in the inbox (\(error)); the periodic rescan still takes what lands there") }
                    told = true
                }
            }
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
        retryTimer.close()
        quietTimer.close()
    }

    private var inFlight = 0
    /// Files seen not settled yet, by folder: a later look at a name (an event's, a walk's
    /// of its folder) replaces an earlier one's, so a file taken is no longer counted.
    private var unsettled: [String: Set<String>] = [:]
    /// Files a walk found the journal could not take now, by the walk (the last of each).
    private var untakenByWalk: [String: Int] = [:]
    /// Files looked at by name that the journal could not take now (reset by a whole walk).
    private var untaken = 0
    /// Back-off of the rescans that retry files the journal could not take (0: none failed).
    private var untakenRetryMs: UInt64 = 0

    /// Files seen but not yet jobs (waiting to settle or to be taken): `status`'s backlog.
    var backlog: Int {
        pending.count + closing.count + inFlight + unsettled.values.reduce(0) { $0 + $1.count } + untakenByWalk.values.reduce(0, +) + untaken
    }

    /// Entries left alone (not photos, folders not walked), as last seen (`OwnedEntries`):
    /// `status` counts them (`backlog.inbox_skipped`: never jobs), `photomemo inbox` lists them.
    private(set) var skipped = SkippedEntries()
    /// Files under ignored names untouched for the definition's `inbox.stale_temp`, as the
    /// last rescan found them.
    private(set) var stale = StaleEntries()
    /// Users whose inbox files wait because they are at their cap of unfinished jobs.
    var atCap: Set<String> = []
    /// Users over their quota, said once (`QuotaMeter`).
    var overQuota: Set<String> = []

    private func handle(_ events: [FolderWatcher.Event]) {
        var removedFolders: [String] = []
        for e in events {
            switch e {
            case .closedAfterWrite(let name):
                closedInPlace(name)
            case .movedIn(let name):
                wait(name, until: nil)
                enqueue(name, complete: true)
            case .created(let name):
                // A regular file is not complete yet (its close event follows); a FIFO,
                // device or symlink never gets one, so it is looked at now.
                enqueue(name, complete: false)
            case .removed(let name):
                wait(name, until: nil)
                // Looked at again (gone, or back already): `skipped` keeps no name that is not
                // there (a file renamed through a million names grew it until a full rescan).
                enqueue(name, complete: false)
            case .modified(let name):
                if closing[name] != nil { closedInPlace(name) }
            case .folderAppeared(let name):
                // Made (mkdir -p, a sync tool) or moved in: walked, so that it is watched and
                // what is already in it is found.
                walk(under: name)
            case .folderRemoved(let name):
                removedFolders.append(name)
            case .overflow:
                Log.warning("inotify queue overflowed on \(scanner.inbox): rescanning")
                rescan()
            case .folderGone:
                Log.warning("\(scanner.inbox) went away: re-arming when it is back")
                rearmTimer.start(afterMs: 1000, repeatMs: 1000) { [unowned self] in self.rearm() }
            }
        }
        forget(under: removedFolders)
        flush()
    }

    /// Folders removed or moved away: nothing listed under them is there (one pass a batch).
    private func forget(under folders: [String]) {
        guard !folders.isEmpty else { return }
        let gone = { (name: String) in folders.contains { name == $0 || name.hasPrefix($0 + "/") } }
        skipped.removeAll(where: gone)
        stale.removeAll(where: gone)
    }

    /// Waits `inbox.quiet_after_close` from now before taking `name` (0: takes it now).
    private func closedInPlace(_ name: String) {
        // An ignored name (a tool's `.part`) is never taken: not held, nor counted as backlog.
        guard !scanner.isIgnored(name) else { return }
        let quiet = scanner.options.value.quietAfterCloseSeconds
        guard quiet > 0 else { return enqueue(name, complete: true) }
        wait(name, until: loop.nowMs + UInt64(quiet * 1000))
        if closing.count == 1 { armQuietTimer() }
    }

    /// Holds `name` until `due` (nil: no longer); the scanner's walks leave it alone.
    private func wait(_ name: String, until due: UInt64?) {
        if (closing[name] != nil) != (due != nil) { scanner.hold(name, due != nil) }
        closing[name] = due
    }

    private func armQuietTimer() {
        guard !closed, let first = closing.values.min() else { return }
        quietTimer.start(afterMs: first - min(first, loop.nowMs) + 1) { [unowned self] in
            let now = self.loop.nowMs
            for (name, due) in self.closing where due <= now {
                self.wait(name, until: nil)
                self.enqueue(name, complete: true)
            }
            self.flush()
            self.armQuietTimer()
        }
    }

    private func enqueue(_ name: String, complete: Bool) {
        guard !scanner.isIgnored(name) else { return }
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
            for (name, _) in names {
                let folder = InboxWalk.folder(of: name)
                if self.unsettled[folder]?.remove(name) != nil, self.unsettled[folder]!.isEmpty { self.unsettled[folder] = nil }
            }
            for name in report.unsettled { self.unsettled[InboxWalk.folder(of: name), default: []].insert(name) }
            self.skipped.merge(report.skipped)
            for name in report.notSkipped { self.skipped.remove(name) }
            self.log(report)
            if report.untaken > 0 {
                self.untaken += report.untaken
                self.retryUntaken()
            }
            if !report.retake.isEmpty { self.retake(report.retake) }
            self.flush()
            self.stepWalk()
        }
    }

    /// Walks the whole tree (start-up, overflow, periodic, re-arm, a retry of untaken files).
    func rescan() { walk(under: "") }

    /// Queues a walk of `under` ("": the whole tree; not `deep`: its files alone), unless
    /// one already queued covers it.
    private func walk(under: String, deep: Bool = true) {
        guard !closed else { return }
        let covers = { (w: InboxWalk) in
            w.under == under ? (w.deep || !deep) : w.deep && (w.under.isEmpty || under.hasPrefix(w.under + "/"))
        }
        // A walk under way may have passed the place already: only one not yet started covers it.
        guard !walks.contains(where: { covers($0) && !$0.started }) else { return }
        let w = InboxWalk(under: under, deep: deep)
        if w.isWhole { walks.append(w) } else { walks.insert(w, at: walks.firstIndex { $0.isWhole } ?? walks.endIndex) }
        stepWalk()
    }

    /// Runs the next turn of the first walk, after any names pending (queued on the lane
    /// first, so a drop made while a huge tree is walked waits one turn at most).
    private func stepWalk() {
        guard !closed, !stepQueued, let walk = walks.first else { return }
        stepQueued = true
        walk.started = true
        flush()
        let scanner = self.scanner
        lane.enqueue({ scanner.step(walk) }) { [unowned self] report in
            self.stepQueued = false
            // A whole tree's walk is taken in at its end (`finished`): merged a turn at a time,
            // 100,000 entries' rehashes blocked the loop. A new folder's walk is shown as it goes.
            if !walk.isWhole {
                self.skipped.merge(report.skipped)
                for name in report.notSkipped { self.skipped.remove(name) }
                self.stale.merge(report.stale)
            }
            self.atCap.formUnion(report.atCap)
            self.log(report)
            if !report.retake.isEmpty { self.retake(report.retake) }
            if walk.finished {
                self.walks.removeAll { $0 === walk }
                self.finished(walk)
            }
            self.stepWalk()
        }
    }

    /// Takes in what a whole walk found: of the whole tree, that is all there is (what is
    /// gone is gone); of a subtree, it is added.
    private func finished(_ walk: InboxWalk) {
        let found = walk.found
        if walk.isWhole {
            skipped = found.skipped
            stale = found.stale
            (skipped.counting, stale.counting) = (false, false)  // one name at a time from here
            atCap = found.atCap  // a whole walk: who is still at the cap
            overQuota = found.overQuota
            unsettled = found.unsettled
            untakenByWalk = [:]
            untaken = 0
        } else if walk.deep {
            unsettled = unsettled.filter { $0.key != walk.under && !$0.key.hasPrefix(walk.under + "/") }
            unsettled.merge(found.unsettled) { $1 }
        } else {
            unsettled[walk.under] = found.unsettled[walk.under]
        }
        untakenByWalk[(walk.deep ? "" : "=") + walk.under] = found.untaken
        if found.untaken > 0 {
            retryUntaken()
            return
        }
        if walk.isWhole { untakenRetryMs = 0 }
        if !found.unsettled.isEmpty && !closed {
            // Look again once the unsettled files have had time to settle: at the folders
            // holding them, each alone (one file found fresh must not cost a walk of the
            // whole tree), and the timer is not pushed back by every new folder.
            let first = settling.isEmpty
            settling.formUnion(found.unsettled.keys)
            guard first else { return }
            settleTimer.start(afterMs: UInt64(scanner.settleSeconds * 1000) + 100) { [unowned self] in
                let due = self.settling
                self.settling = []
                for folder in due.sorted() { self.walk(under: folder, deep: false) }
            }
        }
    }

    /// Files the journal could not take (a full disk) are rescanned with back-off (0.5 s
    /// doubling to 30 s): taken soon after space returns, without hashing them over and
    /// over while it does not.
    private func retryUntaken() {
        guard !closed else { return }
        untakenRetryMs = min(max(untakenRetryMs * 2, 500), 30_000)
        retryTimer.start(afterMs: untakenRetryMs) { [unowned self] in self.rescan() }
    }
}
