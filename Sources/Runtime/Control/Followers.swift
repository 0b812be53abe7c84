import EventLoop
import Foundation
import Index
import StageKit

/// Socket-sink subscriptions followed by a connection, as a service of its own: each
/// follower gets first what it missed after `since`, then new events as they are fanned
/// out — read from the outbox, so nothing is lost between catch-up and live. Woken when a
/// stage or a socket command may have queued events (`poll`), with a timer as the safety
/// net; one read is in flight at a time, and a wake-up during it reads again after.
final class Followers {
    final class Follower {
        let connection: ControlConnection
        let subscription: Subscription
        var last: Int64
        init(connection: ControlConnection, subscription: Subscription, last: Int64) {
            self.connection = connection
            self.subscription = subscription
            self.last = last
        }
    }

    private let loop: EventLoop
    private let records: any RecordIndex
    private let timer: LoopTimer
    private var followers: [ObjectIdentifier: Follower] = [:]
    private var polling = false
    private var again = false

    init(loop: EventLoop, records: any RecordIndex) throws {
        self.loop = loop
        self.records = records
        timer = try LoopTimer(loop: loop)
    }

    func start() { timer.start(afterMs: 1000, repeatMs: 1000) { [unowned self] in self.poll() } }

    func close() { timer.close() }

    func disconnected(_ conn: ControlConnection) { followers.removeValue(forKey: ObjectIdentifier(conn)) }

    static func decodeSubscription(_ v: JSONValue) -> Subscription? {
        guard let id = v["id"]?.stringValue, let type = v["type"]?.stringValue else { return nil }
        return Subscription(id: id, owner: v["owner"]?.stringValue, type: type, predicate: v["predicate"]?.stringValue ?? "TRUEPREDICATE",
                                        firesOn: (v["fires_on"]?.arrayValue ?? []).compactMap(\.stringValue), alert: v["alert"]?.stringValue,
                                        sink: .socket, target: nil, secret: nil)
    }

    /// The most one event line holds: a follower's queue is bounded per connection
    /// (`ControlConnection.maxBufferedBytes`) and, by this, per event.
    static let maxEventBytes = 64 << 10

    /// A stream's line names its kind under `"event"`, as `watch`'s do (`notification`: a
    /// subscription's event, the same object a webhook gets, plus that key). A record too
    /// big for `maxEventBytes` (a memo near the 1 MiB line limit, many fields) is sent as
    /// its id, type and owner, with `truncated` saying so: `get` reads it whole.
    static func line(_ event: JSONValue) -> JSONValue {
        var o = event.objectValue ?? [:]
        o["event"] = "notification"
        let size = JSONValue.object(o).jsonString.utf8.count
        guard size > maxEventBytes, let record = o["record"] else { return .object(o) }
        let id = record["id"]?.stringValue ?? "?"
        o["record"] = ["id": record["id"] ?? .null, "type": record["type"] ?? .null, "owner": record["owner"] ?? .null]
        o["truncated"] = .string("the event is \(size) bytes, over the \(maxEventBytes) a socket event carries; photomemo get \(id) reads the record")
        return .object(o)
    }

    /// Streams a socket subscription's events to `conn`, starting after change `since`.
    func follow(_ conn: ControlConnection, _ s: Subscription, since: Int64) {
        followers[ObjectIdentifier(conn)] = Follower(connection: conn, subscription: s, last: since)
        poll()
    }

    /// Sends each follower the events after the last one it got (the timer calls this too).
    func poll() {
        guard !followers.isEmpty else { return }
        guard !polling else { again = true; return }
        let store = records
        polling = true
        let list = followers.values.map { ($0, $0.subscription, $0.last) }
        nonisolated(unsafe) let targets = list.map(\.0)  // touched again only on the loop
        let work = list.map { ($0.1, $0.2) }
        // Lines are made (and bounded) here, off the loop.
        loop.submit({ work.map { (s, last) in ((try? store.socketEvents(subscription: s, since: last)) ?? []).map(Self.line) } }) { [weak self] results in
            guard let self else { return }
            self.polling = false
            defer { if self.again { self.again = false; self.poll() } }
            for (f, events) in zip(targets, results) where !f.connection.pipe.isClosed {
                // A page at a time (RecordStore.socketEvents): a full one means more wait.
                if !events.isEmpty { self.again = true }
                for e in events {
                    f.connection.push(e)
                    f.last = max(f.last, e["seq"]?.intValue ?? f.last)
                }
            }
        }
    }
}
