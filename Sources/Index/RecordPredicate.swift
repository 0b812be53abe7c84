import Foundation
import StageKit

/// A parsed CloudKit-style predicate (DESIGN.md, "Records"):
/// `salesPrice >= 100 AND memo CONTAINS "receipt"`, `code IN {"A","B"}`,
/// `taken BETWEEN {DATE("2026-01-01"), DATE("2026-02-01")}`, `NOT (...)`, `TRUEPREDICATE`.
public indirect enum RecordPredicate: Equatable, Sendable {
    case always
    case never
    case not(RecordPredicate)
    case and(RecordPredicate, RecordPredicate)
    case or(RecordPredicate, RecordPredicate)
    case compare(key: String, op: Operator, value: Literal)
    case beginsWith(key: String, prefix: String)
    case contains(key: String, value: Literal)
    case oneOf(key: String, values: [Literal])
    case between(key: String, low: Literal, high: Literal)

    public enum Operator: String, Sendable, CaseIterable {
        case eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">="
    }

    public enum Literal: Equatable, Sendable {
        case string(String)
        case number(Double)
        case bool(Bool)
        /// Unix seconds.
        case date(Double)
    }
}

/// A malformed predicate: the message says what and `column` (1-based) where; column 0
/// is the predicate as a whole (too complex for SQLite, found when compiled).
public struct PredicateSyntaxError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public let column: Int
    /// What was malformed, as a user is told: `predicate`, or `sort` for the sort keys.
    public var subject = "predicate"
    public var description: String { column > 0 ? "\(message) at column \(column)" : message }
}

/// Sort descriptors: `-salesPrice,costRate` (`-` = descending).
public struct SortKey: Equatable, Sendable {
    public let key: String
    public let descending: Bool

    public init(key: String, descending: Bool) {
        self.key = key
        self.descending = descending
    }

    /// Each key is two correlated subqueries in the ORDER BY: 1,000 of them went past what
    /// SQLite parses, and no one sorts by more than a few.
    public static let maxKeys = 32

    public static func parse(_ text: String) throws -> [SortKey] {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return [] }
        var column = 1
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maxKeys else {
            throw PhotomemoError(.badRequest, "sort: \(parts.count) keys; at most \(maxKeys) may be given")
        }
        return try parts.map { part in
            defer { column += part.count + 1 }
            var s = part.trimmingCharacters(in: .whitespaces)
            var descending = false
            if s.hasPrefix("-") { descending = true; s.removeFirst() } else if s.hasPrefix("+") { s.removeFirst() }
            guard MemoJob.isIdentifier(s) else {
                throw PredicateSyntaxError(message: "sort key \"\(part)\" is not a field name", column: column, subject: "sort")
            }
            return SortKey(key: s, descending: descending)
        }
    }
}

/// Dates in predicates and fields: full ISO-8601 date-time, or a plain date (UTC midnight).
public enum ISODate {
    public static func parse(_ s: String) -> Double? {
        let withZone = ISO8601DateFormatter()
        if let d = withZone.date(from: s) { return d.timeIntervalSince1970 }
        let frac = ISO8601DateFormatter()
        frac.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = frac.date(from: s) { return d.timeIntervalSince1970 }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        if s.count == 10, let d = day.date(from: s) { return d.timeIntervalSince1970 }
        return nil
    }

    /// Whether a job-line string is a date by the rule of DESIGN.md (full date-time form).
    public static func isDateTime(_ s: String) -> Bool {
        s.count >= 20 && s.dropFirst(10).first == "T" && parse(s) != nil
    }
}
