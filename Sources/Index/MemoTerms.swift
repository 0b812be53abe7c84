/// A memo's distinct tokens (SQLite's `record_tokens`) and lexemes (PostgreSQL's
/// `memo_tsv`), cut before its record's write transaction: cutting a 1 MiB memo takes
/// long enough that, inside the transaction, it held the writer (on SQLite the journal's
/// too) and so everyone's pipeline (issue 25).
struct MemoTerms: Sendable {
    let memo: String
    /// Distinct, sorted.
    let tokens: [String]

    init(_ memo: String) {
        self.memo = memo
        tokens = Set(FullText.tokens(memo)).sorted()
    }

    /// The lexemes, space-separated (tokens hold no spaces), for `FullText.lexemesSQL`.
    var lexemes: String { tokens.filter { $0.utf8.count <= FullText.maxTokenBytes }.joined(separator: " ") }

    /// These terms if they are `memo`'s, else `memo`'s cut now.
    func of(_ memo: String) -> MemoTerms { memo == self.memo ? self : MemoTerms(memo) }
}
