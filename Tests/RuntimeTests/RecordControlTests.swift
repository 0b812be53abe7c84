import ControlProtocol
import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit
import Testing
@testable import Runtime

/// Records, subscriptions and status through the control plane, on a real record store.
@Suite struct RecordControlTests {
    typealias C = ControlRig.Call

    func record(_ c: ControlRig, owner: Caller, memo: String) throws -> String {
        try c.records.apply(RecordInput(jobKey: "k-\(UUID().uuidString)", photoSHA256: nil,
                                              memo: MemoJob(memo: memo, fields: ["salesPrice": 1200], owner: owner.name),
                                              assets: .emptyObject, exif: .emptyObject, width: nil, height: nil)).record.id
    }

    /// Every command refuses a NUL in any argument, before it runs: a subscription's alert
    /// or predicate, an ACL's user names (on PostgreSQL they failed at the write, as an
    /// internal error; on SQLite they were kept). Nothing is made or changed.
    @Test func noCommandTakesANULInAnyArgument() throws {
        let c = try ControlRig()
        let id = try record(c, owner: ControlRig.owner, memo: "lunch")
        let r = try c.run([
            C(command: "subscribe", args: ["type": "Houses", "alert": "new\u{0}house", "follow": false], caller: ControlRig.owner),
            C(command: "subscribe", args: ["type": "Houses", "predicate": "address == \"T\u{0}\"", "follow": false], caller: ControlRig.owner),
            C(command: "update", args: ["record": .string(id), "acl": ["read": ["bob\u{0}"]]], caller: ControlRig.owner),
            C(command: "query", args: ["type": "Memo", "sort": "date\u{0}"], caller: ControlRig.owner),
            C(command: "subscriptions", args: [:], caller: ControlRig.owner),
            C(command: "get", args: ["record": .string(id)], caller: ControlRig.owner)])
        #expect(r.closed == 0)
        let refused = r.replies.prefix(4).map(\.message)
        #expect(refused == [#"argument "alert" contains a NUL character (U+0000), which no request may carry"#,
                            #"argument "predicate" contains a NUL character (U+0000), which no request may carry"#,
                            #"argument "acl".read[0] contains a NUL character (U+0000), which no request may carry"#,
                            #"argument "sort" contains a NUL character (U+0000), which no request may carry"#])
        #expect(r.replies.prefix(4).allSatisfy { $0.code == .badRequest })
        #expect(r.replies[4].value?["subscriptions"]?.arrayValue?.isEmpty == true, "\(String(describing: r.replies[4].value))")
        #expect(r.replies[5].value?["acl"]?["read"]?.arrayValue?.isEmpty ?? true, "\(String(describing: r.replies[5].value))")
    }

