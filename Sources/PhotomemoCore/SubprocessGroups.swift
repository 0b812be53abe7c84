import Glibc
import StageKit

/// The process groups of the subprocesses running now (exec stages, exec sinks), so that
/// the daemon's shutdown can end them: `terminate()` sends SIGTERM to every group and
/// makes each running `Subprocess.run` escalate to SIGKILL after its grace; `killAll()`
/// is the last word before `exit`. Once stopping, no new subprocess starts.
public final class SubprocessGroups: Sendable {
    public static let shared = SubprocessGroups()

    private struct State {
        var live: Set<pid_t> = []
        var stopping = false
    }

    private let state = LockedValue(State())

    public init() {}

    public var isStopping: Bool { state.value.stopping }
    public var liveCount: Int { state.value.live.count }

    /// Records a group; false when stopping (the caller then ends the child at once).
    func register(_ pgid: pid_t) -> Bool {
        state.withLock { s in
            s.live.insert(pgid)
            return !s.stopping
        }
    }

    func unregister(_ pgid: pid_t) {
        _ = state.withLock { $0.live.remove(pgid) }
    }

    /// SIGTERM to every live group; each run sends SIGKILL after its grace if the group
    /// is still there. Idempotent.
    public func terminate() {
        let groups = state.withLock { s -> Set<pid_t> in
            s.stopping = true
            return s.live
        }
        for g in groups { kill(-g, SIGTERM) }
    }

    /// SIGKILL to every live group (the daemon is about to exit and will not reap them).
    public func killAll() {
        let groups = state.withLock { s -> Set<pid_t> in
            s.stopping = true
            return s.live
        }
        for g in groups { kill(-g, SIGKILL) }
    }
}
