import EventLoop
import Foundation
import Glibc
import Index
import Journal
import PhotomemoCore
import StageKit
import Stores

/// `photomemo serve`: the daemon's services, started in order and stopped in reverse.
/// Here: what runs before them (home, lock, definition, database and store, resuming
/// interrupted jobs); their wiring is `DaemonBuilder`, their stop `ShutdownController`.
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
        /// `serve --http ADDR`: serve GET /metrics and /health there (`HOST:PORT`,
        /// `[IPV6]:PORT`, or `PORT` on 127.0.0.1); nil: no HTTP at all.
        public var http: String?

        public init(home: String, jobFile: String? = nil) {
            self.home = home
            self.jobFile = jobFile
        }
    }

    /// Nil when `--http`'s value is one the daemon can bind; else why not.
    public static func checkHTTPAddress(_ text: String) -> String? {
        TCPServer.Address(text) == nil ? badHTTPAddress(text) : nil
    }

    static func badHTTPAddress(_ text: String) -> String {
        "--http wants HOST:PORT with a numeric address (127.0.0.1:9464, [::1]:9464) or a PORT alone (loopback), got \"\(text)\""
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
        SignalWatcher.holdStopSignals()  // a SIGTERM while starting is answered once serving
        do { return try serve() } catch let stopped as StoppedWhileWaiting {
            Log.notice("signal \(stopped.signal) while waiting for \(stopped.waitingFor): stopped")
            return 0
        }
    }

    private func serve() throws -> Int32 {
        let hostID = try options.hostID.map(Backend.checked)  // before anything opens
        umask(0o027)  // journal, quarantine and store files: owner rw, group r, others nothing
        // Before any worker thread starts. One arena: RSS stays flat (PLATFORM.md), and a quiet
        // second's trim gives back its whole free top (a thread arena's top is trimmed only on free).
        limitMallocArenas(1)
        raiseOpenFileLimit()
        // Kept for the next photo, given back when quiet (FreedMemoryTrimmer). Three 12 MP photos
        // in flight outgrew 32 MiB: half their buffers were faulted in afresh (benchmarks.md).
        keepFreedMemory(padBytes: 96 << 20)
        try home.prepare()
        let lockFD = try home.lock()
        defer { close(lockFD) }
        let leftovers = LeftoverProcesses.endAndTag(home: home.root)
        if leftovers > 0 { Log.warning("ended \(leftovers) processes the last run left running (exec stages and what they started)") }
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
        // One thread more for a backup or verify run (MaintenanceHandlers), so it never takes a stage's.
        EventLoop.setThreadPoolSize(min(64, definition.stages.map(\.concurrency).reduce(2, +)) + DeliverySchedule.maxThreads + 1)
        let environment = StageEnvironment(home: URL(fileURLWithPath: home.root), database: definition.database,
                                           store: definition.store, resources: resources)
        let backend = try Backend(environment: environment, hostID: hostID, leaseSeconds: options.leaseSeconds)
        let journal = backend.journal
        let assets = try environment.assetStore()

        // A fatal signal left its line in the crash log: the jobs it names have a crash
        // counted at their stage (a SIGKILL or a clean stop leaves the log empty).
        let crash = FatalSignalLog.lastCrash(in: home.crashLog)
        if let crash { Log.warning("the last run died of \(crash.signal) while running \(crash.running.count) jobs") }
        let started = StartMarks.lastStarted(in: home.startMarks)
        // The host id first: resuming takes back the jobs leased to it.
        try HostClaim.take(journal)
        let counts = try DiskSpace.waitingForSpace("resuming interrupted jobs") {
            try journal.resumeInterrupted(maxAttempts: definition.retry.maxAttempts, crashed: crash?.running ?? [:],
                                          started: started, signal: crash?.signal ?? "a fatal signal", now: unixNow())
        }
        if counts.resumed > 0 { Log.notice("resuming \(counts.resumed) interrupted jobs") }
        if counts.failed > 0 { Log.warning("\(counts.failed) jobs failed: interrupted too many times") }
        for id in counts.crashLooped {
            Log.error("failed: the daemon died twice while its stage ran; not retried (photomemo retry \(id) runs it again)", job: id)
        }
        try FatalSignalLog.install(crashFile: home.crashLog, json: Log.format == .json)

        let (jobFile, registry, home, database, store) = (options.jobFile, registry, home, options.database, options.store)
        let daemon = try DaemonBuilder(.init(options: options, home: home, definition: definition, load: {
            try Self.loadDefinition(file: jobFile, registry: registry, home: home, database: database, store: store, resources: resources)
        }, backend: backend, assets: assets, decodeMemory: decodeMemory))
        let (loop, services) = (daemon.loop, daemon.services)
        do { daemon.scheduler.startMarks = try StartMarks(path: home.startMarks) } catch let e as SystemError {
            throw PhotomemoError(.io, "cannot keep start marks in \(home.startMarks): \(e.reason)")
        }
        let notify = SystemdNotify()
        let shutdown = try ShutdownController(loop: loop, services: services, lane: daemon.lane, scheduler: daemon.scheduler,
                                              deliverer: daemon.deliverer, wakeup: daemon.wakeup, notify: notify,
                                              graceSeconds: options.graceSeconds)
        try shutdown.watchSignals(on: loop) { daemon.reloader.reload() }

        services.start()
        Log.notice("photomemo serving \(home.root) with job \(definition.name) (\(definition.stages.map(\.name).joined(separator: " → ")))")
        notify.send("READY=1\nSTATUS=serving \(home.root) with job \(definition.name)\nMAINPID=\(getpid())")
        // The controller's signal watchers hold it unowned: it lives as long as the loop runs.
        withExtendedLifetime((daemon, shutdown)) { loop.run() }
        // Exec workers were asked to stop (stdin closed): give them the time to, then end them.
        SubprocessGroups.shared.waitForAll(upToMs: 3000)
        SubprocessGroups.shared.killAll()
        let rc = loop.close()
        if rc != 0 { Log.error("event loop closed with \(loop.handleCount) handles still open") }
        Log.notice("stopped")
        return 0
    }
}
