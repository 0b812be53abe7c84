import Foundation
import Postgres  // PostgresError: a lost query connection
import SQLite  // Database, for init(path:)
import PhotomemoCore
import StageKit

/// Who asks: the daemon's own user and root see everything; anyone else sees records
/// they own, are named on, or that are public.
public enum Viewer: Sendable, Equatable {
    case admin
    case user(String)

    /// A job's owner as a viewer: an admin's jobs (or the daemon's own) may touch any record.
    public init(owner: String?) {
        self = UnixUser.isAdmin(name: owner) ? .admin : .user(owner!)
    }
}

/// The record index on SQLite (WAL) or PostgreSQL (shared by several daemons): records,
/// typed field rows, ACL rows, asset keys, full-text on memo, and the change feed. One
/// connection behind a lock; called off the loop thread. The SQL is the same on both
/// engines except the schema and full text (FullText) and one JSON function (`changes`).
public final class RecordStore: RecordIndex, @unchecked Sendable {
    // Safe: `db` is only touched with `lock` held.
    let db: any SQLConnection
    let lock = NSLock()
    /// Queries read through connections of their own where there are some (more SQLite
    /// connections on the WAL file, more PostgreSQL sessions), so a slow query never
    /// holds the writer: index writes and fan-out go on while someone's query runs. Two,
    /// as one user runs one query at a time (`QueryGate`): a user's slow query leaves the
    /// other for everyone else. Safe: each connection is only touched with its lock held.
    private let readers: [(lock: NSLock, connection: any SQLConnection)]
    public let path: String
    /// Keys new record ids (index migration 8, PostgreSQL 3): made once per home, or per cluster.
    let recordIDSecret: String

    /// How long one `query` may run inside the engine before it answers `too_expensive`:
    /// the cost of a request is bounded whatever its predicate (`.infinity`: no limit, for
    /// the benchmark that measures what the limit costs).
    public var queryTimeLimit = 1.0
    /// How long one subscription's predicate may take on one changed record at fan-out
    /// before the subscription is parked with the reason.
    public var predicateTimeLimit = 0.1

    /// The record index a spec names: `sqlite:FILE`, relative to the home.
    static func path(spec: String, home: URL) throws -> String {
        guard spec.hasPrefix("sqlite:"), spec.count > 7 else {
            throw PhotomemoError(.badDefinition, "database \"\(spec)\": expected sqlite:FILE")
        }
        let file = String(spec.dropFirst(7))
        return file.hasPrefix("/") ? file : home.appendingPathComponent(file).path
    }

    public convenience init(path: String) throws {
        let db = try Database(path: path)
        try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
        try self.init(connection: db, path: path, reader: { try Database(path: path, readOnly: true) })
    }

    /// The index on an open connection (its schema made or migrated here); `path` names it
    /// in messages. `reader`, when given, opens each connection queries read through, once
    /// the schema is there.
    public init(connection db: any SQLConnection, path: String, reader: (() throws -> any SQLConnection)? = nil) throws {
        self.path = path
        try db.migrate(db.dialect == .postgres ? IndexSchema.postgresMigrations : IndexSchema.migrations,
                       versionTable: "index_schema_version", what: "record index")
        guard let secret = try db.queryOne("SELECT value FROM index_secrets WHERE name = 'record_id'")?.string(0) else {
            throw PhotomemoError(.database, "\(path): the record index has no record id secret (index_secrets)")
        }
        recordIDSecret = secret
        self.db = db
        readers = try reader.map { open in try (0..<2).map { _ in (NSLock(), try open()) } } ?? []
        matcher = try reader.map { open in (NSLock(), try open()) }
    }

    /// Fan-out's own read connection: matching a batch of changes against every subscription
    /// of their type may take minutes, and a query waited behind it on a shared one.
    private let matcher: (lock: NSLock, connection: any SQLConnection)?

    /// A read on fan-out's connection (the queries' when there is none).
    func matching<T>(_ body: (any SQLConnection) throws -> T) rethrows -> T {
        guard let matcher else { return try reading(body) }
        matcher.lock.lock()
        defer { matcher.lock.unlock() }
        return try Self.read(on: matcher.connection, body)
    }

    /// A read, and once more if it found its connection lost: an idle query connection
    /// learns of a PostgreSQL restart only from the read that fails on it, and the next
    /// call reconnects (a read may run twice; a write is never retried here).
    private static func read<T>(on connection: any SQLConnection, _ body: (any SQLConnection) throws -> T) rethrows -> T {
        do { return try body(connection) } catch let e as PostgresError where e.isUnavailable { return try body(connection) }
    }

    var dialect: SQLDialect { db.dialect }

    @discardableResult
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// A read on a free query connection, or on a busy one once it is free (the writer's,
    /// behind its lock, when there are none).
    func reading<T>(_ body: (any SQLConnection) throws -> T) rethrows -> T {
        guard !readers.isEmpty else { return try locked { try body(db) } }
        let reader = readers.first { $0.lock.try() } ?? {
            let any = readers.randomElement()!
            any.lock.lock()
            return any
        }()
        defer { reader.lock.unlock() }
        return try Self.read(on: reader.connection, body)
    }

