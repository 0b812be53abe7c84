import CUV
import Synchronization

/// Runs closures on the loop thread, sent from any thread. `uv_async_send` calls coalesce,
/// so the closures wait in a locked queue and all run on the next wake-up.
public final class LoopWakeup: LoopHandle {
    private let pending = Mutex<[@Sendable () -> Void]>([])

    public init(loop: EventLoop) throws {
        super.init(type: UV_ASYNC)
        try uvCheck(uv_async_init(loop.uv, raw.assumingMemoryBound(to: uv_async_t.self), { a in
            LoopHandle.owner(UnsafeMutableRawPointer(a), as: LoopWakeup.self).drain()
        }), "uv_async_init")
        retainFromHandle()
    }

    /// Thread-safe handle for other threads: keeps only what `execute` needs.
    public var sender: Sender { Sender(target: self) }

    public struct Sender: @unchecked Sendable {
        // Safe: `enqueue` touches only the mutex and uv_async_send, both thread-safe.
        fileprivate let target: LoopWakeup
        public func execute(_ body: @escaping @Sendable () -> Void) { target.enqueue(body) }
    }

    private func enqueue(_ body: @escaping @Sendable () -> Void) {
        let wasClosed = pending.withLock { q -> Bool in
            if isClosedFlag { return true }
            q.append(body)
            return false
        }
        if !wasClosed { uv_async_send(raw.assumingMemoryBound(to: uv_async_t.self)) }
    }

    // Written on the loop thread under the same lock `enqueue` reads it with.
    nonisolated(unsafe) private var isClosedFlag = false

    private func drain() {
        let work = pending.withLock { q -> [@Sendable () -> Void] in
            defer { q.removeAll() }
            return q
        }
        for w in work { w() }
    }

    override func willClose() {
        pending.withLock { _ in isClosedFlag = true }
    }

    override func didClose() { drain() }
}