    @Test func queryAnswersABadPredicateWithABadRequestAndAUserSeesOnlyTheirRecords() throws {
        let c = try ControlRig()
        let mine = try record(c, owner: ControlRig.owner, memo: "lunch receipt")
        _ = try record(c, owner: ControlRig.other, memo: "dinner receipt")
        let r = try c.run([C(command: "query", args: ["predicate": "salesPrice >>= 3"], caller: ControlRig.owner),
                           C(command: "query", args: ["predicate": "salesPrice >= 1000"], caller: ControlRig.owner),
                           C(command: "query", args: ["predicate": "salesPrice >= 1000"], caller: ControlRig.admin),
                           C(command: "query", args: ["limit": 0], caller: ControlRig.admin),
                           C(command: "get", args: ["record": .string(mine)], caller: ControlRig.other)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .badRequest)
        #expect(r.replies[0].message?.hasPrefix("predicate: ") == true)
        let ids = { (reply: ControlRig.Reply) in (reply.value?["records"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue } }
        #expect(ids(r.replies[1]) == [mine])
        #expect(ids(r.replies[2]).count == 2)
        #expect(r.replies[3].code == .badRequest)
        #expect(r.replies[4].code == .notFound)
    }

    @Test func subscribeRefusesABadPredicateAndStoresNothing() throws {
        let c = try ControlRig()
        let r = try c.run([C(command: "subscribe", args: ["type": "Houses", "predicate": "address ==", "follow": false], caller: ControlRig.owner),
                           C(command: "subscribe", args: ["type": "Houses", "webhook": "http://127.0.0.1:1/h"], caller: ControlRig.admin),
                           C(command: "subscribe", args: ["type": "Houses", "predicate": #"address == "Tokyo""#, "follow": false],
                             caller: ControlRig.owner),
                           C(command: "subscriptions", args: [:], caller: ControlRig.owner)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .badRequest && r.replies[0].message?.hasPrefix("predicate: ") == true)
        #expect(r.replies[1].code == .badRequest && r.replies[1].message?.contains("secret") == true)
        let made = try #require(r.replies[2].value)
        let listed = r.replies[3].value?["subscriptions"]?.arrayValue ?? []
        #expect(listed.count == 1 && listed.first?["id"] == made["id"])
        #expect(listed.first?["owner"]?.stringValue == ControlRig.owner.name)
    }

    /// Errors name what was wrong: a bad sort key is the sort's (it was reported as a
    /// predicate error), another user's subscription id is no subscription (it was "no such
    /// record"). Attack review.
    @Test func aBadSortKeyAndAnotherUsersSubscriptionAreNamedAsSuch() throws {
        let c = try ControlRig()
        let owners = try c.records.subscribe(Subscription(owner: ControlRig.owner.name, type: "Houses", predicate: "TRUEPREDICATE", firesOn: ["create"],
                                                          alert: nil, sink: .socket, target: nil, secret: nil))
        let r = try c.run([C(command: "query", args: ["type": "Memo", "sort": "memo;DROP"], caller: ControlRig.owner),
                           C(command: "unsubscribe", args: ["subscription": .string(owners.id)], caller: ControlRig.other)])
        #expect(r.replies[0].code == .badRequest)
        #expect(r.replies[0].message == #"sort: sort key "memo;DROP" is not a field name at column 1"#)
        #expect(r.replies[1].code == .notFound && r.replies[1].message == "no such subscription (or not yours)")
    }

    /// A NUL in an update's memo or fields is refused (PostgreSQL's text cannot hold one)
    /// and the record stays as it was.
    @Test func updateRefusesANULInTheMemoOrAField() throws {
        let c = try ControlRig()
        let id = try record(c, owner: ControlRig.owner, memo: "lunch")
        let r = try c.run([C(command: "update", args: ["record": .string(id), "memo": "a\u{0}b"], caller: ControlRig.owner),
                           C(command: "update", args: ["record": .string(id), "fields": ["code": "A\u{0}"]], caller: ControlRig.owner),
                           C(command: "get", args: ["record": .string(id)], caller: ControlRig.owner)])
        #expect(r.closed == 0)
        #expect(r.replies[0].code == .badRequest && r.replies[0].message?.hasPrefix(#"argument "memo" contains a NUL character"#) == true)
        #expect(r.replies[1].code == .badRequest && r.replies[1].message?.hasPrefix(#"argument "fields".code contains a NUL character"#) == true)
        let got = try #require(r.replies[2].value)
        #expect(got["memo"] == "lunch" && got["fields"]?["code"] == nil, "\(got)")
    }

    @Test func statusReportsCountsStagesAndDependencies() throws {
        let c = try ControlRig()
        _ = try c.failedJob(owner: nil)
        _ = try c.queuedJob(owner: nil)
        let r = try c.run("status", as: ControlRig.owner)
        #expect(r.closed == 0)
        let s = try #require(r.reply.value)
        #expect(s["paused"] == true && s["job_definition"] == "test")
        #expect(s["stage_order"] == ["first", "second"])
        let jobs = try #require(s["jobs"]?.objectValue)
        #expect(Set(jobs.keys) == Set(JobState.allCases.map(\.rawValue)))
        #expect(jobs["queued"] == 1 && jobs["failed"] == 1 && jobs["done"] == 0)
        let first = try #require(s["stages"]?["first"]?.objectValue)
        #expect(Set(first.keys) == ["done", "failed", "retried", "skipped", "unavailable", "running", "held", "paused", "p50_ms", "p99_ms"])
        #expect(first["running"] == 0 && first["p50_ms"] == .null)
        #expect(s["dependencies"] == ["journal": "up"])
        #expect(s["backlog"] == ["inbox_files": 0, "queue_unread_bytes": 0, "inbox_skipped": 0, "inbox_stale": 0, "inbox_stale_bytes": 0])
        #expect(s["clients"]?["connected"] == 1)
        #expect(s["version"]?.stringValue == PhotomemoVersion.current)
    }
}

extension RecordControlTests {
    /// An alert template is at most 1 KiB: 1,000 `{memo}` and a 1 MiB memo once made 1 GB
    /// an event. The cap takes the template at its limit.
    @Test func subscribeRefusesAnAlertTemplateOver1KiB() throws {
        let c = try ControlRig()
        let r = try c.run([
            C(command: "subscribe", args: ["type": "Houses", "alert": .string(String(repeating: "{memo}", count: 171)), "follow": false],
              caller: ControlRig.owner),
            C(command: "subscribe", args: ["type": "Houses", "alert": .string(String(repeating: "x", count: 1024)), "follow": false],
              caller: ControlRig.owner)])
        #expect(r.replies[0].code == .badRequest)
        #expect(r.replies[0].message == "\"alert\" is 1026 bytes; a template is at most 1024 (it renders to at most 4096)")
        #expect(r.replies[1].value?["id"] != nil, "\(String(describing: r.replies[1]))")
    }
}
