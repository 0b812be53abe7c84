/// Who may read and write a record besides its owner. It only grants: the owner is never
/// in it (a record's owner is its job's, from the kernel), and no entry takes anything away.
public struct ACL: Sendable, Equatable {
    public var readers: [String] = []
    public var writers: [String] = []
    public var publicRead = false

    public static let keys: Set<String> = ["read", "write", "public"]
    /// Names a list may hold: every name is a row written and matched for each change of
    /// the record (110,000 readers held index 3.3 s and notify 2.9 s a record).
    public static let maxNames = 256
    static let shape = #"{"read": [users], "write": [users], "public": bool}"#

    public init(readers: [String] = [], writers: [String] = [], publicRead: Bool = false) {
        self.readers = readers
        self.writers = writers
        self.publicRead = publicRead
    }

    public var json: JSONValue {
        ["read": .array(readers.map(JSONValue.string)), "write": .array(writers.map(JSONValue.string)), "public": .bool(publicRead)]
    }

    /// An ACL as stored (in a record or a job): read as it was written.
    public init(json: JSONValue?) {
        readers = json?["read"]?.arrayValue?.compactMap(\.stringValue) ?? []
        writers = json?["write"]?.arrayValue?.compactMap(\.stringValue) ?? []
        publicRead = json?["public"]?.boolValue ?? false
    }

    /// An ACL as a client wrote it — the socket's `update`, a memo line's or sidecar's
    /// `acl` — checked, the one parser of them all: an object of `read` and `write`
    /// (lists of user names) and `public` (a bool), each optional; anything else is
    /// `code` (`bad_request`, `bad_job`) saying what, never silently dropped.
    public init(parsing value: JSONValue, code: PhotomemoError.Code) throws {
        guard case .object(let o) = value else { throw PhotomemoError(code, "\"acl\" must be \(Self.shape), got \(value.typeName)") }
        if let unknown = o.keys.filter({ !Self.keys.contains($0) }).sorted().first {
            throw PhotomemoError(code, "\"acl\" has an unknown key \"\(unknown)\" (valid: public, read, write)")
        }
        func users(_ key: String) throws -> [String] {
            guard let v = o[key] else { return [] }
            guard case .array(let items) = v, let names = Optional(items.compactMap(\.stringValue)), names.count == items.count,
                  names.allSatisfy({ !$0.isEmpty }) else {
                throw PhotomemoError(code, "\"acl\".\(key) must be a list of user names, got \(v.jsonString.prefix(80))")
            }
            guard names.count <= Self.maxNames else {
                throw PhotomemoError(code, "\"acl\".\(key) names \(names.count) users; at most \(Self.maxNames)")
            }
            return names
        }
        self.init(readers: try users("read"), writers: try users("write"))
        if let p = o["public"] {
            guard case .bool(let b) = p else { throw PhotomemoError(code, "\"acl\".public must be true or false, got \(p.typeName)") }
            publicRead = b
        }
    }
}
