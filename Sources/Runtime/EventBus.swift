import Journal
import PhotomemoCore

/// Pipeline events (job accepted, stage started/done/retrying/failed, job done/failed)
/// fanned out on the loop thread to whoever listens: `watch` clients today.
///
/// An event is `{"event": TYPE, "time": ISO-8601, "job": ID, ...}`.
final class EventBus {
    private var sinks: [ObjectIdentifier: (JSONValue) -> Void] = [:]

    func subscribe(_ owner: AnyObject, _ sink: @escaping (JSONValue) -> Void) {
        sinks[ObjectIdentifier(owner)] = sink
    }

    func unsubscribe(_ owner: AnyObject) {
        sinks.removeValue(forKey: ObjectIdentifier(owner))
    }

    func publish(_ type: String, job: Int64?, _ fields: [String: JSONValue] = [:]) {
        guard !sinks.isEmpty else { return }
        var o = fields
        o["event"] = .string(type)
        o["time"] = .string(isoTimestamp(unixNow()))
        if let job { o["job"] = .int(job) }
        let event = JSONValue.object(o)
        for sink in Array(sinks.values) { sink(event) }
    }

    /// The event for an intake outcome (a photo or memo that became, joined or repeated a job).
    func publish(_ outcome: IntakeOutcome, source: String) {
        switch outcome {
        case .created(let job, let state): publish("job_accepted", job: job, ["state": .string(state.rawValue), "source": .string(source)])
        case .joined(let job): publish("job_joined", job: job, ["source": .string(source)])
        case .duplicate(let job, let of): publish("job_duplicate", job: job, ["duplicate_of": .int(of), "source": .string(source)])
        case .failed(let job, let reason): publish("job_failed", job: job, ["reason": .string(reason), "source": .string(source)])
        case .alreadyTaken: break
        }
    }
}
