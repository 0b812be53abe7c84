import StageKit

/// A small, conventional command-line parser: `--name value`, `--name=value`, repeatable
/// options, `--flag`, `-h/--help`, positionals, `--` to end options. Errors are usage
/// errors (exit 2) with a did-you-mean for mistyped options.
struct OptionSpec: Sendable {
    let name: String
    let value: String?      // nil for a flag; else the value's placeholder (DIR, FILE, ...)
    let repeats: Bool
    let help: String

    static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, value: nil, repeats: false, help: help) }
    static func value(_ name: String, _ placeholder: String, _ help: String, repeats: Bool = false) -> OptionSpec {
        OptionSpec(name: name, value: placeholder, repeats: repeats, help: help)
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    func int(_ name: String) throws -> Int64? {
        guard let v = value(name) else { return nil }
        guard let i = Int64(v) else { throw UsageError("--\(name) needs an integer, got \"\(v)\"") }
        return i
    }

    /// A number of seconds. Bounded: a timer's milliseconds are integers, and "inf" or
    /// "1e300" made `serve` trap converting them.
    func seconds(_ name: String) throws -> Double? {
        guard let v = value(name) else { return nil }
        guard let d = Double(v), d >= 0, d <= Self.maxSeconds else {
            throw UsageError("--\(name) needs a number of seconds from 0 to \(Int(Self.maxSeconds)), got \"\(v)\"")
        }
        return d
    }

    /// About 31 years.
    static let maxSeconds = 1e9
}

func parseArguments(_ args: ArraySlice<String>, options: [OptionSpec]) throws -> ParsedArguments {
    var out = ParsedArguments()
    var i = args.startIndex
    var onlyPositionals = false
    while i < args.endIndex {
        let a = args[i]
        i += 1
        if onlyPositionals || !a.hasPrefix("-") || a == "-" {
            out.positionals.append(a)
            continue
        }
        if a == "--" { onlyPositionals = true; continue }
        if a == "-h" || a == "--help" { out.flags.insert("help"); continue }
        // Single-letter options (-o FILE) are spelled with one dash.
        let single = !a.hasPrefix("--") && a.count == 2
        guard a.hasPrefix("--") || single else { throw UsageError("unknown option \(a)") }
        var name = String(a.dropFirst(single ? 1 : 2))
        var inline: String?
        if let eq = name.firstIndex(of: "=") {
            inline = String(name[name.index(after: eq)...])
            name = String(name[..<eq])
        }
        guard let spec = options.first(where: { $0.name == name }) else {
            let hint = didYouMean(name, options.map(\.name)).map { "; did you mean --\($0)?" } ?? ""
            throw UsageError("unknown option --\(name)\(hint)")
        }
        if spec.value == nil {
            guard inline == nil else { throw UsageError("--\(name) takes no value") }
            out.flags.insert(name)
            continue
        }
        let v: String
        if let inline { v = inline } else {
            guard i < args.endIndex else { throw UsageError("--\(name) needs a value (\(spec.value!))") }
            v = args[i]
            i += 1
        }
        if !spec.repeats, out.values[name] != nil { throw UsageError("--\(name) given twice") }
        out.values[name, default: []].append(v)
    }
    return out
}
