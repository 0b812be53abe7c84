import Foundation
import SQL
import StageKit

/// Records edited and deleted over the socket by their owners and writers; each in one
/// transaction with its change.
extension RecordStore {
    static func canWrite(_ r: Record, _ viewer: Viewer) -> Bool {
        guard case .user(let name) = viewer else { return true }
        return r.owner == name || r.acl.writers.contains(name)
    }

    /// Changes memo and fields (a field set to null is removed), optionally only if the
    /// record still has `ifTag`.
    public func update(_ id: String, memo: String?, fields: [String: JSONValue], acl: ACL?, ifTag: String?, viewer: Viewer,
                       now: Double) throws -> Record {
        try matchBacklog(now: now)
        let terms = memo.map(MemoTerms.init)  // cut before the write (MemoTerms)
        return try writing {
            guard let row = try db.queryOne("SELECT \(Self.columns) FROM records r WHERE r.id = ?", [.text(id)]) else {
                throw RecordWriteError.notFound
            }
            var r = try Self.record(row)
            var vis: [SQLValue] = [.text(id)]
            guard try db.queryOne("SELECT 1 FROM records r WHERE r.id = ? AND \(Self.visible(viewer, &vis))", vis) != nil else {
                throw RecordWriteError.notFound
            }
            guard Self.canWrite(r, viewer) else { throw RecordWriteError.forbidden }
            // Who may see and change a record is its owner's to say (and an admin's), not a writer's.
            if acl != nil, case .user(let name) = viewer, r.owner != name { throw RecordWriteError.forbidden }
            if let ifTag, ifTag != r.changeTag { throw RecordWriteError.conflict(current: r.changeTag) }
            try checkReferences(fields, viewer: viewer)
            if let memo { r.memo = memo }
            for (k, v) in fields { if v == .null { r.fields.removeValue(forKey: k) } else { r.fields[k] = v } }
            if let acl { r.acl = acl }
            let written = try write(r, jobKey: nil, op: "update", now: now, terms: terms)
            _ = try fanOutPendingInTransaction(now: now)  // the outbox commits with the change
            return written
        }
    }

    /// Deletes a record and, through `deleteSelf` references, the records that refer to
    /// it that the viewer may write (others keep a dangling reference). Returns the deleted
    /// ids, the asset keys no remaining record uses, and the photos (bytes, owner) whose
    /// records are gone.
    public func delete(_ id: String, viewer: Viewer, now: Double) throws
        -> (deleted: [String], releasedAssets: [String], photos: [(sha256: String, owner: String?)]) {
        try matchBacklog(now: now)
        return try writing {
            guard let row = try db.queryOne("SELECT \(Self.columns) FROM records r WHERE r.id = ?", [.text(id)]) else {
                throw RecordWriteError.notFound
            }
            var vis: [SQLValue] = [.text(id)]
            guard try db.queryOne("SELECT 1 FROM records r WHERE r.id = ? AND \(Self.visible(viewer, &vis))", vis) != nil else {
                throw RecordWriteError.notFound
            }
            guard Self.canWrite(try Self.record(row), viewer) else { throw RecordWriteError.forbidden }
            var deleted: [String] = []
            var photos: [(sha256: String, owner: String?)] = []
            var keys = Set<String>()
            var pending = [id]
            while let next = pending.popLast() {
                guard !deleted.contains(next),
                      let r = try db.queryOne("SELECT \(Self.columns) FROM records r WHERE r.id = ?", [.text(next)]) else { continue }
                let rec = try Self.record(r)
                guard Self.canWrite(rec, viewer) else { continue }
                if let sha = try db.queryOne("SELECT photo_sha256 FROM records WHERE id = ?", [.text(next)])?.string(0) {
                    photos.append((sha, rec.owner))
                }
                keys.formUnion(try db.query("SELECT key FROM record_assets WHERE record_id = ?", [.text(next)]).compactMap { $0.string(0) })
                pending += try db.query("SELECT record_id FROM record_fields WHERE kind = 'r' AND text_value = ? AND delete_self = 1",
                                        [.text(next)]).compactMap { $0.string(0) }
                _ = try appendChange(rec, op: "delete", now: now)
                _ = try fanOutPendingInTransaction(now: now)  // while the record's rows still exist
                if dialect == .sqlite {  // PostgreSQL's tsvector goes with the row
                    try db.run("INSERT INTO records_fts(records_fts, rowid, memo) SELECT 'delete', rowid, memo FROM records WHERE id = ?",
                               [.text(next)])
                }
                try db.run("DELETE FROM records WHERE id = ?", [.text(next)])
                deleted.append(next)
            }
            return (deleted, try releaseUnused(Array(keys), now: now), photos)
        }
    }

    /// A change made over the socket is fanned out inside its write with every change
    /// before it not yet fanned out (deliveries follow change order): those, the pipeline's,
    /// are matched first, outside the write, so the write holds the writer only for its own.
    /// (The whole backlog against every subscription held it for seconds.)
    private func matchBacklog(now: Double) throws {
        _ = try fanOutPending(now: now)
    }
}
