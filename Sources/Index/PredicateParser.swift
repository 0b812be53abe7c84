
/// Tokenizer + recursive descent for predicates. Grammar:
///
///     or      := and ("OR" and)*
///     and     := unary ("AND" unary)*
///     unary   := "NOT" unary | "(" or ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | test
///     test    := key op literal | key "BEGINSWITH" string | key "CONTAINS" literal
///              | key "IN" "{" literal ("," literal)* "}" | key "BETWEEN" "{" literal "," literal "}"
///     literal := string | number | true | false | DATE("...")
///
/// Keywords are case-insensitive; `&&`, `||` and `!` are accepted too. Errors carry the
/// 1-based column of the offending token.
///
/// Bounded, so a hostile predicate is an error and never a crash: parentheses and `NOT`
/// nest at most `maxDepth` deep (300,000 parentheses once overflowed a pool thread's
/// stack), at most `maxConditions` values in all (each word of a `CONTAINS` text is one),
/// and an `AND`/`OR` chain becomes a
/// balanced tree, so everything that walks the tree — and the SQL compiled from it,
/// which SQLite refuses beyond an expression depth of 1000 — stays shallow.
public struct PredicateParser {
    public static let maxDepth = 64
    /// Values (each comparison's, each of an IN set): a query of 10,000 took 23 s and 1 GB
    /// to plan, which any socket user could ask for; 256 keep it to milliseconds.
    public static let maxConditions = 256

    enum Token: Equatable {
        case word(String), string(String), number(Double), op(String), punct(Character), end
    }

    struct Located { let token: Token; let column: Int }

    private var tokens: [Located] = []
    private var i = 0
    private var depth = 0
    private var conditions = 0

    public static func parse(_ text: String) throws -> RecordPredicate {
        var p = PredicateParser()
        p.tokens = try tokenize(text)
        let result = try p.parseOr()
        guard case .end = p.tokens[p.i].token else { throw p.error("unexpected \(p.describe(p.tokens[p.i].token))") }
        return result
    }

    static func tokenize(_ text: String) throws -> [Located] {
        let chars = Array(text)
        var out: [Located] = []
        var k = 0
        while k < chars.count {
            let c = chars[k], col = k + 1
            if c.isWhitespace { k += 1; continue }
            if c == "\"" || c == "'" {
                var s = ""
                k += 1
                while true {
                    guard k < chars.count else { throw PredicateSyntaxError(message: "unterminated string", column: col) }
                    if chars[k] == c { k += 1; break }
                    if chars[k] == "\\", k + 1 < chars.count { s.append(chars[k + 1]); k += 2; continue }
                    s.append(chars[k]); k += 1
                }
                out.append(Located(token: .string(s), column: col))
            } else if c.isNumber || (c == "-" && k + 1 < chars.count && (chars[k + 1].isNumber || chars[k + 1] == ".")) || c == "." {
                var s = String(c)
                k += 1
                while k < chars.count, chars[k].isNumber || chars[k] == "." || chars[k] == "e" || chars[k] == "E"
                        || ((chars[k] == "-" || chars[k] == "+") && (chars[k - 1] == "e" || chars[k - 1] == "E")) {
                    s.append(chars[k]); k += 1
                }
                guard let v = Double(s), v.isFinite else { throw PredicateSyntaxError(message: "bad number \"\(s)\"", column: col) }
                out.append(Located(token: .number(v), column: col))
            } else if c.isLetter || c == "_" {
                var s = ""
                while k < chars.count, chars[k].isLetter || chars[k].isNumber || chars[k] == "_" { s.append(chars[k]); k += 1 }
                out.append(Located(token: .word(s), column: col))
            } else if let two = k + 1 < chars.count ? String(chars[k...k + 1]) : nil, ["==", "!=", "<=", ">=", "&&", "||"].contains(two) {
                out.append(Located(token: .op(two), column: col)); k += 2
            } else if "<>=!".contains(c) {
                out.append(Located(token: .op(c == "=" ? "==" : String(c)), column: col)); k += 1
            } else if "(){},".contains(c) {
                out.append(Located(token: .punct(c), column: col)); k += 1
            } else {
                throw PredicateSyntaxError(message: "unexpected character \"\(c)\"", column: col)
            }
        }
        out.append(Located(token: .end, column: chars.count + 1))
        return out
    }

    func error(_ message: String) -> PredicateSyntaxError { PredicateSyntaxError(message: message, column: tokens[i].column) }

    func describe(_ t: Token) -> String {
        switch t {
        case .word(let w): "\"\(w)\""
        case .string(let s): "string \"\(s)\""
        case .number(let n): "number \(n)"
        case .op(let o): "\"\(o)\""
        case .punct(let p): "\"\(p)\""
        case .end: "end of predicate"
        }
    }

    func isWord(_ w: String) -> Bool {
        if case .word(let x) = tokens[i].token { return x.uppercased() == w }
        return false
    }

    mutating func parseOr() throws -> RecordPredicate {
        var terms = [try parseAnd()]
        while isWord("OR") || tokens[i].token == .op("||") {
            i += 1
            terms.append(try parseAnd())
        }
        return Self.balanced(terms[...], RecordPredicate.or)
    }

    mutating func parseAnd() throws -> RecordPredicate {
        var terms = [try parseUnary()]
        while isWord("AND") || tokens[i].token == .op("&&") {
            i += 1
            terms.append(try parseUnary())
        }
        return Self.balanced(terms[...], RecordPredicate.and)
    }

