import Dispatch
import Glibc

/// Independent pieces of one stage run at once, on the calling thread and Dispatch's pool:
/// a lone photo's renditions on the machine's idle cores, the files a run writes and
/// fsyncs on the disk's queue together instead of one wait after another.
public enum Concurrently {
    /// `body` for each item, results in order; the first item's error (in order) is thrown
    /// after all have run. `body` runs on several threads at once: what the calls share
    /// they only read (unchecked: a rendition's base image is no Sendable). CPU spent off
    /// the calling thread counts toward `stage` (`StageCPU`: the scheduler counts only the
    /// thread that ran the stage).
    public static func map<T, R>(_ items: [T], stage: String? = nil, _ body: (T) throws -> R) throws -> [R] {
        guard items.count > 1 else { return try items.map(body) }
        let caller = pthread_self()
        var results = [Result<R, any Error>?](repeating: nil, count: items.count)
        try withoutActuallyEscaping(body) { body in
            // Each call writes its own slot only; `concurrentPerform` returns when all have.
            nonisolated(unsafe) let (body, items) = (body, items)
            results.withUnsafeMutableBufferPointer { out in
                nonisolated(unsafe) let out = out
                DispatchQueue.concurrentPerform(iterations: items.count) { i in
                    let elsewhere = pthread_equal(pthread_self(), caller) == 0
                    let cpu = elsewhere ? StageCPU.threadNow() : 0
                    out[i] = Result { try body(items[i]) }
                    if elsewhere, let stage { StageCPU.add(stage, seconds: StageCPU.threadNow() - cpu) }
                }
            }
        }
        return try results.map { try $0!.get() }
    }
}
