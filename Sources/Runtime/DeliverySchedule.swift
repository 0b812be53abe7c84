import Index
import PhotomemoCore
import StageKit

/// Which claimed deliveries start now. Each subscription is its own lane — one delivery in
/// flight at a time, in change order — and lanes are served round robin (the one served
/// longest ago first), so a subscription whose sink hangs delays only itself:
/// - sinks not known to hang share `maxInFlight` slots; a user (not an admin) holds at most
///   `maxPerUser` of them, so one user's sinks cannot take everyone's slots;
/// - a sink whose last delivery timed out is a suspect: it backs off (capped exponential
///   with jitter, `hungBackoff`, growing with each timeout in a row) and is tried again in
///   `maxProbing` slots of its own, never in the others' — 8 exec sinks that hang for
///   `--sink-timeout` once hold their slots that long once, not forever.
/// Loop-confined, like the deliverer that owns it.
struct DeliverySchedule {
    static let maxInFlight = 16
    static let maxProbing = 4
    static let maxPerUser = 2
    /// Every delivery in flight holds a thread of the work pool: the pool has this many more.
    static let maxThreads = maxInFlight + maxProbing
    /// After n timeouts in a row a subscription waits up to its sink's timeout · 2^(n-1), at
    /// most 10 min: the longer it hung, the longer it rests.
    static func hungBackoff(sinkTimeoutMs: Int) -> RetryPolicy {
        .exponentialJitter(maxAttempts: .max, baseMs: max(sinkTimeoutMs, 1000), maxMs: 600_000)
    }

    /// Subscriptions with a delivery in flight: whether it runs in a probing slot.
    private(set) var inFlight: [String: Bool] = [:]
    private var perUser: [String: Int] = [:]
    private var probing = 0
    /// The turn at which each subscription due or in flight last started a delivery (round
    /// robin). One that is neither has nothing waiting: it is forgotten, and comes first
    /// when it has something again.
    private var served: [String: UInt64] = [:]
    private var turn: UInt64 = 0
    /// Timeouts in a row per subscription, and when the last was; gone at its first
    /// delivery that does not time out, or once it has not timed out for `forgetTimeoutsAfter`.
    private var timeouts: [String: (count: Int, at: Double)] = [:]
    static let forgetTimeoutsAfter = 1800.0

    var isIdle: Bool { inFlight.isEmpty }
    /// No slot of either kind is free: claiming now would only claim to release.
    var isFull: Bool { inFlight.count - probing >= Self.maxInFlight && probing >= Self.maxProbing }

    /// The deliveries (at most one per subscription, as claimed) to start now, least
    /// recently served subscription first; the rest wait for a later claim.
    mutating func pick(_ due: [OutboxDelivery]) -> (start: [OutboxDelivery], later: [OutboxDelivery]) {
        var start: [OutboxDelivery] = [], later: [OutboxDelivery] = []
        let dueIDs = Set(due.map(\.subscription.id))
        served = served.filter { dueIDs.contains($0.key) || inFlight[$0.key] != nil }
        // Stable: ties (never served) keep the claim's order, oldest due first.
        let order = due.enumerated().sorted { (served[$0.element.subscription.id] ?? 0, $0.offset) < (served[$1.element.subscription.id] ?? 0, $1.offset) }
        for d in order.map(\.element) {
            let s = d.subscription
            let suspect = timeouts[s.id] != nil
            let user = UnixUser.isAdmin(name: s.owner) ? nil : s.owner ?? ""
            guard inFlight[s.id] == nil, suspect ? probing < Self.maxProbing : inFlight.count - probing < Self.maxInFlight,
                  user.map({ perUser[$0, default: 0] < Self.maxPerUser }) ?? true else {
                later.append(d)
                continue
            }
            inFlight[s.id] = suspect
            if suspect { probing += 1 }
            if let user { perUser[user, default: 0] += 1 }
            turn += 1
            served[s.id] = turn
            start.append(d)
        }
        return (start, later)
    }

    /// How many deliveries of subscription `id` timed out in a row (before one in flight).
    func timeoutsInARow(_ id: String) -> Int { timeouts[id]?.count ?? 0 }

    /// Until when a subscription waits after its `n`th timeout in a row.
    static func hold(afterTimeouts n: Int, sinkTimeoutMs: Int, now: Double) -> Double {
        now + Double(hungBackoff(sinkTimeoutMs: sinkTimeoutMs).delayMs(afterFailures: n)) / 1000
    }

    /// A delivery of `s` ended: its slot is free, and its sink is a suspect while it times out.
    mutating func finished(_ s: Subscription, timedOut: Bool, now: Double) {
        if inFlight.removeValue(forKey: s.id) == true { probing -= 1 }
        if !UnixUser.isAdmin(name: s.owner) {
            let user = s.owner ?? ""
            perUser[user, default: 1] -= 1
            if perUser[user] == 0 { perUser.removeValue(forKey: user) }
        }
        guard timedOut else {
            timeouts.removeValue(forKey: s.id)
            return
        }
        // Unsubscribed sinks that hung leave no entry behind for long.
        timeouts = timeouts.filter { $0.value.at > now - Self.forgetTimeoutsAfter }
        timeouts[s.id] = (timeoutsInARow(s.id) + 1, now)
    }
}
