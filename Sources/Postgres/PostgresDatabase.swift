import SQL

/// A PostgreSQL connection as the journal and the record index use any engine
/// (`SQLConnection`): their `?` parameters numbered `$1, $2…`, `SQL`'s values and rows.
/// After the server was lost, the next call outside a transaction reconnects first, so
/// an outage lasts as long as the server is down and no longer. Like `PostgresConnection`,
/// one thread at a time: the owner holds a lock.
public final class PostgresDatabase: SQLConnection, @unchecked Sendable {
    public let connection: PostgresConnection
    public var dialect: SQLDialect { .postgres }
    private var numbered: [String: String] = [:]
    /// Inside `transaction {}`: a lost connection then fails the rest of the body instead
    /// of reconnecting (its statements would run outside the transaction).
    private var transactions = 0

    public init(url: String) throws { connection = try PostgresConnection(url: url) }

    public init(connection: PostgresConnection) { self.connection = connection }

    public func exec(_ sql: String) throws {
        try reconnectIfLost()
        try connection.exec(sql)
    }

    @discardableResult
    public func run(_ sql: String, _ params: [SQLValue]) throws -> Int {
        try reconnectIfLost()
        return try connection.run(number(sql), params.map(Self.value))
    }

    public func query(_ sql: String, _ params: [SQLValue]) throws -> [Row] {
        try reconnectIfLost()
        return try connection.query(number(sql), params.map(Self.value)).map(Self.row)
    }

    public func queryOne(_ sql: String, _ params: [SQLValue]) throws -> Row? {
        try reconnectIfLost()
        return try connection.queryOne(number(sql), params.map(Self.value)).map(Self.row)
    }

    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try reconnectIfLost()
        transactions += 1
        defer { transactions -= 1 }
        return try connection.transaction(body)
    }

    /// `statement_timeout` for the session while `body` runs; the server cancels a
    /// statement past it with SQLSTATE 57014. Inside a transaction, a cancelled statement
    /// aborts it unless `body` holds a savepoint (as a subscription's match does).
    public func withTimeLimit<T>(_ seconds: Double, _ body: () throws -> T) throws -> T {
        try exec("SET statement_timeout = \(max(1, Int((seconds * 1000).rounded())))")
        defer { try? exec("SET statement_timeout = 0") }
        do {
            return try body()
        } catch let e as PostgresError where e.sqlState == PostgresError.queryCanceled {
            throw SQLTimeLimitExceeded(seconds: seconds)
        }
    }

    /// Whether a transaction is open is known here: on a lost connection libpq's status is
    /// UNKNOWN, which `inTransaction` reads as open, and the session never came back.
    private func reconnectIfLost() throws {
        if !connection.isConnected && transactions == 0 { try connection.reconnect() }
    }

    /// `?` → `$n`, outside string literals, quoted identifiers and comments. Cached: the
    /// journal's statements are few; predicates make new ones, so the cache is bounded.
    func number(_ sql: String) -> String {
        if let done = numbered[sql] { return done }
        if numbered.count >= 512 { numbered.removeAll(keepingCapacity: true) }
        var out = "", n = 0
        var quote: Character?  // ' or " while inside one
        var comment = false
        for c in sql {
            if comment {
                if c == "\n" { comment = false }
            } else if let q = quote {
                if c == q { quote = nil }
            } else if c == "'" || c == "\"" {
                quote = c
            } else if c == "-" && out.last == "-" {
                comment = true
            } else if c == "?" {
                n += 1
                out += "$\(n)"
                continue
            }
            out.append(c)
        }
        numbered[sql] = out
        return out
    }

    static func value(_ v: SQLValue) -> PostgresValue {
        switch v {
        case .null: .null
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .text(let s): .text(s)
        case .blob(let b): .bytea(b)
        }
    }

    static func row(_ r: PostgresRow) -> Row {
        Row(values: r.values.map { v in
            switch v {
            case .null: .null
            case .int(let i): .int(i)
            case .double(let d): .double(d)
            case .text(let s): .text(s)
            case .bytea(let b): .blob(b)
            }
        })
    }
}
