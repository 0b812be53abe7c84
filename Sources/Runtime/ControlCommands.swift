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
        let scheduler: Scheduler
        let events: EventBus
        let lane: SerialLane
        let reader: QueueReader
        let quarantine: Quarantine
        let wakeup: LoopWakeup.Sender
        let backlog: () -> (inboxFiles: Int, queueUnreadBytes: Int64)
        let reload: () -> Result<JobDefinition, PhotomemoError>
    }

    let p: Parts
    private let started = unixNow()
    private var watchers: [ObjectIdentifier: ControlConnection] = [:]
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
            switch cmd {
            case "status": status(reply)
            case "jobs": try jobs(req, reply)
            case "job": try job(req, reply)
            case "watch": watch(conn, reply)
            case "enqueue": try enqueue(req, owner: Self.viewer(conn), reply)
            case "retry": try retry(req, reply)
            case "cancel": try cancel(req, reply)
            case "pause", "resume": try pause(cmd == "pause", req, reply)
            case "reload":
                switch p.reload() {
                case .success(let d): reply(.success(["name": .string(d.name), "source": .string(d.source),
                                                      "stages": .array(d.stages.map { .string($0.name) })]))
                case .failure(let e): reply(.failure(e))
                }
            case "metrics": metrics(reply)
            case _ where Self.records.contains(cmd): try runRecord(cmd, req, from: conn, reply: reply)
            case _ where Self.subscriptionCommands.contains(cmd): try runSubscription(cmd, req, from: conn, reply: reply)
            default:
                let hint = didYouMean(cmd, Self.available).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw PhotomemoError(.unknownCommand, "unknown command \"\(cmd)\"\(hint); commands: \(Self.available.joined(separator: ", "))")
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

    // MARK: status and metrics

    private func status(_ reply: @escaping Reply) {
        let journal = p.journal
        let snapshot = loopSnapshot()
        offLoop(reply) {
            let counts = try journal.counts()
            let stats = try journal.stageStats()
            let lastMinute = try journal.finishedCount(since: unixNow() - 60)
            var stages: [String: JSONValue] = [:]
            for name in snapshot.stageNames {
                let s = stats[name] ?? Journal.StageStats()
                stages[name] = [
                    "done": .int(Int64(s.done)), "failed": .int(Int64(s.failed)), "retried": .int(Int64(s.retried)),
                    "skipped": .int(Int64(s.skipped)), "unavailable": .int(Int64(s.unavailable)),
                    "running": .int(Int64(snapshot.running[name] ?? 0)), "paused": .bool(snapshot.pausedStages.contains(name)),
                    "p50_ms": s.percentile(0.5).map(JSONValue.double) ?? .null,
                    "p99_ms": s.percentile(0.99).map(JSONValue.double) ?? .null,
                ]
            }
            var deps: [String: JSONValue] = ["journal": "up"]
            for (d, up) in snapshot.dependencies { deps[d] = up ? "up" : "down" }
            return [
                "version": .string(PhotomemoVersion.current),
                "uptime_s": .double((unixNow() - snapshot.started).rounded()),
                "paused": .bool(snapshot.paused),
                "job_definition": .string(snapshot.definition),
                "jobs": .object(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, JSONValue.int(Int64($0.value))) })),
                "stages": .object(stages),
                "stage_order": .array(snapshot.stageNames.map(JSONValue.string)),
                "backlog": ["inbox_files": .int(Int64(snapshot.backlog.inboxFiles)),
                            "queue_unread_bytes": .int(snapshot.backlog.queueUnreadBytes)],
                "dependencies": .object(deps),
                "throughput": ["jobs_last_minute": .int(Int64(lastMinute)), "jobs_per_s": .double(Double(lastMinute) / 60)],
                "clients": ["connected": .int(Int64(snapshot.clients)), "watching": .int(Int64(snapshot.watchers))],
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
        let dependencies: [String: Bool]
        let backlog: (inboxFiles: Int, queueUnreadBytes: Int64)
        let clients: Int
        let watchers: Int
    }

    var clientCount: () -> Int = { 0 }
    /// Runs the asset collector now (after a delete).
    var collectAssets: () -> Void = {}

    /// The loop-owned state status and metrics report, copied so workers can read it.
    private func loopSnapshot() -> LoopSnapshot {
        let s = p.scheduler
        let names = s.definition.stages.map(\.name)
        return LoopSnapshot(started: started, paused: s.paused, pausedStages: s.pausedStages, definition: s.definition.name,
                            stageNames: names, running: Dictionary(uniqueKeysWithValues: names.map { ($0, s.running(stage: $0)) }),
                            dependencies: s.dependencies, backlog: p.backlog(), clients: clientCount(), watchers: watchers.count)
    }

    private func metrics(_ reply: @escaping Reply) {
        let journal = p.journal
        let snapshot = loopSnapshot()
        offLoop(reply) {
            .object(["text": .string(try Metrics.render(journal: journal, snapshot: snapshot))])
        }
    }

    // MARK: jobs

    private func jobs(_ req: ControlRequest, _ reply: @escaping Reply) throws {
        let state = try req.string("state").map { s in
            guard let st = JobState(rawValue: s) else {
                throw PhotomemoError(.badRequest, "unknown state \"\(s)\"; states: \(JobState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return st
        }
        let limit = Int(try req.int("limit") ?? 50)
        guard (1...1000).contains(limit) else { throw PhotomemoError(.badRequest, "\"limit\" must be from 1 to 1000") }
        let before = try req.string("cursor").flatMap { Int64($0) }
        let journal = p.journal
        offLoop(reply) {
            let page = try journal.jobsPage(state: state, before: before, limit: limit)
            let cursor: JSONValue = page.count == limit ? .string(String(page.last!.id)) : .null
            return ["jobs": .array(page.map(Self.json)), "cursor": cursor]
        }
    }

    static func json(_ j: JobSummary) -> JSONValue {
        var o: [String: JSONValue] = [
            "id": .int(j.id), "state": .string(j.state.rawValue), "attempts": .int(Int64(j.attempts)),
            "type": .string(j.memo.type), "memo": .string(j.memo.memo),
        ]
        o["key"] = j.key.map(JSONValue.string) ?? .null
        o["stage"] = j.stage.map(JSONValue.string) ?? .null
        o["photo"] = j.photo.map(JSONValue.string) ?? .null
        o["duplicate_of"] = j.duplicateOf.map(JSONValue.int) ?? .null
        o["error"] = j.error.map(JSONValue.string) ?? .null
        o["quarantine"] = j.quarantine.map(JSONValue.string) ?? .null
        return .object(o)
    }

    private func job(_ req: ControlRequest, _ reply: @escaping Reply) throws {
        let id = try req.requiredInt("job")
        let journal = p.journal
        offLoop(reply) {
            guard let j = try journal.job(id) else { throw PhotomemoError(.notFound, "no job \(id)") }
            guard case .object(var o) = Self.json(j) else { return .null }
            o["fields"] = .object(j.memo.fields)
            o["results"] = j.results
            o["history"] = .array(try journal.history(id).map { h in
                var e: [String: JSONValue] = ["event": .string(h.event), "time": .string(isoTimestamp(h.at))]
                e["stage"] = h.stage.map(JSONValue.string) ?? .null
                e["attempt"] = h.attempt.map { .int(Int64($0)) } ?? .null
                e["duration_ms"] = h.durationMs.map(JSONValue.double) ?? .null
                e["message"] = h.message.map(JSONValue.string) ?? .null
                return .object(e)
            })
            return .object(o)
        }
    }

    private func watch(_ conn: ControlConnection, _ reply: Reply) {
        reply(.success(["watching": true]))
        watchers[ObjectIdentifier(conn)] = conn
        p.events.subscribe(conn) { [weak conn] event in conn?.push(event) }
    }

    /// Enqueues a job line; a client that is not root or the daemon's user owns its jobs.
    private func enqueue(_ req: ControlRequest, owner viewer: Viewer, _ reply: @escaping Reply) throws {
        guard let line = req.values["job"] else { throw PhotomemoError(.badRequest, "argument \"job\" (a job line object) is required") }
        var parsed: MemoJob
        do { parsed = try MemoJob(json: line) } catch let e as PhotomemoError {
            throw PhotomemoError(.badRequest, e.message)
        }
        if case .user(let name) = viewer { parsed.owner = name }
        let memo = parsed
        let reader = p.reader, journal = p.journal, events = p.events, scheduler = p.scheduler
        let key = memo.key ?? "socket:" + UUID().uuidString.lowercased()
        let join = reader.joinTimeoutSeconds.value
        // Through the intake lane, so joining a photo never races the inbox scanner.
        p.lane.enqueue({ () -> Result<IntakeOutcome, PhotomemoError> in
            do {
                let photo = try reader.resolvePhoto(memo.photo)
                let queued = QueuedMemo(memo: memo, photo: photo, key: key, source: "socket", origin: "socket")
                return .success(try journal.commitMemos([queued], position: nil, joinTimeoutSeconds: join)[0])
            } catch let e as PhotomemoError {
                return .failure(PhotomemoError(.badRequest, e.message))
            } catch {
                return .failure(PhotomemoError(.internalError, "\(error)"))
            }
        }) { result in
            switch result {
            case .success(let outcome):
                events.publish(outcome, source: "socket")
                scheduler.pump()
                switch outcome {
                case .created(let id, let state): reply(.success(["job": .int(id), "state": .string(state.rawValue)]))
                case .joined(let id): reply(.success(["job": .int(id), "state": "joined"]))
                case .duplicate(let id, let of): reply(.success(["job": .int(id), "state": "done", "duplicate_of": .int(of)]))
                case .failed(let id, let reason): reply(.success(["job": .int(id), "state": "failed", "error": .string(reason)]))
                case .alreadyTaken: reply(.failure(PhotomemoError(.internalError, "unexpected intake outcome")))
                }
            case .failure(let e): reply(.failure(e))
            }
        }
    }

    private func retry(_ req: ControlRequest, _ reply: @escaping Reply) throws {
        let id = try req.requiredInt("job")
        let journal = p.journal, scheduler = p.scheduler, events = p.events
        let join = p.reader.joinTimeoutSeconds.value
        offLoop({ result in
            if case .success = result {
                events.publish("job_retried", job: id)
                scheduler.pump()
            }
            reply(result)
        }) {
            let (quarantined, photoPath) = try journal.retry(job: id, joinTimeoutSeconds: join)
            // A quarantined photo goes back where the job expects it.
            if let q = quarantined, let photo = photoPath, !FileManager.default.fileExists(atPath: photo) {
                try FileManager.default.moveItem(atPath: q, toPath: photo)
                try? FileManager.default.removeItem(atPath: q + ".reason.json")
            }
            return ["job": .int(id), "state": .string(try journal.job(id)?.state.rawValue ?? "queued")]
        }
    }

    private func cancel(_ req: ControlRequest, _ reply: @escaping Reply) throws {
        let id = try req.requiredInt("job")
        let journal = p.journal, events = p.events
        offLoop({ result in
            if case .success = result { events.publish("job_cancelled", job: id) }
            reply(result)
        }) {
            try journal.cancel(job: id)
            return ["job": .int(id), "state": "cancelled"]
        }
    }

    private func pause(_ value: Bool, _ req: ControlRequest, _ reply: @escaping Reply) throws {
        let stage = try req.string("stage")
        if let stage, p.scheduler.definition.index(ofStage: stage) == nil {
            throw PhotomemoError(.notFound, "no stage \"\(stage)\" in job \(p.scheduler.definition.name); stages: \(p.scheduler.definition.stages.map(\.name).joined(separator: ", "))")
        }
        let scheduler = p.scheduler
        scheduler.setPaused(value, stage: stage) { error in
            if let error {
                reply(.failure(PhotomemoError(.internalError, "cannot persist the pause flag: \(error)")))
            } else {
                reply(.success(["paused": .bool(scheduler.paused),
                                "paused_stages": .array(scheduler.pausedStages.sorted().map(JSONValue.string))]))
            }
        }
    }
}
