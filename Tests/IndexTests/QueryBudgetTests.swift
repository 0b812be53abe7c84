import Foundation
import Postgres
import StageKit
import SQLite
import TestSupport
import Testing
@testable import Index

/// Every request has a bounded cost inside the engine: a query past its time limit answers
/// `too_expensive`, a subscription's predicate past its own at fan-out is parked, and a
/// CONTAINS text's words count toward the predicate's 256 terms.
@Suite struct QueryBudgetTests {
    /// 255 ORed prefix tests that every record passes: one of the costliest predicates the
    /// parser lets through (it took 3.2 s over 3,000 records in a release build).
    static let everyPrefix = (0..<255).map { _ in "memo BEGINSWITH \"\"" }.joined(separator: " OR ")
    /// 255 fields no record has, ORed: each is looked up on every record tested.
    static let noPrefix = (0..<255).map { "f\($0) BEGINSWITH \"zz\"" }.joined(separator: " OR ")

    func fill(_ s: RecordStore, _ n: Int) throws {
        _ = try s.apply(batch: (0..<n).map { input("k\($0)", memo: "memo number \($0)", fields: ["n": .int(Int64($0))]) }, now: unixNow())
    }

    @Test(arguments: Engine.allCases) func aQueryPastItsTimeLimitAnswersTooExpensive(_ engine: Engine) throws {
        try withStore(engine) { s in
            try fill(s, 400)
            let p = try PredicateParser.parse(Self.everyPrefix)
            #expect(try s.query(p, limit: 1000, viewer: .admin).records.count == 400)
            s.queryTimeLimit = engine == .sqlite ? 0 : 0.001
            #expect(throws: PhotomemoError(.tooExpensive,
                "the query ran past its limit of \(engine == .sqlite ? 0 : 1) ms in the index; narrow it (a --type, an == or a range on a field, fewer OR'd terms)")) {
                try s.query(p, limit: 1000, viewer: .user("alice"))
            }
            // SQLite's limit is asked every 1,000 steps of its engine: a query that does
            // little (an admin's, through the field index) still answers. (PostgreSQL's is
            // wall-clock time, 1 ms on a busy machine.)
            if engine == .sqlite {
                let one = try s.query(PredicateParser.parse("n == 7"), viewer: .admin)
                #expect(one.records.map(\.memo) == ["memo number 7"])
            }
            s.queryTimeLimit = 1
            #expect(try s.query(p, limit: 1000, viewer: .user("alice")).records.count == 400)
        }
    }

    @Test func postgresCancelsAStatementPastTheLimitAndTheSessionGoesOn() throws {
        let db = try PostgresDatabase(url: PostgresServer.freshDatabase(#function))
        #expect(throws: SQLTimeLimitExceeded(seconds: 0.05)) {
            try db.withTimeLimit(0.05) { try db.query("SELECT pg_sleep(2)") }
        }
        // The session's statement_timeout is back to none.
        #expect(try db.queryOne("SELECT current_setting('statement_timeout')")?.string(0) == "0")
        #expect(try db.queryOne("SELECT 1 FROM pg_sleep(0.1)") != nil)
    }

    @Test func aSubscriptionWhosePredicateRunsPastItsLimitIsParkedAndOthersGoOn() throws {
        let s = try tempStore()
        s.predicateTimeLimit = 0
        let costly = try s.subscribe(Subscription(owner: nil, type: "Memo", predicate: Self.noPrefix, firesOn: ["create"],
                                                  alert: nil, sink: .socket, target: nil, secret: nil))
        let cheap = try s.subscribe(Subscription(owner: "alice", type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create"],
                                                 alert: nil, sink: .socket, target: nil, secret: nil))
        _ = try s.apply(input("1", memo: "hello"), now: unixNow())
        #expect(try s.fanOutPending() == 1)
        let listed = Dictionary(uniqueKeysWithValues: try s.subscriptions(viewer: .admin).map { ($0["id"]!.stringValue!, $0) })
        #expect(listed[costly.id]?["state"] == "parked")
        #expect(listed[costly.id]?["error"] == "predicate: took more than 0 ms on one record, the limit; subscribe again with a simpler predicate")
        #expect(listed[cheap.id]?["state"] == "active" && listed[cheap.id]?["pending"] == 1)
    }

    @Test func aContainsTextsWordsCountTowardTheTermLimit() throws {
        let words = (0..<256).map { "w\($0)" }
        #expect(throws: Never.self) { try PredicateParser.parse("memo CONTAINS \"\(words.joined(separator: " "))\"") }
        let tooMany = "memo CONTAINS \"\((words + ["one-more"]).joined(separator: " "))\""
        #expect(throws: PredicateSyntaxError.self) { try PredicateParser.parse(tooMany) }
        // With other terms: 200 words and 57 values are 257.
        let mixed = "memo CONTAINS \"\(words.prefix(200).joined(separator: " "))\" AND n IN {\((0..<57).map(String.init).joined(separator: ","))}"
        #expect(throws: PredicateSyntaxError.self) { try PredicateParser.parse(mixed) }
    }

    @Test func anAlertRendersToAtMost4KiBInOnePass() throws {
        let memo = String(repeating: "x", count: 1 << 20)
        let s = Subscription(owner: nil, type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create"],
                             alert: String(repeating: "{memo}", count: 170), sink: .socket, target: nil, secret: nil)
        let record: JSONValue = ["id": "r1", "type": "Memo", "memo": .string(memo), "fields": ["note": "{memo}"]]
        let big = try #require(s.event(seq: 1, op: "create", type: "Memo", at: 0, record: record)["alert"]?.stringValue)
        #expect(big.utf8.count <= Subscription.maxAlertBytes && big.hasSuffix("…"))
        // A field's value is text, never a placeholder itself.
        var small = s
        small.alert = "{type} {note} {missing}"
        #expect(small.event(seq: 1, op: "create", type: "Memo", at: 0, record: record)["alert"] == "Memo {memo} {missing}")
    }
}

