import Foundation
import Index
import Notify
import StageKit

/// Whether a webhook host or an exec sink answers, for `status` (its owner's and admins').
struct SinkHealth: Equatable {
    struct Key: Hashable {
        let name: String
        let owner: String?
    }

    /// Why it is down; nil once it answers.
    let reason: String?

    /// `webhook http://HOST:PORT` (no path, query or credentials: they may carry secrets),
    /// `exec sink SUBSCRIPTION`.
    static func name(of s: Subscription) -> String {
        guard s.sink == .webhook else { return "exec sink \(s.id)" }
        guard let u = URLComponents(string: s.target ?? ""), let host = u.host else { return "webhook of \(s.id)" }
        return "webhook \(u.scheme ?? "http")://\(host)\(u.port.map { ":\($0)" } ?? "")"
    }
}

/// The sinks found down and up since start, each owner's apart (two users' webhooks on one
/// host are two, and one's reason, naming its URL, is never shown to the other), and the
/// subscriptions each was seen through: once those are all gone (unsubscribed, here or on
/// another host) the sink leaves `status` (`forget(gone:)`). Before that, an unsubscribed
/// dead webhook stayed listed `down` until the daemon restarted.
struct SinkHealthBook {
    private(set) var health: [SinkHealth.Key: SinkHealth] = [:]
    private var through: [SinkHealth.Key: Set<String>] = [:]

    /// Every subscription a listed sink was seen through.
    var subscriptionIDs: Set<String> { through.values.reduce(into: Set()) { $0.formUnion($1) } }

    /// A sink down (an outage) or answering again: logged once each way.
    mutating func note(_ subscription: Subscription, _ result: Sink.Result) {
        let key = SinkHealth.Key(name: SinkHealth.name(of: subscription), owner: subscription.owner)
        switch result {
        case .failed(let why) where why.isOutage:
            if health[key]?.reason == nil { Log.warning("\(key.name) is down: \(why.reason)") }
            health[key] = SinkHealth(reason: why.reason)
        case .delivered:
            if health[key]?.reason != nil { Log.notice("\(key.name) answers again") }
            health[key] = SinkHealth(reason: nil)
        case .failed:
            return
        }
        through[key, default: []].insert(subscription.id)
    }

    /// Drops the subscriptions in `gone`, and every sink left with none.
    mutating func forget(gone: Set<String>) {
        for (key, ids) in through {
            let left = ids.subtracting(gone)
            through[key] = left.isEmpty ? nil : left
            if left.isEmpty { health[key] = nil }
        }
    }
}
