/// A duration as a job definition writes it (DESIGN.md, "Running for months"): a number
/// with `s`, `m`, `h` or `d` ("30d", "2s"; read by `InboxOptions.seconds`), or "0".
public enum DurationText {
    /// `key`'s value in a definition as seconds; errors name `place`.
    public static func parse(_ value: JSONValue, key: String, place: String) throws -> Double {
        guard let text = value.stringValue, let s = text == "0" ? 0 : InboxOptions.seconds(text) else {
            throw PhotomemoError(.badDefinition,
                "\(place): \"\(key)\" must be a duration, a number with s, m, h or d (\"30d\", \"12h\"), or \"0\"; not \(value.jsonString)")
        }
        return s
    }
}