extension QueryBudgetTests {
    /// The pipeline's fan-out matches predicates outside the write transaction: another
    /// writer on the same SQLite file (the journal shares it) never waits for the matching,
    /// only for the short write of the deliveries.
    @Test func fanOutMatchesWithoutHoldingTheWriter() throws {
        let s = try tempStore()
        try makeCostlyBacklog(s)
        let (fanOut, slowestWrite) = try longestWrite(on: s) { _ = try? s.fanOutPending() }
        #expect(try s.db.queryOne("SELECT count(*) FROM changes WHERE fanned_out = 0")?.int(0) == 0)
        #expect(fanOut > 0.2, "the matching takes long enough to tell: \(fanOut) s")
        #expect(slowestWrite < fanOut / 4, "a write waited \(slowestWrite) s during a fan-out of \(fanOut) s")
    }
}

extension QueryBudgetTests {
    /// A user's `changes` walks every change to find the few they may read: it reads on a
    /// query connection within the query time limit, so a user looping it over others'
    /// changes never holds the writer (it ran on the writer's connection, unbounded).
    @Test func aUsersChangesPageNeverHoldsTheWriterAndHasATimeLimit() throws {
        let s = try tempStore()
        _ = try s.apply(batch: (0..<2_000).map { input("k\($0)", memo: "memo \($0)") }, now: unixNow())
        // The writer's lock held (as a long write holds it): bob's page still answers, as
        // it reads on a query connection; behind the lock it would wait for the write.
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread { s.locked { held.signal(); release.wait() } }
        held.wait()
        Thread.detachNewThread {
            _ = try? s.changes(since: 0, limit: 1, viewer: .user("bob"), maxBytes: 4 << 20)
            answered.signal()
        }
        let waited = answered.wait(timeout: .now() + 5) == .timedOut
        release.signal()
        if waited { answered.wait() }
        #expect(!waited, "bob's changes page waited behind the writer's lock")

        s.queryTimeLimit = 0
        #expect(throws: PhotomemoError.self) { try s.changes(since: 0, limit: 1, viewer: .user("bob"), maxBytes: 4 << 20) }
        // An admin's page starts at `since` through the primary key: it is never refused.
        #expect(try s.changes(since: 0, limit: 1, viewer: .admin).count == 1)
    }
}

