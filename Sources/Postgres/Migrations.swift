import PhotomemoCore

extension PostgresConnection {
    /// Brings a schema to its newest version, like the SQLite runner: migration N takes
    /// version N-1 to N in one transaction with the version row (in `versionTable`).
    /// Each step holds a transaction-level advisory lock keyed on `versionTable`, so
    /// daemons starting together on an empty database apply each migration exactly once;
    /// the others wait, then find it done. A schema newer than this binary is refused.
    /// Never edit a shipped migration; append one. (No CREATE INDEX CONCURRENTLY: every
    /// step runs in a transaction.)
    public func migrate(_ migrations: [String], versionTable: String, what: String) throws {
        let table = Self.quoteIdentifier(versionTable)
        while true {
            let done = try transaction { () throws -> Bool in
                // Two-key form in a namespace of our own ("phot"), so it cannot meet a
                // caller's single-key locks.
                try run("SELECT pg_advisory_xact_lock(1886351476, hashtext($1))", [.text("migrate:" + versionTable)])
                try exec("CREATE TABLE IF NOT EXISTS \(table)(version integer NOT NULL)")
                let current = try queryOne("SELECT version FROM \(table)")?.int(0) ?? 0
                guard current <= Int64(migrations.count) else {
                    throw PhotomemoError(.database,
                        "\(what) schema version \(current) is newer than this photomemo understands (\(migrations.count)): run the newer photomemo")
                }
                guard current < Int64(migrations.count) else { return true }
                try exec(migrations[Int(current)])
                try run("DELETE FROM \(table)")
                try run("INSERT INTO \(table)(version) VALUES ($1)", [.int(current + 1)])
                return false
            }
            if done { return }
        }
    }

    /// The schema version recorded in `versionTable` (0 when there is none yet).
    public func schemaVersion(versionTable: String) throws -> Int {
        let exists = try queryOne("SELECT to_regclass($1) IS NOT NULL", [.text(Self.quoteIdentifier(versionTable))])?.bool(0) ?? false
        guard exists else { return 0 }
        return Int(try queryOne("SELECT version FROM \(Self.quoteIdentifier(versionTable))")?.int(0) ?? 0)
    }
}
