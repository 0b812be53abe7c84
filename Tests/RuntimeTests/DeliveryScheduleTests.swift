import Foundation
import Index
import Testing
@testable import Runtime

/// Which claimed deliveries start (issue 24, item 8): lanes per subscription served round
/// robin, users capped, sinks that timed out only in probing slots of their own.
@Suite struct DeliveryScheduleTests {
    func delivery(_ sub: String, owner: String? = nil, seq: Int64 = 1) -> OutboxDelivery {
        let s = Subscription(id: sub, owner: owner, type: "Memo", predicate: "TRUEPREDICATE", firesOn: ["create"], alert: nil,
                             sink: .exec, target: nil, secret: nil)
        return OutboxDelivery(id: seq, subscription: s, seq: seq, attempts: 0, event: .emptyObject)
    }

    @Test func subscriptionsAreServedRoundRobin() {
        var schedule = DeliverySchedule()
        let subs = (0..<20).map { "s\($0)" }
        let first = schedule.pick(subs.map { delivery($0) })
        #expect(first.start.map(\.subscription.id) == Array(subs.prefix(DeliverySchedule.maxInFlight)))
        #expect(schedule.isFull == false, "probing slots are still free")
        // s0 ends; s16-s19 have waited and go before s0 again, whatever the claim's order.
        schedule.finished(first.start[0].subscription, timedOut: false, now: 0)
        let next = schedule.pick([delivery("s0", seq: 2)] + subs.suffix(4).map { delivery($0) })
        #expect(next.start.map(\.subscription.id) == ["s16"])
        #expect(Set(next.later.map(\.subscription.id)) == ["s0", "s17", "s18", "s19"])
    }

    @Test func aUserHoldsAtMostTwoSlotsAndAdminsOnlyTheSixteen() {
        var schedule = DeliverySchedule()
        let bobs = (0..<5).map { delivery("bob\($0)", owner: "bob-\(getpid())") }
        let admins = (0..<5).map { delivery("admin\($0)") }
        let picked = schedule.pick(bobs + admins)
        #expect(picked.start.filter { $0.subscription.owner != nil }.count == DeliverySchedule.maxPerUser)
        #expect(picked.start.filter { $0.subscription.owner == nil }.count == 5)
    }

    /// Eight sinks that hung hold no slot of the others: each is retried in one of the
    /// probing slots, and a healthy subscription still starts with all of those taken.
    @Test func suspectsOnlyTakeProbingSlots() {
        var schedule = DeliverySchedule()
        let hung = (0..<8).map { delivery("hung\($0)") }
        _ = schedule.pick(hung)
        for d in hung { schedule.finished(d.subscription, timedOut: true, now: 100) }
        #expect(schedule.timeoutsInARow("hung0") == 1 && schedule.isIdle)
        let again = schedule.pick(hung.map { delivery($0.subscription.id, seq: 2) })
        #expect(again.start.count == DeliverySchedule.maxProbing && again.later.count == 4)
        let hook = schedule.pick([delivery("hook")])
        #expect(hook.start.map(\.subscription.id) == ["hook"])
        // A second timeout in a row counts on; a delivery that does not time out clears it;
        // a suspect that has not timed out for half an hour is forgotten.
        schedule.finished(again.start[0].subscription, timedOut: true, now: 200)
        #expect(schedule.timeoutsInARow(again.start[0].subscription.id) == 2)
        schedule.finished(again.start[1].subscription, timedOut: false, now: 200)
        #expect(schedule.timeoutsInARow(again.start[1].subscription.id) == 0)
        schedule.finished(again.start[2].subscription, timedOut: true, now: 100 + DeliverySchedule.forgetTimeoutsAfter + 1)
        #expect(schedule.timeoutsInARow("hung7") == 0, "an old suspect is forgotten")
    }

    @Test func theBackOffGrowsWithEachTimeoutUpToTenMinutes() {
        let policy = DeliverySchedule.hungBackoff(sinkTimeoutMs: 30_000)
        #expect((1...6).map { policy.ceilingMs(afterFailures: $0) } == [30_000, 60_000, 120_000, 240_000, 480_000, 600_000])
        for n in 1...10 {
            let hold = DeliverySchedule.hold(afterTimeouts: n, sinkTimeoutMs: 1000, now: 50)
            #expect(hold > 50 && hold <= 50 + Double(min(1000 << (n - 1), 600_000)) / 1000)
        }
    }
}