extension QueryBudgetTests {
    /// Fan-out matches on a connection of its own: a user's query never waits behind the
    /// matching of a batch of changes (up to 256 changes times every subscription of their
    /// type, each up to the predicate limit), even while another user keeps the other query
    /// connection busy with queries at their time limit.
    @Test func queriesNeverWaitBehindFanOut() throws {
        let s = try tempStore()
        s.predicateTimeLimit = 10
        for i in 0..<60 {
            _ = try s.subscribe(Subscription(id: "s\(i)", owner: nil, type: "Memo", predicate: Self.noPrefix, firesOn: ["create"], alert: nil,
                                             sink: .socket, target: nil, secret: nil))
        }
        _ = try s.apply(batch: (0..<3000).map { input("m\($0)", type: "Junk", owner: "mallory") }, now: unixNow())
        _ = try s.apply(input("a", memo: "alice's", owner: "alice"), now: unixNow())
        _ = try s.fanOutPending()  // the setup's own changes
        let fields = Dictionary(uniqueKeysWithValues: (0..<255).map { ("f\($0)", JSONValue.string("v\($0)")) })
        _ = try s.apply(batch: (0..<12).map { input("k\($0)", fields: fields) }, now: unixNow())

        s.queryTimeLimit = 0.3
        let costly = try PredicateParser.parse(Self.everyPrefix), cheap = try PredicateParser.parse("memo == \"alice's\"")
        let started = Date(), finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var fanOut = 0.0  // written before the signal, read after it
        Thread.detachNewThread {
            _ = try? s.fanOutPending()
            fanOut = Date().timeIntervalSince(started)
            finished.signal()
        }
        Thread.detachNewThread {
            while finished.wait(timeout: .now()) == .timedOut { _ = try? s.query(costly, limit: 1000, viewer: .user("mallory")) }
            finished.signal()
        }
        var slowest = 0.0
        while Date().timeIntervalSince(started) < 2.5 {
            let t0 = Date()
            #expect(try s.query(cheap, viewer: .user("alice")).records.count == 1)
            slowest = max(slowest, Date().timeIntervalSince(t0))
            Thread.sleep(forTimeInterval: 0.05)
        }
        finished.wait()
        #expect(fanOut > 3, "the fan-out takes long enough to tell: \(fanOut) s")
        #expect(slowest < 1, "alice's query waited \(slowest) s (mallory's are cut at 0.3 s, fan-out took \(fanOut) s)")
    }
}

extension QueryBudgetTests {
    /// Fan-out now runs after the change commits, so a record may have changed by then: a
    /// subscriber's predicate is tested only while they may still read the record. (A
    /// pipeline change to alice's public record, fanned out after she made it private with
    /// a secret memo, matched mallory's `memo CONTAINS "password"` on the secret: an oracle
    /// on text he may no longer read.)
    @Test func aSubscriberWhoMayNoLongerReadTheRecordIsNotMatchedOnItsNewText() throws {
        let s = try tempStore()
        let r = try s.apply(input("k1", memo: "hello", owner: "alice")).record
        _ = try s.update(r.id, memo: nil, fields: [:], acl: ACL(publicRead: true), ifTag: nil, viewer: .user("alice"))
        let probe = try s.subscribe(Subscription(owner: "mallory", type: "Memo", predicate: #"memo CONTAINS "password""#, firesOn: ["update"],
                                                 alert: nil, sink: .socket, target: nil, secret: nil))
        // A job line updates her public record; before its fan-out she makes it private.
        var line = input("k2", memo: "innocent", owner: "alice")
        line.memo.record = r.id
        _ = try s.apply(line)
        _ = try s.update(r.id, memo: "the password is hunter2", fields: [:], acl: ACL(), ifTag: nil, viewer: .user("alice"))
        _ = try s.fanOutPending()
        let mine = try s.subscriptions(viewer: .user("mallory")).first { $0["id"]?.stringValue == probe.id }
        #expect(mine?["pending"] == 0, "\(String(describing: mine))")
    }
}

