import SQL
import StageKit

/// Predicates and sort keys to SQL over `records r`, always with `?` parameters — values
/// and field names are never spliced into the SQL text. Unknown fields match nothing; a
/// value of the wrong type for a built-in key matches nothing. The SQL is the same on
/// both engines but for full text (FullText) and substring search; constants are
/// comparisons, as PostgreSQL's WHERE and NOT take booleans, not integers.
///
/// SQLite refuses an expression tree deeper than 1000 (SQLITE_MAX_EXPR_DEPTH) and a flat
/// `a OR b OR c ...` is as deep as it is long, so every list of terms is joined as a
/// balanced tree (`joined`); with the parser's limits the SQL stays a few hundred deep.
///
/// `perRecord`: a user's query walks only the records they may read (RecordStore+Readers),
/// so each term tests that record's own rows instead of walking an index over every
/// owner's (whose cost would show how many of others' records match).
enum PredicateCompiler {
    static let textKeys = ["id": "r.id", "type": "r.type", "memo": "r.memo", "owner": "r.owner", "source": "r.source", "sha256": "r.photo_sha256"]
    static let numberKeys = ["created": "r.created", "modified": "r.modified", "taken": "r.taken", "width": "r.width", "height": "r.height"]
    static let trueSQL = "1 = 1"
    static let falseSQL = "1 = 0"

    static func compile(_ p: RecordPredicate, _ dialect: SQLDialect, _ params: inout [SQLValue], perRecord: Bool = false) -> String {
        switch p {
        case .always: return trueSQL
        case .never: return falseSQL
        // NOT NOT x is x (also for NULL); a lone NOT needs no parentheses of its own: every
        // compound term below is parenthesised and NOT binds looser than comparisons.
        case .not(.not(let inner)): return compile(inner, dialect, &params, perRecord: perRecord)
        case .not(let inner): return "NOT " + compile(inner, dialect, &params, perRecord: perRecord)
        case .and: return conjunction(p, dialect, &params, perRecord: perRecord)
        case .or:
            // The parser's balanced tree, read back as one flat list of terms.
            var terms: [RecordPredicate] = []
            func flatten(_ q: RecordPredicate) {
                if case .or(let a, let b) = q { flatten(a); flatten(b) } else { terms.append(q) }
            }
            flatten(p)
            return joined(terms.map { compile($0, dialect, &params, perRecord: perRecord) }, "OR")
        case .compare(let key, let op, let value): return compare(key, sqlOp(op), value, dialect, &params, perRecord: perRecord)
        case .between(let key, let low, let high):
            return "(\(compare(key, ">=", low, dialect, &params, perRecord: perRecord)) AND \(compare(key, "<=", high, dialect, &params, perRecord: perRecord)))"
        case .oneOf(let key, let values):
            return joined(values.map { compare(key, "=", $0, dialect, &params, perRecord: perRecord) }, "OR")
        case .beginsWith(let key, let prefix):
            // A range on the binary collation: case-sensitive and able to use an index.
            let upper = prefix + "\u{10FFFF}"
            if let col = textKeys[key] {
                params += [.text(prefix), .text(upper)]
                return "(\(col) >= ? AND \(col) < ?)"
            }
            if numberKeys[key] != nil { return falseSQL }
            params += [.text(key), .text(prefix), .text(upper)]
            return fieldMatch("name = ? AND kind IN ('s','l') AND text_value >= ? AND text_value < ?", dialect, perRecord: perRecord)
        case .contains(let key, let value):
            return contains(key, value, dialect, &params, perRecord: perRecord)
        }
    }

