/// One row of a stage's declared options table (fluent-bit's `config_map`): what
/// `photomemo check` validates against and the plugin READMEs and docs/job-definitions.md list.
public struct StageOption: Sendable {
    public enum Kind: String, Sendable {
        case string, integer, number, bool, stringList = "list of strings", object, any
    }

    public let name: String
    public let kind: Kind
    public let defaultValue: JSONValue?
    public let description: String

    public init(_ name: String, _ kind: Kind, default defaultValue: JSONValue? = nil, _ description: String) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        self.description = description
    }

    func accepts(_ v: JSONValue) -> Bool {
        switch (kind, v) {
        case (.any, _), (.string, .string), (.integer, .int), (.number, .int), (.number, .double), (.bool, .bool):
            return true
        case (.object, .object):
            return true
        case (.stringList, .array(let a)):
            return a.allSatisfy { $0.stringValue != nil }
        default:
            return false
        }
    }
}

/// A stage's options after validation against its table: every declared option with a
/// default is present, every present key is declared and of the declared type.
public struct StageOptions: Sendable {
    public let values: [String: JSONValue]

    /// Validates `given` against `table`; `place` names the file and stage for errors.
    public init(validating given: [String: JSONValue], against table: [StageOption], place: String) throws {
        var values: [String: JSONValue] = [:]
        let byName = Dictionary(uniqueKeysWithValues: table.map { ($0.name, $0) })
        for (key, value) in given {
            guard let option = byName[key] else {
                let valid = table.map(\.name).sorted().joined(separator: ", ")
                throw PhotomemoError(.badDefinition,
                    "\(place): unknown option \"\(key)\"; valid options: \(valid.isEmpty ? "(none)" : valid)")
            }
            guard option.accepts(value) else {
                throw PhotomemoError(.badDefinition,
                    "\(place): option \"\(key)\" must be \(option.kind.rawValue), got \(value.typeName)")
            }
            values[key] = value
        }
        for option in table where values[option.name] == nil {
            if let d = option.defaultValue { values[option.name] = d }
        }
        self.values = values
    }

    public subscript(name: String) -> JSONValue? { values[name] }

    public func int(_ name: String) -> Int64? { values[name]?.intValue }
    public func string(_ name: String) -> String? { values[name]?.stringValue }
    public func strings(_ name: String) -> [String]? { values[name]?.arrayValue?.compactMap(\.stringValue) }
}
