import Foundation
import SQL
import StageKit

/// Subscriptions (CKSubscription-like) and their outbox. A change fans out to the
/// subscriptions whose type, `fires_on` and predicate match and whose owner may read the
/// record (`RecordStore+FanOut`): one `deliveries` row each, delivered at least once, in
/// change order per subscription.
extension RecordStore {

    static let subscriptionColumns = "id, owner, type, predicate, fires_on, alert, sink, target, secret"

    /// Every change of a type reads all of that type's subscriptions, everyone's: 20,000
    /// of one user's made each of another's photos 100-200 ms slower at notify (12 ms
    /// before), and they cost nothing to make. A user (owner set; admins' have none) has at most this many.
    public static let maxSubscriptionsPerUser = 100

    static func subscription(_ r: Row) -> Subscription {
        Subscription(id: r.string(0)!, owner: r.string(1), type: r.string(2)!, predicate: r.string(3)!,
                     firesOn: r.string(4)!.split(separator: ",").map(String.init), alert: r.string(5),
                     sink: Subscription.Sink(rawValue: r.string(6)!) ?? .socket, target: r.string(7), secret: r.string(8))
    }

    /// Stores a subscription whose predicate parses and compiles to SQL that this engine
    /// accepts (else `PredicateSyntaxError`, with its column): one that cannot be
    /// evaluated would fail at every fan-out.
    public func subscribe(_ s: Subscription, now: Double) throws -> Subscription {
        let predicate = try PredicateParser.parse(s.predicate)
        try writing {
            if let owner = s.owner, try db.queryOne("SELECT count(*) FROM subscriptions WHERE owner = ?", [.text(owner)])?.int(0) ?? 0
                >= Self.maxSubscriptionsPerUser {
                throw PhotomemoError(.tooManySubscriptions, "\(owner) has \(Self.maxSubscriptionsPerUser) subscriptions, the most a user may have; unsubscribe one first")
            }
            _ = try matches(predicate, recordID: "")
            try db.run("INSERT INTO subscriptions(\(Self.subscriptionColumns), created) VALUES (?,?,?,?,?,?,?,?,?,?)",
                       [.text(s.id), SQLValue(s.owner), .text(s.type), .text(s.predicate), .text(s.firesOn.joined(separator: ",")),
                        SQLValue(s.alert), .text(s.sink.rawValue), SQLValue(s.target), SQLValue(s.secret), .double(now)])
        }
        return s
    }

    /// Removes a subscription the viewer owns (admins: any).
    public func unsubscribe(_ id: String, viewer: Viewer) throws {
        try writing {
            guard let owner = try db.queryOne("SELECT owner FROM subscriptions WHERE id = ?", [.text(id)]) else { throw RecordWriteError.noSubscription }
            if case .user(let name) = viewer, owner.string(0) != name { throw RecordWriteError.noSubscription }
            try db.run("DELETE FROM subscriptions WHERE id = ?", [.text(id)])
        }
    }

    public func subscription(_ id: String) throws -> Subscription? {
        try locked { try db.queryOne("SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE id = ?", [.text(id)]).map(Self.subscription) }
    }

    /// Subscriptions with their delivery counts (pending, delivered, failed) and last error,
    /// and `state`: `active`, or `parked` with the `error` that stopped its fan-out.
    public func subscriptions(viewer: Viewer) throws -> [JSONValue] {
        try locked {
            var params: [SQLValue] = []
            var filter = ""
            if case .user(let name) = viewer { filter = " WHERE owner = ?"; params.append(.text(name)) }
            return try db.query("SELECT \(Self.subscriptionColumns), parked_error FROM subscriptions\(filter) ORDER BY created", params).map { row in
                let s = Self.subscription(row)
                var o = s.json.objectValue!
                let parked = row.string(9)
                o["state"] = .string(parked == nil ? "active" : "parked")
                o["error"] = parked.map(JSONValue.string) ?? .null
                for state in ["pending", "delivered", "failed"] {
                    o[state] = .int(try db.queryOne("SELECT count(*) FROM deliveries WHERE subscription_id = ? AND state = ?",
                                                    [.text(s.id), .text(state)])!.int(0)!)
                }
                o["last_error"] = try db.queryOne("SELECT last_error FROM deliveries WHERE subscription_id = ? AND last_error IS NOT NULL ORDER BY id DESC LIMIT 1",
                                                  [.text(s.id)])?.string(0).map(JSONValue.string) ?? .null
                return .object(o)
            }
        }
    }

