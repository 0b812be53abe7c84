/// The job definition's `"inbox"` section: how the daemon treats what lands in the inbox
/// beyond photos (more keys follow with the sync-safe inbox: `ignore`, `originals`).
public struct InboxOptions: Sendable, Equatable {
    /// A file under a name the inbox ignores (a transfer tool's temporary name, a dot
    /// file) untouched this long is reported (`photomemo inbox`, `status`): a transfer that
    /// died, or someone filling the disk under a name that is never taken.
    public var staleTempSeconds: Double = 86_400

    public init() {}

    static let keys = ["stale_temp"]

    /// The section as a definition gives it (`nil`: the defaults); errors name `place`.
    public static func parse(_ value: JSONValue?, place: String) throws -> InboxOptions {
        var options = InboxOptions()
        guard let value else { return options }
        guard case .object(let o) = value else { throw PhotomemoError(.badDefinition, "\(place): \"inbox\" must be an object") }
        try JobDefinition.checkKeys(o, allowed: keys, place: "\(place): inbox")
        if let v = o["stale_temp"] {
            guard let text = v.stringValue, let seconds = Self.seconds(text), seconds > 0 else {
                throw PhotomemoError(.badDefinition,
                    "\(place): inbox.stale_temp must be a duration: a number with s, m, h or d (e.g. \"24h\"), not \(v.jsonString)")
            }
            options.staleTempSeconds = seconds
        }
        return options
    }

    /// `90s`, `30m`, `24h`, `7d` in seconds; nil for anything else.
    public static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let n = Double(text.dropLast()), n.isFinite, n >= 0 else { return nil }
        return n * unit
    }
}
