import Foundation
import Glibc
import StageKit

/// A full disk (ENOSPC, or EDQUOT for a quota) is an outage, not the job's fault
/// (DESIGN.md: outages wait without spending attempts). A stage run that failed or asked
/// for a retry because it could not write — its error's code or reason says so, or it
/// asked for a retry while the home's filesystem has no room left — waits for the `disk` dependency, shown down in `status`, and goes
/// on when space returns.
enum DiskSpace {
    static let dependency = StageOutcome.diskDependency
    /// Below this many free bytes, the filesystem counts as full.
    static let reserveBytes: UInt64 = 1 << 20

    /// strerror(ENOSPC), strerror(EDQUOT), SQLite's SQLITE_FULL.
    static let fullDiskReasons = ["No space left on device", "Disk quota exceeded", "database or disk is full"]

    static func isFull(_ path: String) -> Bool {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return false }
        return UInt64(st.f_bavail) * UInt64(st.f_frsize) < reserveBytes
    }

    static func isFullDisk(_ reason: String) -> Bool { fullDiskReasons.contains { reason.contains($0) } }

    /// The outcome as the scheduler treats it: a failure of the disk's becomes an outage.
    /// A stage that knew the errno already said so (`StageOutcome(catching:)`: the
    /// `no_space` code); what is left is text from outside the process (an exec child's
    /// reason) and a retry while the home is full (a write that failed without an errno).
    /// A `.fail` is the input's fault by the stage's own word: never an outage only
    /// because the disk happens to be nearly full.
    static func classify(_ outcome: StageOutcome, home: String) -> StageOutcome {
        switch outcome {
        case .retry(let r, _) where isFullDisk(r) || isFull(home): .noSpace(r)
        case .fail(let r) where isFullDisk(r): .noSpace(r)
        default: outcome
        }
    }

    /// Runs a start-up write (resuming interrupted jobs, the heartbeat) until it is not
    /// refused for space: a daemon killed on a full disk must come up once space returns,
    /// as a running one goes on, not exit and leave its jobs until someone starts it.
    static func waitingForSpace<T>(_ what: String, _ body: () throws -> T) throws -> T {
        var delay = 0.25, logged = false
        while true {
            do { return try body() } catch where PhotomemoError.Code.of(error) == .noSpace || isFullDisk("\(error)") {
                if !logged { Log.error("\(what): \(error); waiting for space before starting") }
                logged = true
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
            }
        }
    }
}
