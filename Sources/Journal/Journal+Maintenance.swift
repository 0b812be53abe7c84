import PhotomemoCore
import SQL
import StageKit

/// What `backup`, `restore` and `verify` ask of the journal.
extension Journal {
    /// The newest journal schema this binary can open, per engine: a backup records the
    /// version it holds, and `restore` refuses one newer than this.
    public static func schemaVersion(postgres: Bool) -> Int { postgres ? Schema.postgresMigrations.count : Schema.migrations.count }

    /// The version the database holds (0 before the first migration).
    public static func storedSchemaVersion(_ db: any SQLConnection) throws -> Int {
        Int(try db.queryOne("SELECT version FROM schema_version")?.int(0) ?? 0)
    }

    /// The SHA-256 hexes (store keys are made of them) every job not done may still need:
    /// its photo's, and each in its working set and stage results (renditions made or
    /// stored). Failed and cancelled jobs count: `retry` resumes them from their working
    /// set. `verify` never calls these objects orphans. A reprocess job of a deleted record
    /// does not (`recordsDeleted` marks it; the delete cancelled it): the purged record's
    /// photo would stay for the failed or cancelled retention, in every backup.
    public func contentHashesOfUnfinishedJobs() throws -> Set<String> {
        try read { db in
            var out: Set<String> = []
            for row in try db.query("""
                SELECT photo_sha256, working_set, results FROM jobs
                WHERE state <> 'done' AND NOT (origin = 'reprocess' AND record_deleted IS NOT NULL)
                """, []) {
                for i in 0..<3 { if let text = row.string(i) { out.formUnion(Self.sha256Hexes(in: text)) } }
            }
            return out
        }
    }

    /// Every run of 64 lowercase hex digits in `text`.
    static func sha256Hexes(in text: String) -> [String] {
        var out: [String] = [], run: [UInt8] = []
        for b in text.utf8 {
            if (b >= 48 && b <= 57) || (b >= 97 && b <= 102) { run.append(b); continue }
            if run.count == 64 { out.append(String(decoding: run, as: UTF8.self)) }
            run.removeAll(keepingCapacity: true)
        }
        if run.count == 64 { out.append(String(decoding: run, as: UTF8.self)) }
        return out
    }
}
