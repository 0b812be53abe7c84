/// A small recursive-descent JSON parser over bytes. Hand-written rather than
/// JSONSerialization so that integer/double/bool stay distinct on Linux and errors carry
/// the byte offset of the problem.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0
    var depth = 0
    static let maxDepth = 64

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws -> JSONValue {
        let v = try parseValue()
        skipSpace()
        if i != bytes.count { throw fail("unexpected bytes after the JSON value") }
        return v
    }

    func fail(_ what: String) -> PhotomemoError {
        PhotomemoError(.badJSON, "\(what) at byte \(i)")
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    mutating func parseValue() throws -> JSONValue {
        skipSpace()
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw fail("unexpected end of input") }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func nest() throws {
        depth += 1
        if depth > Self.maxDepth { throw fail("nesting deeper than \(Self.maxDepth)") }
    }

    mutating func parseObject() throws -> JSONValue {
        try nest(); defer { depth -= 1 }
        i += 1
        var out: [String: JSONValue] = [:]
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(out) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            let value = try parseValue()
            if out.updateValue(value, forKey: key) != nil { throw fail("duplicate key \"\(key)\"") }
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(out) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray() throws -> JSONValue {
        try nest(); defer { depth -= 1 }
        i += 1
        var out: [JSONValue] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
        while true {
            out.append(try parseValue())
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func parseString() throws -> String {
        i += 1
        var utf8: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") { i += 1; break }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { utf8.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): utf8.append(0x22)
            case UInt8(ascii: "\\"): utf8.append(0x5C)
            case UInt8(ascii: "/"): utf8.append(0x2F)
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("unpaired surrogate")
                }
                utf8.append(contentsOf: Array(String(Unicode.Scalar(scalar)!).utf8))
            default: throw fail("invalid escape")
            }
        }
        guard let s = String(validating: utf8, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
        return s
    }

    mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    mutating func parseNumber() throws -> JSONValue {
        let start = i
        var isInteger = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.i
            while p.i < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.i]) { p.i += 1 }
            return p.i - s
        }
        let intDigits = digits(&self)
        guard intDigits > 0 else { throw fail("invalid number") }
        if intDigits > 1, bytes[i - intDigits] == UInt8(ascii: "0") { throw fail("leading zero in number") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard digits(&self) > 0 else { throw fail("invalid number") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { throw fail("invalid number") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        if isInteger, let v = Int64(text) { return .int(v) }
        guard let d = Double(text), d.isFinite else { throw fail("number out of range") }
        return .double(d)
    }
}
