/// A memo job: one line of `queue.jsonl` (or `photomemo enqueue`), or the implied job of
/// a photo dropped without one. Parsing is strict: unknown keys and wrong types are
/// errors, so a typo never silently becomes an empty record.
public struct MemoJob: Sendable, Equatable {
    public var photo: String?
    public var memo: String
    public var type: String
    public var fields: [String: JSONValue]
    public var owner: String?
    public var key: String?
    /// An existing record this job updates (its photo, if any, replaces the record's images).
    public var record: String?
    /// Whom the record is shared with (`ACL`): set on the record this job creates, or
    /// replacing the ACL of the one it updates — which only the record's owner may do.
    public var acl: ACL?

    public static let defaultMemoType = "Memo"
    public static let defaultPhotoType = "Photo"
    public static let maxLineBytes = 1 << 20
    public static let keys: Set<String> = ["photo", "memo", "type", "fields", "owner", "key", "record", "acl"]
    /// A record's receipt keys, refused as field names in new lines (`init(line:)`).
    public static let receiptFieldNames: Set<String> = ["source", "sha256"]
    /// Field names that would shadow a record's built-in keys in queries.
    public static let reservedFieldNames: Set<String> = [
        "id", "type", "memo", "owner", "created", "modified", "taken", "width", "height", "acl", "assets", "exif",
    ]

    public init(photo: String? = nil, memo: String = "", type: String = MemoJob.defaultMemoType,
                fields: [String: JSONValue] = [:], owner: String? = nil, key: String? = nil) {
        self.photo = photo
        self.memo = memo
        self.type = type
        self.fields = fields
        self.owner = owner
        self.key = key
    }

    /// The job of a photo dropped into the inbox with no memo line.
    public static func photoOnly(_ name: String, owner: String? = nil) -> MemoJob {
        MemoJob(photo: name, type: defaultPhotoType, owner: owner)
    }

    /// Parses one queue line (without its newline).
    public static func parse(line: [UInt8]) throws -> MemoJob {
        guard line.count <= maxLineBytes else {
            throw PhotomemoError(.badJob, "line is \(line.count) bytes, longer than the 1 MiB limit")
        }
        guard String(validating: line, as: UTF8.self) != nil else {
            throw PhotomemoError(.badJob, "line is not valid UTF-8")
        }
        let value: JSONValue
        do {
            value = try line.withUnsafeBufferPointer { buf in
                var p = JSONParser(bytes: buf)
                return try p.parseDocument()
            }
        } catch let e as PhotomemoError {
            throw PhotomemoError(.badJob, "not valid JSON: \(e.message)")
        }
        return try MemoJob(line: value)
    }

    /// A job line as a producer wrote it (a queue line, `enqueue`'s `job`): the rules of a
    /// stored job (`init(json:)`) and a NUL refused anywhere in it — a rule older versions
    /// lacked, so a job stored with one still reads.
    public init(line value: JSONValue) throws {
        if case .object(let o) = value {
            // Built-in keys since the receipts (`source`, `sha256`): refused in new lines only,
            // so a stored job with such a field still reads.
            if case .object(let fields)? = o["fields"], let name = fields.keys.sorted().first(where: Self.receiptFieldNames.contains) {
                throw PhotomemoError(.badJob, "field name \"\(name)\" is a built-in record key")
            }
            for (k, v) in o where k != "fields" { try Self.refuseNUL(v, at: "\"\(k)\"") }
            if case .object(let fields)? = o["fields"] {
                for (name, v) in fields {
                    if name.utf8.contains(0) { throw Self.nulError("field name \(name.debugDescription)") }
                    try Self.refuseNUL(v, at: "field \"\(name)\"")
                }
            }
        }
        try self.init(json: value)
    }

