import CPQ
import Glibc

/// One libpq connection. Every call blocks until the server answers, so it belongs on a
/// worker thread, never the loop thread. Not thread-safe (PGconn is not): one thread at a
/// time, though it may move between threads (hence `@unchecked Sendable`); the owner
/// serialises access.
public final class PostgresConnection: @unchecked Sendable {
    let conn: OpaquePointer
    public let url: String
    /// Channels to LISTEN again after `reconnect()` (a new session has none).
    var channels: [String] = []
    /// Notifications collected after each query, until `drainNotifications()`.
    var pending: [PostgresNotification] = []
    /// Prepared statements of this session by parameter types and SQL (`prepared(_:types:)`).
    var statements: [String: String] = [:]
    var nextStatement = 0

    /// `url` is a libpq URL (`postgres://user@host:port/db?…`) or key=value string; its own
    /// options win over these defaults. Passwords come from PGPASSWORD or ~/.pgpass (libpq).
    public init(url: String, applicationName: String = "photomemo", connectTimeoutSeconds: Int = 10) throws {
        self.url = url
        // Keepalives find a silently dead server in ~1 min instead of the OS's 2 h. No JIT:
        // every statement here is short, and a backlog's cost estimate once made a claim
        // spend 63 ms compiling for 12 ms of work.
        let options = [("connect_timeout", String(connectTimeoutSeconds)), ("application_name", applicationName),
                       ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
                       ("options", "-c jit=off"), ("dbname", url)]
        let c = withCStrings(options.map(\.0)) { keys in
            withCStrings(options.map(\.1)) { values in PQconnectdbParams(keys, values, 1) }
        }
        guard let c else { throw PostgresError(.unavailable, "out of memory connecting to PostgreSQL") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(c))
            PQfinish(c)
            throw PostgresError.connectFailure(message)
        }
        pm_pq_quiet(c)
        conn = c
    }

    deinit { PQfinish(conn) }

    /// Whether the last exchange left the session usable. A server that died since is
    /// only noticed by the next call (which then fails `unavailable`).
    public var isConnected: Bool { PQstatus(conn) == CONNECTION_OK }

    /// The server process of this session (a notification's `pid` equals it for our own).
    public var backendPID: Int32 { PQbackendPID(conn) }

    /// Whether a transaction block is open (`transaction {}` does not nest).
    public var inTransaction: Bool { PQtransactionStatus(conn) != PQTRANS_IDLE }

    /// Opens a new session on the same parameters (PQreset) and LISTENs again. Its socket
    /// is a new descriptor: re-register any poll. Notifications sent meanwhile are lost.
    public func reconnect() throws {
        PQreset(conn)
        statements.removeAll()  // a new session has none
        guard PQstatus(conn) == CONNECTION_OK else { throw PostgresError.connectFailure(Self.trimmed(PQerrorMessage(conn))) }
        for ch in channels { try exec("LISTEN \(Self.quoteIdentifier(ch))") }
    }

    /// Runs SQL without parameters; several `;`-separated statements are allowed.
    public func exec(_ sql: String) throws {
        PQclear(try check(PQexec(conn, sql), sql))
    }

    public func query(_ sql: String, _ params: [PostgresValue] = []) throws -> [PostgresRow] {
        let r = try execParams(sql, params)
        defer { PQclear(r) }
        return Self.rows(r)
    }

    public func queryOne(_ sql: String, _ params: [PostgresValue] = []) throws -> PostgresRow? {
        try query(sql, params).first
    }

    /// Runs one statement; returns the rows it inserted, updated or deleted (PQcmdTuples).
    @discardableResult
    public func run(_ sql: String, _ params: [PostgresValue] = []) throws -> Int {
        let r = try execParams(sql, params)
        defer { PQclear(r) }
        return Int(String(cString: PQcmdTuples(r))) ?? 0
    }

    /// `BEGIN … COMMIT` around `body`; ROLLBACK when it throws. A COMMIT the server turns
    /// into a rollback (an error inside was caught and ignored) throws too.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        // A BEGIN inside a transaction is only a warning: the inner COMMIT would end the outer.
        guard !inTransaction else { throw PostgresError(.query, sqlState: "25001", "transaction {} does not nest") }
        try exec("BEGIN")
        do {
            let value = try body()
            let r = try check(PQexec(conn, "COMMIT"), "COMMIT")
            let status = String(cString: PQcmdStatus(r))
            PQclear(r)
            guard status == "COMMIT" else {
                throw PostgresError(.query, sqlState: "25P02", "the transaction was rolled back: a statement in it failed")
            }
            return value
        } catch {
            if isConnected && inTransaction { _ = try? exec("ROLLBACK") }
            throw error
        }
    }

    /// An identifier quoted for SQL (`LISTEN`, table names): case kept, quotes doubled.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }
}

extension PostgresConnection {
    /// A URL for logs and messages: `postgres://user:secret@host/db` → `postgres://user@host/db`.
    public static func withoutPassword(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
              let colon = url[scheme.upperBound..<at].firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + String(url[at...])
    }
}
