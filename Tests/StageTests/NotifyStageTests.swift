import Foundation
import Index
import NotifyStage
import StageKit
import Testing

/// `notify` on a real record store: a record change is queued in the outbox once per
/// matching subscription, however often the stage runs for the job.
@Suite struct NotifyStageTests {
    func pending(_ store: any RecordIndex) throws -> [String: Int64] {
        Dictionary(uniqueKeysWithValues: try store.subscriptions(viewer: .admin).compactMap { s in
            s["id"]?.stringValue.map { ($0, s["pending"]?.intValue ?? -1) }
        })
    }

    @Test func aChangeIsQueuedOncePerMatchingSubscriptionHoweverOftenItRuns() throws {
        let h = try StageHome()
        let store = try h.environment.recordIndex()
        let tokyo = try store.subscribe(.init(owner: nil, type: "Houses", predicate: #"address == "Tokyo""#, firesOn: ["create"], alert: nil,
                                             sink: .webhook, target: "http://127.0.0.1:1/h", secret: "k"))
        let osaka = try store.subscribe(.init(owner: nil, type: "Houses", predicate: #"address == "Osaka""#, firesOn: ["create"], alert: nil,
                                             sink: .webhook, target: "http://127.0.0.1:1/h", secret: "k"))
        // The index stage's write for the job: one create change.
        _ = try store.apply(RecordInput(jobKey: "k1", photoSHA256: nil,
                                              memo: MemoJob(memo: "red roof", type: "Houses", fields: ["address": "Tokyo"], owner: "alice"),
                                              assets: .emptyObject, exif: .emptyObject, width: nil, height: nil))
        let stage = try h.stage(NotifyStage.self)
        let job = JobContext(id: 1, key: "k1", photoPath: nil, memo: MemoJob(memo: "red roof", type: "Houses"), results: [:], attempt: 1)
        #expect(stage.run(job).result == ["deliveries": 1])
        // Run again (a crash before the journal recorded it): nothing more is queued.
        #expect(stage.run(job).result == ["deliveries": 0])
        #expect(try pending(store) == [tokyo.id: 1, osaka.id: 0])
        let due = try store.claimDueDeliveries(limit: 10, claimant: "test", until: unixNow() + 60, now: unixNow())
        #expect(due.count == 1 && due.first?.event["op"] == "create" && due.first?.event["record"]?["memo"] == "red roof")
    }
}