    /// `a OP b OP c ...` as a tree of depth log2(n): (a OP b) OP c for three, as a left-to-
    /// right reading gives; ((a OP b) OP (c OP d)) for four.
    static func balanced(_ terms: ArraySlice<RecordPredicate>, _ join: (RecordPredicate, RecordPredicate) -> RecordPredicate) -> RecordPredicate {
        if terms.count == 1 { return terms.first! }
        let mid = terms.startIndex + (terms.count + 1) / 2
        return join(balanced(terms[..<mid], join), balanced(terms[mid...], join))
    }

    /// One level deeper (a parenthesis or a NOT), or an error at the token that went too deep.
    mutating func enter() throws {
        depth += 1
        if depth > Self.maxDepth { throw error("nested deeper than \(Self.maxDepth) levels") }
    }

    /// Runs of letters and digits in `text` (the full-text tokens), counted up to `limit`.
    static func wordCount(_ text: String, upTo limit: Int) -> Int {
        var count = 0, inWord = false
        for c in text {
            let isWordCharacter = c.isLetter || c.isNumber
            if isWordCharacter && !inWord {
                count += 1
                if count >= limit { return count }
            }
            inWord = isWordCharacter
        }
        return count
    }

    mutating func countCondition() throws {
        conditions += 1
        if conditions > Self.maxConditions { throw error("more than \(Self.maxConditions) values (each word of a CONTAINS text is one)") }
    }

    mutating func parseUnary() throws -> RecordPredicate {
        if isWord("NOT") || tokens[i].token == .op("!") {
            try enter(); defer { depth -= 1 }
            i += 1
            return .not(try parseUnary())
        }
        if tokens[i].token == .punct("(") {
            try enter(); defer { depth -= 1 }
            i += 1
            let inner = try parseOr()
            guard tokens[i].token == .punct(")") else { throw error("expected \")\", found \(describe(tokens[i].token))") }
            i += 1
            return inner
        }
        if isWord("TRUEPREDICATE") { i += 1; return .always }
        if isWord("FALSEPREDICATE") { i += 1; return .never }
        return try parseTest()
    }

    static let keywords: Set<String> = ["AND", "OR", "NOT", "IN", "BETWEEN", "BEGINSWITH", "CONTAINS", "TRUEPREDICATE",
                                        "FALSEPREDICATE", "TRUE", "FALSE"]  // not DATE: a field may be called date

    mutating func parseTest() throws -> RecordPredicate {
        guard case .word(let key) = tokens[i].token, !Self.keywords.contains(key.uppercased()) else {
            throw error("expected a field name, found \(describe(tokens[i].token))")
        }
        i += 1
        switch tokens[i].token {
        case .op(let o):
            guard let op = RecordPredicate.Operator(rawValue: o) else { throw error("\"\(o)\" is not a comparison") }
            i += 1
            return .compare(key: key, op: op, value: try parseLiteral())
        case .word(let w):
            i += 1
            switch w.uppercased() {
            case "BEGINSWITH":
                guard case .string(let s) = tokens[i].token else { throw error("BEGINSWITH needs a string") }
                try countCondition()
                i += 1
                return .beginsWith(key: key, prefix: s)
            case "CONTAINS":
                let value = try parseLiteral()
                // Each word of a text is one more term for the full-text engine to match
                // (60,000 words took 6 s): they count like an IN set's values.
                if case .string(let text) = value {
                    for _ in 1..<max(1, Self.wordCount(text, upTo: Self.maxConditions + 1)) { try countCondition() }
                }
                return .contains(key: key, value: value)
            case "IN":
                let values = try parseSet()
                guard !values.isEmpty else { throw error("IN needs at least one value") }
                return .oneOf(key: key, values: values)
            case "BETWEEN":
                let column = tokens[i].column
                let values = try parseSet()
                guard values.count == 2 else { throw PredicateSyntaxError(message: "BETWEEN needs {low, high}", column: column) }
                return .between(key: key, low: values[0], high: values[1])
            default:
                i -= 1
                throw error("expected a comparison, BEGINSWITH, CONTAINS, IN or BETWEEN after \"\(key)\", found \"\(w)\"")
            }
        default:
            throw error("expected a comparison after \"\(key)\", found \(describe(tokens[i].token))")
        }
    }

    mutating func parseSet() throws -> [RecordPredicate.Literal] {
        guard tokens[i].token == .punct("{") else { throw error("expected \"{\"") }
        i += 1
        var values: [RecordPredicate.Literal] = []
        if tokens[i].token == .punct("}") { i += 1; return values }
        while true {
            values.append(try parseLiteral())
            if tokens[i].token == .punct(",") { i += 1; continue }
            guard tokens[i].token == .punct("}") else { throw error("expected \",\" or \"}\"") }
            i += 1
            return values
        }
    }

    mutating func parseLiteral() throws -> RecordPredicate.Literal {
        let t = tokens[i]
        try countCondition()
        switch t.token {
        case .string(let s): i += 1; return .string(s)
        case .number(let n): i += 1; return .number(n)
        case .word(let w) where w.uppercased() == "TRUE": i += 1; return .bool(true)
        case .word(let w) where w.uppercased() == "FALSE": i += 1; return .bool(false)
        case .word(let w) where w.uppercased() == "DATE":
            i += 1
            guard tokens[i].token == .punct("(") else { throw error("expected \"(\" after DATE") }
            i += 1
            guard case .string(let s) = tokens[i].token else { throw error("DATE needs a string") }
            guard let d = ISODate.parse(s) else { throw error("\"\(s)\" is not an ISO-8601 date") }
            i += 1
            guard tokens[i].token == .punct(")") else { throw error("expected \")\"") }
            i += 1
            return .date(d)
        default:
            throw error("expected a value, found \(describe(t.token))")
        }
    }
}
