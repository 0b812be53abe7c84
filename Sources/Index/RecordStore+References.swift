import SQL
import StageKit

/// References between records (CKReference) across owners. A reference may name only a
/// record its writer may read: otherwise anyone could tie their record to another's (and
/// learn from the answer whether an id exists). A `deleteSelf` cascade deletes only the
/// referring records the deleting user may write; the others keep a reference to nothing,
/// which `get` shows as dangling.
extension RecordStore {
    /// Refuses `fields` when one of its references names a record `viewer` may not read or
    /// that does not exist (one answer for both: no oracle). In the write's transaction.
    func checkReferences(_ fields: [String: JSONValue], viewer: Viewer) throws {
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard case .reference(let id, _) = FieldValue(value) else { continue }
            guard try isReadable(id, viewer) else { throw RecordWriteError.badReference(field: name, record: id) }
        }
    }

    public func checkReferences(in fields: [String: JSONValue], viewer: Viewer) throws {
        try locked { try checkReferences(fields, viewer: viewer) }
    }

    func isReadable(_ id: String, _ viewer: Viewer) throws -> Bool {
        var params: [SQLValue] = [.text(id)]
        let vis = Self.visible(viewer, &params)
        return try db.queryOne("SELECT 1 FROM records r WHERE r.id = ? AND \(vis)", params) != nil
    }

    /// The names of `record`'s reference fields whose target `viewer` cannot read: deleted,
    /// or no longer shared with them (the two look alike, as to `get`).
    public func danglingReferences(of record: Record, viewer: Viewer) throws -> [String] {
        try locked {
            try record.fields.sorted(by: { $0.key < $1.key }).compactMap { name, value in
                guard case .reference(let id, _) = FieldValue(value) else { return nil }
                return try isReadable(id, viewer) ? nil : name
            }
        }
    }
}
