/// A parameter or column value. Parameters go out as text (bytea as binary, so any byte,
/// zero included, survives); results come back as text and are typed by column type:
/// integers `.int`, float/numeric `.double`, bytea `.bytea`, bool `.int(0/1)`, the rest `.text`.
public enum PostgresValue: Sendable, Equatable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case bytea([UInt8])
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral,
    ExpressibleByFloatLiteral {
    public init(stringLiteral v: String) { self = .text(v) }
    public init(integerLiteral v: Int64) { self = .int(v) }
    public init(floatLiteral v: Double) { self = .double(v) }
    public init(nilLiteral: ()) { self = .null }
    public init(_ s: String?) { self = s.map(PostgresValue.text) ?? .null }
    public init(_ i: Int64?) { self = i.map(PostgresValue.int) ?? .null }
    public init(_ i: Int?) { self = i.map { .int(Int64($0)) } ?? .null }
    public init(_ d: Double?) { self = d.map(PostgresValue.double) ?? .null }
    public init(_ b: [UInt8]?) { self = b.map(PostgresValue.bytea) ?? .null }
}

/// One result row; `columns` is shared by every row of a result.
public struct PostgresRow: Sendable {
    public let values: [PostgresValue]
    public let columns: [String]

    public init(values: [PostgresValue], columns: [String]) {
        self.values = values
        self.columns = columns
    }

    public var count: Int { values.count }
    public subscript(i: Int) -> PostgresValue { values[i] }
    /// The first column of that name (linear: rows are narrow).
    public subscript(name: String) -> PostgresValue? { columns.firstIndex(of: name).map { values[$0] } }

    public func isNull(_ i: Int) -> Bool { values[i] == .null }
    public func int(_ i: Int) -> Int64? {
        switch values[i] {
        case .int(let v): return v
        case .double(let d): return d.isFinite ? Int64(exactly: d.rounded(.towardZero)) : nil
        case .text(let s): return Int64(s)
        default: return nil
        }
    }
    public func double(_ i: Int) -> Double? {
        switch values[i] {
        case .double(let d): return d
        case .int(let v): return Double(v)
        case .text(let s): return Double(s)
        default: return nil
        }
    }
    public func string(_ i: Int) -> String? {
        if case .text(let s) = values[i] { return s }
        return nil
    }
    public func bytes(_ i: Int) -> [UInt8]? {
        if case .bytea(let b) = values[i] { return b }
        return nil
    }
    public func bool(_ i: Int) -> Bool? { int(i).map { $0 != 0 } }
}

enum TypeOID {
    static let bool: UInt32 = 16, bytea: UInt32 = 17, int8: UInt32 = 20, int2: UInt32 = 21, int4: UInt32 = 23
    static let oid: UInt32 = 26, float4: UInt32 = 700, float8: UInt32 = 701, numeric: UInt32 = 1700
}

extension PostgresValue {
    /// Decodes one text-format column value by its type.
    static func decode(_ s: UnsafePointer<CChar>, length: Int, type: UInt32) -> PostgresValue {
        switch type {
        case TypeOID.int2, TypeOID.int4, TypeOID.int8, TypeOID.oid:
            let t = String(cString: s)
            return Int64(t).map(PostgresValue.int) ?? .text(t)
        case TypeOID.float4, TypeOID.float8, TypeOID.numeric:
            let t = String(cString: s)
            return parseDouble(t).map(PostgresValue.double) ?? .text(t)
        case TypeOID.bool:
            return .int(s.pointee == CChar(UInt8(ascii: "t")) ? 1 : 0)
        case TypeOID.bytea:
            return unhex(UnsafeRawBufferPointer(start: s, count: length)).map(PostgresValue.bytea)
                ?? .text(String(cString: s))
        default:
            return .text(String(cString: s))
        }
    }

    /// The text PostgreSQL reads back as the same double (Swift's shortest round-trip form).
    static func formatDouble(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return "\(d)"
    }

    static func parseDouble(_ t: String) -> Double? {
        switch t {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: return Double(t)
        }
    }

    /// `\x0a1b…` (bytea_output = hex, the default since 9.0).
    static func unhex(_ b: UnsafeRawBufferPointer) -> [UInt8]? {
        guard b.count >= 2, b[0] == UInt8(ascii: "\\"), b[1] == UInt8(ascii: "x"), b.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity((b.count - 2) / 2)
        var i = 2
        while i < b.count {
            guard let hi = nibble(b[i]), let lo = nibble(b[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
