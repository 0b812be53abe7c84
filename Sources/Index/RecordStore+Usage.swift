import SQL

extension RecordStore {
    /// How many records `owner` has and the bytes their assets hold in the store (each
    /// rendition's `bytes`): what a quota counts. One row, kept by the index's triggers in
    /// every record write's transaction (migration 10, PostgreSQL 5): counting the owner's
    /// records here made every `enqueue` of a user with many records slow.
    public func usage(owner: String) throws -> (records: Int, bytes: Int64) {
        try reading { db in
            let row = try db.queryOne(Self.usageSQL, [.text(owner)])
            return (Int(row?.int(0) ?? 0), row?.int(1) ?? 0)
        }
    }

    static let usageSQL = "SELECT records, bytes FROM owner_usage WHERE owner = ?"
}
