import EventLoop

/// Runs blocking tasks on the work pool one at a time, in order, with each completion on
/// the loop thread. Intake (inbox and queue file) shares one lane, so deciding "is this
/// file already a job?" and committing the answer never race each other.
final class SerialLane {
    private let loop: EventLoop
    private var pending: [() -> Void] = []
    private var busy = false

    init(loop: EventLoop) { self.loop = loop }

    func enqueue<T>(_ work: @escaping @Sendable () -> T, then completion: @escaping (T) -> Void) {
        pending.append({ [unowned self] in
            self.loop.submit(work) { result in
                completion(result)
                self.busy = false
                self.next()
            }
        })
        next()
    }

    private func next() {
        guard !busy, !pending.isEmpty else { return }
        busy = true
        pending.removeFirst()()
    }
}

extension SerialLane {
    /// Runs `body` once every task queued so far has completed.
    func whenIdle(_ body: @escaping () -> Void) {
        enqueue({ () }) { body() }
    }
}
