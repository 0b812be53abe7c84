import Foundation
import SQL
import StageKit

/// The change feed (`photomemo changes`, followers) and the store objects updates and
/// deletes released.
extension RecordStore {
    /// Changes after `since`, oldest first, that the viewer could read when they happened.
    /// A user's page may walk everyone's changes to find theirs: it reads on a query
    /// connection (never the writer's) within the query time limit, like `query`.
    public func changes(since: Int64, limit: Int, viewer: Viewer, maxBytes: Int? = nil) throws -> [RecordChange] {
        var params: [SQLValue] = [.int(since)]
        var filter = ""
        if case .user(let name) = viewer {
            // The readers' JSON array, one row (`value`) per name.
            let elements = dialect == .sqlite ? "json_each(readers)" : "jsonb_array_elements_text(readers)"
            filter = " AND (owner = ? OR public_read = 1 OR EXISTS (SELECT 1 FROM \(elements) WHERE value = ?))"
            params += [.text(name), .text(name)]
        }
        let rows: [Row]
        do {
            rows = try reading { db in
                let page = {
                    var limit = limit
                    if let maxBytes {
                        let sizes = try db.query("SELECT length(record) + 256 FROM changes WHERE seq > ?\(filter) ORDER BY seq LIMIT ?", params + [.int(Int64(limit))])
                        limit = Row.fitting(sizes, maxBytes) ?? limit
                    }
                    return try db.query("SELECT seq, record_id, type, op, at, record FROM changes WHERE seq > ?\(filter) ORDER BY seq LIMIT ?", params + [.int(Int64(limit))])
                }
                // An admin's page starts at `since` through the key and is never cut short.
                return try filter.isEmpty ? page() : db.withTimeLimit(queryTimeLimit, page)
            }
        } catch let e as SQLTimeLimitExceeded {
            throw PhotomemoError(.tooExpensive,
                "the changes page ran past its limit of \(e.limit) in the index; ask again from a later --since, or ask an admin")
        }
        return try rows.map { RecordChange(seq: $0.int(0)!, recordID: $0.string(1)!, type: $0.string(2)!, op: $0.string(3)!, at: $0.double(4)!,
                                           record: try JSONValue.parse($0.string(5)!)) }
    }
}

extension RecordStore {
    /// Store objects released by updates and deletes, oldest first.
    public func releasedAssets(limit: Int) throws -> [String] {
        try locked { try db.query("SELECT key FROM released_assets ORDER BY at LIMIT ?", [.int(Int64(limit))]).compactMap { $0.string(0) } }
    }

    /// Done with a released object: deleted from the store, or used again meanwhile.
    public func forgetReleased(_ key: String) throws {
        try writing { try db.run("DELETE FROM released_assets WHERE key = ?", [.text(key)]) }
    }

    /// Whether any record refers to the object (a release may be overtaken by a new record).
    public func isReferenced(_ key: String) throws -> Bool {
        try locked { try db.queryOne("SELECT 1 FROM record_assets WHERE key = ?", [.text(key)]) != nil }
    }
}
