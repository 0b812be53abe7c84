import Foundation
import SQL
import StageKit

/// Fan-out: which subscriptions each change meets, written as `deliveries` rows (the
/// durable outbox). The pipeline's changes are matched on a query connection outside any
/// write (`fanOutPending`); a change made over the socket inside its own write, so its
/// outbox commits with it (`fanOutPendingInTransaction`). Both test a subscription the
/// same way (`verdict`) and park one whose predicate cannot be evaluated or runs too long.
extension RecordStore {

    /// One row of `changes`, as fan-out reads it (`changeColumns`).
    struct PendingChange {
        let seq: Int64, recordID: String, type: String, op: String, owner: String?
        let readers: [String], isPublic: Bool

        init(_ r: Row) throws {
            seq = r.int(0)!; recordID = r.string(1)!; type = r.string(2)!; op = r.string(3)!; owner = r.string(4)
            readers = (try JSONValue.parse(r.string(5)!).arrayValue ?? []).compactMap(\.stringValue)
            isPublic = r.int(6) == 1
        }
    }
    static let changeColumns = "seq, record_id, type, op, owner, readers, public_read"

    /// What one subscription makes of one change.
    enum Verdict: Equatable { case matches, misses, parks(String) }

    /// Whether `s` hears of change `c`: its type and op, a record its owner may read, and
    /// its predicate on the changed record within `predicateTimeLimit`. A predicate that
    /// cannot be evaluated (stored before subscribe checked it, or refused by the engine)
    /// or runs past the limit parks the subscription, so everyone else's fan-out goes on
    /// and no one's predicate holds a write for long; other errors (I/O) are thrown.
    /// `reader`: a query connection, or nil for the writer inside its transaction.
    func verdict(_ s: Subscription, _ c: PendingChange, on reader: (any SQLConnection)?) throws -> Verdict {
        guard s.type == c.type, s.firesOn.contains(c.op) else { return .misses }
        if let who = s.owner, who != c.owner, !c.isPublic, !c.readers.contains(who) { return .misses }
        do {
            let predicate = try PredicateParser.parse(s.predicate)
            let found = try (reader ?? db).withTimeLimit(predicateTimeLimit) {
                try matches(predicate, recordID: c.recordID, viewer: Viewer(owner: s.owner), on: reader)
            }
            return found ? .matches : .misses
        } catch let e as PredicateSyntaxError {
            return .parks("predicate: \(e.description)")
        } catch let e as SQLTimeLimitExceeded {
            return .parks("predicate: took more than \(e.limit) on one record, the limit; subscribe again with a simpler predicate")
        }
    }

    /// Parks subscription `id` with `reason` (the first reason stays), in a write.
    func park(_ id: String, _ reason: String, now: Double) throws {
        try db.run("UPDATE subscriptions SET parked_error = ?, parked_at = ? WHERE id = ? AND parked_error IS NULL",
                   [.text(reason), .double(now), .text(id)])
    }

    /// A pending delivery of change `seq` to subscription `id` (none twice); in a write.
    func addDelivery(_ id: String, seq: Int64, now: Double) throws -> Int {
        try db.run("INSERT INTO deliveries(subscription_id, seq, state, next_at) VALUES (?, ?, 'pending', ?) ON CONFLICT DO NOTHING",
                   [.text(id), .int(seq), .double(now)])
    }

    /// The test of one record, on that record's own rows (`perRecord`): a subscriber's
    /// predicate never walks an index over others' values, so how long the write that fans
    /// out to it takes tells them nothing either. `viewer`: the subscriber, who must (still)
    /// be able to read the record: the pipeline's changes are matched after they commit,
    /// when the record may have been made private with new text.
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

    /// Fans out every change not yet fanned out (the pipeline's), in change order; returns
    /// deliveries made. Idempotent: a delivery is unique per (subscription, change).
    ///
    /// Predicates are matched first, on fan-out's own read connection, outside any write: however
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
                for (id, reason) in parked { try park(id, reason, now: now) }
                for seq in changes where try db.run("UPDATE changes SET fanned_out = 1 WHERE seq = ? AND fanned_out = 0", [.int(seq)]) == 1 {
                    for id in matched[seq] ?? [] { made += try addDelivery(id, seq: seq, now: now) }
                }
                return made
            }
            if changes.count < Self.fanOutBatch { return made }
        }
    }

    /// Changes matched per read (and written per transaction) by `fanOutPending`.
    static let fanOutBatch = 256

    /// The oldest changes not fanned out, the subscriptions each matches, and those whose
    /// predicate cannot be evaluated or ran past its limit (to park, with the reason).
    private func matchPending(on reader: any SQLConnection) throws -> (changes: [Int64], matched: [Int64: [String]], parked: [String: String]) {
        let changes = try reader.query("SELECT \(Self.changeColumns) FROM changes WHERE fanned_out = 0 ORDER BY seq LIMIT ?",
                                       [.int(Int64(Self.fanOutBatch))]).map(PendingChange.init)
        guard !changes.isEmpty else { return ([], [:], [:]) }
        let subscriptions = try reader.query("SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE parked_error IS NULL").map(Self.subscription)
        var matched: [Int64: [String]] = [:], parked: [String: String] = [:]
        for c in changes {
            for s in subscriptions where parked[s.id] == nil {
                switch try verdict(s, c, on: reader) {
                case .matches: matched[c.seq, default: []].append(s.id)
                case .misses: break
                case .parks(let reason): parked[s.id] = reason
                }
            }
        }
        return (changes.map(\.seq), matched, parked)
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
        guard let c = try db.queryOne("SELECT \(Self.changeColumns) FROM changes WHERE seq = ?", [.int(seq)]).map(PendingChange.init) else { return 0 }
        var made = 0
        for s in try db.query("SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE type = ? AND parked_error IS NULL",
                              [.text(c.type)]).map(Self.subscription) {
            switch try verdict(s, c, on: nil) {
            case .matches: made += try addDelivery(s.id, seq: seq, now: now)
            case .misses: break
            case .parks(let reason): try park(s.id, reason, now: now)
            }
        }
        try db.run("UPDATE changes SET fanned_out = 1 WHERE seq = ?", [.int(seq)])
        return made
    }
}
