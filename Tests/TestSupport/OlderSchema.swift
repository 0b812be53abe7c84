import SQL

/// Homes made by earlier releases, for the upgrade suites: a database migrated to exactly
/// version N (the first N migrations, as that release's runner left it), filled with the
/// rows the current code wrote for the same work, each cut to the columns version N has.
/// Nothing is kept as a dump: a migration appended later moves every fixture with it.
extension SQLConnection {
    /// The schema at exactly `version`: the first `version` migrations, each with its version.
    public func migrate(_ migrations: [String], upTo version: Int, versionTable: String) throws {
        try migrate(Array(migrations.prefix(version)), versionTable: versionTable, what: "fixture")
    }

    /// The columns `table` has (none: no such table at this version).
    public func columnNames(_ table: String) throws -> [String] {
        if dialect == .postgres {
            return try query("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
                             [.text(table)]).compactMap { $0.string(0) }
        }
        return try query("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap { $0.string(0) }
    }

    /// Copies `table`'s rows from `newest` (at the latest schema, written by the current
    /// code) into this database at its older version, keeping the columns this version
    /// has: what a daemon of that version wrote for the same work, less what it did not
    /// know yet. `into` names the table at this version when it had another name then.
    /// PostgreSQL identity sequences are moved past the copied ids, as the daemon's own
    /// inserts left them. Returns how many rows were copied (0: no such table yet).
    @discardableResult
    public func copyRows(of table: String, from newest: any SQLConnection, into: String? = nil, order: String? = nil,
                         fixed: [String: SQLValue] = [:], where filter: String? = nil) throws -> Int {
        let target = into ?? table
        let here = try columnNames(target)
        let there = Set(try newest.columnNames(table))
        let copied = here.filter { there.contains($0) && fixed[$0] == nil }
        guard !here.isEmpty, !copied.isEmpty else { return 0 }
        let names = copied + fixed.keys.filter { here.contains($0) }.sorted()
        let quoted = names.map { "\"\($0)\"" }.joined(separator: ", ")
        let rows = try newest.query("SELECT \(copied.map { "\"\($0)\"" }.joined(separator: ", ")) FROM \(table)"
                                    + (filter.map { " WHERE \($0)" } ?? "") + (order.map { " ORDER BY \($0)" } ?? ""))
        let marks = Array(repeating: "?", count: names.count).joined(separator: ", ")
        for row in rows {
            let extra = names.dropFirst(copied.count).map { fixed[$0]! }
            _ = try run("INSERT INTO \(target)(\(quoted)) VALUES (\(marks))", row.values + extra)
        }
        if dialect == .postgres {
            for column in try query("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND is_identity = 'YES'",
                                    [.text(target)]).compactMap({ $0.string(0) }) {
                _ = try run("SELECT setval(pg_get_serial_sequence('\(target)', '\(column)'), coalesce((SELECT max(\"\(column)\") FROM \(target)), 0) + 1, false)")
            }
        }
        return rows.count
    }
}

/// What a daemon of an earlier release wrote, made from what the current one wrote: the
/// tables each schema's daemon writes, copied into a database at an older version.
public enum OlderRelease {
    /// The journal's: jobs and their history, hosts, the inbox ledger and the queue read
    /// positions (version 1 of SQLite's had one position row, for queue.jsonl).
    public static func copyJournal(from newest: any SQLConnection, to target: any SQLConnection) throws {
        for (table, order) in [("meta", nil), ("hosts", nil), ("jobs", "id"), ("job_events", "id"), ("inbox_taken", nil)] as [(String, String?)] {
            try target.copyRows(of: table, from: newest, order: order)
        }
        if try target.columnNames("queue_files").isEmpty {
            try target.copyRows(of: "queue_files", from: newest, into: "queue_position", fixed: ["id": 1], where: "name = 'queue.jsonl'")
        } else {
            try target.copyRows(of: "queue_files", from: newest)
        }
    }

    /// The record index's (owner_usage is kept by triggers from records, index_secrets is
    /// made by its migration: neither is copied). SQLite's full text is rebuilt from the
    /// records, as each write kept it.
    public static func copyIndex(from newest: any SQLConnection, to target: any SQLConnection) throws {
        let tables: [(String, String?)] = [
            ("records", "ord"), ("record_fields", nil), ("record_acl", nil), ("record_assets", nil), ("record_readers", nil),
            ("record_tokens", nil), ("changes", "seq"), ("subscriptions", nil), ("deliveries", "id"), ("applied_jobs", nil),
            ("released_assets", nil),
        ]
        for (table, order) in tables { try target.copyRows(of: table, from: newest, order: order) }
        if target.dialect == .sqlite { try target.exec("INSERT INTO records_fts(records_fts) VALUES ('rebuild')") }
    }
}