    /// Claims the next due delivery of each webhook/exec subscription (the lowest change
    /// number not yet delivered: per-subscription order), at most `limit`, for `claimant`
    /// until `until`: no one else sends it meanwhile, nor a later one of its subscription.
    public func claimDueDeliveries(limit: Int, claimant: String, until: Double, now: Double) throws -> [OutboxDelivery] {
        // Nothing due (the common case, at every tick): a read, not a locked write.
        let anyDue = try locked {
            try db.queryOne("""
                SELECT 1 FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
                WHERE d.state = 'pending' AND s.sink IN ('webhook', 'exec') AND d.next_at <= ?
                  AND (d.claimed_until IS NULL OR d.claimed_until < ?) LIMIT 1
                """, [.double(now), .double(now)]) != nil
        }
        guard anyDue else { return [] }
        return try writing {
            let due = try db.query("""
                SELECT d.id, d.seq, d.attempts, s.\(Self.subscriptionColumns.replacingOccurrences(of: ", ", with: ", s.")),
                       c.op, c.type, c.at, c.record
                FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id JOIN changes c ON c.seq = d.seq
                WHERE d.state = 'pending' AND s.sink IN ('webhook', 'exec') AND d.next_at <= ?
                  AND (d.claimed_until IS NULL OR d.claimed_until < ?)
                  AND d.seq = (SELECT min(seq) FROM deliveries x WHERE x.subscription_id = d.subscription_id AND x.state = 'pending')
                ORDER BY d.next_at LIMIT ?
                """, [.double(now), .double(now), .int(Int64(limit))]).map { r in
                let s = Self.subscription(Row(values: Array(r.values[3..<12])))
                let event = s.event(seq: r.int(1)!, op: r.string(12)!, type: r.string(13)!, at: r.double(14)!,
                                    record: try JSONValue.parse(r.string(15)!))
                return OutboxDelivery(id: r.int(0)!, subscription: s, seq: r.int(1)!, attempts: Int(r.int(2)!), event: event)
            }
            if !due.isEmpty {
                try db.run("UPDATE deliveries SET claimed_by = ?, claimed_until = ? WHERE id IN (\(due.map { String($0.id) }.joined(separator: ",")))",
                           [.text(claimant), .double(until)])
            }
            return due
        }
    }

    /// Claims given up: `ids` claimed but not sent, or (nil) all of `claimant`'s, at start.
    public func releaseDeliveryClaims(of claimant: String, ids: [Int64]?) throws {
        try writing {
            try db.run("UPDATE deliveries SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ? AND state = 'pending'"
                       + (ids.map { " AND id IN (\($0.map(String.init).joined(separator: ",")))" } ?? ""), [.text(claimant)])
        }
    }

    /// Records a delivery attempt: delivered, retry at `retryAt`, or parked as failed.
    public func finishDelivery(_ id: Int64, delivered: Bool, error: String?, retryAt: Double?, now: Double) throws {
        try writing {
            try db.run("UPDATE deliveries SET claimed_by = NULL, claimed_until = NULL WHERE id = ?", [.int(id)])
            if delivered {
                try db.run("UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, delivered_at = ?, last_error = NULL WHERE id = ?",
                           [.double(now), .int(id)])
            } else if let retryAt {
                try db.run("UPDATE deliveries SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ?",
                           [.double(retryAt), SQLValue(error), .int(id)])
            } else {
                try db.run("UPDATE deliveries SET state = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ?",
                           [SQLValue(error), .int(id)])
            }
        }
    }

    /// Durable, and seen by every daemon on the database: a hung sink's back-off outlives
    /// the delivery that timed out (parked after its attempts) and a restart.
    public func holdDeliveries(subscription id: String, until: Double) throws {
        try writing {
            try db.run("UPDATE deliveries SET next_at = ? WHERE subscription_id = ? AND state = 'pending' AND next_at < ?",
                       [.double(until), .text(id), .double(until)])
        }
    }

    /// Puts a subscription's failed deliveries back in line; returns how many.
    public func retryFailedDeliveries(subscription id: String, viewer: Viewer, now: Double) throws -> Int {
        try writing {
            guard let owner = try db.queryOne("SELECT owner FROM subscriptions WHERE id = ?", [.text(id)]) else { throw RecordWriteError.noSubscription }
            if case .user(let name) = viewer, owner.string(0) != name { throw RecordWriteError.noSubscription }
            return try db.run("UPDATE deliveries SET state = 'pending', attempts = 0, next_at = ? WHERE subscription_id = ? AND state = 'failed'",
                              [.double(now), .text(id)])
        }
    }

    /// A follower's catch-up page: at most this many events, and about this much record text.
    public static let socketEventsPage = 256
    static let socketEventsBytes = 4 << 20

    /// Socket-sink events after `since` for a subscription (catch-up on reconnect), oldest
    /// first: at most `socketEventsPage` of them and about `socketEventsBytes` of record
    /// text (at least one); the caller asks again after the last one it got. (A catch-up
    /// from 0 built every event at once: N records of 1 MiB memos pinned N MiB.)
    public func socketEvents(subscription s: Subscription, since: Int64) throws -> [JSONValue] {
        try locked {
            let from = "FROM deliveries d JOIN changes c ON c.seq = d.seq WHERE d.subscription_id = ? AND d.seq > ? ORDER BY d.seq LIMIT ?"
            let params: [SQLValue] = [.text(s.id), .int(since), .int(Int64(Self.socketEventsPage))]
            let sizes = try db.query("SELECT length(c.record) + 256 \(from)", params)
            let limit = Row.fitting(sizes, Self.socketEventsBytes) ?? Self.socketEventsPage
            return try db.query("SELECT d.seq, c.op, c.type, c.at, c.record \(from)", [params[0], params[1], .int(Int64(limit))]).map {
                s.event(seq: $0.int(0)!, op: $0.string(1)!, type: $0.string(2)!, at: $0.double(3)!,
                           record: try JSONValue.parse($0.string(4)!))
            }
        }
    }
}