    public init(json value: JSONValue) throws {
        guard case .object(let o) = value else {
            throw PhotomemoError(.badJob, "a job line must be a JSON object, got \(value.typeName)")
        }
        if let unknown = o.keys.filter({ !Self.keys.contains($0) }).sorted().first {
            throw PhotomemoError(.badJob,
                "unknown key \"\(unknown)\"; valid keys: \(Self.keys.sorted().joined(separator: ", "))")
        }
        func string(_ k: String) throws -> String? {
            guard let v = o[k] else { return nil }
            guard case .string(let s) = v else {
                throw PhotomemoError(.badJob, "\"\(k)\" must be a string, got \(v.typeName)")
            }
            return s
        }
        self.init()
        photo = try string("photo")
        memo = try string("memo") ?? ""
        type = try string("type") ?? Self.defaultMemoType
        owner = try string("owner")
        key = try string("key")
        record = try string("record")
        acl = try o["acl"].map { try ACL(parsing: $0, code: .badJob) }
        if let p = photo, p.isEmpty { throw PhotomemoError(.badJob, "\"photo\" is empty") }
        guard Self.isIdentifier(type) else {
            throw PhotomemoError(.badJob, "\"type\" must be a name of letters, digits and _ (got \"\(type)\")")
        }
        if let k = key, k.isEmpty || k.utf8.count > 200 {
            throw PhotomemoError(.badJob, "\"key\" must be 1 to 200 bytes")
        }
        if let f = o["fields"] {
            guard case .object(let fields) = f else {
                throw PhotomemoError(.badJob, "\"fields\" must be an object, got \(f.typeName)")
            }
            for (name, v) in fields {
                guard Self.isIdentifier(name) else {
                    throw PhotomemoError(.badJob, "field name \"\(name)\" must be letters, digits and _")
                }
                guard !Self.reservedFieldNames.contains(name) else {
                    throw PhotomemoError(.badJob, "field name \"\(name)\" is a built-in record key")
                }
                try Self.checkFieldValue(name, v)
            }
            self.fields = fields
        }
    }

    /// A field a stage adds (`WorkingSet.annotate`), by the rules of a new job line's
    /// field: a name of letters, digits and _ that is no built-in record key or receipt,
    /// a string, number, bool or list of strings (no reference: a stage's fact links to no
    /// record), no NUL, and at most a line's size.
    public static func checkAnnotation(_ name: String, _ v: JSONValue) throws {
        guard isIdentifier(name) else { throw PhotomemoError(.badJob, "annotation name \"\(name)\" must be letters, digits and _") }
        guard !reservedFieldNames.contains(name), !receiptFieldNames.contains(name) else {
            throw PhotomemoError(.badJob, "annotation name \"\(name)\" is a built-in record key")
        }
        if case .object = v { throw PhotomemoError(.badJob, "annotation \"\(name)\" must be a string, number, bool or list of strings, got object") }
        try checkFieldValue(name, v)
        try refuseNUL(v, at: "annotation \"\(name)\"")
        guard v.jsonString.utf8.count <= maxLineBytes else {
            throw PhotomemoError(.badJob, "annotation \"\(name)\" is over \(maxLineBytes) bytes of JSON")
        }
    }

    static func checkFieldValue(_ name: String, _ v: JSONValue) throws {
        switch v {
        case .string, .int, .double, .bool: return
        case .array(let a) where a.allSatisfy({ $0.stringValue != nil }): return
        case .object(let o):
            let action = o["action"]?.stringValue ?? "none"
            if o["ref"]?.stringValue != nil, Set(o.keys).isSubset(of: ["ref", "action"]),
               action == "none" || action == "deleteSelf" {
                return
            }
            throw PhotomemoError(.badJob,
                "field \"\(name)\": an object must be a reference {\"ref\": \"<record id>\", \"action\": \"none\"|\"deleteSelf\"}")
        default:
            throw PhotomemoError(.badJob,
                "field \"\(name)\" must be a string, number, bool, list of strings or reference, got \(v.typeName)")
        }
    }

    /// U+0000 anywhere in a line (memo, field names and values, key, photo...) makes it a
    /// bad line at intake: PostgreSQL's text cannot hold it (SQLite's can), so the job would
    /// otherwise fail late, at the index write, and only on one engine. `place` names where.
    static func refuseNUL(_ v: JSONValue, at place: String) throws {
        if let p = v.placeOfNUL(place) { throw nulError(p) }
    }

    static func nulError(_ place: String) -> PhotomemoError {
        PhotomemoError(.badJob, "\(place) contains a NUL character (U+0000), which a job or record cannot hold")
    }

    public static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.utf8.first, s.utf8.count <= 64 else { return false }
        let isAlpha = { (c: UInt8) in (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 }
        return isAlpha(first) && s.utf8.allSatisfy { isAlpha($0) || ($0 >= 48 && $0 <= 57) }
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["memo": .string(memo), "type": .string(type), "fields": .object(fields)]
        if let photo { o["photo"] = .string(photo) }
        if let owner { o["owner"] = .string(owner) }
        if let key { o["key"] = .string(key) }
        if let record { o["record"] = .string(record) }
        if let acl { o["acl"] = acl.json }
        return .object(o)
    }
}