    /// One write transaction. PostgreSQL: one writer at a time across daemons, so change
    /// seqs commit in order (a reader after seq N never misses a later-committed lower one)
    /// and fan-out and creation order stay as simple as on SQLite.
    @discardableResult
    func writing<T>(_ body: () throws -> T) throws -> T {
        try locked {
            try db.transaction {
                if db.dialect == .postgres { try db.run("SELECT pg_advisory_xact_lock(hashtext('photomemo:records'))") }
                return try body()
            }
        }
    }

    // MARK: reading

    static let columns = "r.id, r.type, r.memo, r.fields, r.owner, r.acl, r.assets, r.exif, r.created, r.modified, r.change_tag, r.source, r.photo_sha256"
    /// How many `columns` there are: a query's extra columns follow them.
    static let columnCount = 13

    static func record(_ row: Row, offset: Int = 0) throws -> Record {
        Record(id: row.string(offset)!, type: row.string(offset + 1)!, memo: row.string(offset + 2) ?? "",
               fields: try JSONValue.parse(row.string(offset + 3)!).objectValue ?? [:], owner: row.string(offset + 4),
               acl: ACL(json: try JSONValue.parse(row.string(offset + 5)!)), assets: try JSONValue.parse(row.string(offset + 6)!),
               exif: try JSONValue.parse(row.string(offset + 7)!), created: row.double(offset + 8)!, modified: row.double(offset + 9)!,
               changeTag: row.string(offset + 10)!, source: row.string(offset + 11), sha256: row.string(offset + 12))
    }

    public func get(_ id: String, viewer: Viewer) throws -> Record? {
        try locked {
            var params: [SQLValue] = [.text(id)]
            let vis = Self.visible(viewer, &params)
            return try db.queryOne("SELECT \(Self.columns) FROM records r WHERE r.id = ? AND \(vis)", params).map { try Self.record($0) }
        }
    }

    /// Records matching `predicate` (and `type`), sorted, `limit` at a time; ties (and no
    /// sort at all) go in creation order. The cursor is the last row's sort values and
    /// position (keyset paging), so it stays right while records are added or removed.
    public func query(_ predicate: RecordPredicate, type: String? = nil, sort: [SortKey] = [], limit: Int = 100,
                      cursor: String? = nil, viewer: Viewer, maxBytes: Int? = nil) throws -> RecordPage {
        let q = try querySQL(predicate, type: type, sort: sort, cursor: cursor, viewer: viewer)
        let rows: [Row]
        var limit = limit
        do {
            rows = try reading { db in
                let read = { () throws -> [Row] in
                    if let maxBytes {
                        let sizes = "SELECT \(Self.storedLength) FROM \(q.from) WHERE \(q.whereSQL) ORDER BY \(q.order) LIMIT ?"
                        limit = Row.fitting(try db.query(sizes, q.params + q.orderParams + [.int(Int64(limit))]), maxBytes) ?? limit
                    }
                    return try db.query(q.sql, q.selectParams + q.params + q.orderParams + [.int(Int64(limit))])
                }
                return queryTimeLimit.isFinite ? try db.withTimeLimit(queryTimeLimit, read) : try read()
            }
        } catch let e as SQLTimeLimitExceeded {
            throw PhotomemoError(.tooExpensive,
                "the query ran past its limit of \(e.limit) in the index; narrow it (a --type, an == or a range on a field, fewer OR'd terms)")
        } catch {
            throw PredicateCompiler.refusal(error, dialect)
        }
        let records = try rows.map { try Self.record($0) }
        var next: String?
        if rows.count == limit, let last = rows.last {
            next = Self.encode(Array(last.values[(Self.columnCount + 1)..<(Self.columnCount + 1 + q.sortCount)]), last.int(Self.columnCount)!)
        }
        return RecordPage(records: records, cursor: next)
    }

