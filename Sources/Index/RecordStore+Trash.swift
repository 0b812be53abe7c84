import SQL
import PhotomemoCore
import StageKit

/// How `delete` removes a record.
public enum DeleteMode: Sendable, Equatable {
    /// Into the trash, with the records its `deleteSelf` cascade takes.
    case trash
    /// `delete --purge`: at once, the caller's own records (an admin's: any); a cascade
    /// trashes the referring records the caller may write but does not own.
    case purge
    /// At once, as any writer may: the trash is off (`"trash": "0"`).
    case immediate
}

/// What a `delete` removed.
public struct Deletion: Sendable {
    /// Every record that left the records (trashed or purged), the named one first.
    public var deleted: [String]
    /// Those of them now in the trash.
    public var trashed: [String]
    /// Store objects no record, live or trashed, uses any more.
    public var releasedAssets: [String]
    /// The photos (bytes, owner) whose records are gone.
    public var photos: [(sha256: String, owner: String?)]
}

/// The trash (DESIGN.md, "Running for months"): a deleted record leaves `records` whole
/// into `trash` (index migration 11, PostgreSQL 6), so no query, `get`, reference, fan-out
/// or duplicate check can meet it; its asset keys stay referenced (`trash_assets`) until
/// it is purged, and who could read it is kept (`trash_readers`) for `trash` and `get --trashed`.
extension RecordStore {
    /// The record columns a trash row keeps, in `records`' names.
    static let trashedColumns = "id, job_key, photo_sha256, source, type, memo, owner, public_read, acl, fields, assets, exif, "
        + "taken, width, height, created, modified, change_tag, ord"

    /// A user may purge (and restore) only their own records; an admin any.
    static func mayPurge(_ r: Record, _ viewer: Viewer) -> Bool {
        guard case .user(let name) = viewer else { return true }
        return r.owner == name
    }

    /// Copies record `id` (still in `records`) into the trash, as deleted with `root`.
    func moveToTrash(_ id: String, with root: String, _ r: Record, now: Double) throws {
        let rowID = dialect == .sqlite ? "rowid" : "NULL"
        try db.run("INSERT INTO trash(\(Self.trashedColumns), row_id, deleted_at, trashed_with) SELECT \(Self.trashedColumns), \(rowID), ?, ? FROM records WHERE id = ?",
                   [.double(now), .text(root), .text(id)])
        for key in Self.readerKeys(r).sorted() {
            try db.run("INSERT INTO trash_readers(reader, record_id) VALUES (?, ?)", [.text(key), .text(id)])
        }
        try db.run("INSERT INTO trash_assets(record_id, key) SELECT record_id, key FROM record_assets WHERE record_id = ?", [.text(id)])
    }

    /// SQL true when the viewer could read trashed record `t` (as they could before its delete).
    static func visibleInTrash(_ viewer: Viewer, _ params: inout [SQLValue]) -> String {
        guard case .user(let name) = viewer else { return PredicateCompiler.trueSQL }
        params += [.text(name), .text(publicReader)]
        return "t.id IN (SELECT record_id FROM trash_readers WHERE reader IN (?, ?) AND record_id = t.id)"
    }

    /// A trashed record the viewer could read: nil when there is none (or none of theirs).
    func trashedRecord(_ id: String, _ viewer: Viewer) throws -> TrashedRecord? {
        var params: [SQLValue] = [.text(id)]
        let vis = Self.visibleInTrash(viewer, &params)
        return try db.queryOne("SELECT \(Self.trashedSelect) FROM trash t WHERE t.id = ? AND \(vis)", params).map { try Self.trashed($0) }
    }

    static let trashedSelect = "t.id, t.type, t.memo, t.fields, t.owner, t.acl, t.assets, t.exif, t.created, t.modified, t.change_tag, t.source, "
        + "t.photo_sha256, t.deleted_at, t.trashed_with"

    static func trashed(_ row: Row) throws -> TrashedRecord {
        TrashedRecord(record: try record(row), deletedAt: row.double(columnCount)!, trashedWith: row.string(columnCount + 1)!)
    }

    /// `delete --purge` of a record already in the trash: nil when the viewer cannot see it
    /// there; `forbidden` when they may see but not purge it; else its asset keys, which
    /// the caller releases.
    func purgeTrashed(_ id: String, viewer: Viewer) throws -> [String]? {
        guard let t = try trashedRecord(id, viewer) else { return nil }
        guard Self.mayPurge(t.record, viewer) else { throw RecordWriteError.forbidden }
        let keys = try db.query("SELECT key FROM trash_assets WHERE record_id = ?", [.text(id)]).compactMap { $0.string(0) }
        try db.run("DELETE FROM trash WHERE id = ?", [.text(id)])
        return keys
    }

    /// `get --trashed`: a record in the trash the viewer could read.
    public func getTrashed(_ id: String, viewer: Viewer) throws -> TrashedRecord? {
        try locked { try trashedRecord(id, viewer) }
    }

