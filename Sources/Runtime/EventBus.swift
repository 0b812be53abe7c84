import Journal
import StageKit

/// Pipeline events (job accepted, stage started/done/retrying/failed, job done/failed)
/// fanned out on the loop thread to whoever listens: `watch` clients today.
///
/// An event is `{"event": TYPE, "time": ISO-8601, "job": ID, ...}`. Each is published
/// with its audience: the owner of the job or record it is about (who sees it, besides
/// admins), or everyone for the daemon's own events (paused, resumed).
final class EventBus {
    enum Audience: Equatable {
        case everyone
        /// The owner's and the admins'; nil: admins' only.
        case owner(String?)
    }

    private var sinks: [ObjectIdentifier: (viewer: String?, sink: (JSONValue) -> Void)] = [:]

    /// `viewer`: the user name of a non-admin listener, who hears only of their own; nil for an admin.
    func subscribe(_ listener: AnyObject, viewer: String?, _ sink: @escaping (JSONValue) -> Void) {
        sinks[ObjectIdentifier(listener)] = (viewer, sink)
    }

    func unsubscribe(_ listener: AnyObject) {
        sinks.removeValue(forKey: ObjectIdentifier(listener))
    }

    func publish(_ type: String, job: Int64?, _ fields: [String: JSONValue] = [:], to audience: Audience) {
        guard !sinks.isEmpty else { return }
        var o = fields
        o["event"] = .string(type)
        o["time"] = .string(isoTimestamp(unixNow()))
        if let job { o["job"] = .int(job) }
        let event = JSONValue.object(o)
        for (viewer, sink) in Array(sinks.values) {
            switch (viewer, audience) {
            case (nil, _), (_, .everyone): sink(event)
            case (let v?, .owner(let owner)) where v == owner: sink(event)
            default: break
            }
        }
    }

    /// The event for an intake outcome (a photo or memo that became, joined or repeated a job).
    func publish(_ outcome: IntakeOutcome, source: String, owner: String?) {
        let to = Audience.owner(owner)
        switch outcome {
        case .created(let job, let state): publish("job_accepted", job: job, ["state": .string(state.rawValue), "source": .string(source)], to: to)
        case .joined(let job): publish("job_joined", job: job, ["source": .string(source)], to: to)
        case .duplicate(let job, let of): publish("job_duplicate", job: job, ["duplicate_of": .int(of), "source": .string(source)], to: to)
        case .failed(let job, let reason): publish("job_failed", job: job, ["reason": .string(reason), "source": .string(source)], to: to)
        case .alreadyTaken: break
        }
    }
}
