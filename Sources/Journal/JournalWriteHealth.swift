import StageKit

/// Since when the journal's writes fail, and the last reason: what `status` shows for
/// it, since every write — intake's, claims, outcomes, settings — goes through one place.
public struct JournalWriteFailure: Sendable, Equatable {
    public let since: Double
    public let error: String
}

/// The journal's write health: failing from a write the engine refused (a full disk, a
/// read-only file, PostgreSQL gone) until one commits again.
final class JournalWriteHealth: Sendable {
    private let failure = LockedValue<JournalWriteFailure?>(nil)

    var current: JournalWriteFailure? { failure.value }

    func succeeded() { failure.withLock { $0 = nil } }

    /// A job's or request's own refusal (`JobControlError`: not found, conflict) says
    /// nothing about the journal; anything else thrown out of a write is the engine's.
    func failed(_ error: Error, now: Double = unixNow()) {
        guard !(error is JobControlError) else { return }
        failure.withLock { $0 = JournalWriteFailure(since: $0?.since ?? now, error: "\(error)") }
    }
}

/// Write transactions the journal committed since the process started (`Journal.write`;
/// a PostgreSQL claim is one statement outside it and not counted).
public struct JournalCommits: Sendable, Equatable {
    public var transactions = 0
    /// Those whose commit waited for the disk (all but SQLite's claims).
    public var durable = 0
}
