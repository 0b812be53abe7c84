import Foundation
import SQL
import PhotomemoCore

/// Creating, updating and deleting records; each in one transaction with its change.
extension RecordStore {

    /// Deterministic from the job key (a re-run that lost `applied_jobs` would still collide
    /// with its own record, never make a second), but keyed with the home's secret: no one
    /// computes another user's id from a guessed key (it was sha256("OWNER/KEY")).
    func recordID(jobKey: String) -> String { "r" + String(HMACSHA256.hex(key: recordIDSecret, data: Data(jobKey.utf8)).prefix(23)) }

    /// Creates the job's record, or returns it when this job already did (idempotent).
    /// A memo for a photo that already has a record (from another job) updates that one.
    public func apply(_ input: RecordInput, now: Double) throws -> (record: Record, op: String) {
        let terms = MemoTerms(input.memo.memo)
        return try writing { try applyInTransaction(input, terms, now: now) }
    }

    /// Many inputs in one transaction (one fsync): for bulk loads.
    public func apply(batch inputs: [RecordInput], now: Double) throws -> [(record: Record, op: String)] {
        let terms = inputs.map { MemoTerms($0.memo.memo) }
        return try writing { try zip(inputs, terms).map { try applyInTransaction($0, $1, now: now) } }
    }

    private func applyInTransaction(_ input: RecordInput, _ terms: MemoTerms, now: Double) throws -> (record: Record, op: String) {
        // A job already applied (a re-run after a crash) changes nothing.
        if let done = try db.queryOne("SELECT record_id FROM applied_jobs WHERE job_key = ?", [.text(input.jobKey)])?.string(0) {
            if let row = try db.queryOne("SELECT \(Self.columns) FROM records r WHERE r.id = ?", [.text(done)]) {
                return (try Self.record(row), "none")
            }
            throw RecordWriteError.notFound
        }
        // A line naming a record updates it — if the job's owner may write it: memo,
        // type, the fields given, and the images when it brings a photo. A memo for an
        // indexed photo updates that photo's record (of the same owner: the same bytes
        // are one record per owner).
        var target: Row?
        let viewer = Viewer(owner: input.memo.owner)
        try checkReferences(input.memo.fields, viewer: viewer)
        if let id = input.memo.record {
            var vis: [SQLValue] = [.text(id)]
            guard let row = try db.queryOne("SELECT \(Self.columns) FROM records r WHERE r.id = ? AND \(Self.visible(viewer, &vis))", vis) else {
                throw RecordWriteError.notFound
            }
            guard Self.canWrite(try Self.record(row), viewer) else { throw RecordWriteError.forbidden }
            target = row
        }
        // New bytes of a `keep` inbox's path update the record of that path.
        var bySource = false
        if target == nil, input.updatesSource, input.photoSHA256 != nil, let source = input.source {
            target = try db.queryOne("""
                SELECT \(Self.columns) FROM records r WHERE r.source = ? AND r.owner IS NOT DISTINCT FROM ?
                ORDER BY r.created DESC, r.ord DESC LIMIT 1
                """, [.text(source), SQLValue(input.memo.owner)])
            bySource = target != nil
        }
        if target == nil, input.memo.record == nil, let sha = input.photoSHA256 {
            target = try db.queryOne("""
                SELECT \(Self.columns) FROM records r WHERE r.photo_sha256 = ? AND r.owner IS NOT DISTINCT FROM ?
                ORDER BY r.created, r.ord LIMIT 1
                """, [.text(sha), SQLValue(input.memo.owner)])
        }
        if let row = target {
            var r = try Self.record(row)
            r.type = input.memo.type
            r.memo = input.memo.memo
            for (k, v) in input.memo.fields { r.fields[k] = v }
            if input.assets != .emptyObject { r.assets = input.assets }
            if input.exif != .emptyObject { r.exif = input.exif }
            if input.memo.record != nil || bySource, let sha = input.photoSHA256 {
                try db.run("UPDATE records SET photo_sha256 = ?, source = COALESCE(?, source), width = ?, height = ? WHERE id = ?",
                           [.text(sha), SQLValue(input.source), SQLValue(input.width.map(Int64.init)), SQLValue(input.height.map(Int64.init)),
                            .text(r.id)])
                if input.exif != .emptyObject {  // the new photo's, as `exif` is
                    try db.run("UPDATE records SET taken = ? WHERE id = ?",
                               [SQLValue(input.exif["taken"]?.stringValue.flatMap(ISODate.parse)), .text(r.id)])
                }
                (r.sha256, r.source) = (sha, input.source ?? r.source)
            }
            try db.run("INSERT INTO applied_jobs(job_key, record_id) VALUES (?, ?)", [.text(input.jobKey), .text(r.id)])
            return (try write(r, jobKey: nil, op: "update", now: now, terms: terms), "update")
        }
        let taken = input.exif["taken"]?.stringValue.flatMap(ISODate.parse)
        let r = Record(id: recordID(jobKey: input.jobKey), type: input.memo.type, memo: input.memo.memo,
                       fields: input.memo.fields, owner: input.memo.owner, acl: ACL(), assets: input.assets,
                       exif: input.exif, created: now, modified: now, changeTag: "",
                       source: input.source, sha256: input.photoSHA256)
        try db.run("""
            INSERT INTO records(id, job_key, photo_sha256, source, type, memo, owner, taken, width, height, created, modified, change_tag)
            VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'')
            """, [.text(r.id), .text(input.jobKey), SQLValue(input.photoSHA256), SQLValue(input.source), .text(r.type), .text(r.memo), SQLValue(r.owner),
                  SQLValue(taken), SQLValue(input.width.map(Int64.init)), SQLValue(input.height.map(Int64.init)),
                  .double(now), .double(now)])
        try db.run("INSERT INTO applied_jobs(job_key, record_id) VALUES (?, ?)", [.text(input.jobKey), .text(r.id)])
        return (try write(r, jobKey: input.jobKey, op: "create", now: now, terms: terms), "create")
    }

