import EventLoop
import Foundation
import Index
import Journal
import PhotomemoCore

/// The control socket's commands. Runs on the loop thread; anything that touches the
/// journal or the disk is submitted to the work pool and replies on completion.
final class ControlCommands {
    typealias Reply = (Result<JSONValue, PhotomemoError>) -> Void

    struct Parts {
        let loop: EventLoop
        let journal: Journal
        /// The daemon's record index and asset store (the job definition's database and store).
        let records: RecordStore
        let assets: any AssetStore
        let scheduler: Scheduler
        let events: EventBus
        let lane: SerialLane
        let intake: MemoIntake
        let quarantine: Quarantine
        let wakeup: LoopWakeup.Sender
        let backlog: () -> (inboxFiles: Int, queueUnreadBytes: Int64)
        /// The queue files' state (queue.jsonl and queue.d/*), for status.
        let queueFiles: () -> [QueueTailer.FileState]
        let reload: () -> Result<JobDefinition, PhotomemoError>
    }

    let p: Parts
    let started = unixNow()
    var watchers: [ObjectIdentifier: ControlConnection] = [:]
    var clientCount: () -> Int = { 0 }
    /// Runs the asset collector now (after a delete).
    var collectAssets: () -> Void = {}
    var followers: [ObjectIdentifier: Follower] = [:]
    var followersPolling = false

    static let records = ["query", "get", "update", "delete", "asset", "changes"]
    static let subscriptionCommands = ["subscribe", "unsubscribe", "subscriptions"]
    static let available = ["status", "jobs", "job", "watch", "enqueue", "retry", "cancel", "pause", "resume", "reload", "metrics"]
        + records + subscriptionCommands

    init(_ parts: Parts) { p = parts }

    func disconnected(_ c: ControlConnection) {
        if watchers.removeValue(forKey: ObjectIdentifier(c)) != nil { p.events.unsubscribe(c) }
        followers.removeValue(forKey: ObjectIdentifier(c))
    }

    func run(_ cmd: String, _ req: ControlRequest, from conn: ControlConnection, reply: @escaping Reply) {
        do {
            let caller = Caller(uid: conn.peer.uid)
            if AccessPolicy.rules[cmd] == nil {
                let hint = didYouMean(cmd, Self.available).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw PhotomemoError(.unknownCommand, "unknown command \"\(cmd)\"\(hint); commands: \(Self.available.joined(separator: ", "))")
            }
            try AccessPolicy.check(cmd, req.values, by: caller)
            switch cmd {
            case "status": status(caller, reply)
            case "jobs": try jobs(req, caller, reply)
            case "job": try job(req, caller, reply)
            case "watch": watch(conn, caller, reply)
            case "enqueue": try enqueue(req, caller, reply)
            case "retry": try retry(req, caller, reply)
            case "cancel": try cancel(req, caller, reply)
            case "pause", "resume": try pause(cmd == "pause", req, reply)
            case "reload":
                switch p.reload() {
                case .success(let d): reply(.success(["name": .string(d.name), "source": .string(d.source),
                                                      "stages": .array(d.stages.map { .string($0.name) })]))
                case .failure(let e): reply(.failure(e))
                }
            case "metrics": metrics(reply)
            case _ where Self.records.contains(cmd): try runRecord(cmd, req, caller, from: conn, reply: reply)
            case _ where Self.subscriptionCommands.contains(cmd): try runSubscription(cmd, req, caller, from: conn, reply: reply)
            default: throw PhotomemoError(.unknownCommand, "unknown command \"\(cmd)\"")
            }
        } catch let e as PhotomemoError {
            reply(.failure(e))
        } catch {
            reply(.failure(PhotomemoError(.internalError, "\(error)")))
        }
    }

    /// Runs `work` off the loop; journal errors become `internal`, control errors keep their code.
    func offLoop(_ reply: @escaping Reply, _ work: @escaping @Sendable () throws -> JSONValue) {
        p.loop.submit({ () -> Result<JSONValue, PhotomemoError> in
            do { return .success(try work()) } catch let e as PhotomemoError { return .failure(e) } catch Journal.ControlError.notFound {
                return .failure(PhotomemoError(.notFound, "no such job"))
            } catch Journal.ControlError.conflict(let m) {
                return .failure(PhotomemoError(.conflict, m))
            } catch {
                return .failure(PhotomemoError(.internalError, "\(error)"))
            }
        }, then: reply)
    }
}