    /// The trash as the viewer may see it, the latest deleted first, `limit` at a time
    /// after `cursor` (the last row's `deleted_at` and id).
    public func trashList(viewer: Viewer, limit: Int, cursor: String?) throws -> (records: [TrashedRecord], cursor: String?) {
        var params: [SQLValue] = []
        var whereSQL = Self.visibleInTrash(viewer, &params)
        if let cursor {
            let (values, _) = try Self.decode(cursor, count: 2)
            whereSQL += " AND (t.deleted_at < ? OR (t.deleted_at = ? AND t.id > ?))"
            params += [values[0], values[0], values[1]]
        }
        let rows = try reading { db in
            try db.query("SELECT \(Self.trashedSelect) FROM trash t WHERE \(whereSQL) ORDER BY t.deleted_at DESC, t.id LIMIT ?",
                         params + [.int(Int64(limit))])
        }
        let list = try rows.map { try Self.trashed($0) }
        let next = list.count == limit ? list.last.map { Self.encode([.double($0.deletedAt), .text($0.record.id)], 0) } : nil
        return (list, next)
    }

    public func trashCount(owner: String?) throws -> Int {
        try reading { db in
            try owner.map { try db.queryOne("SELECT count(*) FROM trash WHERE owner = ?", [.text($0)]) } ?? db.queryOne("SELECT count(*) FROM trash", [])
        }.map { Int($0.int(0) ?? 0) } ?? 0
    }

    /// Brings a trashed record back as it was (same id, fields, assets, creation order) with
    /// a `create` change, and the records its delete trashed with it that the viewer may
    /// write. The owner's or an admin's: a reader is `forbidden`, anyone else `not_found`.
    public func restore(_ id: String, viewer: Viewer, now: Double) throws -> [Record] {
        try matchBacklog(now: now)
        return try writing {
            guard let t = try trashedRecord(id, viewer) else { throw RecordWriteError.notFound }
            guard Self.mayPurge(t.record, viewer) else { throw RecordWriteError.forbidden }
            var restored = [try restoreRow(t.record, now: now)]
            if t.trashedWith == id {
                let rows = try db.query("SELECT \(Self.trashedSelect) FROM trash t WHERE t.trashed_with = ? ORDER BY t.deleted_at, t.ord", [.text(id)])
                for child in try rows.map({ try Self.trashed($0) }) where Self.canWrite(child.record, viewer) {
                    restored.append(try restoreRow(child.record, now: now))
                }
            }
            _ = try fanOutPendingInTransaction(now: now)  // the outbox commits with the changes
            return restored
        }
    }

    /// One trash row back into `records` (SQLite: at its old rowid when that is free, so
    /// it keeps its place in creation order, as `ord` keeps it on PostgreSQL), rewritten
    /// with its side rows and a `create` change; then out of the trash.
    private func restoreRow(_ r: Record, now: Double) throws -> Record {
        let rowID = dialect == .sqlite ? ", rowid" : ""
        let rowValue = dialect == .sqlite ? ", CASE WHEN EXISTS (SELECT 1 FROM records WHERE rowid = t.row_id) THEN NULL ELSE t.row_id END" : ""
        try db.run("INSERT INTO records(\(Self.trashedColumns)\(rowID)) SELECT \(Self.trashedColumns)\(rowValue) FROM trash t WHERE t.id = ?",
                   [.text(r.id)])
        let written = try write(r, jobKey: nil, op: "create", now: now)
        try db.run("DELETE FROM trash WHERE id = ?", [.text(r.id)])
        return written
    }

    /// Purges up to `limit` records deleted at or before `deletedBefore`, oldest first, in
    /// one short transaction; returns how many, and the store objects released.
    public func purgeTrash(deletedBefore: Double, limit: Int, now: Double) throws -> (purged: Int, released: [String]) {
        // Asked every collector round: nothing due costs one indexed read, no write transaction.
        guard try reading({ try $0.queryOne("SELECT 1 FROM trash WHERE deleted_at <= ? LIMIT 1", [.double(deletedBefore)]) }) != nil else {
            return (0, [])
        }
        return try writing {
            let ids = try db.query("SELECT id FROM trash WHERE deleted_at <= ? ORDER BY deleted_at LIMIT ?",
                                   [.double(deletedBefore), .int(Int64(limit))]).compactMap { $0.string(0) }
            var keys: [String] = []
            for id in ids {
                keys += try db.query("SELECT key FROM trash_assets WHERE record_id = ?", [.text(id)]).compactMap { $0.string(0) }
                try db.run("DELETE FROM trash WHERE id = ?", [.text(id)])
            }
            return (ids.count, try releaseUnused(keys, now: now))
        }
    }
}

/// A record in the trash: as it was, when it was deleted, and the record whose delete
/// trashed it (itself, or the record its `deleteSelf` reference named).
public struct TrashedRecord: Sendable, Equatable {
    public var record: Record
    public var deletedAt: Double
    public var trashedWith: String

    /// `purgeAfter`: the trash's duration in seconds.
    public func json(purgeAfter: Double) -> JSONValue {
        var o = record.json.objectValue ?? [:]
        o["deleted"] = .string(isoTimestamp(deletedAt))
        o["purge_after"] = .string(isoTimestamp(deletedAt + purgeAfter))
        o["trashed_with"] = .string(trashedWith)
        return .object(o)
    }
}
