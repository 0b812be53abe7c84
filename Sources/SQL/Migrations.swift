import StageKit

extension SQLConnection {
    /// Brings a schema to its newest version: migration N takes version N-1 to N, each in
    /// one transaction with the version (kept in `versionTable`). On PostgreSQL each
    /// transaction first takes an advisory lock named after the table and reads the
    /// version under it, so daemons starting together on an empty database apply each
    /// migration once. A database whose schema is newer than this binary knows (after a
    /// downgrade) is refused with a clear error. Never edit a shipped migration; append.
    public func migrate(_ migrations: [String], versionTable: String, what: String) throws {
        while try transaction({ () throws -> Bool in
            if dialect == .postgres {
                try run("SELECT pg_advisory_xact_lock(hashtext(?))", [.text("photomemo:" + versionTable)])
            }
            try exec("CREATE TABLE IF NOT EXISTS \(versionTable)(version INTEGER NOT NULL)")
            let current = Int(try queryOne("SELECT version FROM \(versionTable)")?.int(0) ?? 0)
            guard current <= migrations.count else {
                throw PhotomemoError(.database,
                    "\(what) schema version \(current) is newer than this photomemo understands (\(migrations.count)): run the newer photomemo")
            }
            guard current < migrations.count else { return false }
            try exec(migrations[current])
            try run("DELETE FROM \(versionTable)")
            try run("INSERT INTO \(versionTable)(version) VALUES (?)", [.int(Int64(current + 1))])
            return true
        }) {}
    }
}
