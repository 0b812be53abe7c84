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

    /// `url` is a libpq URL (`postgres://user@host:port/db?…`) or key=value string; its own
    /// options win over these defaults. Passwords come from PGPASSWORD or ~/.pgpass (libpq).
    public init(url: String, applicationName: String = "photomemo", connectTimeoutSeconds: Int = 10) throws {
        self.url = url
        // Keepalives find a silently dead server in ~1 min instead of the OS's 2 h.
        let options = [("connect_timeout", String(connectTimeoutSeconds)), ("application_name", applicationName),
                       ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
                       ("dbname", url)]
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

    // MARK: - libpq plumbing

    private func execParams(_ sql: String, _ params: [PostgresValue]) throws -> OpaquePointer {
        var types = [UInt32](), lengths = [Int32](), formats = [Int32](), buffers = [UnsafeMutablePointer<CChar>?]()
        defer { for b in buffers { free(b) } }
        for (i, p) in params.enumerated() {
            var type: UInt32 = 0, length: Int32 = 0, format: Int32 = 0, buffer: UnsafeMutablePointer<CChar>? = nil
            switch p {
            case .null: break
            case .int(let v): type = TypeOID.int8; buffer = strdup(String(v))
            case .double(let d): type = TypeOID.float8; buffer = strdup(PostgresValue.formatDouble(d))
            case .text(let s):
                // Type left to the server (like a quoted literal), so `$1::jsonb`, timestamps… work.
                guard !s.utf8.contains(0) else {
                    throw PostgresError(.query, sqlState: "22021", "text parameter $\(i + 1) contains a NUL byte")
                }
                buffer = strdup(s)
            case .bytea(let b):
                type = TypeOID.bytea; format = 1; length = Int32(b.count)
                let copy = malloc(max(b.count, 1))!.assumingMemoryBound(to: CChar.self)
                b.withUnsafeBytes { if let base = $0.baseAddress { memcpy(copy, base, b.count) } }
                buffer = copy
            }
            types.append(type); lengths.append(length); formats.append(format); buffers.append(buffer)
        }
        let values = buffers.map { $0.map { UnsafePointer($0) } }
        return try check(PQexecParams(conn, sql, Int32(params.count), types, values, lengths, formats, 0), sql)
    }

    /// Turns a result into a thrown error unless it succeeded; the caller clears a returned one.
    /// Notifications that arrived with it are collected either way.
    func check(_ result: OpaquePointer?, _ sql: String) throws -> OpaquePointer {
        collectNotifications()
        guard let result else { throw failure(sqlState: nil, Self.trimmed(PQerrorMessage(conn)), sql) }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY { return result }
        let state = pm_pq_sqlstate(result).map { String(cString: $0) }
        var message = Self.trimmed(PQresultErrorMessage(result))
        if message.isEmpty { message = "unexpected result \(String(cString: PQresStatus(status)))" }
        PQclear(result)
        throw failure(sqlState: state, message, sql)
    }

    private func failure(sqlState: String?, _ message: String, _ sql: String) -> PostgresError {
        if PQstatus(conn) == CONNECTION_BAD || sqlState.map(PostgresError.isOutage) == true {
            return PostgresError(.unavailable, sqlState: sqlState, message)
        }
        return PostgresError(.query, sqlState: sqlState, "\(message) (in: \(sql.prefix(120)))")
    }

    static func rows(_ r: OpaquePointer) -> [PostgresRow] {
        let n = PQntuples(r), m = PQnfields(r)
        let columns = (0..<m).map { String(cString: PQfname(r, $0)) }
        let types = (0..<m).map { PQftype(r, $0) }
        var rows = [PostgresRow]()
        rows.reserveCapacity(Int(n))
        for t in 0..<n {
            var values = [PostgresValue]()
            values.reserveCapacity(Int(m))
            for f in 0..<m {
                if PQgetisnull(r, t, f) != 0 { values.append(.null); continue }
                values.append(.decode(PQgetvalue(r, t, f), length: Int(PQgetlength(r, t, f)), type: types[Int(f)]))
            }
            rows.append(PostgresRow(values: values, columns: columns))
        }
        return rows
    }

    /// libpq messages end in a newline and carry "ERROR:  " prefixes and DETAIL lines.
    static func trimmed(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        return String(cString: p).split(whereSeparator: \.isNewline)
            .map { $0.drop(while: \.isWhitespace).trimmingPrefix("ERROR:  ").trimmingPrefix("FATAL:  ") }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }
}

/// C strings for the duration of `body` (libpq copies what it keeps).
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { UnsafePointer(strdup($0)) } + [nil]
    defer { for c in copies { free(UnsafeMutablePointer(mutating: c)) } }
    return copies.withUnsafeBufferPointer { body($0.baseAddress!) }
}
