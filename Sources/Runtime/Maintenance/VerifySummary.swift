import Foundation
import PhotomemoCore
import StageKit

/// The last verify's counts (`status`'s `verify`, the `photomemo_verify_*` metrics), kept in
/// `HOME/verify.json`: an alert on "no verify for N days" must not fire because the daemon
/// restarted, nor a damaged count vanish with it.
struct VerifySummary: Sendable, Equatable {
    var finishedAt: Double
    var checked = 0, ok = 0, damaged = 0, missing = 0, orphans = 0, repaired = 0

    init(_ report: VerifyReport) {
        finishedAt = report.finishedAt
        (checked, ok, damaged, missing) = (report.checked, report.ok, report.damaged.count, report.missing.count)
        (orphans, repaired) = (report.orphans.count, report.repaired)
    }

    /// As `status` shows it.
    var json: JSONValue {
        ["finished": .string(isoTimestamp(finishedAt)), "checked": .int(Int64(checked)), "ok": .int(Int64(ok)),
         "damaged": .int(Int64(damaged)), "missing": .int(Int64(missing)), "orphans": .int(Int64(orphans)),
         "repaired": .int(Int64(repaired))]
    }

    /// The file's: the same, with the time as a number too.
    private var file: JSONValue {
        var o = json.objectValue ?? [:]
        o["finished_at"] = .double(finishedAt)
        return .object(o)
    }

    private init?(file: JSONValue) {
        guard let at = file["finished_at"]?.doubleValue else { return nil }
        finishedAt = at
        func n(_ k: String) -> Int { Int(file[k]?.intValue ?? 0) }
        (checked, ok, damaged, missing, orphans, repaired) = (n("checked"), n("ok"), n("damaged"), n("missing"), n("orphans"), n("repaired"))
    }

    /// The last run's, or nil (none yet, or a file that does not parse: said once in the log).
    static func load(from path: String) -> VerifySummary? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let json = try? JSONValue.parse(String(decoding: data, as: UTF8.self)), let s = VerifySummary(file: json) else {
            Log.warning("verify: \(path) does not hold the last run's counts; status shows none until the next run")
            return nil
        }
        return s
    }

    func save(to path: String) throws {
        try DurableFile.write(Data(file.jsonString.utf8), to: path)
    }
}
