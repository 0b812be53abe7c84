import Glibc
import StageKit

/// The process groups of the subprocesses running now (exec stages, exec sinks), so that
/// the daemon's shutdown can end them: `terminate()` sends SIGTERM to every group and
/// makes each running `Subprocess.run` escalate to SIGKILL after its grace; `killAll()`
/// is the last word before `exit`. Once stopping, no new subprocess starts.
///
/// Long-lived groups (exec workers, `WorkerProcess`) are stopped gracefully instead: their
/// `stop` closes their stdin and ends them later if they do not exit; `waitForAll` lets
/// the daemon give them that time after its loop has ended.
public final class SubprocessGroups: Sendable {
    public static let shared = SubprocessGroups()

    private struct State {
        var live: Set<pid_t> = []
        var longLived: [pid_t: @Sendable () -> Void] = [:]
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

    /// Records a long-lived group with its graceful `stop`; false when stopping.
    func register(_ pgid: pid_t, stop: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { s in
            s.live.insert(pgid)
            s.longLived[pgid] = stop
            return !s.stopping
        }
    }

    func unregister(_ pgid: pid_t) {
        state.withLock { s in
            s.live.remove(pgid)
            s.longLived[pgid] = nil
        }
    }

    /// Waits (blocking: after the loop has ended) until no group is live, or `ms` passed.
    public func waitForAll(upToMs ms: Int) {
        let deadline = Subprocess.nowNs() + UInt64(ms) * 1_000_000
        while liveCount > 0 && Subprocess.nowNs() < deadline { usleep(20_000) }
    }

    /// SIGTERM to every live group; each run sends SIGKILL after its grace if the group
    /// is still there. Idempotent.
    public func terminate() {
        let (groups, longLived) = state.withLock { s in
            s.stopping = true
            return (s.live, s.longLived)
        }
        for g in groups where longLived[g] == nil { kill(-g, SIGTERM) }
        for stop in longLived.values { stop() }
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
