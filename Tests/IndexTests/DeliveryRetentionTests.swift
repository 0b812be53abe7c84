import Foundation
import SQLite
import StageKit
import Testing
@testable import Index

/// Running for months: deliveries delivered or failed longer ago than the retention go
/// (one row per change and subscription stayed forever: 20,105 rows for three dead
/// webhooks after 4,000 changes); pending ones stay, and a pruned row never comes back.
@Suite struct DeliveryRetentionTests {
    @Test(arguments: Engine.allCases) func finishedDeliveriesGoAfterTheirRetentionAndPendingOnesStay(_ engine: Engine) throws {
        try withStore(engine) { s in
            let sub = try s.subscribe(Subscription(owner: nil, type: "Memo", predicate: "n > 0", firesOn: ["create"], alert: nil,
                                                   sink: .exec, target: "[\"true\"]", secret: nil))
            for i in 1...4 { _ = try s.apply(input("\(i)", memo: "m\(i)", fields: ["n": .int(Int64(i))])) }
            #expect(try s.fanOutPending() == 4)
            let ids = try s.db.query("SELECT id FROM deliveries ORDER BY seq").map { $0.int(0)! }
            try s.finishDelivery(ids[0], delivered: true, error: nil, retryAt: nil, now: 110)
            try s.finishDelivery(ids[1], delivered: false, error: "exit 1", retryAt: nil, now: 110)  // failed
            try s.finishDelivery(ids[2], delivered: false, error: "exit 1", retryAt: 130, now: 110)  // retried later
            // Each row's last attempt was at 100 (what the pruning reads, with the row's state).
            try s.db.run("UPDATE deliveries SET next_at = 100")
            func states() throws -> [String] {
                try s.db.query("SELECT state FROM deliveries ORDER BY seq").map { $0.string(0)! }
            }
            // Delivered kept for 100 s, failed for 200 s: at 150 neither is old enough.
            #expect(try s.pruneDeliveries(deliveredBefore: 50, failedBefore: -50, limit: 500) == 0)
            #expect(try states() == ["delivered", "failed", "pending", "pending"])
            #expect(try s.pruneDeliveries(deliveredBefore: 150, failedBefore: 50, limit: 500) == 1)
            #expect(try states() == ["failed", "pending", "pending"])
            #expect(try s.pruneDeliveries(deliveredBefore: 250, failedBefore: 150, limit: 500) == 1)
            #expect(try states() == ["pending", "pending"])
            // Nothing fans out again; the subscription's counts are of what is kept.
            #expect(try s.fanOutPending() == 0)
            let listed = try s.subscriptions(viewer: .admin).first { $0["id"]?.stringValue == sub.id }
            #expect(listed?["pending"] == .int(2) && listed?["delivered"] == .int(0) && listed?["failed"] == .int(0))
        }
    }

    @Test func aBatchTakesAtMostItsLimit() throws {
        try withStore(.sqlite) { s in
            _ = try s.subscribe(Subscription(owner: nil, type: "Memo", predicate: "n > 0", firesOn: ["create"], alert: nil,
                                             sink: .exec, target: "[\"true\"]", secret: nil))
            for i in 1...5 { _ = try s.apply(input("\(i)", memo: "m", fields: ["n": 1])) }
            #expect(try s.fanOutPending() == 5)
            try s.db.run("UPDATE deliveries SET state = 'delivered', next_at = 1")
            #expect(try s.pruneDeliveries(deliveredBefore: 10, failedBefore: 10, limit: 3) == 3)
            #expect(try s.pruneDeliveries(deliveredBefore: 10, failedBefore: 10, limit: 3) == 2)
        }
    }
}
