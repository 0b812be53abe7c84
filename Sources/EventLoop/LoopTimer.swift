import CUV

/// A libuv timer: one-shot or repeating, restartable.
public final class LoopTimer: LoopHandle {
    private var callback: (() -> Void)?

    public init(loop: EventLoop) throws {
        super.init(type: UV_TIMER)
        try uvCheck(uv_timer_init(loop.uv, raw.assumingMemoryBound(to: uv_timer_t.self)), "uv_timer_init")
        retainFromHandle()
    }

    /// Fires after `afterMs`, then every `repeatMs` when non-zero. Restarting replaces the callback.
    public func start(afterMs: UInt64, repeatMs: UInt64 = 0, _ callback: @escaping () -> Void) {
        precondition(!isClosed, "timer used after close")
        self.callback = callback
        uv_timer_start(raw.assumingMemoryBound(to: uv_timer_t.self), { t in
            LoopHandle.owner(UnsafeMutableRawPointer(t), as: LoopTimer.self).callback?()
        }, afterMs, repeatMs)
    }

    public func stop() {
        guard !isClosed else { return }
        uv_timer_stop(raw.assumingMemoryBound(to: uv_timer_t.self))
    }

    override func didClose() { callback = nil }
}