    /// A query's statement, its parts and their parameters (the statement ends `LIMIT ?`):
    /// `selectParams + params + orderParams + [limit]`.
    func querySQL(_ predicate: RecordPredicate, type: String?, sort: [SortKey], cursor: String?, viewer: Viewer) throws
        -> (sql: String, from: String, whereSQL: String, order: String, selectParams: [SQLValue], params: [SQLValue],
            orderParams: [SQLValue], sortCount: Int) {
        var params: [SQLValue] = []
        var from = "records r"
        var fromParams: [SQLValue] = []
        var user = false
        if case .user(let name) = viewer {
            from = readable(by: name, &fromParams)
            user = true
        }
        var whereSQL = PredicateCompiler.compile(predicate, dialect, &params, perRecord: user)
        if let type { whereSQL += " AND r.type = ?"; params.append(.text(type)) }
        // Sort expressions (each with its own parameters), then `ord` (creation order) for
        // a total order: with no sort keys an admin's query walks records in that order and
        // stops at the limit instead of sorting every match (a user's sorts what they may read).
        var exprs: [(sql: String, params: [SQLValue], descending: Bool)] = []
        for k in sort { for e in PredicateCompiler.sortExpressions(k) { exprs.append((e.sql, e.params, k.descending)) } }
        if let cursor {
            let (values, lastRow) = try Self.decode(cursor, count: exprs.count)
            whereSQL += " AND " + Self.after(exprs, values, lastRow, order: creationOrder, &params)
        }
        var selectParams: [SQLValue] = []
        let extra = exprs.map { e -> String in selectParams += e.params; return ", " + e.sql }.joined()
        // When the first sort key is a numeric field the predicate bounds (`n >= a AND
        // n <= b ... sorted by n`), walk the (name, number) index in sort order and stop
        // at the limit, instead of collecting every match and sorting it. Not for a user:
        // that index holds every owner's values.
        var orderExprs = exprs.map { (sql: $0.sql, params: $0.params, descending: $0.descending) }
        if !user, let first = sort.first, let range = PredicateCompiler.numericRange(on: first.key, in: predicate) {
            from = "record_fields d JOIN records r ON r.id = d.record_id"
            // The bounds are repeated on `d` so SQLite walks that index range in order.
            whereSQL = "d.name = ? AND d.kind IN \(range.kinds)" + range.conditions.map { " AND d.num_value \($0.op) ?" }.joined()
                + " AND " + whereSQL
            fromParams = [.text(first.key)] + range.conditions.map(\.value)
            orderExprs[0] = ("d.num_value", [], first.descending)
        }
        var orderParams: [SQLValue] = []
        // `d.num_value` is never NULL, and a bare ASC/DESC lets SQLite follow the index.
        let order = (orderExprs.map { e -> String in
            orderParams += e.params
            return "\(e.sql) \(e.descending ? "DESC" : "ASC")" + (e.sql == "d.num_value" ? "" : " NULLS LAST")
        } + ["\(creationOrder) ASC"]).joined(separator: ", ")
        let sql = "SELECT \(Self.columns), \(creationOrder)\(extra) FROM \(from) WHERE \(whereSQL) ORDER BY \(order) LIMIT ?"
        return (sql, from, whereSQL, order, selectParams, fromParams + params, orderParams, exprs.count)
    }

    /// A record's stored text, in characters: what its JSON costs in a reply, near enough.
    static let storedLength = "length(r.memo) + length(r.fields) + length(r.assets) + length(r.exif) + length(r.acl) + 256"

    /// Creation order: SQLite's rowid (the table's own order, so a full-text match in
    /// rowid order needs no sort and stops at the limit), `ord` on PostgreSQL.
    var creationOrder: String { db.dialect == .sqlite ? "r.rowid" : "r.ord" }

    /// Keyset condition: rows strictly after (values, creation order) in the sort order, NULLS LAST.
    static func after(_ exprs: [(sql: String, params: [SQLValue], descending: Bool)], _ values: [SQLValue], _ lastRow: Int64,
                      order: String, _ params: inout [SQLValue]) -> String {
        func build(_ i: Int, _ params: inout [SQLValue]) -> String {
            if i == exprs.count {
                params.append(.int(lastRow))
                return "\(order) > ?"
            }
            let e = exprs[i]
            if values[i] == .null {
                // Only NULLs remain from here on: equal on this key, decide on the rest.
                params += e.params
                let eq = "\(e.sql) IS NULL"
                return "(\(eq) AND \(build(i + 1, &params)))"
            }
            params += e.params + [values[i]] + e.params
            let later = "(\(e.sql) \(e.descending ? "<" : ">") ? OR \(e.sql) IS NULL)"
            params += e.params + [values[i]]
            let eq = "\(e.sql) = ?"
            return "(\(later) OR (\(eq) AND \(build(i + 1, &params))))"
        }
        return build(0, &params)
    }

    static func encode(_ values: [SQLValue], _ row: Int64) -> String {
        let json: [JSONValue] = values.map {
            switch $0 {
            case .int(let i): .int(i)
            case .double(let d): .double(d)
            case .text(let s): .string(s)
            default: .null
            }
        }
        return Data(JSONValue.object(["v": .array(json), "row": .int(row)]).jsonString.utf8).base64EncodedString()
    }

    static func decode(_ cursor: String, count: Int) throws -> ([SQLValue], Int64) {
        guard let data = Data(base64Encoded: cursor), let v = try? JSONValue.parse(data), let id = v["row"]?.intValue,
              let values = v["v"]?.arrayValue, values.count == count else {
            throw PhotomemoError(.badRequest, "invalid cursor (it belongs to another query or was altered)")
        }
        return (values.map {
            switch $0 {
            case .int(let i): .int(i)
            case .double(let d): .double(d)
            case .string(let s): .text(s)
            default: .null
            }
        }, id)
    }
}
