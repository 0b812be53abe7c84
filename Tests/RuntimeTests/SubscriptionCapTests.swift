import Foundation
import Index
import StageKit
import Testing
@testable import Runtime

/// Every record change reads all of its type's subscriptions, everyone's, so a user's
/// subscriptions slow everyone's records: 20,000 of one user's (made in under two minutes)
/// made another's photos 100-200 ms slower at notify. A user has at most
/// `RecordStore.maxSubscriptionsPerUser`; admins are not limited.
@Suite struct SubscriptionCapTests {
    @Test func aUserHasAtMostAHundredSubscriptions() throws {
        let rig = try ControlRig()
        let cap = RecordStore.maxSubscriptionsPerUser
        let subscribe = ["type": JSONValue.string("Photo"), "fires_on": "create", "follow": false]
        let calls = (0...cap).map { _ in ControlRig.Call(command: "subscribe", args: subscribe, caller: ControlRig.owner) }
            + [.init(command: "subscribe", args: subscribe, caller: ControlRig.other)]
            + (0...cap).map { _ in ControlRig.Call(command: "subscribe", args: subscribe, caller: ControlRig.admin) }
        let (replies, closed) = try rig.run(calls, timeout: 60)
        #expect(closed == 0)
        #expect(replies.prefix(cap).allSatisfy { $0.code == nil })
        #expect(replies[cap].code == .tooManySubscriptions)
        if case .failure(let e) = replies[cap] {
            #expect(e.message == "60001 has \(cap) subscriptions, the most a user may have; unsubscribe one first")
        }
        #expect(replies[(cap + 1)...].allSatisfy { $0.code == nil })
    }
}
