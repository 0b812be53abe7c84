import Foundation
import SQL
import PhotomemoCore
import StageKit

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
            for (k, v) in input.annotations where r.fields[k] == nil { r.fields[k] = v }
            if input.assets != .emptyObject { r.assets = input.assets }
            if input.exif != .emptyObject { r.exif = input.exif }
            // A job's ACL replaces the record's as the socket's `update --acl` does: the owner's
            // (or an admin's) alone to change, a writer who is not the owner may not.
            if let acl = input.memo.acl {
                if case .user(let name) = viewer, r.owner != name { throw RecordWriteError.forbidden }
                r.acl = acl
            }
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
                       fields: input.annotations.merging(input.memo.fields) { _, memo in memo }, owner: input.memo.owner, acl: input.memo.acl ?? ACL(), assets: input.assets,
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
        let writers = Set(r.acl.writers)  // looked up per name: a list made a long ACL quadratic
        for u in Set(r.acl.readers).union(writers) {
            try db.run("INSERT INTO record_acl(record_id, \"user\", can_write) VALUES (?,?,?)",
                       [.text(r.id), .text(u), .int(writers.contains(u) ? 1 : 0)])
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
}
