import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import StageKit
import Stores
@testable import EventLoop
@testable import Runtime

/// The control plane as the daemon wires it — router, handlers, a real journal, record
/// store and local asset store — driven without a socket: each request goes through the
/// one authorization point (`AccessPolicy`) to its handler as the given caller, and the
/// replies are collected on the loop.
final class ControlRig {
    typealias Reply = Result<JSONValue, PhotomemoError>
    struct Call {
        let command: String
        let args: [String: JSONValue]
        let caller: Caller?  // nil: through the router as the (unconnected) connection's caller
    }

    let rig: SchedulerRig
    let records: RecordStore
    let assets: LocalStore
    let handlers: [any ControlHandler]
    let router: ControlRouter
    let conn: ControlConnection
    var journal: Journal { rig.journal }

    static let admin = Caller(uid: 0), owner = Caller(uid: 60_001), other = Caller(uid: 60_002)

    init(paused: Bool = true) throws {
        rig = try SchedulerRig([("first", TestStage(), 1), ("second", TestStage(), 1)], paused: paused)
        let root = rig.t.home.root
        records = try RecordStore(path: root + "/records.sqlite")
        assets = try LocalStore(root: root + "/store")
        let loop = rig.loop, lane = SerialLane(loop: rig.loop)
        let intake = MemoIntake(photos: rig.t.photos, joinTimeoutSeconds: 600)
        let followers = try Followers(loop: loop, records: records)
        let collector = try AssetCollector(loop: loop, records: records, journal: rig.journal, assets: assets, trashSeconds: { 0 })
        let jobs = JobHandlers(loop: loop, journal: rig.journal, scheduler: rig.scheduler, events: rig.events, lane: lane, intake: intake,
                               records: records, reload: { $0(.failure(PhotomemoError(.badDefinition, "no reload in this test"))) })
        let recordHandlers = RecordHandlers(loop: loop, records: records, assets: assets, journal: rig.journal, events: rig.events,
                                            wakeup: rig.wakeup.sender, collectAssets: {}, trashSeconds: { 0 })
        handlers = [
            jobs,
            StatusHandlers(loop: loop, journal: rig.journal, scheduler: rig.scheduler,
                           live: .init(backlog: { (0, 0) }, inboxSkipped: { SkippedEntries() }, inboxStale: { StaleEntries() }, queueFiles: { [] }, clients: { 1 }, watching: { jobs.watching },
                                       host: "", database: "sqlite", hostWindowSeconds: .infinity)),
            recordHandlers,
            // The trash off: these tests' deletes are final, as before the trash.
            TrashHandlers(records: records, journal: rig.journal, recordHandlers: recordHandlers, trashSeconds: { 0 }),
            SubscriptionHandlers(loop: loop, records: records, followers: followers),
            ReprocessHandler(loop: loop, journal: rig.journal, records: records, assets: assets, scheduler: rig.scheduler,
                             room: ReprocessRoom(journal: rig.journal, folder: rig.t.home.reprocess)),
            MaintenanceHandlers(loop: loop, parts: .init(backup: .sqlite(path: rig.journal.path), journal: rig.journal, records: records,
                                                         store: assets, scratch: root + "/renditions/.verify",
                                                         definition: { [scheduler = rig.scheduler] in scheduler.definition }, collector: collector),
                                lastVerifyFile: root + "/verify.json"),
        ]
        router = ControlRouter(handlers)
        conn = ControlConnection(pipe: try PipeConnection(loop: loop), commands: router)
        let conn = self.conn
        rig.closers = [{ followers.close() }, { collector.close() }, { conn.close() }]
    }

    /// Runs `calls` one after another (each after the previous one's reply), then until
    /// `settled` holds (or `timeout`); returns the replies and the loop's close status (0: no
    /// handle left open). The scheduler is not started: only the handlers pump it.
    func run(_ calls: [Call], timeout: Double = 10, until settled: @escaping () -> Bool = { true }) throws -> (replies: [Reply], closed: Int32) {
        var replies: [Reply] = []
        var started = false
        func next() {
            guard replies.count < calls.count else { return }
            send(calls[replies.count]) { replies.append($0); next() }
        }
        let run = try rig.run(timeout: timeout, start: false, step: {
            if !started { started = true; next() }
        }) { replies.count == calls.count && settled() }
        return (replies, run.closed)
    }