    /// Rewrites a record's row, field rows, ACL rows, asset rows, full-text entry and
    /// appends its change; returns it with a fresh change tag. A new record's creation
    /// order (`ord`) is its create change's seq. `terms`: the memo's, cut before the
    /// transaction (cut here if they are not the record's memo's).
    func write(_ record: Record, jobKey: String?, op: String, now: Double, terms prepared: MemoTerms? = nil) throws -> Record {
        var r = record
        let terms = prepared?.of(r.memo) ?? MemoTerms(r.memo)
        r.modified = now
        let seq = try appendChange(r, op: op, now: now)
        r.changeTag = String(seq)
        // The change's snapshot carries the tag the change gave the record.
        try db.run("UPDATE changes SET record = ? WHERE seq = ?", [.text(r.json.jsonString), .int(seq)])
        if dialect == .sqlite, op == "update", let old = try db.queryOne("SELECT rowid, memo FROM records WHERE id = ?", [.text(r.id)]) {
            try db.run("INSERT INTO records_fts(records_fts, rowid, memo) VALUES('delete', ?, ?)", [old.values[0], old.values[1]])
        }
        let tsv = dialect == .postgres ? ", memo_tsv = \(FullText.lexemesSQL)" : ""
        try db.run("""
            UPDATE records SET type = ?, memo = ?, fields = ?, acl = ?, public_read = ?, assets = ?, exif = ?, modified = ?, change_tag = ?,
                ord = COALESCE(ord, ?)\(tsv)
            WHERE id = ?
            """, [.text(r.type), .text(r.memo), .text(JSONValue.object(r.fields).jsonString), .text(r.acl.json.jsonString),
                  .int(r.acl.publicRead ? 1 : 0), .text(r.assets.jsonString), .text(r.exif.jsonString), .double(now),
                  .text(r.changeTag), .int(seq)] + (dialect == .postgres ? [.text(terms.lexemes)] : []) + [.text(r.id)])
        if dialect == .sqlite {
            let rowid = try db.queryOne("SELECT rowid FROM records WHERE id = ?", [.text(r.id)])!.values[0]
            try db.run("INSERT INTO records_fts(rowid, memo) VALUES (?, ?)", [rowid, .text(r.memo)])
        }
        try db.run("DELETE FROM record_fields WHERE record_id = ?", [.text(r.id)])
        for (name, value) in r.fields {
            for (kind, text, num, del) in FieldValue(value)?.rows ?? [] {
                try db.run("INSERT INTO record_fields(record_id, name, kind, text_value, num_value, delete_self) VALUES (?,?,?,?,?,?)",
                           [.text(r.id), .text(name), .text(kind), SQLValue(text), SQLValue(num), .int(del ? 1 : 0)])
            }
        }
        try db.run("DELETE FROM record_acl WHERE record_id = ?", [.text(r.id)])
        for u in Set(r.acl.readers + r.acl.writers) {
            try db.run("INSERT INTO record_acl(record_id, \"user\", can_write) VALUES (?,?,?)",
                       [.text(r.id), .text(u), .int(r.acl.writers.contains(u) ? 1 : 0)])
        }
        try writeReaders(r, tokens: terms.tokens)
        let before = try db.query("SELECT key FROM record_assets WHERE record_id = ?", [.text(r.id)]).compactMap { $0.string(0) }
        try db.run("DELETE FROM record_assets WHERE record_id = ?", [.text(r.id)])
        for key in Set((r.assets.objectValue ?? [:]).values.compactMap { $0["key"]?.stringValue }) {
            try db.run("INSERT INTO record_assets(record_id, key) VALUES (?,?)", [.text(r.id), .text(key)])
        }
        try releaseUnused(before, now: now)  // a replaced image no record uses any more
        return r
    }

