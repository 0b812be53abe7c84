import CPosix
import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore

/// `photomemo serve`: the daemon's services, started in order and stopped in reverse.
///
///     start: home layout + lock ─▶ journal (resume interrupted) ─▶ job definition
///            ─▶ scheduler ─▶ queue tailer ─▶ inbox watcher ─▶ signals
///     SIGTERM/SIGINT: stop intake ─▶ let running stages finish (grace) ─▶ close ─▶ exit 0;
///            subprocesses still running then (exec sinks, or stages past the grace) get
///            SIGTERM, SIGKILL 2 s later, and the daemon exits at most 3 s after that
///     SIGHUP: re-read the job definition; swap only if it is valid
public final class Daemon {
    public struct Options: Sendable {
        public var home: String
        /// A job definition file; nil = the built-in default (`Jobs/photo-memo.json`).
        public var jobFile: String?
        public var allowRoots: [String] = []
        public var rescanSeconds: Double = 60
        public var settleSeconds: Double = 2
        public var queuePollSeconds: Double = 5
        public var graceSeconds: Double = 30
        /// An exec sink is killed (with its process group) after this.
        public var sinkTimeoutSeconds: Double = 30
        /// With a group, the socket is mode 0660 and owned by it; else 0600.
        public var socketGroup: gid_t?

        public init(home: String, jobFile: String? = nil) {
            self.home = home
            self.jobFile = jobFile
        }
    }

    let options: Options
    let registry: StageRegistry
    let home: Home

    public init(options: Options, registry: StageRegistry) {
        self.options = options
        self.registry = registry
        home = Home(options.home)
    }

    /// Loads the configured definition (file or built-in) against the registry.
    public static func loadDefinition(file: String?, registry: StageRegistry, home: Home) throws -> JobDefinition {
        let env = StageEnvironment(home: URL(fileURLWithPath: home.root))
        if let file { return try JobDefinition.load(file: file, registry: registry, environment: env) }
        return try JobDefinition.load(data: Data(JobDefinition.builtinDefaultJSON.utf8), source: "built-in photo-memo",
                                      registry: registry, environment: env)
    }

