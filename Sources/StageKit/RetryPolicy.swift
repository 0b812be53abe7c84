/// How long a job waits before its next attempt: exponential back-off with full jitter
/// (AWS Architecture Blog, "Exponential Backoff and Jitter"), as a value.
public struct RetryPolicy: Sendable, Equatable {
    public var maxAttempts: Int
    public var baseMs: Int
    public var maxMs: Int

    public static func exponentialJitter(maxAttempts: Int, baseMs: Int = 500, maxMs: Int = 60_000) -> RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, baseMs: baseMs, maxMs: maxMs)
    }

    public static let `default` = RetryPolicy.exponentialJitter(maxAttempts: 6)

    /// The ceiling of the delay after `failures` consecutive failures (1-based).
    public func ceilingMs(afterFailures failures: Int) -> Int {
        let exp = min(max(failures - 1, 0), 30)
        let raw = Double(baseMs) * Double(1 << exp)
        return Int(min(raw, Double(maxMs)))
    }

    /// Full jitter: uniform in [0, ceiling]; never below 1 ms so a retry is never a busy loop.
    public func delayMs<G: RandomNumberGenerator>(afterFailures failures: Int, using rng: inout G) -> Int {
        max(1, Int.random(in: 0...ceilingMs(afterFailures: failures), using: &rng))
    }

    public func delayMs(afterFailures failures: Int) -> Int {
        var g = SystemRandomNumberGenerator()
        return delayMs(afterFailures: failures, using: &g)
    }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    public var milliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }
}
