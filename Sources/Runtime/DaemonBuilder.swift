import EventLoop
import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit
import Stores

/// The daemon's objects made and wired to one another, nothing started yet: the
/// scheduler, intake (queue tailers, inbox watcher), deliveries, followers, the cluster
/// listener and the control plane, in the order they start (`services`).
struct DaemonBuilder {
    let loop: EventLoop
    let lane: SerialLane
    let wakeup: LoopWakeup
    let live: LiveDefinition
    let scheduler: Scheduler
    let deliverer: NotificationDeliverer
    let reloader: DefinitionReloader
    /// Started in this order, stopped in reverse: the socket and intake first, the
    /// scheduler (which lets running stages finish) last.
    let services: ServiceGroup

    /// The parts the daemon opened before wiring (home, definition, database, store).
    struct Opened {
        let options: Daemon.Options
        let home: Home
        let definition: JobDefinition
        let load: @Sendable () throws -> JobDefinition
        let backend: Backend
        let assets: any AssetStore
        let decodeMemory: DecodeMemory
    }

    init(_ opened: Opened) throws {
        let (options, home, definition, backend) = (opened.options, opened.home, opened.definition, opened.backend)
        let (journal, records) = (backend.journal, backend.records)
        let loop = try EventLoop()
        let live = LiveDefinition(definition)
        let photos = PhotoPolicy(inbox: home.inbox, allowedRoots: options.allowRoots, daemonsOwn: home.reprocess)
        let quarantine = Quarantine(folder: home.quarantine, inbox: home.inbox, originals: live.originals)
        let lane = SerialLane(loop: loop)
        let events = EventBus()
        let wakeup = try LoopWakeup(loop: loop)
        let scheduler = try Scheduler(loop: loop, journal: journal, quarantine: quarantine, photos: photos, live: live, events: events,
                                      wakeup: wakeup.sender)
        // Stopped after the scheduler: leases are renewed while running stages finish.
        let leases = try LeaseKeeper(loop: loop, queue: journal, scheduler: scheduler, definition: live)
        let quota = QuotaMeter(limits: live.quota, records: records, journal: journal, recordStage: { live.current.recordStage })
        let intake = MemoIntake(photos: photos, live: live, quota: quota)
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

        // The file is read and its stages built on the work pool; checked and swapped in here.
        let decodeMemory = opened.decodeMemory
        let reloader = DefinitionReloader(loop: loop, load: opened.load) { loaded in
            do {
                let next = try loaded.get(), previous = live.current
                try live.replace(with: next)
                // The process's decode budget is set from it (see `LiveDefinition`).
                decodeMemory.limitBytes = next.memoryMB.map { Int64($0) << 20 } ?? DecodeMemory.defaultLimitBytes
                scheduler.definitionReplaced(previous: previous)
                // Their processes (exec workers) stop gracefully; the new stages start their own.
                for entry in previous.stages { (entry.stage as? any LongLivedStage)?.retire() }
                Log.notice("reloaded job definition \(next.name) from \(next.source)")
                return .success(next)
            } catch {
                let e = error as? PhotomemoError ?? PhotomemoError(.badDefinition, "\(error)")
                Log.error("reload failed, keeping \(live.current.name): \(e.message)")
                return .failure(e)
            }
        }
        let deliverer = try NotificationDeliverer(loop: loop, events: events, store: records,
                                                  retry: { live.current.retry },
                                                  execTimeoutMs: Int(options.sinkTimeoutSeconds * 1000), claimant: journal.host,
                                                  allowPrivateWebhooks: options.allowPrivateWebhooks)
        let trashSeconds: @Sendable () -> Double = { live.current.trashSeconds }
        let collector = try AssetCollector(loop: loop, records: records, journal: journal, assets: opened.assets, trashSeconds: trashSeconds)
        // Every copy into HOME/reprocess (a request's, the adopter's) takes its turn in one room.
        let reprocessRoom = ReprocessRoom(journal: journal, folder: home.reprocess)
        let adopter = try ReprocessAdopter(loop: loop, journal: journal, assets: opened.assets, scheduler: scheduler, definition: live,
                                           room: reprocessRoom)
        let pruner = try Pruner(loop: loop, journal: journal, records: records, quarantine: quarantine, reprocessCopies: home.reprocess,
                                retention: { live.current.retention })
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
        let recordHandlers = RecordHandlers(loop: loop, records: records, assets: opened.assets, journal: journal, events: events,
                                            wakeup: wakeup.sender, collectAssets: { collector.collect() }, trashSeconds: trashSeconds,
                                            reprocessCopies: home.reprocess)
        var clients: () -> Int = { 0 }  // the server is made after the router it serves
        let maintenance = MaintenanceHandlers(loop: loop, parts: .init(
            backup: backend.sharedURL.map { .postgres(url: $0) } ?? .sqlite(path: (journal as? Journal)?.path ?? home.journal), journal: journal as? Journal,
            records: records, store: opened.assets, scratch: home.root + "/renditions/.verify", definition: { live.current },
            collector: collector,
            daemonFolders: [home.inbox, home.queueFolder, home.store, home.quarantine, home.reprocess, home.root + "/renditions"]),
            lastVerifyFile: home.root + "/verify.json")
        let status = StatusHandlers(loop: loop, journal: journal, scheduler: scheduler, live: .init(
                backlog: { (inbox.backlog, tailers.saturatedSum(\.unreadBytes)) }, inboxSkipped: { inbox.skipped }, inboxStale: { inbox.stale },
                queueFiles: { tailers.flatMap { $0.files.values } }, clients: { clients() }, watching: { jobs.watching },
                host: journal.host, database: backend.engine, hostWindowSeconds: journal.leaseSeconds.map { 3 * $0 } ?? .infinity,
                quota: quota, trashCount: { try records.trashCount(owner: $0) }, lastVerify: { maintenance.lastVerify.value },
                sinks: { deliverer.sinkHealth }))
        StartupSweep.run(home: home, journal: journal)
        let router = ControlRouter([
            jobs,
            status,
            maintenance,
            recordHandlers,
            TrashHandlers(records: records, journal: journal, recordHandlers: recordHandlers, trashSeconds: trashSeconds),
            SubscriptionHandlers(loop: loop, records: records, followers: followers, allowPrivateWebhooks: options.allowPrivateWebhooks),
            ReprocessHandler(loop: loop, journal: journal, records: records, assets: opened.assets, scheduler: scheduler, room: reprocessRoom),
        ])
        let control = try ControlServer(loop: loop, path: home.socket, group: options.socketGroup, commands: router)
        clients = { [weak control] in control?.clientCount ?? 0 }  // weak: the server holds the router
        // `--http`: /metrics and /health for monitors, from the same handlers as the socket's.
        let http = try options.http.map { text in
            guard let address = TCPServer.Address(text) else { throw PhotomemoError(.badUsage, Daemon.badHTTPAddress(text)) }
            return try HealthHTTPServer(loop: loop, address: address, routes: status.httpRoutes)
        }

        (self.loop, self.lane, self.wakeup, self.live, self.scheduler) = (loop, lane, wakeup, live, scheduler)
        (self.deliverer, self.reloader) = (deliverer, reloader)
        let trimmer = try FreedMemoryTrimmer(loop: loop) { [unowned scheduler] in (scheduler.runsStarted, scheduler.runningCount) }
        var started: [any DaemonService] = (leases.map { [$0] } ?? []) + [scheduler, deliverer, collector, pruner, maintenance, followers, trimmer]
        started += (listener.map { [$0] } ?? []) as [any DaemonService]
        started += (adopter.map { [$0] } ?? []) as [any DaemonService]
        started += tailers as [any DaemonService]
        started += [inbox, control] as [any DaemonService]
        if let http { started.append(http) }
        services = ServiceGroup(services: started)
    }
}
