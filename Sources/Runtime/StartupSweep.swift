import Foundation
import Glibc
import Journal
import StageKit

/// What a daemon killed mid-way left in its home for no job, removed at start, before the
/// socket serves anyone (so no request is making such files now): `reprocess/` copies
/// made for a page of a request whose jobs were never committed (200 originals a page:
/// hundreds of MB a kill, an attacker's finding), and the temp files of renditions being
/// written (`DurableFile`'s `.NAME.PID.RANDOM.tmp`). The store sweeps its own `.tmp/`.
enum StartupSweep {
    static func run(home: Home, journal: any JobJournal) {
        var removed = 0
        if let names = try? FileManager.default.contentsOfDirectory(atPath: home.reprocess) {
            do {
                let inUse = try journal.reprocessCopiesInUse()
                for name in names where !inUse.contains(home.reprocess + "/" + name) && unlink(home.reprocess + "/" + name) == 0 { removed += 1 }
            } catch {
                Log.error("start: cannot read which reprocess copies jobs use (\(error)); \(home.reprocess) is left as it is")
            }
        }
        let renditions = home.root + "/renditions"
        for folder in (try? FileManager.default.contentsOfDirectory(atPath: renditions)) ?? [] {
            let path = renditions + "/" + folder
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where isTemp(name) && unlink(path + "/" + name) == 0 {
                removed += 1
            }
        }
        if removed > 0 { Log.notice("start: removed \(removed) files an earlier run left unfinished (reprocess copies, rendition temps)") }
    }

    /// `.NAME.PID.RANDOM.tmp`: a `DurableFile` temp, never a rendition compress finished.
    static func isTemp(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        func number(_ s: Substring) -> Bool { !s.isEmpty && s.allSatisfy { ("0"..."9").contains($0) } }
        return name.hasPrefix(".") && parts.count >= 5 && parts.last == "tmp" && number(parts[parts.count - 3]) && number(parts[parts.count - 2])
    }
}
