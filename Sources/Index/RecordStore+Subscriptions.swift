import Foundation
import SQL
import PhotomemoCore

/// Subscriptions (CKSubscription-like) and their outbox. A change fans out to the
/// subscriptions whose type, `fires_on` and predicate match and whose owner may read the
/// record: one `deliveries` row each, committed in one transaction, delivered at least
/// once, in change order per subscription.
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
            guard let owner = try db.queryOne("SELECT owner FROM subscriptions WHERE id = ?", [.text(id)]) else { throw RecordWriteError.notFound }
            if case .user(let name) = viewer, owner.string(0) != name { throw RecordWriteError.notFound }
            try db.run("DELETE FROM subscriptions WHERE id = ?", [.text(id)])
        }
    }

    public func subscription(_ id: String) throws -> Subscription? {
        try locked { try db.queryOne("SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE id = ?", [.text(id)]).map(Self.subscription) }
    }

    /// The test of one record, on that record's own rows (`perRecord`): a subscriber's
    /// predicate never walks an index over others' values, so how long the write that fans
    /// out to it takes tells them nothing either.
    /// `viewer`: the subscriber, who must (still) be able to read the record. Fan-out runs
    /// after the change commits, when the record may have been made private with new text.
    func matchSQL(_ predicate: RecordPredicate, recordID: String, viewer: Viewer = .admin) -> (sql: String, params: [SQLValue]) {
        var params: [SQLValue] = [.text(recordID)]
        let readable = Self.visible(viewer, &params)
        return ("SELECT 1 FROM records r WHERE r.id = ? AND \(readable) AND " + PredicateCompiler.compile(predicate, dialect, &params, perRecord: true), params)
    }

    /// Whether record `recordID` matches `predicate`; the engine refusing the compiled SQL
    /// is a `PredicateSyntaxError`. Inside a transaction on PostgreSQL, a savepoint keeps
    /// the refusal from aborting it (fan-out parks the subscription and goes on).
    /// On a query connection (`on`, outside any transaction) no savepoint is needed.
    func matches(_ predicate: RecordPredicate, recordID: String, viewer: Viewer = .admin, on reader: (any SQLConnection)? = nil) throws -> Bool {
        let (sql, params) = matchSQL(predicate, recordID: recordID, viewer: viewer)
        do {
            if let reader { return try reader.queryOne(sql, params) != nil }
            guard dialect == .postgres else { return try db.queryOne(sql, params) != nil }
            try db.exec("SAVEPOINT predicate")
            do {
                let found = try db.queryOne(sql, params) != nil
                try db.exec("RELEASE SAVEPOINT predicate")
                return found
            } catch {
                try db.exec("ROLLBACK TO SAVEPOINT predicate")
                throw error
            }
        } catch {
            throw PredicateCompiler.refusal(error, dialect)
        }
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

    /// Fans out every change not yet fanned out (the pipeline's), in change order; returns
    /// deliveries made. Idempotent: a delivery is unique per (subscription, change).
    ///
    /// Predicates are matched first, on a query connection, outside any write: however
    /// long someone's subscriptions take (each at most `predicateTimeLimit` a record), the
    /// writer — the journal's too, on one SQLite file — is held only for the short
    /// transaction that writes the deliveries. A change fanned out meanwhile by another
    /// run is left as that run wrote it.
    @discardableResult
    public func fanOutPending(now: Double) throws -> Int {
        var made = 0
        while true {
            let (changes, matched, parked) = try matching { reader in try matchPending(on: reader) }
            guard !changes.isEmpty else { return made }
            made += try writing {
                var made = 0
                for (id, reason) in parked {
                    try db.run("UPDATE subscriptions SET parked_error = ?, parked_at = ? WHERE id = ? AND parked_error IS NULL",
                               [.text(reason), .double(now), .text(id)])
                }
                for seq in changes where try db.run("UPDATE changes SET fanned_out = 1 WHERE seq = ? AND fanned_out = 0", [.int(seq)]) == 1 {
                    for id in matched[seq] ?? [] {
                        made += try db.run("INSERT INTO deliveries(subscription_id, seq, state, next_at) VALUES (?, ?, 'pending', ?) ON CONFLICT DO NOTHING",
                                           [.text(id), .int(seq), .double(now)])
                    }
                }
                return made
            }
            if changes.count < Self.fanOutBatch { return made }
        }
    }

    /// Changes matched per read (and written per transaction) by `fanOutPending`.
    static let fanOutBatch = 256
    public static let socketEventsPage = 256
    static let socketEventsBytes = 4 << 20

    /// The oldest changes not fanned out, the subscriptions each matches, and those whose
    /// predicate cannot be evaluated or ran past its limit (to park, with the reason).
    private func matchPending(on reader: any SQLConnection) throws -> (changes: [Int64], matched: [Int64: [String]], parked: [String: String]) {
        let rows = try reader.query("SELECT seq, record_id, type, op, owner, readers, public_read FROM changes WHERE fanned_out = 0 ORDER BY seq LIMIT ?",
                                    [.int(Int64(Self.fanOutBatch))])
        guard !rows.isEmpty else { return ([], [:], [:]) }
        let subscriptions = try reader.query("SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE parked_error IS NULL").map(Self.subscription)
        var matched: [Int64: [String]] = [:], parked: [String: String] = [:]
        for c in rows {
            let seq = c.int(0)!, recordID = c.string(1)!, type = c.string(2)!, op = c.string(3)!, owner = c.string(4)
            let readers = (try JSONValue.parse(c.string(5)!).arrayValue ?? []).compactMap(\.stringValue)
            for s in subscriptions where s.type == type && s.firesOn.contains(op) && parked[s.id] == nil {
                if let who = s.owner, who != owner, c.int(6) != 1, !readers.contains(who) { continue }
                do {
                    let predicate = try PredicateParser.parse(s.predicate)
                    if try reader.withTimeLimit(predicateTimeLimit, { try matches(predicate, recordID: recordID, viewer: Viewer(owner: s.owner), on: reader) }) {
                        matched[seq, default: []].append(s.id)
                    }
                } catch let e as PredicateSyntaxError {
                    parked[s.id] = "predicate: \(e.description)"
                } catch let e as SQLTimeLimitExceeded {
                    parked[s.id] = Self.overLimit(e)
                }
            }
        }
        return (rows.map { $0.int(0)! }, matched, parked)
    }

    static func overLimit(_ e: SQLTimeLimitExceeded) -> String {
        "predicate: took more than \(e.limit) on one record, the limit; subscribe again with a simpler predicate"
    }

    /// Inside a write transaction (a change made over the socket, committed with its
    /// outbox): all changes not yet fanned out, oldest first (so a subscription's
    /// deliveries always follow change order).
    func fanOutPendingInTransaction(now: Double) throws -> Int {
        var made = 0
        for row in try db.query("SELECT seq FROM changes WHERE fanned_out = 0 ORDER BY seq") {
            made += try fanOut(seq: row.int(0)!, now: now)
        }
        return made
    }

    /// Inside a write transaction: deliveries for one change. For a delete it must run
    /// before the record's rows go (the predicate is evaluated against them).
    func fanOut(seq: Int64, now: Double) throws -> Int {
        guard let c = try db.queryOne("SELECT record_id, type, op, owner, readers, public_read FROM changes WHERE seq = ?", [.int(seq)]) else { return 0 }
        let recordID = c.string(0)!, type = c.string(1)!, op = c.string(2)!, owner = c.string(3)
        let readers = (try JSONValue.parse(c.string(4)!).arrayValue ?? []).compactMap(\.stringValue)
        let isPublic = c.int(5) == 1
        var made = 0
        let subscriptions = try db.query("SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE type = ? AND parked_error IS NULL",
                                         [.text(type)]).map(Self.subscription)
        for s in subscriptions {
            guard s.firesOn.contains(op) else { continue }
            // A subscriber only hears about records it may read.
            if let who = s.owner, who != owner, !isPublic, !readers.contains(who) { continue }
            // A predicate that cannot be evaluated (stored before subscribe checked it, or
            // refused by the engine) parks its subscription; everyone else's fan-out goes on.
            // Other errors (I/O) still fail the transaction, to be retried whole.
            // One that runs past its time limit on this one record is parked the same way:
            // fan-out holds the writer, and no one's predicate may hold it for long.
            var parked: String?
            do {
                let predicate = try PredicateParser.parse(s.predicate)
                guard try db.withTimeLimit(predicateTimeLimit, { try matches(predicate, recordID: recordID, viewer: Viewer(owner: s.owner)) }) else { continue }
            } catch let e as PredicateSyntaxError {
                parked = "predicate: \(e.description)"
            } catch let e as SQLTimeLimitExceeded {
                parked = Self.overLimit(e)
            }
            if let parked {
                try db.run("UPDATE subscriptions SET parked_error = ?, parked_at = ? WHERE id = ?",
                           [.text(parked), .double(now), .text(s.id)])
                continue
            }
            made += try db.run("INSERT INTO deliveries(subscription_id, seq, state, next_at) VALUES (?, ?, 'pending', ?) ON CONFLICT DO NOTHING",
                               [.text(s.id), .int(seq), .double(now)])
        }
        try db.run("UPDATE changes SET fanned_out = 1 WHERE seq = ?", [.int(seq)])
        return made
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
            guard let owner = try db.queryOne("SELECT owner FROM subscriptions WHERE id = ?", [.text(id)]) else { throw RecordWriteError.notFound }
            if case .user(let name) = viewer, owner.string(0) != name { throw RecordWriteError.notFound }
            return try db.run("UPDATE deliveries SET state = 'pending', attempts = 0, next_at = ? WHERE subscription_id = ? AND state = 'failed'",
                              [.double(now), .text(id)])
        }
    }

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
