import PhotomemoCore

extension Database {
    /// Brings a schema to its newest version: migration N takes version N-1 to N, each in
    /// one transaction with the version (kept in `versionTable`). A database whose schema
    /// is newer than this binary knows (after a downgrade) is refused with a clear error.
    /// Never edit a shipped migration; append a new one.
    public func migrate(_ migrations: [String], versionTable: String, what: String) throws {
        try exec("CREATE TABLE IF NOT EXISTS \(versionTable)(version INTEGER NOT NULL)")
        let current = try queryOne("SELECT version FROM \(versionTable)")?.int(0) ?? 0
        guard current <= Int64(migrations.count) else {
            throw PhotomemoError(.database,
                "\(what) schema version \(current) is newer than this photomemo understands (\(migrations.count)): run the newer photomemo")
        }
        for v in Int(current)..<migrations.count {
            try transaction {
                try exec(migrations[v])
                try run("DELETE FROM \(versionTable)")
                try run("INSERT INTO \(versionTable)(version) VALUES (?)", [.int(Int64(v + 1))])
            }
        }
    }
}