    func run(_ command: String, _ args: [String: JSONValue] = [:], as caller: Caller?) throws -> (reply: Reply, closed: Int32) {
        let r = try run([Call(command: command, args: args, caller: caller)])
        return (r.replies.first ?? .failure(PhotomemoError(.internalError, "no reply")), r.closed)
    }

    /// What `ControlRouter.run` does, with the caller the test names.
    private func send(_ call: Call, reply: @escaping (Reply) -> Void) {
        let req = ControlRequest(values: call.args)
        router.run(call.command, req, from: conn, as: call.caller, reply: reply)
    }

    /// A queued memo job of `owner`'s (nil: the daemon's).
    func queuedJob(owner: Caller?) throws -> Int64 { try rig.enqueue(1, owner: owner?.name)[0] }

    /// A job that failed at its first stage, recorded as the scheduler records it (make it before any queued job).
    func failedJob(owner: Caller?) throws -> Int64 {
        let id = try queuedJob(owner: owner)
        let claimed = try journal.claim(stageIndex: 0, stageName: "first", limit: 1)
        guard claimed.map(\.context.id) == [id] else { throw PhotomemoError(.internalError, "claimed \(claimed.map(\.context.id))") }
        let steps = JobStateMachine.steps([(claimed[0], .fail(.badImage, "broken"))], stageCount: 2, retry: .default)
        _ = try journal.recordSteps(steps, stageName: "first", durationMs: 1)
        return id
    }

    /// Two photo jobs of `name` (other bytes each time) of `owner`'s, the second waiting for
    /// the first (`after_job`: it updates the first one's record); the first moved on to
    /// `stage` (0 or 1) as the scheduler records it.
    func photoJobAndOneWaitingForIt(_ name: String, owner: Caller, firstAtStage stage: Int = 0) throws -> (first: Int64, waiting: Int64) {
        let path = rig.t.photos.inbox + "/" + name
        var ids: [Int64] = []
        for n in 1...2 {
            try Data("bytes \(n)".utf8).write(to: URL(fileURLWithPath: path))
            guard case .created(let id, _) = try journal.commitPhotos([TakenPhoto(name: name, path: path, identity: "\(n)", sha256: "s\(n)-\(name)", owner: owner.name)])[0] else {
                throw PhotomemoError(.internalError, "photo \(n) was not a job of its own")
            }
            ids.append(id)
            if n == 1, stage == 1 {
                let claimed = try journal.claim(stageIndex: 0, stageName: "first", limit: 1)
                _ = try journal.recordSteps(JobStateMachine.steps([(claimed[0], .continue())], stageCount: 2, retry: .default), stageName: "first", durationMs: 1)
            }
        }
        guard try journal.history(ids[1]).contains(where: { $0.event == "updates" }) else { throw PhotomemoError(.internalError, "job \(ids[1]) waits for none") }
        return (ids[0], ids[1])
    }

    /// A memo job that failed at intake: the photo it names could not be used.
    func photoRefusedJob(owner: Caller?) throws -> Int64 {
        let m = QueuedMemo(memo: MemoJob(photo: "/nowhere/x.jpg", memo: "m", owner: owner?.name),
                           photo: .unusable(path: "/nowhere/x.jpg", reason: "outside the allowed roots"), key: "k-\(UUID().uuidString)",
                           source: "test")
        guard case .failed(let id, _) = try journal.commitMemos([m], position: nil, joinTimeoutSeconds: 600)[0] else {
            throw PhotomemoError(.internalError, "the job did not fail")
        }
        return id
    }
}

extension Result where Failure == PhotomemoError {
    var code: PhotomemoError.Code? { if case .failure(let e) = self { e.code } else { nil } }
    var message: String? { if case .failure(let e) = self { e.message } else { nil } }
    var value: Success? { try? get() }
}
