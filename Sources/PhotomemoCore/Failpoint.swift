import Foundation
import Glibc

/// Crash-injection points for the durability tests (like FreeBSD's fail(9) or TiKV's
/// fail-rs). `PHOTOMEMO_FAILPOINTS="queue.before_commit=3"` makes the process SIGKILL
/// itself the 3rd time it passes that point. Unset, a point is one dictionary lookup.
public enum Failpoint {
    static let armed: [String: Int] = {
        guard let spec = ProcessInfo.processInfo.environment["PHOTOMEMO_FAILPOINTS"] else { return [:] }
        var out: [String: Int] = [:]
        for item in spec.split(separator: ",") {
            let parts = item.split(separator: "=")
            out[String(parts[0])] = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
        }
        return out
    }()

    private static let hits = LockedValue<[String: Int]>([:])

    /// Points: `queue.before_commit`, `inbox.before_commit`, `stage.before_journal`,
    /// `store.before_rename`, `notify.before_send`.
    public static func hit(_ name: String) {
        guard let n = armed[name] else { return }
        let count = hits.withLock { h -> Int in
            h[name, default: 0] += 1
            return h[name]!
        }
        if count == n {
            StandardStream.err("failpoint \(name) hit: killing the process\n")
            kill(getpid(), SIGKILL)
        }
    }
}
