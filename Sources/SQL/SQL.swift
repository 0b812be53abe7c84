/// What the journal and the record index need of a SQL engine, whichever it is: SQLite
/// in the home, or PostgreSQL shared by several daemons. Statements use `?` for
/// parameters and SQL both engines read the same way (`IS NOT DISTINCT FROM`,
/// `RETURNING`, `ON CONFLICT`); where they differ, the caller asks `dialect`.
/// A connection is not thread-safe: its owner serialises access with a lock.
public protocol SQLConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs SQL without parameters or results (several statements allowed).
    func exec(_ sql: String) throws
    /// Runs a statement to completion; returns the number of changed rows.
    @discardableResult
    func run(_ sql: String, _ params: [SQLValue]) throws -> Int
    func query(_ sql: String, _ params: [SQLValue]) throws -> [Row]
    func queryOne(_ sql: String, _ params: [SQLValue]) throws -> Row?
    /// Runs `body` in one transaction, as the only writer; rolls back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` with its statements cut short by the engine once `seconds` have passed
    /// (SQLite's progress handler, PostgreSQL's `statement_timeout`): a statement past it
    /// throws `SQLTimeLimitExceeded`. Only reads belong in `body` (an interrupted write
    /// rolls back SQLite's whole transaction); calls do not nest.
    func withTimeLimit<T>(_ seconds: Double, _ body: () throws -> T) throws -> T
}

/// A statement cut short by `SQLConnection.withTimeLimit`.
public struct SQLTimeLimitExceeded: Error, Sendable, Equatable {
    public let seconds: Double
    public init(seconds: Double) { self.seconds = seconds }
    /// The limit as people read it: "250 ms".
    public var limit: String { "\(Int((seconds * 1000).rounded())) ms" }
}

public enum SQLDialect: Sendable, Equatable {
    case sqlite
    case postgres
}

extension SQLConnection {
    @discardableResult
    public func run(_ sql: String) throws -> Int { try run(sql, []) }
    public func query(_ sql: String) throws -> [Row] { try query(sql, []) }
    public func queryOne(_ sql: String) throws -> Row? { try queryOne(sql, []) }
}

public enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral v: String) { self = .text(v) }
    public init(integerLiteral v: Int64) { self = .int(v) }
    public init(nilLiteral: ()) { self = .null }
    public init(_ s: String?) { self = s.map(SQLValue.text) ?? .null }
    public init(_ i: Int64?) { self = i.map(SQLValue.int) ?? .null }
    public init(_ d: Double?) { self = d.map(SQLValue.double) ?? .null }
}

public struct Row: Sendable {
    public let values: [SQLValue]

    public init(values: [SQLValue]) { self.values = values }

    /// How many of `sizes` (one row each, a size in its first column, in page order) fit
    /// in `maxBytes`, at least one; nil when all do. A page reads its rows' sizes first,
    /// then only the rows that fit (a reply of 1 MiB memos must not be built whole).
    public static func fitting(_ sizes: [Row], _ maxBytes: Int) -> Int? {
        var total = 0
        for (i, r) in sizes.enumerated() {
            total += Int(r.int(0) ?? 0)
            if total > maxBytes { return max(i, 1) }
        }
        return nil
    }

    public func int(_ i: Int) -> Int64? {
        switch values[i] {
        case .int(let v): return v
        case .double(let d): return Int64(d)
        default: return nil
        }
    }
    public func double(_ i: Int) -> Double? {
        switch values[i] {
        case .double(let d): return d
        case .int(let v): return Double(v)
        default: return nil
        }
    }
    public func string(_ i: Int) -> String? {
        if case .text(let s) = values[i] { return s }
        return nil
    }
}
