import SQL

extension RecordStore {
    /// How many records `owner` has and the bytes their assets hold in the store (each
    /// rendition's `bytes`): what a quota counts. One read of the owner's rows.
    public func usage(owner: String) throws -> (records: Int, bytes: Int64) {
        let bytes = dialect == .sqlite
            ? "SELECT coalesce(sum(json_extract(a.value, '$.bytes')), 0) FROM records r, json_each(r.assets) a WHERE r.owner = ?"
            : "SELECT coalesce(sum((a.value->>'bytes')::bigint), 0) FROM records r, jsonb_each(r.assets::jsonb) a WHERE r.owner = ?"
        return try reading { db in
            let row = try db.queryOne("SELECT (SELECT count(*) FROM records WHERE owner = ?), (\(bytes))", [.text(owner), .text(owner)])
            return (Int(row?.int(0) ?? 0), row?.int(1) ?? 0)
        }
    }
}
