import EventLoop
import Foundation
import Index
import PhotomemoCore

/// subscribe / unsubscribe / subscriptions over the socket. A socket-sink subscription
/// streams its events to the connection that follows it: first what it missed after
/// `since`, then new ones as they are fanned out (read from the outbox, so nothing is lost
/// between catch-up and live).
extension ControlCommands {
    final class Follower {
        let connection: ControlConnection
        let subscription: RecordStore.Subscription
        var last: Int64
        init(connection: ControlConnection, subscription: RecordStore.Subscription, last: Int64) {
            self.connection = connection
            self.subscription = subscription
            self.last = last
        }
    }

    func runSubscription(_ cmd: String, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection, reply: @escaping Reply) throws {
        let store = p.records
        let viewer = caller.viewer
        // An admin's subscriptions hear of every record; a user's only of what they may read.
        let owner = caller.ownScope
        switch cmd {
        case "subscribe":
            let since = try req.int("since")
            if let existing = try req.string("subscription") {
                offLoop({ [weak self] result in
                    if case .success(let v) = result, let s = Self.decodeSubscription(v) {
                        self?.follow(conn, s, since: since ?? 0)
                    }
                    reply(result)
                }) {
                    guard let s = try store.subscription(existing), owner == nil || s.owner == owner, s.sink == .socket else {
                        throw PhotomemoError(.notFound, "no socket subscription \(existing) of yours")
                    }
                    return s.json
                }
                return
            }
            guard let type = try req.string("type"), MemoJob.isIdentifier(type) else {
                throw PhotomemoError(.badRequest, "\"type\" (a record type) is required")
            }
            let firesOn: [String]
            if let list = req.values["fires_on"]?.arrayValue { firesOn = list.compactMap(\.stringValue) }
            else { firesOn = (try req.string("fires_on") ?? "create,update,delete").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            guard !firesOn.isEmpty, firesOn.allSatisfy({ ["create", "update", "delete"].contains($0) }) else {
                throw PhotomemoError(.badRequest, "\"fires_on\" takes create, update and delete")
            }
            let webhook = try req.string("webhook"), secret = try req.string("secret")
            let exec = req.values["exec"]?.arrayValue?.compactMap(\.stringValue)
            if let webhook, !(webhook.hasPrefix("http://") || webhook.hasPrefix("https://")) {
                throw PhotomemoError(.badRequest, "\"webhook\" must be an http:// or https:// URL")
            }
            if webhook != nil && secret == nil { throw PhotomemoError(.badRequest, "a webhook needs a \"secret\" to sign its events with") }
            let sink: RecordStore.Subscription.Sink = webhook != nil ? .webhook : (exec != nil ? .exec : .socket)
            let sub = RecordStore.Subscription(owner: owner, type: type, predicate: try req.string("predicate") ?? "TRUEPREDICATE",
                                               firesOn: firesOn, alert: try req.string("alert"), sink: sink,
                                               target: webhook ?? exec.map { JSONValue.array($0.map(JSONValue.string)).jsonString },
                                               secret: secret)
            let follow = req.values["follow"]?.boolValue ?? (sink == .socket)
            offLoop({ [weak self] result in
                reply(result)
                if case .success = result, follow, sink == .socket { self?.follow(conn, sub, since: since ?? 0) }
            }) {
                do { return try store.subscribe(sub).json } catch let e as PredicateSyntaxError {
                    throw PhotomemoError(.badRequest, "predicate: \(e.description)")
                }
            }
        case "unsubscribe":
            let id = try req.requiredString("subscription")
            offLoop(reply) {
                do { try store.unsubscribe(id, viewer: viewer) } catch { throw Self.recordError(error) }
                return ["unsubscribed": .string(id)]
            }
        case "subscriptions":
            let retryFailed = try req.string("retry_failed")
            offLoop(reply) {
                var retried: Int?
                if let retryFailed {
                    do { retried = try store.retryFailedDeliveries(subscription: retryFailed, viewer: viewer) } catch { throw Self.recordError(error) }
                }
                var o: [String: JSONValue] = ["subscriptions": .array(try store.subscriptions(viewer: viewer))]
                if let retried { o["retried"] = .int(Int64(retried)) }
                return .object(o)
            }
        default:
            throw PhotomemoError(.unknownCommand, "unknown command \"\(cmd)\"")
        }
    }

    static func decodeSubscription(_ v: JSONValue) -> RecordStore.Subscription? {
        guard let id = v["id"]?.stringValue, let type = v["type"]?.stringValue else { return nil }
        return RecordStore.Subscription(id: id, owner: v["owner"]?.stringValue, type: type, predicate: v["predicate"]?.stringValue ?? "TRUEPREDICATE",
                                        firesOn: (v["fires_on"]?.arrayValue ?? []).compactMap(\.stringValue), alert: v["alert"]?.stringValue,
                                        sink: .socket, target: nil, secret: nil)
    }

    /// Streams a socket subscription's events to `conn`, starting after change `since`.
    func follow(_ conn: ControlConnection, _ s: RecordStore.Subscription, since: Int64) {
        followers[ObjectIdentifier(conn)] = Follower(connection: conn, subscription: s, last: since)
        pollFollowers()
    }

    /// Sends each follower the events after the last one it got (a timer calls this too).
    func pollFollowers() {
        guard !followersPolling, !followers.isEmpty else { return }
        let store = p.records
        followersPolling = true
        let list = followers.values.map { ($0, $0.subscription, $0.last) }
        nonisolated(unsafe) let targets = list.map(\.0)  // touched again only on the loop
        let work = list.map { ($0.1, $0.2) }
        p.loop.submit({ work.map { (s, last) in (try? store.socketEvents(subscription: s, since: last)) ?? [] } }) { [weak self] results in
            guard let self else { return }
            self.followersPolling = false
            for (f, events) in zip(targets, results) where !f.connection.pipe.isClosed {
                for e in events {
                    f.connection.push(e)
                    f.last = max(f.last, e["seq"]?.intValue ?? f.last)
                }
            }
        }
    }
}
