import SQL

/// Who may read a record, kept as rows keyed by reader (`record_readers`): its owner, each
/// user its ACL names (readers and writers), and `publicReader` when it is public. A
/// user's query starts from their rows there and tests each of those records on its own
/// rows (PredicateCompiler's `perRecord`), never walking an index over other owners'
/// records: what a query costs depends only on what the caller may read, so its timing
/// tells nothing about others' values. Admins read everything and use the value indexes.
extension RecordStore {
    /// The reader key of public records: no user is named "" (names come from the kernel's
    /// user database), and an empty name in an ACL is never a key.
    static let publicReader = ""

    /// The reader keys of a record.
    static func readerKeys(_ r: Record) -> Set<String> {
        var keys = Set(r.acl.readers + r.acl.writers)
        if let owner = r.owner { keys.insert(owner) }
        keys.remove(publicReader)
        if r.acl.publicRead { keys.insert(publicReader) }
        return keys
    }

    /// Rewrites a record's reader rows and (SQLite) its memo tokens (every record's: a
    /// subscription tests one record on them, `matchSQL`); in `write`'s transaction.
    /// `tokens`: its memo's (`MemoTerms`, cut before the transaction).
    func writeReaders(_ r: Record, tokens: [String]) throws {
        try db.run("DELETE FROM record_readers WHERE record_id = ?", [.text(r.id)])
        for key in Self.readerKeys(r).sorted() {
            try db.run("INSERT INTO record_readers(reader, record_id) VALUES (?, ?)", [.text(key), .text(r.id)])
        }
        guard dialect == .sqlite else { return }
        try db.run("DELETE FROM record_tokens WHERE record_id = ?", [.text(r.id)])
        for token in tokens {
            try db.run("INSERT INTO record_tokens(record_id, token) VALUES (?, ?)", [.text(r.id), .text(token)])
        }
    }

    /// SQL that is true when the viewer may read record `r`.
    static func visible(_ viewer: Viewer, _ params: inout [SQLValue]) -> String {
        guard case .user(let name) = viewer else { return PredicateCompiler.trueSQL }
        params += [.text(name), .text(publicReader)]
        return "r.id IN (SELECT record_id FROM record_readers WHERE reader IN (?, ?) AND record_id = r.id)"
    }

    /// FROM for a user's query: the records `name` may read, each once, then each record by
    /// its id — in that order on both engines (SQLite: CROSS JOIN is never reordered;
    /// PostgreSQL: a LATERAL subquery behind OFFSET 0 is not flattened, so the records
    /// table is never scanned and no condition on it is tested on a row the user may not read).
    func readable(by name: String, _ params: inout [SQLValue]) -> String {
        params += [.text(name), .text(Self.publicReader)]
        let mine = "(SELECT DISTINCT record_id FROM record_readers WHERE reader IN (?, ?)) a"
        return dialect == .sqlite
            ? "\(mine) CROSS JOIN records r ON r.id = a.record_id"
            : "\(mine) CROSS JOIN LATERAL (SELECT * FROM records r0 WHERE r0.id = a.record_id OFFSET 0) r"
    }
}
