import CUV
import Glibc

/// Delivers a Unix signal on the loop thread.
public final class SignalWatcher: LoopHandle {
    private var callback: ((Int32) -> Void)?

    public init(loop: EventLoop, signal signum: Int32, _ callback: @escaping (Int32) -> Void) throws {
        super.init(type: UV_SIGNAL)
        let s = raw.assumingMemoryBound(to: uv_signal_t.self)
        try uvCheck(uv_signal_init(loop.uv, s), "uv_signal_init")
        retainFromHandle()
        self.callback = callback
        // A child started from a Dispatch/Swift-concurrency thread inherits a mask that
        // blocks SIGTERM/SIGINT (PLATFORM.md): unblock, or uv_signal never fires.
        pm_unblock_signal(signum)
        try uvCheck(uv_signal_start(s, { s, signum in
            LoopHandle.owner(UnsafeMutableRawPointer(s), as: SignalWatcher.self).callback?(signum)
        }, signum), "uv_signal_start")
    }

    override func didClose() { callback = nil }

    /// Before the watchers are in place, SIGTERM, SIGINT and SIGHUP wait (held pending)
    /// instead of ending a half-started daemon by their default action; each watcher
    /// unblocks its signal on the loop thread, so a held one is handled once the loop runs.
    /// Call first, before any thread starts: threads inherit the mask, which also keeps
    /// these signals the loop thread's.
    public static func holdStopSignals() { pm_hold_stop_signals() }

    /// Sleeps up to `ms` unless a held SIGTERM or SIGINT arrives (or has): that signal, taken.
    public static func waitForStopSignal(upToMs ms: Int) -> Int32? {
        let s = pm_wait_stop_signal(ms)
        return s == 0 ? nil : s
    }

    /// SIGPIPE must not kill a daemon that writes to sockets and pipes.
    public static func ignoreSIGPIPE() { pm_ignore_signal(SIGPIPE) }
}
