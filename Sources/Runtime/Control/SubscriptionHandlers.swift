import ControlProtocol
import EventLoop
import Foundation
import Index
import Notify
import StageKit

/// subscribe / unsubscribe / subscriptions over the socket. A socket-sink subscription
/// streams its events to the connection that follows it: first what it missed after
/// `since`, then new ones as they are fanned out (read from the outbox, so nothing is lost
/// between catch-up and live).
final class SubscriptionHandlers: ControlHandler {
    let commands: Set<ControlCommand> = [.subscribe, .unsubscribe, .subscriptions]
    private let loop: EventLoop
    private let records: any RecordIndex
    private let followers: Followers
    private let allowPrivateWebhooks: Bool

    init(loop: EventLoop, records: any RecordIndex, followers: Followers, allowPrivateWebhooks: Bool = false) {
        self.allowPrivateWebhooks = allowPrivateWebhooks
        self.loop = loop
        self.records = records
        self.followers = followers
    }

    func disconnected(_ conn: ControlConnection) { followers.disconnected(conn) }

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        let store = records
        let viewer = caller.viewer
        // An admin's subscriptions hear of every record; a user's only of what they may read.
        let owner = caller.ownScope
        switch command {
        case .subscribe:
            let since = try req.int("since")
            if let existing = try req.string("subscription") {
                let followers = self.followers
                loop.reply({ result in
                    if case .success(let v) = result, let s = Followers.decodeSubscription(v) {
                        followers.follow(conn, s, since: since ?? 0)
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
            let sink: Subscription.Sink = webhook != nil ? .webhook : (exec != nil ? .exec : .socket)
            let alert = try req.string("alert")
            if let alert, alert.utf8.count > Subscription.maxAlertTemplateBytes {
                throw PhotomemoError(.badRequest, "\"alert\" is \(alert.utf8.count) bytes; a template is at most \(Subscription.maxAlertTemplateBytes) (it renders to at most \(Subscription.maxAlertBytes))")
            }
            let sub = Subscription(owner: owner, type: type, predicate: try req.string("predicate") ?? "TRUEPREDICATE",
                                               firesOn: firesOn, alert: alert, sink: sink,
                                               target: webhook ?? exec.map { JSONValue.array($0.map(JSONValue.string)).jsonString },
                                               secret: secret)
            // A user's webhook into loopback or private hosts is refused now, clearly; each
            // delivery checks the address it connects to again (names change).
            let checkDestination = webhook != nil && !caller.isAdmin && !allowPrivateWebhooks
            let follow = req.values["follow"]?.boolValue ?? (sink == .socket)
            let followers = self.followers
            loop.reply({ result in
                reply(result)
                if case .success = result, follow, sink == .socket { followers.follow(conn, sub, since: since ?? 0) }
            }) {
                if checkDestination, let webhook, let why = WebhookDestination.whyRefused(url: webhook) {
                    throw PhotomemoError(.forbidden, WebhookDestination.refusal(webhook, why))
                }
                do { return try store.subscribe(sub).json } catch let e as PredicateSyntaxError {
                    throw PhotomemoError(.badRequest, "predicate: \(e.description)")
                }
            }
        case .unsubscribe:
            let id = try req.requiredString("subscription")
            loop.reply(reply) {
                do { try store.unsubscribe(id, viewer: viewer) } catch { throw RecordHandlers.recordError(error) }
                return ["unsubscribed": .string(id)]
            }
        case .subscriptions:
            let retryFailed = try req.string("retry_failed")
            loop.reply(reply) {
                var retried: Int?
                if let retryFailed {
                    do { retried = try store.retryFailedDeliveries(subscription: retryFailed, viewer: viewer) } catch { throw RecordHandlers.recordError(error) }
                }
                var o: [String: JSONValue] = ["subscriptions": .array(try store.subscriptions(viewer: viewer))]
                if let retried { o["retried"] = .int(Int64(retried)) }
                return .object(o)
            }
        default:
            throw PhotomemoError(.unknownCommand, "\(command.rawValue) is not a subscription command")
        }
    }
}