extension QueryBudgetTests {
    /// A change made over the socket is matched inside its own write, with every change
    /// not yet fanned out before it: that backlog is matched first, outside the write, so
    /// one user's update never holds the writer (the journal's too, on SQLite) through the
    /// matching of the pipeline's changes against everyone's subscriptions.
    @Test func anUpdateOverTheSocketDoesNotMatchTheBacklogInsideItsWrite() throws {
        let s = try tempStore()
        let mine = try s.apply(input("a", memo: "alice's", owner: "alice")).record
        try makeCostlyBacklog(s)
        let (update, slowestWrite) = try longestWrite(on: s) {
            _ = try? s.update(mine.id, memo: "changed", fields: [:], acl: nil, ifTag: nil, viewer: .user("alice"))
        }
        #expect(try s.db.queryOne("SELECT count(*) FROM changes WHERE fanned_out = 0")?.int(0) == 0)
        #expect(try s.get(mine.id, viewer: .user("alice"))?.memo == "changed")
        #expect(update > 0.2, "the backlog takes long enough to tell: \(update) s")
        #expect(slowestWrite < update / 4, "a write waited \(slowestWrite) s during an update of \(update) s")
    }
}

extension QueryBudgetTests {
    /// A socket follower's catch-up comes a page at a time (256 events, about 4 MiB of
    /// records): `--since 0` over many deliveries of 1 MiB memos built them all at once.
    @Test func aFollowersCatchUpComesAPageAtATime() throws {
        let s = try tempStore()
        let sub = try s.subscribe(Subscription(owner: "alice", type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create"],
                                               alert: nil, sink: .socket, target: nil, secret: nil))
        _ = try s.apply(batch: (0..<300).map { input("k\($0)", memo: "m\($0)") }, now: unixNow())
        _ = try s.fanOutPending()
        let first = try s.socketEvents(subscription: sub, since: 0)
        #expect(first.count == 256)
        let rest = try s.socketEvents(subscription: sub, since: first.last!["seq"]!.intValue!)
        #expect(rest.count == 300 - 256 && rest.last?["record"]?["memo"] == "m299")

        let big = String(repeating: "x", count: 1 << 20)
        _ = try s.apply(batch: (0..<6).map { input("b\($0)", memo: big) }, now: unixNow())
        _ = try s.fanOutPending()
        let page = try s.socketEvents(subscription: sub, since: rest.last!["seq"]!.intValue!)
        #expect((1...4).contains(page.count), "\(page.count) events of 1 MiB in one page")
    }
}

extension QueryBudgetTests {
    /// 60 subscriptions whose predicate tests 255 fields, and 6 pending changes of records
    /// with those fields: a fan-out that takes seconds in a debug build.
    func makeCostlyBacklog(_ s: RecordStore) throws {
        s.predicateTimeLimit = 10
        for i in 0..<60 {
            _ = try s.subscribe(Subscription(id: "s\(i)", owner: nil, type: "Memo", predicate: Self.noPrefix, firesOn: ["create"], alert: nil,
                                             sink: .socket, target: nil, secret: nil))
        }
        let fields = Dictionary(uniqueKeysWithValues: (0..<255).map { ("f\($0)", JSONValue.string("v\($0)")) })
        _ = try s.apply(batch: (0..<6).map { input("k\($0)", fields: fields) }, now: unixNow())
    }

    /// Runs `work` on a thread of its own while another connection to the same SQLite file
    /// writes in a loop: how long `work` took, and the longest of those writes.
    func longestWrite(on s: RecordStore, during work: @escaping @Sendable () -> Void) throws -> (work: Double, write: Double) {
        let other = try Database(path: s.path)
        try other.exec("CREATE TABLE IF NOT EXISTS probe(n INTEGER)")
        let finished = DispatchSemaphore(value: 0)
        let started = Date()
        nonisolated(unsafe) var took = 0.0  // written before the signal, read after it
        Thread.detachNewThread {
            work()
            took = Date().timeIntervalSince(started)
            finished.signal()
        }
        var longest = 0.0
        while finished.wait(timeout: .now() + 0.01) == .timedOut {
            let t0 = Date()
            _ = try other.transaction { try other.run("INSERT INTO probe VALUES (1)") }
            longest = max(longest, Date().timeIntervalSince(t0))
        }
        return (took, longest)
    }
}
