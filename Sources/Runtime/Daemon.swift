import EventLoop
import Foundation
import Glibc
import Index
import Journal
import PhotomemoCore
import Stores

/// `photomemo serve`: the daemon's services, started in order and stopped in reverse.
///
///     start: home layout + lock ─▶ job definition ─▶ database + store (ResourcePool)
///            ─▶ journal (resume interrupted) ─▶ services, in order: scheduler, deliverer,
///            collector, followers, queue tailers, inbox watcher, control server ─▶ signals
///     SIGTERM/SIGINT: services stopped in reverse (socket and intake first; the scheduler
///            lets running stages finish within the grace) ─▶ close ─▶ exit 0;
///            subprocesses still running then (exec sinks, or stages past the grace) get
///            SIGTERM, SIGKILL 2 s later, and the daemon exits at most 3 s after that
///     SIGHUP: re-read the job definition off the loop; swap only if it is valid
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
        /// `--allow-private-webhooks`: users' webhooks may point at loopback, link-local
        /// and private addresses (admins' always may).
        public var allowPrivateWebhooks = false
        /// With a group, the socket is mode 0660 and owned by it; else 0600.
        public var socketGroup: gid_t?
        /// `serve --database` / `--store`: override the job definition's.
        public var database: String?
        public var store: String?
        /// On a database several daemons share: this one's name (default: the machine's
        /// name and a hash of the home), and how long its claims hold without renewal.
        public var hostID: String?
        public var leaseSeconds: Double = 30

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

    /// Loads the configured definition (file or built-in) against the registry, its stages
    /// built on `resources` (the daemon's pool; `check` uses a fresh one).
    public static func loadDefinition(file: String?, registry: StageRegistry, home: Home, database: String? = nil,
                                      store: String? = nil, resources: ResourcePool = ResourcePool()) throws -> JobDefinition {
        let env = StageEnvironment(home: URL(fileURLWithPath: home.root), resources: resources)
        if let file { return try JobDefinition.load(file: file, registry: registry, environment: env, database: database, store: store) }
        return try JobDefinition.load(data: Data(JobDefinition.builtinDefaultJSON.utf8), source: "built-in photo-memo",
                                      registry: registry, environment: env, database: database, store: store)
    }

    /// Runs until SIGTERM/SIGINT; returns the process exit code.
    public func run() throws -> Int32 {
        let hostID = try options.hostID.map(Backend.checked)  // before anything opens
        umask(0o027)  // journal, quarantine and store files: owner rw, group r, others nothing
        limitMallocArenas(2)  // before any worker thread starts (PLATFORM.md: flat RSS)
        try home.prepare()
        let lockFD = try home.lock()
        defer { close(lockFD) }
        SignalWatcher.ignoreSIGPIPE()
        // Stages run on the libuv pool: size it for the stages' concurrency plus intake.
        // The database and the store are the runtime's, opened once; stages get them (or
        // one they name themselves) from the same pool.
        let resources = ResourcePool()
        let definition = try Self.loadDefinition(file: options.jobFile, registry: registry, home: home, database: options.database,
                                                 store: options.store, resources: resources)
        let decodeMemory = try DecodeMemory.shared(in: resources)
        decodeMemory.limitBytes = definition.memoryMB.map { Int64($0) << 20 } ?? DecodeMemory.defaultLimitBytes
        // Deliveries hold a pool thread each while their sink runs (a hung one up to
        // --sink-timeout): they get threads of their own, so they never starve the stages.
        EventLoop.setThreadPoolSize(min(64, definition.stages.map(\.concurrency).reduce(2, +)) + DeliverySchedule.maxThreads)
        let environment = StageEnvironment(home: URL(fileURLWithPath: home.root), database: definition.database,
                                           store: definition.store, resources: resources)
        let backend = try Backend(environment: environment, hostID: hostID, leaseSeconds: options.leaseSeconds)
        let (journal, records) = (backend.journal, backend.records)
        let assets = try environment.assetStore()

        // A fatal signal left its line in the crash log: the jobs it names have a crash
        // counted at their stage (a SIGKILL or a clean stop leaves the log empty).
        let crash = FatalSignalLog.lastCrash(in: home.crashLog)
        if let crash { Log.warning("the last run died of \(crash.signal) while running \(crash.running.count) jobs") }
        let counts = try DiskSpace.waitingForSpace("resuming interrupted jobs") {
            try journal.resumeInterrupted(maxAttempts: definition.retry.maxAttempts, crashed: crash?.running ?? [:],
                                          signal: crash?.signal ?? "a fatal signal", now: unixNow())
        }
        if counts.resumed > 0 { Log.notice("resuming \(counts.resumed) interrupted jobs") }
        if counts.failed > 0 { Log.warning("\(counts.failed) jobs failed: interrupted too many times") }
        for id in counts.crashLooped {
            Log.error("failed: the daemon died twice while its stage ran; not retried (photomemo retry \(id) runs it again)", job: id)
        }
        try DiskSpace.waitingForSpace("the heartbeat") { try journal.heartbeat(started: unixNow(), pid: getpid(), now: unixNow()) }
        try FatalSignalLog.install(crashFile: home.crashLog, json: Log.format == .json)

        let loop = try EventLoop()
        let photos = PhotoPolicy(inbox: home.inbox, allowedRoots: options.allowRoots)
        let quarantine = Quarantine(folder: home.quarantine, inbox: home.inbox, originals: LockedValue(definition.inbox.originalsMode))
        let lane = SerialLane(loop: loop)
        let events = EventBus()
        let wakeup = try LoopWakeup(loop: loop)
        let scheduler = try Scheduler(loop: loop, journal: journal, quarantine: quarantine, photos: photos, definition: definition, events: events,
                                      wakeup: wakeup.sender)
        // Stopped after the scheduler: leases are renewed while running stages finish.
        let leases = try LeaseKeeper(loop: loop, queue: journal, scheduler: scheduler)
        let quota = QuotaMeter(limits: definition.quota, records: records, journal: journal)
        let intake = MemoIntake(photos: photos, joinTimeoutSeconds: definition.joinTimeoutSeconds, memoStage: definition.memoStage,
                                maxPhotoBytes: definition.maxPhotoBytes, inbox: definition.inbox, quota: quota)
        let makeReader = { (path: String, name: String) in
            QueueReader(path: path, name: name, journal: journal, quarantine: quarantine, intake: intake)
        }
        // queue.jsonl in the home, and one file per other user in queue.d/.
        let tailers = try [
            QueueFolder(path: home.root, prefix: "", isQueueFile: { $0 == "queue.jsonl" }, makeReader: makeReader),
            QueueFolder(path: home.queueFolder, prefix: "queue.d/",
                        isQueueFile: { $0.hasSuffix(".jsonl") && !PhotoPolicy.isIgnoredInboxName($0) }, makeReader: makeReader),
        ].map { folder in
            try QueueTailer(loop: loop, lane: lane, folder: folder, events: events, pollSeconds: options.queuePollSeconds) { scheduler.pump() }
        }
        let scanner = InboxScanner(inbox: home.inbox, journal: journal, quarantine: quarantine,
                                   settleSeconds: options.settleSeconds, maxPhotoBytes: intake.maxPhotoBytes,
                                   joinTimeoutSeconds: intake.joinTimeoutSeconds, memoStage: intake.memoStage,
                                   options: intake.inbox)
        scanner.quota = quota
        let inbox = try InboxWatcher(loop: loop, lane: lane, scanner: scanner, rescanSeconds: options.rescanSeconds, events: events) {
            scheduler.pump()
        }
        scheduler.onUntaken = { [weak inbox] names in inbox?.retake(names) }

        let notify = SystemdNotify()
        // The file is read and its stages built on the work pool; checked and swapped in here.
        let (jobFile, registry, home, database, store) = (options.jobFile, registry, home, options.database, options.store)
        let reloader = DefinitionReloader(loop: loop, load: {
            try Self.loadDefinition(file: jobFile, registry: registry, home: home, database: database, store: store, resources: resources)
        }) { loaded in
            do {
                let next = try loaded.get()
                guard next.database == definition.database, next.store == definition.store else {
                    throw PhotomemoError(.badDefinition, "\(next.source): the database and the store are opened once, at start; restart photomemo to change them")
                }
                intake.joinTimeoutSeconds.value = next.joinTimeoutSeconds
                intake.memoStage.value = next.memoStage
                intake.maxPhotoBytes.value = next.maxPhotoBytes
                quarantine.originals.value = next.inbox.originalsMode
                intake.inbox.value = next.inbox
                quota.limits.value = next.quota
                decodeMemory.limitBytes = next.memoryMB.map { Int64($0) << 20 } ?? DecodeMemory.defaultLimitBytes
                scheduler.replace(definition: next)
                Log.notice("reloaded job definition \(next.name) from \(next.source)")
                return .success(next)
            } catch {
                let e = error as? PhotomemoError ?? PhotomemoError(.badDefinition, "\(error)")
                Log.error("reload failed, keeping \(scheduler.definition.name): \(e.message)")
                return .failure(e)
            }
        }
        let deliverer = try NotificationDeliverer(loop: loop, events: events, store: records,
                                                  retry: { scheduler.definition.retry },
                                                  execTimeoutMs: Int(options.sinkTimeoutSeconds * 1000), claimant: journal.host,
                                                  allowPrivateWebhooks: options.allowPrivateWebhooks)
        let collector = try AssetCollector(loop: loop, records: records, assets: assets)
        let followers = try Followers(loop: loop, records: records)
        // Events reach followers and sinks when a stage or a socket command made them, not at a timer's tick.
        events.subscribe(followers, viewer: nil) { e in
            guard let type = e["event"]?.stringValue, type == "stage_done" || type.hasPrefix("record_") else { return }
            followers.poll()
            deliverer.kick()
        }
        // Another daemon on the same database made work or changes: look now, not at a timer.
        let listener = try backend.sharedURL.map { url in
            try ClusterListener(loop: loop, url: url, host: journal.host, onWork: { scheduler.pump() },
                                onChanges: { followers.poll(); deliverer.kick() })
        }
        // The control plane: handlers per concern with their dependencies, behind the router.
        let jobs = JobHandlers(loop: loop, journal: journal, scheduler: scheduler, events: events, lane: lane, intake: intake,
                               records: records, reload: { reloader.reload($0) })
        var clients: () -> Int = { 0 }  // the server is made after the router it serves
        let router = ControlRouter([
            jobs,
            StatusHandlers(loop: loop, journal: journal, scheduler: scheduler, live: .init(
                backlog: { (inbox.backlog, tailers.reduce(0) { $0 + $1.unreadBytes }) }, inboxSkipped: { inbox.skipped }, inboxStale: { inbox.stale },
                queueFiles: { tailers.flatMap { $0.files.values } }, clients: { clients() }, watching: { jobs.watching },
                host: journal.host, database: backend.engine, hostWindowSeconds: journal.leaseSeconds.map { 3 * $0 } ?? .infinity,
                quota: quota)),
            RecordHandlers(loop: loop, records: records, assets: assets, journal: journal, events: events, wakeup: wakeup.sender,
                           collectAssets: { collector.collect() }),
            SubscriptionHandlers(loop: loop, records: records, followers: followers, allowPrivateWebhooks: options.allowPrivateWebhooks),
        ])
        let control = try ControlServer(loop: loop, path: home.socket, group: options.socketGroup, commands: router)
        clients = { [weak control] in control?.clientCount ?? 0 }  // weak: the server holds the router

        // Started in this order, stopped in reverse: the socket and intake first, the
        // scheduler (which lets running stages finish) last.
        let services = ServiceGroup(services: (leases.map { [$0] } ?? []) + [scheduler, deliverer, collector, followers]
                                              + (listener.map { [$0] } ?? []) + tailers + [inbox, control])
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
            graceTimer.start(afterMs: UInt64(self.options.graceSeconds * 1000)) {
                Log.warning("grace period over with \(scheduler.runningCount) stages running; they resume at the next start")
                endSubprocesses()
            }
            services.stop {
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
        signals.append(try SignalWatcher(loop: loop, signal: SIGHUP) { _ in reloader.reload() })

        services.start()
        Log.notice("photomemo serving \(home.root) with job \(definition.name) (\(definition.stages.map(\.name).joined(separator: " → ")))")
        notify.send("READY=1\nSTATUS=serving \(home.root) with job \(definition.name)\nMAINPID=\(getpid())")
        loop.run()
        let rc = loop.close()
        if rc != 0 { Log.error("event loop closed with \(loop.handleCount) handles still open") }
        Log.notice("stopped")
        return 0
    }
}
