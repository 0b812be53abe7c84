import Glibc

/// CPU seconds spent inside each stage's `run`, by stage name, for `metrics` and the e2e
/// bench (wall time alone misleads on a shared machine). Thread CPU time, so a run
/// waiting on the disk or another process counts only what it computed.
public enum StageCPU {
    private static let totals = LockedValue<[String: Double]>([:])

    /// The calling thread's CPU time so far, in seconds.
    public static func threadNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    public static func add(_ stage: String, seconds: Double) {
        totals.withLock { $0[stage, default: 0] += seconds }
    }

    public static var snapshot: [String: Double] { totals.value }
}
