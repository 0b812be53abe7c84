import CPQ
import Glibc

/// Sending statements and reading results: the only code that touches PGresult.
extension PostgresConnection {
    func execParams(_ sql: String, _ params: [PostgresValue]) throws -> OpaquePointer {
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
        let name = try prepared(sql, types: types)
        do {
            return try check(PQexecPrepared(conn, name, Int32(params.count), values, lengths, formats, 0), sql)
        } catch let e as PostgresError where e.sqlState == "0A000" {
            // "cached plan must not change result type": another daemon migrated a table
            // under it. Prepared again on the next call; this one runs unprepared, unless a
            // transaction is open: the error ended it, so it fails with its own cause.
            statements[Self.statementKey(sql, types)] = nil
            if inTransaction { throw e }
            _ = try? exec("DEALLOCATE \(name)")
            return try check(PQexecParams(conn, sql, Int32(params.count), types, values, lengths, formats, 0), sql)
        }
    }

    /// The server-side prepared statement for `sql` with these parameter types, prepared
    /// on first use in this session: the journal's few statements are planned once, not
    /// on every call (the claim's plan alone took 2 ms of its 6). Bounded, since predicates
    /// make new statements; names are never reused, so a failed DEALLOCATE cannot collide.
    func prepared(_ sql: String, types: [UInt32]) throws -> String {
        let key = Self.statementKey(sql, types)
        if let name = statements[key] { return name }
        if statements.count >= 256 {
            _ = try? exec("DEALLOCATE ALL")
            statements.removeAll(keepingCapacity: true)
        }
        nextStatement += 1
        let name = "pm\(nextStatement)"
        PQclear(try check(PQprepare(conn, name, sql, Int32(types.count), types), sql))
        statements[key] = name
        return name
    }

    static func statementKey(_ sql: String, _ types: [UInt32]) -> String {
        types.map(String.init).joined(separator: ",") + ":" + sql
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

    func failure(sqlState: String?, _ message: String, _ sql: String) -> PostgresError {
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
