import Foundation

/// A JSON document as a value: job lines, stage options, stage results and the journal's
/// JSON columns all use it, so there is one way to read and write JSON in the project.
public enum JSONValue: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public static let emptyObject = JSONValue.object([:])
}

extension JSONValue {
    /// Parses UTF-8 JSON (RFC 8259). Integers that fit in Int64 stay integers, so `1200` is
    /// not `1200.0`; invalid UTF-8, duplicate keys and trailing bytes are errors.
    public static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { raw in
            var p = JSONParser(bytes: raw.bindMemory(to: UInt8.self))
            return try p.parseDocument()
        }
    }

    public static func parse(_ text: String) throws -> JSONValue {
        try parse(Data(text.utf8))
    }

    /// Compact JSON with sorted keys (stable output for files, logs and tests).
    public var jsonString: String {
        var out = ""
        write(to: &out)
        return out
    }

    public var jsonData: Data { Data(jsonString.utf8) }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite {
                out += d == d.rounded() && abs(d) < 1e15 ? "\(Int64(d)).0" : "\(d)"
            } else {
                out += "null"
            }
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                Self.writeString(k, to: &out)
                out += ":"
                o[k]!.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        // Most strings need no escaping: append them whole.
        guard s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            out += s
            out += "\""
            return
        }
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }
}

extension JSONValue {
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var intValue: Int64? { if case .int(let i) = self { return i }; return nil }
    public var doubleValue: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }

    /// Where the first U+0000 is (in a string, or an object's key), this value named
    /// `place`: `place.key[2]`; nil if there is none. PostgreSQL's text cannot hold one, so
    /// nothing the daemon keeps may (job lines, socket requests).
    public func placeOfNUL(_ place: String) -> String? {
        switch self {
        case .string(let s): return s.utf8.contains(0) ? place : nil
        case .array(let a):
            for (i, e) in a.enumerated() { if let p = e.placeOfNUL("\(place)[\(i)]") { return p } }
        case .object(let o):
            for (k, e) in o.sorted(by: { $0.key < $1.key }) {
                if k.utf8.contains(0) { return "\(place) key \(k.debugDescription)" }
                if let p = e.placeOfNUL("\(place).\(k)") { return p }
            }
        default: break
        }
        return nil
    }

    /// The JSON type name, for error messages ("expected integer, got string").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, b in b }))
    }
}
