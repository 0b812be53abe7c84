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

    /// SIGPIPE must not kill a daemon that writes to sockets and pipes.
    public static func ignoreSIGPIPE() { pm_ignore_signal(SIGPIPE) }
}