    /// An AND chain, with the comparisons on one field merged into a single index range:
    /// `n >= 100 AND n <= 500` reads only the rows between 100 and 500 of the (name,
    /// number) index instead of intersecting two half-open ranges.
    static func conjunction(_ p: RecordPredicate, _ dialect: SQLDialect, _ params: inout [SQLValue], perRecord: Bool) -> String {
        var terms: [RecordPredicate] = []
        func flatten(_ q: RecordPredicate) {
            switch q {
            case .and(let a, let b): flatten(a); flatten(b)
            case .between(let key, let low, let high):
                terms.append(.compare(key: key, op: .ge, value: low))
                terms.append(.compare(key: key, op: .le, value: high))
            default: terms.append(q)
            }
        }
        flatten(p)
        var groups: [(key: String, kinds: String, column: String, conditions: [(String, SQLValue)])] = []
        var others: [RecordPredicate] = []
        for t in terms {
            guard case .compare(let key, let op, let value) = t, textKeys[key] == nil, numberKeys[key] == nil else {
                others.append(t)
                continue
            }
            let v = stored(value)
            if let i = groups.firstIndex(where: { $0.key == key && $0.kinds == v.kinds }) {
                groups[i].conditions.append((sqlOp(op), v.value))
            } else {
                groups.append((key, v.kinds, v.column, [(sqlOp(op), v.value)]))
            }
        }
        var parts: [String] = []
        for g in groups {
            params.append(.text(g.key))
            var conditions = ["name = ?", "kind IN \(g.kinds)"]
            for (op, value) in g.conditions {
                conditions.append("\(g.column) \(op) ?")
                params.append(value)
            }
            parts.append(fieldMatch(joined(conditions, "AND"), dialect, perRecord: perRecord))
        }
        for o in others { parts.append(compile(o, dialect, &params, perRecord: perRecord)) }
        return joined(parts, "AND")
    }

    /// `(a OP b OP ...)`, flat up to `chunk` terms, else flat chunks of flat chunks: SQLite
    /// reads a flat chain as deep as it is long (it refuses depth 1000), and each nested
    /// parenthesis costs its parser stack (about 90 slots), so neither may grow with n.
    static func joined(_ parts: [String], _ op: String, chunk: Int = 100) -> String {
        if parts.count <= chunk { return "(" + parts.joined(separator: " \(op) ") + ")" }
        let size = (parts.count + chunk - 1) / chunk
        let chunks = stride(from: 0, to: parts.count, by: size).map { joined(Array(parts[$0..<min($0 + size, parts.count)]), op) }
        return joined(chunks, op)
    }

    /// The engine's own limits on a statement (SQLite: parser stack, expression depth,
    /// variables; PostgreSQL: stack depth, parameters) as a predicate error: the input is
    /// too complex, not the daemon broken. Both report them as plain errors, so the
    /// message tells them apart.
    static func refusal(_ error: Error, _ dialect: SQLDialect) -> Error {
        let (engine, markers) = dialect == .sqlite
            ? ("SQLite", ["parser stack overflow", "Expression tree is too large", "too many SQL variables"])
            : ("PostgreSQL", ["stack depth limit exceeded", "number of parameters must be between"])
        let message = (error as? PhotomemoError).map(\.message) ?? String(describing: error)
        for marker in markers where message.contains(marker) {
            return PredicateSyntaxError(message: "too complex for the index (\(engine): \(marker))", column: 0)
        }
        return error
    }

    /// The numeric comparisons on field `key` among the predicate's top-level conjuncts
    /// (so every match has that field as a number): their kinds and conditions, or nil.
    static func numericRange(on key: String, in p: RecordPredicate) -> (kinds: String, conditions: [(op: String, value: SQLValue)])? {
        guard textKeys[key] == nil, numberKeys[key] == nil else { return nil }
        var kinds: String?
        var conditions: [(op: String, value: SQLValue)] = []
        func visit(_ q: RecordPredicate) {
            switch q {
            case .and(let a, let b): visit(a); visit(b)
            case .compare(let k, let op, let v) where k == key:
                let s = stored(v)
                guard s.column == "num_value", kinds == nil || kinds == s.kinds else { return }
                kinds = s.kinds
                conditions.append((sqlOp(op), s.value))
            case .between(let k, let low, let high) where k == key:
                visit(.compare(key: k, op: .ge, value: low))
                visit(.compare(key: k, op: .le, value: high))
            default: break
            }
        }
        visit(p)
        return kinds.map { ($0, conditions) }
    }

    static func sqlOp(_ op: RecordPredicate.Operator) -> String {
        switch op {
        case .eq: "="
        case .ne: "<>"
        case .lt: "<"
        case .le: "<="
        case .gt: ">"
        case .ge: ">="
        }
    }

