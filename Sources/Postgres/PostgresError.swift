import StageKit

/// A PostgreSQL failure, sorted so a caller can treat an outage as an outage: `unavailable`
/// (no server, connection lost, server shutting down) waits and reconnects; `rejected` (the
/// server answered but refused us: credentials, unknown database) is configuration;
/// `query` is the statement's own error, with its SQLSTATE.
public struct PostgresError: CodedError, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case unavailable, rejected, query
    }

    public let kind: Kind
    /// Five-character SQLSTATE (e.g. `23505`) when the server sent one.
    public let sqlState: String?
    public let message: String

    public init(_ kind: Kind, sqlState: String? = nil, _ message: String) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
    }

    public var isUnavailable: Bool { kind == .unavailable }
    public var isOutage: Bool { isUnavailable }
    public var isUniqueViolation: Bool { sqlState == Self.uniqueViolation }
    /// Serialization failure or deadlock: the transaction may simply be run again.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    public static let uniqueViolation = "23505"
    public static let foreignKeyViolation = "23503"
    public static let undefinedTable = "42P01"
    /// Cancelled, e.g. by `statement_timeout`.
    public static let queryCanceled = "57014"

    public var description: String {
        "PostgreSQL \(kind.rawValue)\(sqlState.map { " [\($0)]" } ?? ""): \(message)"
    }

    /// The project-wide error, for callers that report through `PhotomemoError`.
    public var photomemoError: PhotomemoError { PhotomemoError(errorCode ?? .database, description) }

    /// SQLSTATE 53100 (disk_full) is the server's disk: no space, as ENOSPC is here.
    public var errorCode: PhotomemoError.Code? { sqlState == Self.diskFull ? .noSpace : nil }
    public static let diskFull = "53100"

    /// SQLSTATEs that mean "the server is going away or cannot take us now", not "your query".
    static func isOutage(sqlState s: String) -> Bool {
        s.hasPrefix("08")                               // connection exception
            || s == "57P01" || s == "57P02" || s == "57P03" // admin/crash shutdown, cannot connect now
            || s == "53300"                             // too many connections
    }

    /// A failed connection attempt: the server's refusals are configuration, anything
    /// else (refused, timed out, starting up) an outage.
    static func connectFailure(_ message: String) -> PostgresError {
        let refusals = ["does not exist", "authentication failed", "no password supplied",
                        "no pg_hba.conf entry", "permission denied", "invalid connection option",
                        "invalid URI", "invalid integer value"]
        let rejected = refusals.contains { message.contains($0) }
        return PostgresError(rejected ? .rejected : .unavailable, message)
    }
}
