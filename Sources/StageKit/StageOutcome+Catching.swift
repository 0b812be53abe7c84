import Foundation

/// An error of a module PhotomemoCore does not see (PostgreSQL's) that knows its code,
/// and whether it is an outage (the server gone or restarting, not the statement's fault).
public protocol CodedError: Error {
    var errorCode: PhotomemoError.Code? { get }
    var isOutage: Bool { get }
}

extension CodedError {
    public var isOutage: Bool { false }
}

extension PhotomemoError.Code {
    /// The stable code an error carries, when it carries one: set where the errno or status
    /// was known (`SystemError`, `PhotomemoError`, `StoreFailure`, Foundation's POSIX errors).
    public static func of(_ error: any Error) -> PhotomemoError.Code? {
        switch error {
        case let e as SystemError: return e.code
        case let e as PhotomemoError: return e.code
        case let e as StoreFailure: return e.code
        case let e as any CodedError: return e.errorCode
        case let e as POSIXError: return SystemError.code(e.code.rawValue)
        default:
            // Foundation's file calls wrap the errno in a CocoaError's underlying error.
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            guard let u = underlying, u.domain == NSPOSIXErrorDomain else { return nil }
            return SystemError.code(Int32(u.code))
        }
    }

    /// `of(error)`, or `fallback` for an error that carries no code.
    public static func of(_ error: any Error, or fallback: PhotomemoError.Code) -> PhotomemoError.Code {
        of(error) ?? fallback
    }
}

extension StageOutcome {
    /// The dependency a full disk is shown as in `status` (DESIGN.md: outages wait without
    /// spending attempts).
    public static let diskDependency = "disk"

    /// A full disk's outage: the job waits for space instead of failing.
    public static func noSpace(_ message: String) -> StageOutcome {
        .unavailable(dependency: diskDependency, .noSpace, "no space left to write (\(message))")
    }

    /// The one ladder from a thrown error to an outcome, by the error's code, never its
    /// text: no space (any error) → the disk's outage; a store's failure by its kind, its
    /// outage shown as `dependency`, as is a database's (`CodedError.isOutage`: a record
    /// index on a PostgreSQL server that restarts); anything else as `otherwise` says
    /// (`byCode` unless the stage knows its other errors are transient).
    public init(catching error: any Error, dependency: String = "store",
                otherwise: (any Error) -> StageOutcome = StageOutcome.byCode) {
        if PhotomemoError.Code.of(error) == .noSpace {
            self = .noSpace((error as? StoreFailure)?.message ?? (error as? PhotomemoError)?.message ?? "\(error)")
        } else if let e = error as? StoreFailure {
            switch e.kind {
            case .unavailable: self = .unavailable(dependency: dependency, e.code ?? .dependency, e.message)
            case .transient: self = .retry(e.code ?? .io, e.message)
            case .permanent: self = .fail(e.code ?? .stageError, e.message)
            }
        } else if let e = error as? any CodedError, e.isOutage {
            self = .unavailable(dependency: dependency, e.errorCode ?? .dependency, "\(error)")
        } else {
            self = otherwise(error)
        }
    }

    /// A `PhotomemoError` by its code: `io` is retried, any other is the input's fault and
    /// fails; an error without a code fails with its description (`stage_error`).
    public static func byCode(_ error: any Error) -> StageOutcome {
        guard let e = error as? PhotomemoError else { return .fail(.of(error, or: .stageError), "\(error)") }
        return e.code == .io ? .retry(e) : .fail(e)
    }
}
