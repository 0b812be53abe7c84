import CUV
import Glibc

/// A libuv loop and the handles on it.
///
///     ┌──────────────── loop thread ────────────────┐
///     │  LoopTimer SignalWatcher   FolderWatcher       │
///     │  LoopWakeup ◀── execute(_:) from any thread  │
///     │  submit(work) ──▶ uv work pool ──▶ completion│
///     └──────────────────────────────────────────────┘
///
/// Every handle is a `final class` confined to the loop thread. While open, the handle's
/// C struct holds a +1 reference to its Swift object (`data`); `close()` releases it in the
/// close callback and frees the struct after that. `close()` of the loop returns libuv's
/// answer, so tests can assert that nothing was left open.
public final class EventLoop {
    let uv: UnsafeMutablePointer<uv_loop_t>
    private var closed = false

    public init() throws {
        uv = .allocate(capacity: 1)
        do { try uvCheck(uv_loop_init(uv), "uv_loop_init") } catch {
            uv.deallocate()
            throw error
        }
    }

    /// Loop time in ms (`uv_now`: when this turn of the loop began), for deadlines.
    public var nowMs: UInt64 { uv_now(uv) }

    deinit {
        if !closed {
            _ = close()
        }
        uv.deallocate()
    }

    /// Runs until no active handle or request is left (or `stop()`).
    public func run() {
        uv_run(uv, UV_RUN_DEFAULT)
    }

    /// 0 when every handle was closed; `UV_EBUSY` (negative) when one is still open.
    @discardableResult
    public func close() -> Int32 {
        let rc = uv_loop_close(uv)
        if rc == 0 { closed = true }
        return rc
    }

    /// Counts handles still known to the loop (open or closing); 0 at a clean shutdown.
    public var handleCount: Int {
        var n = 0
        uv_walk(uv, { _, arg in arg!.assumingMemoryBound(to: Int.self).pointee += 1 }, &n)
        return n
    }
}

/// Base of every handle wrapper: owns the C struct and the close protocol.
public class LoopHandle {
    let raw: UnsafeMutableRawPointer
    public private(set) var isClosed = false

    var handle: UnsafeMutablePointer<uv_handle_t> { raw.assumingMemoryBound(to: uv_handle_t.self) }

    init(type: uv_handle_type) {
        let size = uv_handle_size(type)
        raw = .allocate(byteCount: size, alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
    }

    /// Call once `uv_xxx_init` has succeeded: from here on the C struct keeps us alive.
    func retainFromHandle() {
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Stops the handle and hands it back to libuv; the struct is freed in the callback.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        willClose()
        uv_close(handle) { h in
            guard let h else { return }
            let owner = Unmanaged<LoopHandle>.fromOpaque(h.pointee.data!)
            h.pointee.data = nil
            owner.takeRetainedValue().didClose()
        }
    }

    /// Hook for subclasses to release what they own besides the struct.
    func willClose() {}
    func didClose() {}

    deinit { raw.deallocate() }

    static func owner<T: LoopHandle>(_ h: UnsafeMutableRawPointer?, as: T.Type) -> T {
        let handle = h!.assumingMemoryBound(to: uv_handle_t.self)
        return Unmanaged<T>.fromOpaque(handle.pointee.data!).takeUnretainedValue()
    }
}
