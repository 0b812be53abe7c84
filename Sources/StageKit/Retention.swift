/// The job definition's `"retention"`: how long finished jobs (with their history) and
/// quarantine files are kept (DESIGN.md, "Running for months"). Records and their assets
/// are never pruned. Durations are a number with `s`, `m`, `h` or `d`.
public struct Retention: Sendable, Equatable {
    /// Seconds a job stays after it finished, per end state.
    public var done: Double = 30 * 86_400
    /// Also how long a quarantine file stays: it is the failed job's file.
    public var failed: Double = 180 * 86_400
    public var cancelled: Double = 7 * 86_400

    public init() {}

    /// The shortest of the three: pruning runs at least this often (and once a minute).
    public var shortest: Double { min(done, failed, cancelled) }

    static let keys = ["done", "failed", "cancelled"]

    /// The section as a definition gives it (nil: the defaults); errors name `place`.
    public static func parse(_ value: JSONValue?, place: String) throws -> Retention {
        var out = Retention()
        guard let value else { return out }
        guard case .object(let o) = value else {
            throw PhotomemoError(.badDefinition, "\(place): \"retention\" must be an object like {\"done\": \"30d\", \"failed\": \"180d\", \"cancelled\": \"7d\"}")
        }
        try JobDefinition.checkKeys(o, allowed: keys, place: "\(place): retention")
        func duration(_ key: String) throws -> Double? {
            guard let v = o[key] else { return nil }
            guard let s = v.stringValue, let seconds = DurationText.seconds(s), seconds >= 1 else {
                throw PhotomemoError(.badDefinition,
                    "\(place): retention.\(key) must be a duration: at least a second, a number with s, m, h or d (\"90s\", \"12h\", \"30d\"), not \(v.jsonString)")
            }
            return seconds
        }
        out.done = try duration("done") ?? out.done
        out.failed = try duration("failed") ?? out.failed
        out.cancelled = try duration("cancelled") ?? out.cancelled
        return out
    }
}
