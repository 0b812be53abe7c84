/// The job definition's `"inbox"` section: how the daemon treats what lands in the inbox
/// beyond photos (more keys follow with the sync-safe inbox: `ignore`).
public struct InboxOptions: Sendable, Equatable {
    /// What becomes of an inbox photo once its original is durably stored: `delete`,
    /// `move` (to `HOME/done/`), or `keep` — for a folder a two-way sync tool owns, where
    /// the daemon writes nothing at all (no removal, no rename, no quarantine move).
    public enum Originals: String, Sendable, Equatable, CaseIterable {
        case delete, move, keep

        /// The mode named `text`; a `badDefinition` error naming `key` otherwise.
        public static func parse(_ value: JSONValue, key: String) throws -> Originals {
            guard let text = value.stringValue, let mode = Originals(rawValue: text) else {
                throw PhotomemoError(.badDefinition, "\(key) must be delete, move or keep, not \(value.jsonString)")
            }
            return mode
        }
    }

    /// As given (`"inbox": {"originals": ...}`, or its old name, the upload stage's
    /// `keep_originals`); nil when neither is: `originalsMode` is then `delete`.
    public var originals: Originals?
    public var originalsMode: Originals { originals ?? .delete }

    /// A file under a name the inbox ignores (a transfer tool's temporary name, a dot
    /// file) untouched this long is reported (`photomemo inbox`, `status`): a transfer that
    /// died, or someone filling the disk under a name that is never taken.
    public var staleTempSeconds: Double = 86_400

    public init() {}

    static let keys = ["stale_temp", "originals"]

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
        if let v = o["originals"] { options.originals = try Originals.parse(v, key: "\(place): inbox.originals") }
        return options
    }

    /// `90s`, `30m`, `24h`, `7d` in seconds; nil for anything else.
    public static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let n = Double(text.dropLast()), n.isFinite, n >= 0 else { return nil }
        return n * unit
    }
}
