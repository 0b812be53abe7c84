/// The job definition's `"quota"`: how much each user (not an admin) may keep. Records:
/// their records and their unfinished jobs (each may make one). Bytes: what their
/// records' assets hold in the store, plus their stale temporary files in the inbox.
/// Nil: no limit (the default).
public struct Quota: Sendable, Equatable {
    public var records: Int?
    public var bytes: Int64?

    public init(records: Int? = nil, bytes: Int64? = nil) {
        self.records = records
        self.bytes = bytes
    }

    public var isSet: Bool { records != nil || bytes != nil }

    static let keys = ["records", "bytes"]

    /// The section as a definition gives it (`nil`: no quota); errors name `place`.
    public static func parse(_ value: JSONValue?, place: String) throws -> Quota {
        guard let value else { return Quota() }
        guard case .object(let o) = value else { throw PhotomemoError(.badDefinition, "\(place): \"quota\" must be an object") }
        try JobDefinition.checkKeys(o, allowed: keys, place: "\(place): quota")
        func positive(_ key: String) throws -> Int64? {
            guard let v = o[key] else { return nil }
            guard let n = v.intValue, n > 0 else {
                throw PhotomemoError(.badDefinition, "\(place): quota.\(key) must be a positive integer, not \(v.jsonString)")
            }
            return n
        }
        return Quota(records: try positive("records").map(Int.init), bytes: try positive("bytes"))
    }
}