    /// A literal as stored: (kinds it may match, column, value).
    static func stored(_ v: RecordPredicate.Literal) -> (kinds: String, column: String, value: SQLValue) {
        switch v {
        case .number(let n): ("('n')", "num_value", .double(n))
        case .bool(let b): ("('b')", "num_value", .double(b ? 1 : 0))
        case .date(let d): ("('d')", "num_value", .double(d))
        case .string(let s):
            if ISODate.isDateTime(s), let d = ISODate.parse(s) { ("('d')", "num_value", .double(d)) }
            else { ("('s','r')", "text_value", .text(s)) }
        }
    }

    static func compare(_ key: String, _ op: String, _ value: RecordPredicate.Literal, _ dialect: SQLDialect, _ params: inout [SQLValue],
                        perRecord: Bool) -> String {
        if let col = textKeys[key] {
            guard case .string(let s) = value else { return falseSQL }
            params.append(.text(s))
            return "\(col) \(op) ?"
        }
        if let col = numberKeys[key] {
            let v = stored(value)
            guard v.column == "num_value", case .double = v.value, !(value == .bool(true) || value == .bool(false)) else { return falseSQL }
            params.append(v.value)
            return "\(col) \(op) ?"
        }
        let v = stored(value)
        params += [.text(key), v.value]
        return fieldMatch("name = ? AND kind IN \(v.kinds) AND \(v.column) \(op) ?", dialect, perRecord: perRecord)
    }

    static func contains(_ key: String, _ value: RecordPredicate.Literal, _ dialect: SQLDialect,
                         _ params: inout [SQLValue], perRecord: Bool) -> String {
        if key == "memo" {
            // Full-text: every token must occur.
            guard case .string(let s) = value else { return falseSQL }
            return FullText.condition(s, dialect, &params, perRecord: perRecord) ?? falseSQL
        }
        if let col = textKeys[key] {
            guard case .string(let s) = value else { return falseSQL }
            params.append(.text(s))
            return dialect == .sqlite ? "instr(\(col), ?) > 0" : "strpos(\(col), CAST(? AS TEXT)) > 0"
        }
        if numberKeys[key] != nil { return falseSQL }
        // A list holding the value (or a single value equal to it).
        let v = stored(value)
        let kinds = v.column == "text_value" ? "('l','s','r')" : v.kinds
        params += [.text(key), v.value]
        return fieldMatch("name = ? AND kind IN \(kinds) AND \(v.column) = ?", dialect, perRecord: perRecord)
    }

    /// Records with a `record_fields` row meeting `conditions`: as a set, from the (name,
    /// value) indexes over every owner's rows (admins); or, per record, a test of that
    /// record's own rows (users). A scalar subquery, not EXISTS: neither engine turns it
    /// into a set over the whole table (SQLite's EXISTS-to-IN, PostgreSQL's semi-joins).
    /// Left to itself, the planner may still look a rare value up in the (name, value)
    /// index and check the record id after, so the rows are reached by record id only:
    /// SQLite's INDEXED BY, and PostgreSQL's OFFSET 0 fence (no condition goes inside).
    static func fieldMatch(_ conditions: String, _ dialect: SQLDialect, perRecord: Bool) -> String {
        guard perRecord else { return "r.id IN (SELECT record_id FROM record_fields WHERE \(conditions))" }
        let own = dialect == .sqlite
            ? "record_fields INDEXED BY record_fields_record WHERE record_id = r.id"
            : "(SELECT name, kind, text_value, num_value FROM record_fields WHERE record_id = r.id OFFSET 0) f WHERE 1 = 1"
        return "(SELECT 1 FROM \(own) AND \(conditions) LIMIT 1) IS NOT NULL"
    }

    /// Sort expressions for a key, each with the parameters it needs wherever it is used:
    /// one for built-ins, (number, text) for fields.
    static func sortExpressions(_ key: SortKey) -> [(sql: String, params: [SQLValue])] {
        if let col = textKeys[key.key] ?? numberKeys[key.key] { return [(col, [])] }
        return [("(SELECT num_value FROM record_fields WHERE record_id = r.id AND name = ? AND kind IN ('n','b','d') LIMIT 1)", [.text(key.key)]),
                ("(SELECT text_value FROM record_fields WHERE record_id = r.id AND name = ? AND kind IN ('s','r') LIMIT 1)", [.text(key.key)])]
    }
}
