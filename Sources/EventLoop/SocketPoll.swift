import CUV
import StageKit

/// Readable events on a descriptor someone else owns (a libpq connection's socket): the
/// callback runs on the loop thread each time it polls readable, until `stop()` or
/// `close()`; it gets an error instead when polling fails. Level-triggered: read what is
/// there or the callback fires again. The descriptor stays the caller's: close this
/// first, then the descriptor (libuv forbids two polls on one descriptor).
public final class SocketPoll: LoopHandle {
    private var callback: ((SystemError?) -> Void)?
    public let fd: Int32

    public init(loop: EventLoop, fd: Int32) throws {
        self.fd = fd
        super.init(type: UV_POLL)
        try uvCheck(uv_poll_init(loop.uv, raw.assumingMemoryBound(to: uv_poll_t.self), fd), "uv_poll_init \(fd)")
        retainFromHandle()
    }

    /// Starts (or restarts, replacing the callback) watching for readability.
    public func start(_ callback: @escaping (SystemError?) -> Void) throws {
        precondition(!isClosed, "poll used after close")
        self.callback = callback
        try uvCheck(uv_poll_start(raw.assumingMemoryBound(to: uv_poll_t.self), Int32(UV_READABLE.rawValue), { p, status, _ in
            let owner = LoopHandle.owner(UnsafeMutableRawPointer(p), as: SocketPoll.self)
            owner.callback?(status < 0 ? SystemError("uv_poll \(owner.fd)", errno: -status) : nil)
        }), "uv_poll_start \(fd)")
    }

    public func stop() {
        guard !isClosed else { return }
        uv_poll_stop(raw.assumingMemoryBound(to: uv_poll_t.self))
    }

    override func didClose() { callback = nil }
}