    /// Runs until SIGTERM/SIGINT; returns the process exit code.
    public func run() throws -> Int32 {
        umask(0o027)  // journal, quarantine and store files: owner rw, group r, others nothing
        pm_limit_malloc_arenas(2)  // before any worker thread starts (PLATFORM.md: flat RSS)
        try home.prepare()
        let lockFD = try home.lock()
        defer { close(lockFD) }
        SignalWatcher.ignoreSIGPIPE()
        // Stages run on the libuv pool: size it for the stages' concurrency plus intake.
        let definition = try Self.loadDefinition(file: options.jobFile, registry: registry, home: home)
        EventLoop.setThreadPoolSize(min(64, definition.stages.map(\.concurrency).reduce(2, +)))

        let journal = try Journal(path: home.journal)
        let (resumed, crashed) = try journal.resumeInterrupted(maxAttempts: definition.retry.maxAttempts)
        if resumed > 0 { Log.notice("resuming \(resumed) interrupted jobs") }
        if crashed > 0 { Log.warning("\(crashed) jobs failed: interrupted too many times") }

        let loop = try EventLoop()
        let photos = PhotoPolicy(inbox: home.inbox, allowedRoots: options.allowRoots)
        let quarantine = Quarantine(folder: home.quarantine, inbox: home.inbox)
        let lane = SerialLane(loop: loop)
        let events = EventBus()
        let wakeup = try LoopWakeup(loop: loop)
        let scheduler = try Scheduler(loop: loop, journal: journal, quarantine: quarantine, definition: definition, events: events,
                                      wakeup: wakeup.sender)
        let intake = MemoIntake(photos: photos, joinTimeoutSeconds: definition.joinTimeoutSeconds)
        let makeReader = { (path: String, name: String) in
            QueueReader(path: path, name: name, journal: journal, quarantine: quarantine, intake: intake)
        }
        // queue.jsonl in the home, and one file per other user in queue.d/.
        let tailers = try [
            QueueFolder(path: home.root, prefix: "", isQueueFile: { $0 == "queue.jsonl" }, makeReader: makeReader),
            QueueFolder(path: home.queueFolder, prefix: "queue.d/",
                        isQueueFile: { $0.hasSuffix(".jsonl") && !PhotoPolicy.isIgnoredInboxName($0) }, makeReader: makeReader),
        ].map { folder in try QueueTailer(loop: loop, lane: lane, folder: folder, events: events) { scheduler.pump() } }
        let scanner = InboxScanner(inbox: home.inbox, journal: journal, quarantine: quarantine, photos: photos,
                                   settleSeconds: options.settleSeconds)
        let inbox = try InboxWatcher(loop: loop, lane: lane, scanner: scanner, rescanSeconds: options.rescanSeconds, events: events) {
            scheduler.pump()
        }

        let notify = SystemdNotify()
        func reload() -> Result<JobDefinition, PhotomemoError> {
            do {
                let next = try Self.loadDefinition(file: self.options.jobFile, registry: self.registry, home: self.home)
                intake.joinTimeoutSeconds.value = next.joinTimeoutSeconds
                scheduler.replace(definition: next)
                Log.notice("reloaded job definition \(next.name) from \(next.source)")
                return .success(next)
            } catch {
                let e = error as? PhotomemoError ?? PhotomemoError(.badDefinition, "\(error)")
                Log.error("reload failed, keeping \(scheduler.definition.name): \(e.message)")
                return .failure(e)
            }
        }
        let commands = ControlCommands(.init(
            loop: loop, journal: journal, scheduler: scheduler, events: events, lane: lane, intake: intake, quarantine: quarantine,
            wakeup: wakeup.sender, backlog: { (inbox.backlog, tailers.reduce(0) { $0 + $1.unreadBytes }) },
            queueFiles: { tailers.flatMap { $0.files.values } }, reload: reload))
        let control = try ControlServer(loop: loop, path: home.socket, group: options.socketGroup, commands: commands)
        // Weak: `control` and `collector` hold `commands`, so strong captures here would be
        // cycles that keep the whole daemon (journal, loop, stores) alive after run() returns
        // (found by LeakSanitizer on the sanitized daemon).
        commands.clientCount = { [weak control] in control?.clientCount ?? 0 }
        let deliverer = try NotificationDeliverer(loop: loop, events: events, store: { try? commands.recordStore() },
                                                  retry: { scheduler.definition.retry },
                                                  execTimeoutMs: Int(options.sinkTimeoutSeconds * 1000))
        let followTimer = try LoopTimer(loop: loop)
        let collector = try AssetCollector(loop: loop, records: { try? commands.recordStore() }, assets: { commands.assetStore() })
        commands.collectAssets = { [weak collector] in collector?.collect() }

        var signals: [SignalWatcher] = []
        let graceTimer = try LoopTimer(loop: loop)
        let exitTimer = try LoopTimer(loop: loop)
        let subprocesses = SubprocessGroups.shared
        // TERM to every subprocess group now (each run sends KILL after 2 s); exit in any case 3 s later.
        func endSubprocesses() {
            subprocesses.terminate()
            if !exitTimer.isClosed {
                exitTimer.start(afterMs: 3000) {
                    Log.warning("\(subprocesses.liveCount) subprocesses did not end; exiting")
                    subprocesses.killAll()
                    exit(0)
                }
            }
        }
        var stopping = false
        let shutdown = { (signum: Int32) in
            if stopping {
                Log.warning("second signal: exiting now; running stages resume at the next start")
                subprocesses.killAll()
                exit(0)
            }
            stopping = true
            notify.send("STOPPING=1")
            Log.notice("signal \(signum): stopping intake, letting \(scheduler.runningCount) running stages finish")
            inbox.close()
            for t in tailers { t.close() }
            control.close()
            deliverer.close()
            followTimer.close()
            collector.close()
            graceTimer.start(afterMs: UInt64(self.options.graceSeconds * 1000)) {
                Log.warning("grace period over with \(scheduler.runningCount) stages running; they resume at the next start")
                endSubprocesses()
            }
            scheduler.stop {
                lane.whenIdle {
                    graceTimer.close()
                    scheduler.close()
                    wakeup.close()
                    for s in signals { s.close() }
                    // No stage runs now; exec sinks still delivering are ended (and retried at the next start).
                    endSubprocesses()
                    deliverer.whenIdle { exitTimer.close() }
                }
            }
        }
        signals.append(try SignalWatcher(loop: loop, signal: SIGTERM, shutdown))
        signals.append(try SignalWatcher(loop: loop, signal: SIGINT, shutdown))
        signals.append(try SignalWatcher(loop: loop, signal: SIGHUP) { _ in _ = reload() })

        scheduler.start()
        deliverer.start()
        collector.start()
        followTimer.start(afterMs: 200, repeatMs: 200) { commands.pollFollowers() }
        for t in tailers { t.start(pollSeconds: options.queuePollSeconds) }
        inbox.start()
        Log.notice("photomemo serving \(home.root) with job \(definition.name) (\(definition.stages.map(\.name).joined(separator: " → ")))")
        notify.send("READY=1\nSTATUS=serving \(home.root) with job \(definition.name)\nMAINPID=\(getpid())")
        loop.run()
        let rc = loop.close()
        if rc != 0 { Log.error("event loop closed with \(loop.handleCount) handles still open") }
        Log.notice("stopped")
        return 0
    }
}
