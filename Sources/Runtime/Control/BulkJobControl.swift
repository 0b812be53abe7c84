import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import StageKit

/// `retry --state failed|cancelled` and `cancel --state queued|waiting` (with `stage`,
/// `since`): every matching job the caller may act on (`Caller.ownScope`: a user's own,
/// an admin's all), `bulkBatch` at a time, each batch one short journal transaction off
/// the loop, so other writers get the journal between batches and 10,000 jobs never hold
/// it long. Jobs newer than the request are not swept up.
extension JobHandlers {
    static let bulkBatch = 200
    /// The refusals a reply lists (the rest are counted).
    static let maxListedRefusals = 20

    /// What one batch did.
    struct BulkBatch: Sendable {
        var changed: [Int64] = []
        var refused: [(job: Int64, reason: String)] = []
        /// Set when the run must end early (a user's unfinished-jobs cap).
        var stopped: String?
    }

    /// The filter of a bulk request, or nil when it names a job by id.
    func bulkFilter(_ req: ControlRequest, _ caller: Caller, retry: Bool) throws -> JobFilter? {
        let verb = retry ? "retry" : "cancel"
        guard let stateText = try req.string(ControlArgument.state) else {
            for name in [ControlArgument.stage, ControlArgument.since] where try req.string(name) != nil {
                throw PhotomemoError(.badRequest, "\"\(name)\" narrows a bulk \(verb); it needs \"state\"")
            }
            return nil
        }
        if let job = req.values[ControlArgument.job], job != .null {
            throw PhotomemoError(.badRequest, "\(verb) takes a job or a \"state\" filter, not both")
        }
        let allowed: [JobState] = retry ? [.failed, .cancelled] : [.queued, .waiting]
        guard let state = JobState(rawValue: stateText), allowed.contains(state) else {
            throw PhotomemoError(.badRequest, "\(verb) by state takes \(allowed.map(\.rawValue).joined(separator: " or ")), got \"\(stateText)\"")
        }
        var filter = JobFilter(state: state, owner: caller.ownScope)
        if let stage = try req.string(ControlArgument.stage) {
            let def = scheduler.definition
            guard let i = def.index(ofStage: stage) else {
                throw PhotomemoError(.badRequest, "no stage \"\(stage)\" in job \(def.name); stages: \(def.stages.map(\.name).joined(separator: ", "))")
            }
            filter.stageIndex = i
        }
        if let since = try req.string(ControlArgument.since) {
            guard let t = ISODate.parse(since) else {
                throw PhotomemoError(.badRequest, "\"since\" is an ISO-8601 date-time (2026-12-03T01:00:00Z) or date, got \"\(since)\"")
            }
            filter.since = t
        }
        return filter
    }

    func bulkRetry(_ filter: JobFilter, _ caller: Caller, _ reply: @escaping Reply) {
        let journal = self.journal, join = intake.joinTimeoutSeconds.value, inbox = intake.photos.inbox, copies = intake.photos.daemonsOwn
        let photoNeededEnd = scheduler.definition.photoNeededEnd
        runBulk(filter, event: "job_retried", reply) { page in
            var ids = page.map(\.id), stopped: String?
            if !caller.isAdmin {
                // A retried job is unfinished again: a user stays within the cap, and within
                // the reprocess cap for reprocess jobs.
                var room = [false: try MemoIntake.room(for: caller.name, uid: caller.uid, in: journal),
                            true: try MemoIntake.room(for: caller.name, uid: caller.uid, in: journal, reprocess: true)]
                let reprocessJobs = Set(try journal.reprocessJobs(among: ids).map(\.id))
                ids = page.filter { job in
                    let reprocess = reprocessJobs.contains(job.id)
                    guard room[reprocess]! > 0 else {
                        stopped = MemoIntake.atCap(caller.name, reprocess: reprocess, then: "retry")
                        return false
                    }
                    room[reprocess]! -= 1
                    return true
                }.map(\.id)
            }
            let r = try journal.retry(jobs: ids, state: filter.state, joinTimeoutSeconds: join, photoNeededEnd: photoNeededEnd, now: unixNow()) {
                id, photo, quarantined, needed in try Self.bringBack(photo, from: quarantined, needed: needed, job: id, inbox: inbox, copies: copies)
            }
            return BulkBatch(changed: r.retried, refused: r.refused, stopped: stopped)
        }
    }

    func bulkCancel(_ filter: JobFilter, _ reply: @escaping Reply) {
        let journal = self.journal, copies = intake.photos.daemonsOwn
        runBulk(filter, event: "job_cancelled", reply) { page in
            let cancelled = try journal.cancel(jobs: page.map(\.id), state: filter.state, now: unixNow())
            ReprocessHandler.removeCopies(try journal.reprocessJobs(among: cancelled).compactMap(\.copy), in: copies)
            return BulkBatch(changed: cancelled)
        }
    }

    /// One batch off the loop, its events on it, then the next; the reply after the last:
    /// `{"state", "changed", "refused": [{"job", "error"}], "refused_total", "stopped"}`.
    private func runBulk(_ filter: JobFilter, event: String, _ reply: @escaping Reply, after: Int64 = 0, through: Int64? = nil,
                         tally: [String: JSONValue] = [:], _ act: @escaping @Sendable ([(id: Int64, owner: String?)]) throws -> BulkBatch) {
        let journal = self.journal, limit = Self.bulkBatch
        loop.submit({ () -> Result<(through: Int64, page: [(id: Int64, owner: String?)], batch: BulkBatch), PhotomemoError> in
            do {
                let through = try through ?? journal.newestJobID()
                let page = try journal.jobIDs(matching: filter, after: after, through: through, limit: limit)
                return .success((through, page, page.isEmpty ? BulkBatch() : try act(page)))
            } catch let e as PhotomemoError { return .failure(e) } catch { return .failure(PhotomemoError.forClient(error)) }
        }, then: { [self] result in
            let changed = tally["changed"]?.intValue ?? 0
            switch result {
            case .failure(let e):
                reply(.failure(PhotomemoError(e.code, e.message + (changed > 0 ? " (after \(changed) jobs were changed)" : ""))))
            case .success(let (through, page, batch)):
                let owners = Dictionary(page.map { ($0.id, $0.owner) }, uniquingKeysWith: { a, _ in a })
                for id in batch.changed { events.publish(event, job: id, to: .owner(owners[id] ?? nil)) }
                // Retried jobs run again; jobs waiting for cancelled ones (`after_job`) may run now.
                if !batch.changed.isEmpty { scheduler.pump() }
                let listed = tally["refused"]?.arrayValue ?? []
                let next: [String: JSONValue] = [
                    "state": .string(filter.state.rawValue),
                    "changed": .int(changed + Int64(batch.changed.count)),
                    "refused": .array(listed + batch.refused.prefix(max(0, Self.maxListedRefusals - listed.count)).map {
                        ["job": .int($0.job), "error": .string($0.reason)]
                    }),
                    "refused_total": .int((tally["refused_total"]?.intValue ?? 0) + Int64(batch.refused.count)),
                    "stopped": batch.stopped.map(JSONValue.string) ?? .null,
                ]
                if page.count < limit || batch.stopped != nil {
                    reply(.success(.object(next)))
                } else {
                    runBulk(filter, event: event, reply, after: page.last!.id, through: through, tally: next, act)
                }
            }
        })
    }
}
