/// A statement over many rows of values, written once for both engines as
/// `HEAD <source> AS v(columns…, n) TAIL`, where the statement reads the values as `v.column`
/// and `v.n` is the row's position (from 1).
///
///     PostgreSQL: FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS v(id, results, n)
///                 one statement for every row: an array per column
///     SQLite:     FROM (SELECT ? AS id, ? AS results, 1 AS n) AS v
///                 the statement once per row (in process, a statement costs microseconds;
///                 PostgreSQL's cost is the round trip)
public enum RowSource {
    /// `columns`: name and PostgreSQL element type. `before`: parameters of HEAD's own `?`s.
    public static func run(_ db: any SQLConnection, _ head: String, before: [SQLValue] = [], columns: [(String, String)],
                           rows: [[SQLValue]], _ tail: String = "") throws {
        try each(db, head, before: before, columns: columns, rows: rows, tail) { sql, params in _ = try db.run(sql, params) }
    }

    /// The rows every statement returned, in order.
    public static func query(_ db: any SQLConnection, _ head: String, before: [SQLValue] = [], columns: [(String, String)],
                             rows: [[SQLValue]], _ tail: String = "") throws -> [Row] {
        var out: [Row] = []
        try each(db, head, before: before, columns: columns, rows: rows, tail) { sql, params in out += try db.query(sql, params) }
        return out
    }

    static func each(_ db: any SQLConnection, _ head: String, before: [SQLValue], columns: [(String, String)], rows: [[SQLValue]],
                     _ tail: String, _ body: (String, [SQLValue]) throws -> Void) throws {
        guard !rows.isEmpty else { return }
        let names = columns.map(\.0)
        if db.dialect == .postgres {
            let arrays = columns.indices.map { c in postgresArray(rows.map { $0[c] }) }
            let source = "unnest(" + columns.map { "?::\($0.1)[]" }.joined(separator: ", ") + ") WITH ORDINALITY AS v("
                + (names + ["n"]).joined(separator: ", ") + ")"
            try body("\(head) \(source) \(tail)", before + arrays)
        } else {
            let sql = "\(head) (SELECT " + names.map { "? AS \($0)" }.joined(separator: ", ") + ", 1 AS n) AS v \(tail)"
            for r in rows { try body(sql, before + r) }
        }
    }

    /// An array literal (`{1,NULL,"a \"b\""}`) for `?::T[]`: every element quoted but
    /// NULL, backslash and double quote escaped, so any text survives.
    public static func postgresArray(_ values: [SQLValue]) -> SQLValue {
        var out = "{"
        for (i, v) in values.enumerated() {
            if i > 0 { out += "," }
            switch v {
            case .null: out += "NULL"
            case .int(let n): out += String(n)
            case .double(let d): out += "\"\(d)\""
            case .text(let s):
                out += "\""
                for c in s.unicodeScalars {
                    if c == "\\" || c == "\"" { out += "\\" }
                    out.unicodeScalars.append(c)
                }
                out += "\""
            case .blob: preconditionFailure("RowSource: no bytea arrays")
            }
        }
        return .text(out + "}")
    }
}
