import CUV
import Glibc

/// Blocking work on libuv's thread pool (`uv_queue_work`), with the completion run back
/// on the loop thread. The pool is shared with `uv_fs_*`; its size is set once per process
/// with `UV_THREADPOOL_SIZE` before first use.
extension EventLoop {
    public func submit<T>(_ work: @escaping @Sendable () -> T, then completion: @escaping (T) -> Void) {
        let item = WorkItem(work: work, completion: completion)
        let req = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
        req.initialize(to: uv_work_t())
        req.pointee.data = Unmanaged.passRetained(item).toOpaque()
        let rc = uv_queue_work(uv, req, { req in
            Unmanaged<WorkItem>.fromOpaque(req!.pointee.data!).takeUnretainedValue().runWork()
        }, { req, _ in
            let item = Unmanaged<WorkItem>.fromOpaque(req!.pointee.data!).takeRetainedValue()
            req!.deinitialize(count: 1)
            req!.deallocate()
            item.complete()
        })
        precondition(rc == 0, "uv_queue_work failed: \(rc)")
    }

    /// Sets the size of libuv's shared pool; only effective before the first `submit`.
    public static func setThreadPoolSize(_ n: Int) {
        setenv("UV_THREADPOOL_SIZE", String(n), 1)
    }
}

/// Type-erased work item: C callbacks cannot capture generic parameters.
private final class WorkItem: @unchecked Sendable {
    // `runWork` runs on a pool thread, `complete` later on the loop thread; libuv orders
    // the two, so the result needs no lock.
    private var runWorkBody: (() -> Void)?
    private var completeBody: (() -> Void)?

    init<T>(work: @escaping @Sendable () -> T, completion: @escaping (T) -> Void) {
        var result: T?
        runWorkBody = { result = work() }
        completeBody = { completion(result!) }
    }

    func runWork() { runWorkBody?(); runWorkBody = nil }
    func complete() { completeBody?(); completeBody = nil }
}
