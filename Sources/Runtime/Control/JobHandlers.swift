import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit

/// jobs, job, watch, enqueue, retry, cancel, pause/resume, reload: the journal's jobs and
/// the scheduler's switches. A user's are scoped to their own jobs (`AccessPolicy`).
final class JobHandlers: ControlHandler {
    let commands: Set<ControlCommand> = [.jobs, .job, .watch, .enqueue, .retry, .cancel, .pause, .resume, .reload]
    let loop: EventLoop
    let journal: any JobJournal
    let scheduler: Scheduler
    let events: EventBus
    private let lane: SerialLane
    let intake: MemoIntake
    /// For `enqueue`'s answer about references (RecordStore+References).
    private let records: any RecordIndex
    /// Re-reads the job definition (off the loop) and answers when it is applied or refused.
    private let reload: (@escaping DefinitionReloader.Reply) -> Void
    /// Connections following `watch`.
    private var watchers: [ObjectIdentifier: ControlConnection] = [:]
    var watching: Int { watchers.count }

    init(loop: EventLoop, journal: any JobJournal, scheduler: Scheduler, events: EventBus, lane: SerialLane, intake: MemoIntake,
         records: any RecordIndex, reload: @escaping (@escaping DefinitionReloader.Reply) -> Void) {
        self.records = records
        self.loop = loop
        self.journal = journal
        self.scheduler = scheduler
        self.events = events
        self.lane = lane
        self.intake = intake
        self.reload = reload
    }

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        switch command {
        case .jobs: try jobs(req, caller, reply)
        case .job: try job(req, caller, reply)
        case .watch: watch(conn, caller, reply)
        case .enqueue: try enqueue(req, caller, reply)
        case .retry: try retry(req, caller, reply)
        case .cancel: try cancel(req, caller, reply)
        case .pause, .resume: try pause(command == .pause, req, reply)
        default:
            reload { result in
                switch result {
                case .success(let d): reply(.success(["name": .string(d.name), "source": .string(d.source),
                                                      "stages": .array(d.stages.map { .string($0.name) })]))
                case .failure(let e): reply(.failure(e))
                }
            }
        }
    }

    func disconnected(_ conn: ControlConnection) {
        if watchers.removeValue(forKey: ObjectIdentifier(conn)) != nil { events.unsubscribe(conn) }
    }

    func jobs(_ req: ControlRequest, _ caller: Caller, _ reply: @escaping Reply) throws {
        let state = try req.string("state").map { s in
            guard let st = JobState(rawValue: s) else {
                throw PhotomemoError(.badRequest, "unknown state \"\(s)\"; states: \(JobState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return st
        }
        let limit = Int(try req.int("limit") ?? 50)
        guard (1...1000).contains(limit) else { throw PhotomemoError(.badRequest, "\"limit\" must be from 1 to 1000") }
        // A cursor that is not one this command gave was the first page again: a client
        // paging on would never end.
        let before = try req.string("cursor").map { text in
            guard let id = Int64(text), id > 0 else { throw PhotomemoError(.badRequest, "invalid cursor (it was altered, or is another command's)") }
            return id
        }
        let journal = self.journal, owner = caller.ownScope
        loop.reply(reply) {
            let page = try journal.jobsPage(state: state, before: before, limit: limit, owner: owner, maxBytes: 4 << 20)
            let cursor: JSONValue = page.more ? page.jobs.last.map { .string(String($0.id)) } ?? .null : .null
            return ["jobs": .array(page.jobs.map(Self.json)), "cursor": cursor]
        }
    }

    static func json(_ j: JobSummary) -> JSONValue {
        var o: [String: JSONValue] = [
            "id": .int(j.id), "state": .string(j.state.rawValue), "attempts": .int(Int64(j.attempts)),
            "type": .string(j.memo.type), "memo": .string(j.memo.memo),
        ]
        o["key"] = j.key.map(JSONValue.string) ?? .null
        o["owner"] = j.memo.owner.map(JSONValue.string) ?? .null
        o["stage"] = j.stage.map(JSONValue.string) ?? .null
        o["photo"] = j.photo.map(JSONValue.string) ?? .null
        o["duplicate_of"] = j.duplicateOf.map(JSONValue.int) ?? .null
        o["error"] = j.error.map(JSONValue.string) ?? .null
        o["code"] = j.errorCode.map(JSONValue.string) ?? .null
        o["quarantine"] = j.quarantine.map(JSONValue.string) ?? .null
        return .object(o)
    }

    func job(_ req: ControlRequest, _ caller: Caller, _ reply: @escaping Reply) throws {
        let id = try req.requiredInt("job")
        let journal = self.journal
        loop.reply(reply) {
            guard let j = try journal.job(id) else { throw AccessPolicy.noJob(id) }
            try AccessPolicy.checkJob(id, owner: j.memo.owner, by: caller)
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

    func watch(_ conn: ControlConnection, _ caller: Caller, _ reply: Reply) {
        reply(.success(["watching": true]))
        watchers[ObjectIdentifier(conn)] = conn
        events.subscribe(conn, viewer: caller.ownScope) { [weak conn] event in conn?.push(event) }
    }

    /// Enqueues a job line as the caller (an admin may name another owner).
    func enqueue(_ req: ControlRequest, _ caller: Caller, _ reply: @escaping Reply) throws {
        guard let line = req.values["job"] else { throw PhotomemoError(.badRequest, "argument \"job\" (a job line object) is required") }
        var parsed: MemoJob
        do { parsed = try MemoJob(line: line) } catch let e as PhotomemoError {
            throw PhotomemoError(.badRequest, e.message)
        }
        if parsed.owner == nil || !caller.isAdmin { parsed.owner = caller.name }
        let memo = parsed
        let intake = self.intake, journal = self.journal, events = self.events, scheduler = self.scheduler, records = self.records
        let key = memo.key.map { JobKey.scoped($0, owner: memo.owner) } ?? "socket:" + UUID().uuidString.lowercased()
        let join = intake.joinTimeoutSeconds.value, memoStage = scheduler.definition.memoStage
        // Through the intake lane, so joining a photo never races the inbox scanner.
        lane.enqueue({ () -> Result<IntakeOutcome, PhotomemoError> in
            do {
                try MemoIntake.checkRoom(for: caller, in: journal, then: "enqueue")
                if var allowance = try intake.quota?.allowance(owner: caller.name, uid: caller.uid), let refused = allowance.take() { throw refused }
                // A reference its owner may not read is refused now (the record-writing stage checks again).
                do { try records.checkReferences(in: memo.fields, viewer: Viewer(owner: memo.owner)) } catch RecordWriteError.badReference(let field, let record) {
                    throw PhotomemoError(.badReference, RecordWriteError.badReferenceMessage(field: field, record: record))
                }
                let photo = try intake.resolvePhoto(memo.photo, owner: memo.owner)
                let queued = QueuedMemo(memo: memo, photo: photo, key: key, source: "socket", origin: "socket")
                return .success(try journal.commitMemos([queued], position: nil, file: "queue.jsonl", joinTimeoutSeconds: join,
                                                                memoStage: memoStage, now: unixNow())[0])
            } catch let e as PhotomemoError where [.forbidden, .tooManyJobs, .overQuota, .badReference].contains(e.code) {
                return .failure(e)
            } catch where PhotomemoError.Code.of(error) == .noSpace {
                // The disk's fault, not the request's: the client may try again once there is room.
                return .failure(PhotomemoError(.noSpace, "the disk is full: the job was not recorded (\(error)); try again when there is room"))
            } catch let e as PhotomemoError {
                return .failure(PhotomemoError(.badRequest, e.message))
            } catch {
                return .failure(PhotomemoError(.internalError, "\(error)"))
            }
        }) { result in
            switch result {
            case .success(let outcome):
                events.publish(outcome, source: "socket", owner: memo.owner)
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

    func retry(_ req: ControlRequest, _ caller: Caller, _ reply: @escaping Reply) throws {
        if let filter = try bulkFilter(req, caller, retry: true) { return bulkRetry(filter, caller, reply) }
        let id = try req.requiredInt("job")
        let journal = self.journal, scheduler = self.scheduler, events = self.events
        let join = intake.joinTimeoutSeconds.value, inbox = intake.photos.inbox, copies = intake.photos.daemonsOwn, photoNeededEnd = scheduler.definition.photoNeededEnd
        loop.reply({ result in
            if case .success(let r) = result {
                events.publish("job_retried", job: id, to: .owner(r["owner"]?.stringValue))
                scheduler.pump()
            }
            reply(result)
        }) {
            let job = try journal.job(id)
            let owner = job?.memo.owner
            try AccessPolicy.checkJob(id, owner: owner, by: caller)
            // A retried job is unfinished again: cancelled jobs retried in bulk would pass the
            // cap (a reprocess job, the reprocess cap).
            try MemoIntake.checkRoom(for: caller, in: journal, reprocess: job?.key?.hasPrefix("reprocess:") == true, then: "retry")
            try journal.retry(job: id, joinTimeoutSeconds: join, photoNeededEnd: photoNeededEnd, now: unixNow()) { photo, quarantined, needed in
                try Self.bringBack(photo, from: quarantined, needed: needed, job: id, inbox: inbox, copies: copies)
            }
            return ["job": .int(id), "state": .string(try journal.job(id)?.state.rawValue ?? "queued"), "owner": owner.map(JSONValue.string) ?? .null]
        }
    }

    func cancel(_ req: ControlRequest, _ caller: Caller, _ reply: @escaping Reply) throws {
        if let filter = try bulkFilter(req, caller, retry: false) { return bulkCancel(filter, reply) }
        let id = try req.requiredInt("job")
        let journal = self.journal, events = self.events, copies = intake.photos.daemonsOwn, scheduler = self.scheduler
        loop.reply({ result in
            if case .success(let r) = result {
                scheduler.forgetHeld([id])
                events.publish("job_cancelled", job: id, to: .owner(r["owner"]?.stringValue))
                // A job waiting for this one (`after_job`) may run now: nothing else wakes it.
                scheduler.pump()
            }
            reply(result)
        }) {
            let job = try journal.job(id)
            let owner = job?.memo.owner
            try AccessPolicy.checkJob(id, owner: owner, by: caller)
            try journal.cancel(job: id, now: unixNow())
            ReprocessHandler.removeCopies(try journal.reprocessJobs(among: [id]).compactMap(\.copy), in: copies)
            return ["job": .int(id), "state": "cancelled", "owner": owner.map(JSONValue.string) ?? .null]
        }
    }

    func pause(_ value: Bool, _ req: ControlRequest, _ reply: @escaping Reply) throws {
        let stage = try req.string("stage")
        if let stage, scheduler.definition.index(ofStage: stage) == nil {
            throw PhotomemoError(.notFound, "no stage \"\(stage)\" in job \(scheduler.definition.name); stages: \(scheduler.definition.stages.map(\.name).joined(separator: ", "))")
        }
        let scheduler = self.scheduler
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
