import EventLoop
import Foundation
import Index
import Notify
import PhotomemoCore
import StageKit

/// Delivers queued notifications (webhook and exec sinks) from the record index's
/// outbox, as `DeliverySchedule` picks them: one in flight per subscription (change
/// order), subscriptions served round robin, a sink that timed out backing off and retried
/// in slots of its own, each delivery off the loop. A sink's outage (no connection, 5xx, a
/// timeout, exit 69) is retried with the job definition's capped back-off for as long as it
/// lasts, never parked, and `status` shows the sink down meanwhile (`sinkHealth`); a failure
/// of the sink's own is retried too and, after its attempts, parked as `failed`
/// (`subscriptions --retry-failed`); a permanent one (a webhook's 4xx) is parked at once.
/// A delivery is claimed (for this host, until its sink's deadline has surely passed)
/// before it is sent, so daemons sharing a database never send one twice at once.
final class NotificationDeliverer {
    private let loop: EventLoop
    private let events: EventBus
    private let store: any RecordIndex
    private let retry: () -> RetryPolicy
    private let execTimeoutMs: Int
    /// `serve --allow-private-webhooks`: users' webhooks may reach loopback and private hosts too.
    private let allowPrivateWebhooks: Bool
    /// This daemon's name on the database ('' alone on SQLite).
    private let claimant: String
    private let timer: LoopTimer
    private var claiming = false
    private var again = false
    private var closed = false
    private var schedule = DeliverySchedule()
    private var idleWaiters: [() -> Void] = []
    private var sinks = SinkHealthBook()
    private var checkingSinks = false, nextSinkCheck = 0.0
    /// The sinks found down and up, shown in `status` (SinkHealthBook).
    var sinkHealth: [SinkHealth.Key: SinkHealth] { sinks.health }
    private var claimFailures = RepeatingFailureLog("notifications")

    init(loop: EventLoop, events: EventBus, store: any RecordIndex, retry: @escaping () -> RetryPolicy,
         execTimeoutMs: Int = Sink.defaultExecTimeoutMs, claimant: String = "", allowPrivateWebhooks: Bool = false) throws {
        self.execTimeoutMs = execTimeoutMs
        self.allowPrivateWebhooks = allowPrivateWebhooks
        self.claimant = claimant
        self.loop = loop
        self.events = events
        self.store = store
        self.retry = retry
        timer = try LoopTimer(loop: loop)
    }

    func start() {
        let store = self.store, claimant = self.claimant
        // What this daemon was sending when it stopped is due again now, not at the claim's end.
        loop.submit({ Result { try store.releaseDeliveryClaims(of: claimant, ids: nil) } }) { [unowned self] result in
            if case .failure(let e) = result { Log.error("notifications: \(e)") }
            guard !self.closed else { return }  // a stop that came first closed the timer
            self.timer.start(afterMs: 0, repeatMs: 250) { [unowned self] in
                self.tick()
                self.forgetUnsubscribedSinks()
            }
        }
    }

    /// Starts nothing more (what is in flight finishes): what is still due waits, durably, for the next start.
    func close() {
        closed = true
        timer.close()
    }

    /// Something may have queued deliveries (a notify stage ran): claim now, not at the next
    /// tick. A kick while a claim is in flight claims again after it.
    func kick() {
        if claiming { again = true } else { tick() }
    }

    /// Runs `body` once no delivery is in flight (at once if none is).
    func whenIdle(_ body: @escaping () -> Void) {
        if schedule.isIdle { body() } else { idleWaiters.append(body) }
    }

    private func tick() {
        guard !claiming, !closed, !schedule.isFull else { return }
        let store = self.store, claimant = self.claimant
        // Longer than any sink may take (exec deadline, webhook timeouts), with margin.
        let claimSeconds = Double(max(execTimeoutMs, 30_000)) / 1000 + 30
        claiming = true
        // Enough due deliveries to find some of every subscriber behind a busy one.
        loop.submit({ Result { try store.claimDueDeliveries(limit: 256, claimant: claimant, until: unixNow() + claimSeconds,
                                                            now: unixNow()) } }) { [unowned self] result in
            self.claiming = false
            defer { if self.again { self.again = false; self.tick() } }
            let due: [OutboxDelivery]
            switch result {
            case .success(let claimed):
                due = claimed
                self.claimFailures.succeeded()
            case .failure(let e):
                return self.claimFailures.failed("\(e)", level: .error)
            }
            let (start, later) = self.schedule.pick(due)
            for d in start { self.deliver(d, store) }
            if !later.isEmpty {
                let ids = later.map(\.id)
                self.loop.submit({ Result { try store.releaseDeliveryClaims(of: claimant, ids: ids) } }) { result in
                    if case .failure(let e) = result { Log.error("notifications: \(e)") }
                }
            }
        }
    }

