import PhotomemoCore
import SQL
import StageKit

/// What `backup`, `restore` and `verify` ask of the record index.
extension RecordStore {
    /// The newest index schema this binary can open, per engine (see `Journal.schemaVersion`).
    public static func schemaVersion(postgres: Bool) -> Int { postgres ? IndexSchema.postgresMigrations.count : IndexSchema.migrations.count }

    /// The version the database holds (0 before the first migration).
    public static func storedSchemaVersion(_ db: any SQLConnection) throws -> Int {
        Int(try db.queryOne("SELECT version FROM index_schema_version")?.int(0) ?? 0)
    }

    /// Records with assets (live and trashed) in id order, `limit` after `after` (keyset paging, so a run over
    /// a million records never holds the index for long): each record's id and `assets`.
    public func assetPage(after: String, limit: Int) throws -> [(id: String, assets: JSONValue)] {
        try reading { db in
            // The trash's too: a trashed record may be restored, and its assets with it.
            try db.query("""
                SELECT id, assets FROM (SELECT id, assets FROM records UNION ALL SELECT id, assets FROM trash) AS held
                WHERE id > ? AND assets <> '{}' ORDER BY id LIMIT ?
                """, [.text(after), .int(Int64(limit))]).map { row in
                (row.string(0) ?? "", (try? JSONValue.parse(row.string(1) ?? "{}")) ?? .emptyObject)
            }
        }
    }

    /// Whether the object waits in `released_assets` for the collector to delete it.
    public func isReleased(_ key: String) throws -> Bool {
        try locked { try db.queryOne("SELECT 1 FROM released_assets WHERE key = ?", [.text(key)]) != nil }
    }
}
