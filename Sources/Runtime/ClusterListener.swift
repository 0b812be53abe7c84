import EventLoop
import StageKit
import Postgres

/// Wakes this daemon when another one on the same PostgreSQL database made work or
/// changes, instead of polling: a connection of its own LISTENs on the channels, and a
/// `SocketPoll` of its socket calls back on the loop thread. `PQconsumeInput` only
/// reads what arrived, so the loop never blocks; connecting and LISTEN run on the pool.
/// When the server goes away it reconnects every second (notifications sent meanwhile
/// are lost, so each reconnect wakes everyone once: they look for themselves).
///
///     other host: COMMIT … pg_notify('photomemo_work', host) ─▶ socket readable
///       ─▶ consumeInput + drain ─▶ onWork() / onChanges()   (our own host's: ignored)
final class ClusterListener: ClosingService {
    static let workChannel = "photomemo_work"
    static let changesChannel = "photomemo_changes"

    private let loop: EventLoop
    private let url: String
    private let host: String
    private let onWork: () -> Void
    private let onChanges: () -> Void
    private var connection: PostgresConnection?
    private var poll: SocketPoll?
    private let retryTimer: LoopTimer
    private var closed = false
    private var failures = RepeatingFailureLog("cluster notifications")

    init(loop: EventLoop, url: String, host: String, onWork: @escaping () -> Void, onChanges: @escaping () -> Void) throws {
        self.loop = loop
        self.url = url
        self.host = host
        self.onWork = onWork
        self.onChanges = onChanges
        retryTimer = try LoopTimer(loop: loop)
    }

    func start() { connect() }

    func close() {
        closed = true
        poll?.close()
        poll = nil
        retryTimer.close()
    }

    private func connect() {
        let url = self.url, existing = connection
        loop.submit({ () -> Result<PostgresConnection, Error> in
            Result {
                if let existing {
                    try existing.reconnect()  // LISTENs again
                    return existing
                }
                let c = try PostgresConnection(url: url, applicationName: "photomemo-listener")
                try c.listen(Self.workChannel)
                try c.listen(Self.changesChannel)
                return c
            }
        }) { [unowned self] result in
            guard !self.closed else { return }
            do {
                let c = try result.get()
                self.connection = c
                let poll = try SocketPoll(loop: self.loop, fd: c.socket)
                try poll.start { [unowned self] error in self.readable(error) }
                self.poll = poll
                self.failures.succeeded()
                // Whatever was sent while we were not listening: look once.
                self.onWork()
                self.onChanges()
            } catch {
                self.failures.failed("\(error); retrying every second")
                self.retryLater()
            }
        }
    }

    private func readable(_ error: SystemError?) {
        guard let c = connection else { return }
        do {
            if let error { throw error }
            try c.consumeInput()
        } catch {
            // The socket is gone with the session: close its poll before the number is reused.
            poll?.close()
            poll = nil
            failures.failed("lost: \(error); reconnecting")
            retryLater()
            return
        }
        var work = false, changes = false
        for n in c.drainNotifications() where n.payload != host {
            if n.channel == Self.workChannel { work = true }
            if n.channel == Self.changesChannel { changes = true }
        }
        if work { onWork() }
        if changes { onChanges() }
    }

    private func retryLater() {
        guard !closed else { return }
        retryTimer.start(afterMs: 1000) { [unowned self] in self.connect() }
    }
}
