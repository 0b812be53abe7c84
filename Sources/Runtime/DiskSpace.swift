import EventLoop
import Foundation
import Glibc
import StageKit

/// A full disk (ENOSPC, or EDQUOT for a quota) is an outage, not the job's fault
/// (DESIGN.md: outages wait without spending attempts). A stage run that failed or asked
/// for a retry because it could not write — its error's `no_space` code says so, or it
/// asked for a retry while the home's filesystem has no room left — waits for the `disk`
/// dependency, shown down in `status`, and goes on when space returns.
enum DiskSpace {
    static let dependency = StageOutcome.diskDependency
    /// Below this many free bytes, the filesystem counts as full.
    static let reserveBytes: UInt64 = 1 << 20

    static func isFull(_ path: String) -> Bool {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return false }
        return UInt64(st.f_bavail) * UInt64(st.f_frsize) < reserveBytes
    }

    /// The outcome as the scheduler treats it: a retry or failure whose code is `no_space`
    /// (set where the errno or status was read, or by an exec program's `"code"`) becomes
    /// the disk's outage, and so does a retry while the home is full (a write that failed
    /// without an errno). The message is never read: a `.fail` of another code is the
    /// input's fault by the stage's own word, whatever its text, and never an outage only
    /// because the disk happens to be nearly full.
    static func classify(_ outcome: StageOutcome, home: String) -> StageOutcome {
        switch outcome {
        case .retry(let e, _) where e.code == .noSpace || isFull(home): .noSpace(e.message)
        case .fail(let e) where e.code == .noSpace: .noSpace(e.message)
        default: outcome
        }
    }

    /// Runs a start-up write (resuming interrupted jobs, the heartbeat) until it is not
    /// refused for space: a daemon killed on a full disk must come up once space returns,
    /// as a running one goes on, not exit and leave its jobs until someone starts it.
    static func waitingForSpace<T>(_ what: String, _ body: () throws -> T) throws -> T {
        var delay = 0.25, logged = false
        while true {
            do { return try body() } catch where PhotomemoError.Code.of(error) == .noSpace {
                if !logged { Log.error("\(what): \(error); waiting for space before starting") }
                logged = true
                if let signal = SignalWatcher.waitForStopSignal(upToMs: Int(delay * 1000)) { throw StoppedWhileWaiting(signal: signal, waitingFor: "space") }
                delay = min(delay * 2, 5)
            }
        }
    }
}
