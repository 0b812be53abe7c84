import CPQ

/// A NOTIFY received on a LISTENing connection.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The sender's backend process (equal to `backendPID` for our own NOTIFYs).
    public let pid: Int32

    public init(channel: String, payload: String, pid: Int32) {
        self.channel = channel
        self.payload = payload
        self.pid = pid
    }
}

/// LISTEN/NOTIFY. An event loop polls `socket` for readability, then calls `consumeInput()`
/// and `drainNotifications()`; both read only what already arrived, so they do not block.
/// Queries on the same connection also collect notifications (libpq parks them with the
/// query's answer), so a listening connection is best kept for listening alone.
extension PostgresConnection {
    public func listen(_ channel: String) throws {
        try exec("LISTEN \(Self.quoteIdentifier(channel))")
        if !channels.contains(channel) { channels.append(channel) }
    }

    public func unlisten(_ channel: String) throws {
        try exec("UNLISTEN \(Self.quoteIdentifier(channel))")
        channels.removeAll { $0 == channel }
    }

    /// Sends at COMMIT when inside a transaction, at once otherwise. Payload < 8000 bytes.
    public func notify(_ channel: String, _ payload: String = "") throws {
        try run("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// The session's descriptor, -1 when there is none; a new one after `reconnect()`.
    public var socket: Int32 { PQsocket(conn) }

    /// Reads what the server sent (after the socket polled readable); `unavailable` when
    /// the connection is gone, and then libpq has already closed `socket`: close its poll
    /// at once. (A shutting-down server's FATAL arrives first and passes as a notice; the
    /// error comes with the next wake-up, at end-of-file.)
    public func consumeInput() throws {
        guard PQconsumeInput(conn) == 1 else {
            throw PostgresError(.unavailable, Self.trimmed(PQerrorMessage(conn)))
        }
        collectNotifications()
    }

    /// Every notification received so far, oldest first; the buffer is emptied.
    public func drainNotifications() -> [PostgresNotification] {
        collectNotifications()
        defer { pending.removeAll() }
        return pending
    }

    func collectNotifications() {
        while let n = PQnotifies(conn) {
            pending.append(PostgresNotification(channel: String(cString: n.pointee.relname),
                                                payload: String(cString: n.pointee.extra), pid: n.pointee.be_pid))
            PQfreemem(n)
        }
    }
}
