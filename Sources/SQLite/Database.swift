import CSQLite
import Glibc
import StageKit
@_exported import SQL

/// A thin SQLite connection: prepared statements with positional parameters, rows read
/// by column index. Not thread-safe by itself: its owner (the journal, the record index)
/// serialises access with a lock.
public final class Database: SQLConnection {
    public var dialect: SQLDialect { .sqlite }
    let db: OpaquePointer
    private var cache: [String: Statement] = [:]

    public init(path: String, readOnly: Bool = false) throws {
        var handle: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let msg = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw PhotomemoError(.database, "cannot open \(path): \(msg)")
        }
        db = handle
        sqlite3_busy_timeout(db, 5000)
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(db)
    }

    var lastError: String { String(cString: sqlite3_errmsg(db)) }
    /// The last failure's code: SQLITE_FULL (the disk or a quota) is no space, not a bad query.
    var lastCode: PhotomemoError.Code { sqlite3_errcode(db) & 0xff == SQLITE_FULL ? .noSpace : .database }

    /// Runs SQL without results (several statements allowed).
    public func exec(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &err) != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? lastError
            sqlite3_free(err)
            throw PhotomemoError(lastCode, "\(msg) in: \(sql.prefix(120))")
        }
    }

    /// A cached prepared statement, reset and bound with `params`.
    public func prepare(_ sql: String, _ params: [SQLValue] = []) throws -> Statement {
        let st: Statement
        if let cached = cache[sql] {
            st = cached
            st.reset()
        } else {
            var raw: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &raw, nil) == SQLITE_OK, let raw else {
                throw PhotomemoError(lastCode, "\(lastError) in: \(sql.prefix(120))")
            }
            st = Statement(raw, database: self)
            cache[sql] = st
        }
        try st.bind(params)
        return st
    }

    /// Runs a statement to completion; returns the number of changed rows.
    @discardableResult
    public func run(_ sql: String, _ params: [SQLValue]) throws -> Int {
        let st = try prepare(sql, params)
        while try st.step() {}
        return Int(sqlite3_changes(db))
    }

    public func query(_ sql: String, _ params: [SQLValue]) throws -> [Row] {
        let st = try prepare(sql, params)
        var rows: [Row] = []
        while try st.step() { rows.append(st.row()) }
        return rows
    }

    public func queryOne(_ sql: String, _ params: [SQLValue]) throws -> Row? {
        let st = try prepare(sql, params)
        defer { st.reset() }
        return try st.step() ? st.row() : nil
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(db) }

    /// Every 1,000 virtual-machine steps SQLite asks the budget whether time is up (a
    /// clock read: well under 1% of a query's work); a yes interrupts the statement.
    public func withTimeLimit<T>(_ seconds: Double, _ body: () throws -> T) throws -> T {
        let budget = TimeBudget(seconds)
        sqlite3_progress_handler(db, 1000, { context in
            Unmanaged<TimeBudget>.fromOpaque(context!).takeUnretainedValue().isSpent() ? 1 : 0
        }, Unmanaged.passUnretained(budget).toOpaque())
        defer { sqlite3_progress_handler(db, 0, nil, nil) }
        do {
            return try withExtendedLifetime(budget) { try body() }
        } catch where budget.spent {
            throw SQLTimeLimitExceeded(seconds: seconds)
        }
    }

    /// Runs `body` in `BEGIN IMMEDIATE … COMMIT`; rolls back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try exec("BEGIN IMMEDIATE")
        do {
            let r = try body()
            try exec("COMMIT")
            return r
        } catch {
            try? exec("ROLLBACK")
            throw error
        }
    }
}

public final class Statement {
    let raw: OpaquePointer
    unowned let database: Database

    init(_ raw: OpaquePointer, database: Database) {
        self.raw = raw
        self.database = database
    }

    deinit { sqlite3_finalize(raw) }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    func bind(_ params: [SQLValue]) throws {
        for (i, p) in params.enumerated() {
            let idx = Int32(i + 1)
            let rc: Int32
            switch p {
            case .null: rc = sqlite3_bind_null(raw, idx)
            case .int(let v): rc = sqlite3_bind_int64(raw, idx, v)
            case .double(let v): rc = sqlite3_bind_double(raw, idx, v)
            case .text(let v): rc = pm_sqlite3_bind_text(raw, idx, v, -1)
            case .blob(let v): rc = v.withUnsafeBytes { pm_sqlite3_bind_blob(raw, idx, $0.baseAddress, Int32($0.count)) }
            }
            guard rc == SQLITE_OK else { throw PhotomemoError(.database, "bind \(idx): \(database.lastError)") }
        }
    }

    /// true while there is a row; false when done.
    func step() throws -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let (msg, code) = (database.lastError, database.lastCode)
            sqlite3_reset(raw)
            throw PhotomemoError(code, msg)
        }
    }

    func row() -> Row {
        let n = sqlite3_column_count(raw)
        var values: [SQLValue] = []
        values.reserveCapacity(Int(n))
        for i in 0..<n {
            switch sqlite3_column_type(raw, i) {
            case SQLITE_INTEGER: values.append(.int(sqlite3_column_int64(raw, i)))
            case SQLITE_FLOAT: values.append(.double(sqlite3_column_double(raw, i)))
            case SQLITE_TEXT: values.append(.text(String(cString: sqlite3_column_text(raw, i))))
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(raw, i))
                let p = sqlite3_column_blob(raw, i)
                values.append(.blob(count == 0 ? [] : Array(UnsafeRawBufferPointer(start: p, count: count))))
            default: values.append(.null)
            }
        }
        return Row(values: values)
    }
}

/// A deadline on the monotonic clock, asked from SQLite's progress handler (on the thread
/// running the statement, so no lock).
private final class TimeBudget {
    let deadline: UInt64
    private(set) var spent = false

    init(_ seconds: Double) { deadline = Self.now() + UInt64(max(0, seconds) * 1e9) }

    func isSpent() -> Bool {
        if !spent && Self.now() >= deadline { spent = true }
        return spent
    }

    static func now() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }
}
