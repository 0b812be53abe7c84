/// The job definition's `"inbox"` section: how the daemon treats what lands in the inbox
/// beyond photos, how far a rescan of its tree goes, and what becomes of a stored original.
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
    /// How deep below the inbox folders are looked into (`depth`): photos in folders deeper
    /// stay where they are, listed as left alone. Bounds a hostile tree (depth 1,000).
    public var depth = 16
    /// How many entries a rescan looks at in one turn of the intake lane
    /// (`entries_per_turn`): a folder of a million files is walked a slice at a time, new
    /// drops taken in between, and the walk goes on where it stopped.
    public var entriesPerTurn = 1000
    /// Globs (fnmatch) of names never taken, beyond the built-in transfer names
    /// (`ignore`): matched against a file's base name and its path relative to the inbox.
    public var ignore: [String] = []

    public init() {}

    /// A file closed after writing in place is taken once nothing changed it for this long:
    /// rsync --inplace, rclone and Samba set its time right after they close it, and a
    /// file gone by then is their failed transfer. A file renamed in is taken at once.
    public var quietAfterCloseSeconds: Double = 1

    static let keys = ["originals", "stale_temp", "quiet_after_close", "depth", "entries_per_turn", "ignore"]

    /// What each key means, for error messages and docs/job-definitions.md.
    public static let descriptions: [(key: String, meaning: String)] = [
        ("originals", "what becomes of a photo once its original is stored: delete (the default), move (to HOME/done/) or keep (nothing in the inbox is ever written)"),
        ("stale_temp", "a file under an ignored name untouched this long is reported (a duration, default 24h)"),
        ("quiet_after_close", "a file written in place is taken once untouched this long after its close (a duration, default 1s; 0s: at once); one renamed in is taken at once"),
        ("depth", "how many folder levels below the inbox are looked into (1-4096, default 16)"),
        ("entries_per_turn", "how many entries a rescan looks at before new drops get their turn (16-1000000, default 1000)"),
        ("ignore", "globs (fnmatch) of names never taken, matched against the base name and the path in the inbox"),
    ]

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
        if let v = o["quiet_after_close"] {
            guard let text = v.stringValue, let seconds = Self.seconds(text), seconds <= 60 else {
                throw PhotomemoError(.badDefinition,
                    "\(place): inbox.quiet_after_close must be a duration of at most 60s: a number with s or m (e.g. \"1s\", \"0.5s\"), not \(v.jsonString)")
            }
            options.quietAfterCloseSeconds = seconds
        }
        if let v = o["originals"] { options.originals = try Originals.parse(v, key: "\(place): inbox.originals") }
        options.depth = try integer(o["depth"], "depth", in: 1...4096, place: place) ?? options.depth
        options.entriesPerTurn = try integer(o["entries_per_turn"], "entries_per_turn", in: 16...1_000_000, place: place) ?? options.entriesPerTurn
        if let v = o["ignore"] {
            guard let list = v.arrayValue, let globs = Optional(list.compactMap(\.stringValue)), globs.count == list.count,
                  !globs.contains(where: { $0.isEmpty || $0.contains("\0") }) else {
                throw PhotomemoError(.badDefinition, "\(place): inbox.ignore must be a list of non-empty globs (\"*.mov\", \"Backup/*\"), not \(v.jsonString)")
            }
            options.ignore = globs
        }
        return options
    }

    private static func integer(_ v: JSONValue?, _ key: String, in range: ClosedRange<Int>, place: String) throws -> Int? {
        guard let v else { return nil }
        guard let n = v.intValue, range.contains(Int(n)) else {
            throw PhotomemoError(.badDefinition, "\(place): inbox.\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(v.jsonString)")
        }
        return Int(n)
    }

    /// `90s`, `30m`, `24h`, `7d` in seconds; nil for anything else.
    public static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let n = Double(text.dropLast()), n.isFinite, n >= 0 else { return nil }
        return n * unit
    }
}