    /// Queues store objects that no record refers to for deletion (the daemon's collector
    /// removes them from the asset store); returns them.
    @discardableResult
    func releaseUnused(_ keys: [String], now: Double) throws -> [String] {
        var released: [String] = []
        for key in Set(keys).sorted() where try db.queryOne("SELECT 1 FROM record_assets WHERE key = ?", [.text(key)]) == nil {
            try db.run("INSERT INTO released_assets(key, at) VALUES (?, ?) ON CONFLICT DO NOTHING", [.text(key), .double(now)])
            released.append(key)
        }
        return released
    }

    /// The change, in the write's transaction; on PostgreSQL every daemon's followers and
    /// deliverers are told at COMMIT (`ClusterListener`), instead of finding it at a timer.
    func appendChange(_ r: Record, op: String, now: Double) throws -> Int64 {
        if db.dialect == .postgres { try db.run("SELECT pg_notify('photomemo_changes', '')") }
        return try db.queryOne("INSERT INTO changes(record_id, type, op, at, owner, readers, public_read, record) VALUES (?,?,?,?,?,?,?,?) RETURNING seq",
                        [.text(r.id), .text(r.type), .text(op), .double(now), SQLValue(r.owner),
                         .text(JSONValue.array(Array(Set(r.acl.readers + r.acl.writers)).sorted().map(JSONValue.string)).jsonString),
                         .int(r.acl.publicRead ? 1 : 0), .text(r.json.jsonString)])!.int(0)!
    }

    static func canWrite(_ r: Record, _ viewer: Viewer) -> Bool {
        guard case .user(let name) = viewer else { return true }
        return r.owner == name || r.acl.writers.contains(name)
    }

    /// Changes memo and fields (a field set to null is removed), optionally only if the
    /// record still has `ifTag`.
    public func update(_ id: String, memo: String?, fields: [String: JSONValue], acl: ACL?, ifTag: String?, viewer: Viewer,
                       now: Double) throws -> Record {
        try matchBacklog(now: now)
        let terms = memo.map(MemoTerms.init)
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