    private func deliver(_ d: OutboxDelivery, _ store: any RecordIndex) {
        let policy = retry()
        let timeouts = schedule.timeoutsInARow(d.subscription.id)
        let execTimeoutMs = execTimeoutMs
        // Checked at every delivery, not only at subscribe: names resolve anew each time.
        let refusePrivate = !allowPrivateWebhooks && !UnixUser.isAdmin(name: d.subscription.owner)
        loop.submit({ () -> (Sink.Result, Bool) in
            let body = d.event.jsonData
            Failpoint.hit("notify.before_send")
            let result: Sink.Result
            switch d.subscription.sink {
            case .webhook: result = Sink.post(url: d.subscription.target ?? "", body: body, secret: d.subscription.secret,
                                              eventID: d.event["event_id"]?.stringValue ?? "", refusePrivate: refusePrivate)
            case .exec where !UnixUser.isAdmin(name: d.subscription.owner):
                // Made before exec sinks were admins' only: never run a user's command as the daemon.
                result = .failed(Sink.Failure(.permanent, "exec sinks are for admins; \(d.subscription.owner ?? "?")'s subscription cannot run a command"))
            case .exec:
                let argv = (try? JSONValue.parse(d.subscription.target ?? "[]"))?.arrayValue?.compactMap(\.stringValue) ?? []
                result = Sink.exec(command: argv, body: body, variables: [
                    "PHOTOMEMO_SUBSCRIPTION": d.subscription.id, "PHOTOMEMO_EVENT_ID": d.event["event_id"]?.stringValue ?? "",
                ], timeoutMs: execTimeoutMs)
            case .socket: result = .delivered
            }
            let attempt = d.attempts + 1
            var parked = false
            do {
                switch result {
                case .delivered: try store.finishDelivery(d.id, delivered: true, error: nil, retryAt: nil)
                case .failed(let why):
                    // A permanent refusal (a 4xx) is not tried again: it would only hammer the receiver.
                    // An outage spends no attempt: it waits, capped, for as long as it lasts.
                    parked = why.code == .permanent || (!why.isOutage && attempt >= policy.maxAttempts)
                    // A sink that hangs waits longer with each timeout in a row, whichever delivery is next.
                    let hold = why.code == .timedOut ? DeliverySchedule.hold(
                        afterTimeouts: timeouts + 1, sinkTimeoutMs: d.subscription.sink == .exec ? execTimeoutMs : Sink.webhookTimeoutMs,
                        now: unixNow()) : nil
                    let retryAt = parked ? nil : max(unixNow() + Double(policy.delayMs(afterFailures: attempt)) / 1000, hold ?? 0)
                    try store.finishDelivery(d.id, delivered: false, error: why.reason, retryAt: retryAt)
                    if let hold { try store.holdDeliveries(subscription: d.subscription.id, until: hold) }
                }
            } catch {
                Log.error("notifications: cannot record delivery \(d.id): \(error)")
            }
            return (result, parked)
        }) { [unowned self] (result, parked) in
            if case .failed(let why) = result, why.code == .timedOut {
                self.schedule.finished(d.subscription, timedOut: true, now: unixNow())
            } else {
                self.schedule.finished(d.subscription, timedOut: false, now: unixNow())
            }
            if self.schedule.isIdle {
                let waiters = self.idleWaiters
                self.idleWaiters = []
                for w in waiters { w() }
            }
            self.sinks.note(d.subscription, result)
            let fields: [String: JSONValue] = ["subscription": .string(d.subscription.id), "seq": .int(d.seq)]
            switch result {
            case .delivered: self.events.publish("notification_delivered", job: nil, fields, to: .owner(d.subscription.owner))
            case .failed(let why):
                let end = why.code == .permanent ? "; refused for good, marked failed" : parked ? "; parked as failed"
                    : why.code == .timedOut ? "; its subscription backs off, then retries"
                    : why.isOutage ? "; an outage: retried with back-off until it answers" : "; will retry"
                Log.warning("notification \(d.subscription.id)-\(d.seq): \(why)\(end)")
                self.events.publish(parked ? "notification_failed" : "notification_retry", job: nil,
                                    fields.merging(["reason": .string(why.reason)]) { a, _ in a }, to: .owner(d.subscription.owner))
            }
            // Its subscription's next delivery may be due now: a lane is served at the
            // receiver's pace, not one delivery per timer tick.
            if case .delivered = result { self.kick() }
        }
    }

    /// Drops from `status` the sinks whose subscriptions are all gone: every 5 s while any
    /// sink is listed, one lookup a subscription, off the loop.
    private func forgetUnsubscribedSinks() {
        let ids = sinks.subscriptionIDs, now = unixNow()
        guard !ids.isEmpty, !checkingSinks, now >= nextSinkCheck else { return }
        (checkingSinks, nextSinkCheck) = (true, now + 5)
        let store = self.store
        loop.submit({ Result { try ids.filter { try store.subscription($0) == nil } } }) { [unowned self] result in
            self.checkingSinks = false
            switch result {
            case .success(let gone): self.sinks.forget(gone: gone)
            case .failure(let e): Log.debug("notifications: cannot look up subscriptions: \(e)")
            }
        }
    }
}

