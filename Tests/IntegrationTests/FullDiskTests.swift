import Foundation
import SQLite
import Journal
import PhotomemoCore
import TestSupport
import Testing

/// A full disk is an outage (issue #13): jobs wait with `disk` (or the journal) shown
/// down, spend no attempts, lose nothing, and go on when space returns. The home is a
/// small tmpfs filled on purpose (needs root).
@Suite(.serialized, .enabled(if: getuid() == 0))
struct FullDiskTests {
    @Test func jobsWaitForSpaceAndFinishWhenItReturns() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try FileManager.default.createDirectory(atPath: d.home, withIntermediateDirectories: true)
        chmod(d.home, 0o750)
        let (mounted, _, mountErr) = try DaemonHarness.spawn(["/bin/mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", d.home])
        try #require(mounted == 0, "cannot mount a tmpfs: \(mountErr)")
        defer { _ = try? DaemonHarness.spawn(["/bin/umount", "-l", d.home]) }
        chmod(d.home, 0o750)
        try d.start()
        // Fill the disk so that the photos still fit in the inbox but nothing the stages
        // write after them does (renditions, the store's copies).
        let photos = ["orientation_landscape_1.jpg", "orientation_landscape_2.jpg", "exif-org_nikon-e950.jpg"]
        let bytes = try photos.map { try FileManager.default.attributesOfItem(atPath: testPhotos.appendingPathComponent($0).path)[.size] as! Int }
        var st = statvfs()
        statvfs(d.home, &st)
        let free = Int(st.f_bavail) * Int(st.f_frsize)
        let filler = d.home + "/filler"
        let fill = free - bytes.reduce(0, +) - photos.count * 4096 - 192 * 1024
        _ = try DaemonHarness.spawn(["/bin/sh", "-c", "head -c \(fill) /dev/zero > \(filler)"])
        for (i, photo) in photos.enumerated() { try d.drop(photo, as: "p\(i).jpg") }
        try d.waitUntil("an outage is shown", timeout: 30) {
            let deps = try json(d, ["status"])["dependencies"]
            return deps?["disk"] == "down" || deps?["journal"] == "down"
        }
        Thread.sleep(forTimeInterval: 2)
        #expect(try d.jobs("state = 'failed'").isEmpty, "a full disk failed jobs")
        #expect(d.process?.isRunning == true)

        unlink(filler)
        do { try d.waitIdle(jobs: 3, timeout: 120) } catch {
            let db = try Database(path: d.home + "/photomemo.sqlite", readOnly: true)
            let rows = try db.query("SELECT id, state, stage, stage_index, attempts, outages FROM jobs").map { r in (0..<6).map { r.values[$0] } }
            Issue.record("jobs: \(rows)\nlog: \(d.log.suffix(6000))")
            throw error
        }
        #expect(try d.stateCounts()["done"] == 3)
        #expect(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.count == 3)
        let deps = try json(d, ["status"])["dependencies"]
        #expect(deps?["disk"] != "down" && deps?["journal"] == "up", "\(String(describing: deps))")
        #expect(d.quarantined().isEmpty)
        #expect(d.stop().status == 0)
    }
}
