/// A duration as a job definition writes it (DESIGN.md, "Running for months"): a number
/// with `s`, `m`, `h` or `d` ("30d", "2s", "0.5s"), or "0" where a key allows none. The one
/// parser of durations: `inbox`, `retention` and `trash` read theirs here.
public enum DurationText {
    /// `key`'s value in a definition as seconds; errors name `place`.
    public static func parse(_ value: JSONValue, key: String, place: String) throws -> Double {
        guard let text = value.stringValue, let s = text == "0" ? 0 : seconds(text) else {
            throw PhotomemoError(.badDefinition,
                "\(place): \"\(key)\" must be a duration, a number with s, m, h or d (\"30d\", \"12h\"), or \"0\"; not \(value.jsonString)")
        }
        return s
    }

    /// "90s", "15m", "12h", "30d" in seconds; nil for anything else (no sign, no space, at
    /// most 100 years).
    public static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let n = Double(text.dropLast()), n.isFinite, n >= 0 else { return nil }
        let seconds = n * unit
        return seconds <= 100 * 365 * 86_400 ? seconds : nil
    }
}
