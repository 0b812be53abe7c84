import Foundation
import SQL

/// `memo CONTAINS "x"`: every token of x is a token of the memo. SQLite keeps the memo in
/// an FTS5 table (unicode61: letters and digits, case-folded, diacritics removed); on
/// PostgreSQL the store cuts the tokens itself by the same rule and keeps them as a
/// tsvector, so neither the `simple` parser's own ideas (e-mail addresses, hyphenated
/// words, `1.5` as one token) nor stemming change what matches.
enum FullText {
    /// PostgreSQL's limit on one lexeme (2 KB), less a margin.
    static let maxTokenBytes = 2000

    /// The tokens of `text` by unicode61's rule: runs of letters and digits, lowercased,
    /// diacritics removed (`Café` and `cafe` are one token).
    static func tokens(_ text: String) -> [String] {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return asciiTokens(text) }
        return text.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
            .map { $0.lowercased().folding(options: .diacriticInsensitive, locale: nil) }
            .filter { !$0.isEmpty }
    }

    /// `tokens` of ASCII text, byte by byte: in ASCII the letters and digits are [A-Za-z0-9]
    /// and folding is lowercasing. The general path costs microseconds a token (Character,
    /// `lowercased`, `folding`): a 1 MiB memo took 0.4 s in a debug build.
    static func asciiTokens(_ text: String) -> [String] {
        var tokens: [String] = [], current: [UInt8] = []
        func cut() {
            if !current.isEmpty { tokens.append(String(decoding: current, as: UTF8.self)); current.removeAll(keepingCapacity: true) }
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): current.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): current.append(byte + 32)
            default: cut()
            }
        }
        cut()
        return tokens
    }

    /// PostgreSQL: the tsvector of a `lexemes` parameter (each lexeme verbatim, no parsing).
    static let lexemesSQL = "array_to_tsvector(string_to_array(CAST(? AS TEXT), ' '))"

    /// The condition for `memo CONTAINS text` on `dialect`, or nil when no token could match.
    /// `perRecord` (a user's query, PredicateCompiler): tested on each record the caller may
    /// read — on SQLite against the record's own tokens (`record_tokens`) instead of FTS5's
    /// lists over every owner's memos; PostgreSQL's `memo_tsv @@` is a test of the row already.
    static func condition(_ text: String, _ dialect: SQLDialect, _ params: inout [SQLValue], perRecord: Bool = false) -> String? {
        switch dialect {
        case .sqlite where perRecord:
            var seen = Set<String>()
            let words = tokens(text).filter { seen.insert($0).inserted }
            guard !words.isEmpty else { return nil }
            params += words.map(SQLValue.text)
            // Balanced (`joined`): a long text must not make a chain deeper than SQLite allows.
            return PredicateCompiler.joined(words.map { _ in
                "(SELECT 1 FROM record_tokens WHERE record_id = r.id AND token = ? LIMIT 1) IS NOT NULL"
            }, "AND")
        case .sqlite:
            // Each token a quoted FTS5 string: operators in user text (OR, NEAR, *, column
            // filters) are inert; FTS5 folds them as it folded the memo.
            let words = text.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
                .map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
            guard !words.isEmpty else { return nil }
            params.append(.text(words.joined(separator: " ")))
            return "r.rowid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)"
        case .postgres:
            let words = tokens(text)
            guard !words.isEmpty, words.allSatisfy({ $0.utf8.count <= maxTokenBytes }) else { return nil }
            // A tsquery of quoted lexemes joined by AND (tokens hold only letters and digits;
            // quotes and backslashes are escaped all the same).
            let query = words.map { "'" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'" }
            params.append(.text(query.joined(separator: " & ")))
            return "r.memo_tsv @@ CAST(? AS tsquery)"
        }
    }
}
