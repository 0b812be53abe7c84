/// A duration as a job definition writes it (DESIGN.md, "Running for months"): a whole
/// number with `s`, `m`, `h` or `d` ("30d", "2s"); "0" alone is zero.
public enum DurationText {
    static let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]

    /// The seconds `text` names; nil when it is not a duration.
    public static func seconds(_ text: String) -> Double? {
        if text == "0" { return 0 }
        guard let unit = text.last, let scale = units[unit] else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }), let n = Int(digits), n >= 0 else { return nil }
        return Double(n) * scale
    }

    /// `key`'s value in a definition as seconds; errors name `place`.
    public static func parse(_ value: JSONValue, key: String, place: String) throws -> Double {
        guard let text = value.stringValue, let s = seconds(text) else {
            throw PhotomemoError(.badDefinition,
                "\(place): \"\(key)\" must be a duration, a whole number with s, m, h or d (\"30d\", \"12h\"), or \"0\"; not \(value.jsonString)")
        }
        return s
    }
}
