/// A long-lived part of the daemon, in swift-service-lifecycle's shape: `start` once the
/// parts before it run; `stop` takes no new work and calls `done` once it holds nothing
/// that the parts before it still need (the scheduler: once its running stages finished).
protocol DaemonService: AnyObject {
    func start()
    func stop(_ done: @escaping () -> Void)
}

extension DaemonService {
    func start() {}
}

/// Services started in the order given and stopped in reverse, each once the one started
/// after it has stopped: intake and the socket go before the scheduler, which lets its
/// running stages finish.
struct ServiceGroup {
    let services: [any DaemonService]

    func start() { for s in services { s.start() } }

    func stop(then done: @escaping () -> Void) { stop(services.count - 1, then: done) }

    private func stop(_ i: Int, then done: @escaping () -> Void) {
        guard i >= 0 else { return done() }
        services[i].stop { self.stop(i - 1, then: done) }
    }
}

/// A service that stops by closing its handles at once (what it has in flight finishes on
/// its own: the deliverer's deliveries are ended with the subprocesses after the stages).
protocol ClosingService: DaemonService {
    func close()
}

extension ClosingService {
    func stop(_ done: @escaping () -> Void) {
        close()
        done()
    }
}

extension NotificationDeliverer: ClosingService {}
extension AssetCollector: ClosingService {}
extension Followers: ClosingService {}
extension InboxWatcher: ClosingService {}
extension QueueTailer: ClosingService {}
extension ControlServer: ClosingService {}
extension HealthHTTPServer: ClosingService {}
extension Scheduler: DaemonService {}
