import Glibc
import PhotomemoCore
import StageKit

/// What `photomemo verify` found (and, with `--repair`, did): the reply's `result`, and
/// the last run's counts in `status` and `metrics`.
struct VerifyReport: Sendable {
    struct Problem: Sendable {
        let record: String
        let asset: String
        let key: String
        let reason: String
        /// With `--repair`: made again and stored (true), or why not.
        var repaired = false
        var repairError: String? = nil

        var json: JSONValue {
            var o: [String: JSONValue] = ["record": .string(record), "asset": .string(asset), "key": .string(key), "reason": .string(reason)]
            if repaired { o["repaired"] = true }
            if let repairError { o["repair_error"] = .string(repairError) }
            return .object(o)
        }
    }

    struct Orphan: Sendable {
        let key: String
        let bytes: Int64
        var released = false
    }

    var records = 0
    var checked = 0
    var ok = 0
    var damaged: [Problem] = []
    var missing: [Problem] = []
    var orphans: [Orphan] = []
    var repair = false
    var startedAt = unixNow()
    var finishedAt = 0.0
    var bytesRead: Int64 = 0

    var repaired: Int { (damaged + missing).filter(\.repaired).count + orphans.filter(\.released).count }
    /// Nothing damaged or missing is left (orphans are tidiness, not loss).
    var isClean: Bool { (damaged + missing).allSatisfy(\.repaired) }

    var json: JSONValue {
        [
            "checked": .int(Int64(checked)), "ok": .int(Int64(ok)), "records": .int(Int64(records)),
            "damaged": .array(damaged.map(\.json)), "missing": .array(missing.map(\.json)),
            "orphans": .array(orphans.map { ["key": .string($0.key), "bytes": .int($0.bytes), "released": .bool($0.released)] }),
            "repaired": .int(Int64(repaired)), "repair": .bool(repair),
            "bytes_read": .int(bytesRead), "seconds": .double(((finishedAt - startedAt) * 10).rounded() / 10),
        ]
    }
}

/// A cap on the bytes a maintenance run reads per second, so serving goes on beside it:
/// ahead of the cap, the run sleeps until it is back on it.
struct ReadRate {
    let bytesPerSecond: Int64
    private let start = unixNow()
    private var total: Int64 = 0

    init(bytesPerSecond: Int64) { self.bytesPerSecond = bytesPerSecond }

    mutating func took(_ bytes: Int) {
        total += Int64(bytes)
        guard bytesPerSecond > 0 else { return }
        let due = Double(total) / Double(bytesPerSecond) - (unixNow() - start)
        if due > 0.001 { usleep(UInt32(min(due, 5) * 1_000_000)) }
    }
}
