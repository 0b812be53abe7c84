import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// A daemon killed during `reprocess` left copies of originals no job names (the page's
/// jobs never committed; an attacker's finding: 47 copies after one kill, never removed)
/// and, killed while compress wrote, rendition temp files: the next start removes them,
/// and keeps a copy an unfinished job runs from and every finished rendition.
@Suite struct StartupSweepTests {
    @Test func leftoversGoAndWhatJobsUseStays() throws {
        let t = try TestHome()
        let folder = t.home.reprocess, renditions = t.home.root + "/renditions/ab"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: renditions, withIntermediateDirectories: true)
        var memo = MemoJob(memo: "m", type: "Photo", owner: "alice")
        memo.record = "r1"
        let used = folder + "/used.jpg"
        _ = try t.journal.enqueueReprocess([ReprocessJob(key: ReprocessJob.key(record: "r1", changeTag: "1", from: "compress"), memo: memo,
                                                         photoPath: used, sha256: String(repeating: "a", count: 64),
                                                         working: WorkingSet(photoPath: used, sha256: nil))], stageIndex: 0)
        let files = [used, folder + "/orphan.jpg", folder + "/.orphan.jpg.tmp",
                     renditions + "/.k.display.jpg.4242.123456.tmp", renditions + "/k.display.jpg", renditions + "/.k.display.jpg"]
        for f in files { #expect(FileManager.default.createFile(atPath: f, contents: Data("x".utf8))) }
        StartupSweep.run(home: t.home, journal: t.journal)
        let left = files.filter { FileManager.default.fileExists(atPath: $0) }
        #expect(left == [used, renditions + "/k.display.jpg", renditions + "/.k.display.jpg"], "\(left)")
    }
}
