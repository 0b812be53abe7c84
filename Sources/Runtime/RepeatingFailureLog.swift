import Foundation
import StageKit

/// A failure a timer meets again and again while an outage lasts (the outbox's claim every
/// 250 ms, the collector every 2 s): said when it starts, then at most once a minute with
/// how many were not said, and once when it ends. A PostgreSQL outage wrote 5 lines a second
/// per daemon. On the loop (a plain value its owner keeps).
struct RepeatingFailureLog {
    /// What failed, as the log says it: "notifications", "releasing assets".
    let what: String
    private var since: Double?
    private var saidAt = 0.0
    private var unsaid = 0

    init(_ what: String) { self.what = what }

    mutating func failed(_ error: String, level: LogLevel = .warning, now: Double = unixNow()) {
        if since == nil { since = now } else if now - saidAt < 60 {
            unsaid += 1
            return
        }
        let more = unsaid > 0 ? " (\(unsaid) more times since the last said)" : ""
        Log.log(level, "\(what): \(error)\(more)")
        (saidAt, unsaid) = (now, 0)
    }

    mutating func succeeded(now: Double = unixNow()) {
        guard let since else { return }
        Log.notice("\(what): works again after \(Int((now - since).rounded())) s")
        self.since = nil
        unsaid = 0
    }
}
