import Foundation
import SQLite
import Journal
import TestSupport
import Testing

/// A full disk is an outage (issue #13): jobs wait with `disk` (or the journal) shown
/// down, spend no attempts, lose nothing, and go on when space returns. The home is a
/// small tmpfs filled on purpose (needs root).
@Suite(.serialized, .enabled(if: getuid() == 0))
struct FullDiskTests {
    /// The daemon's home on a tmpfs of its own; the closure unmounts it.
    func smallDisk(_ d: DaemonHarness, megabytes: Int) throws -> () -> Void {
        try FileManager.default.createDirectory(atPath: d.home, withIntermediateDirectories: true)
        let (mounted, _, mountErr) = try DaemonHarness.spawn(["/bin/mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", d.home])
        try #require(mounted == 0, "cannot mount a tmpfs: \(mountErr)")
        chmod(d.home, 0o750)
        return { _ = try? DaemonHarness.spawn(["/bin/umount", "-l", d.home]) }
    }

    @Test func jobsWaitForSpaceAndFinishWhenItReturns() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        let unmount = try smallDisk(d, megabytes: 32)
        defer { unmount() }
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

    /// Jobs running on a small disk, the disk filled, the daemon killed and started again:
    /// `body` runs once it waits for space at start-up (its log says so), with the process,
    /// its log's path and the filler's.
    func onAFullDisk(_ body: (DaemonHarness, Process, _ log: String, _ filler: String) throws -> Void) throws {
        let d = try DaemonHarness()
        let unmount = try smallDisk(d, megabytes: 16)
        defer { unmount() }
        try d.start(env: ["EFFECT_SLEEP": "3"])  // the exec stage holds its jobs running
        let photos = ["orientation_landscape_1.jpg", "orientation_landscape_2.jpg", "Nikon_D70.jpg"]
        for (i, photo) in photos.enumerated() { try d.drop(photo, as: "p\(i).jpg") }
        try d.waitUntil("the jobs run their exec stage") { try d.jobs("state = 'running' AND stage_index = 1").count == 3 }
        let filler = d.home + "/filler"
        _ = try DaemonHarness.spawn(["/bin/sh", "-c", "head -c 20000000 /dev/zero > \(filler)"])
        d.stop(SIGKILL)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: DaemonHarness.binary)
        p.arguments = ["serve", "--home", d.home, "--job", d.jobFile, "--log-level", "info", "--settle", "0.3", "--rescan-interval", "2"]
        var env = ProcessInfo.processInfo.environment
        env["EFFECTS"] = d.effects
        p.environment = env
        let log = d.root + "/full-start.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        p.standardError = FileHandle(forWritingAtPath: log)
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) }; p.waitUntilExit() }
        try d.waitUntil("it says it waits for space") { (try String(contentsOfFile: log, encoding: .utf8)).contains("waiting for space") }
        try body(d, p, log, filler)
    }

    /// Killed while the disk is full, a daemon started again must wait for space rather
    /// than exit on its first write (resuming the interrupted jobs): it used to die with
    /// `database or disk is full`, leaving every photo until someone started it by hand.
    @Test func aDaemonKilledOnAFullDiskComesUpWhenSpaceReturns() throws { try onAFullDisk { d, p, log, filler in
        Thread.sleep(forTimeInterval: 1)
        #expect(p.isRunning, "the daemon exited on a full disk: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        unlink(filler)
        try d.waitUntil("it serves once space returns") { (try String(contentsOfFile: log, encoding: .utf8)).contains("serving") }
        try d.waitIdle(jobs: 3, timeout: 60)
        #expect(try d.stateCounts()["done"] == 3)
        #expect(Set(d.lines("effects.log")).count == 3)
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    } }

    /// SIGTERM while it waits for space at start-up stops it at once with status 0, as it
    /// would once serving: the signal used to end it by its default action (status 143).
    @Test func aDaemonWaitingForSpaceAtStartStopsOnSIGTERM() throws { try onAFullDisk { d, p, log, _ in
        let sent = Date()
        kill(p.processIdentifier, SIGTERM)
        try d.waitUntil("it stops", timeout: 10) { !p.isRunning }
        #expect(p.terminationReason == .exit && p.terminationStatus == 0, "ended by \(p.terminationReason) \(p.terminationStatus)")
        #expect(Date().timeIntervalSince(sent) < 2)
        #expect((try String(contentsOfFile: log, encoding: .utf8)).contains("signal 15 while waiting for space: stopped"))
    } }

    /// While the journal cannot write, `status` says so — `journal` down, since when and
    /// why, in the JSON and in the table — not only through a backlog that grows; once a
    /// write commits again, it is up and the failure is gone.
    @Test func statusShowsTheJournalFailingWhileItCannotWriteAndUpOnceItCan() throws {
        let d = try DaemonHarness()
        let unmount = try smallDisk(d, megabytes: 16)
        defer { unmount() }
        try d.start()
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Nikon_D70.jpg").path, toPath: d.home + "/inbox/.p.part")
        let filler = d.home + "/filler"
        _ = try DaemonHarness.spawn(["/bin/sh", "-c", "head -c 20000000 /dev/zero > \(filler)"])
        rename(d.home + "/inbox/.p.part", d.home + "/inbox/p.jpg")
        try d.waitUntil("the journal refuses the photo") { d.log.contains("cannot record inbox file") }
        let s = try json(d, ["status"])
        #expect(s["dependencies"]?["journal"] == "down", "\(s)")
        let since = try #require(s["journal_write_error"]?["since"]?.stringValue, "\(s)")
        #expect(s["journal_write_error"]?["error"]?.stringValue?.contains("database or disk is full") == true, "\(s)")
        let (status, table, _) = try DaemonHarness.run(["status", "--home", d.home])
        #expect(status == 0 && table.contains("journal     failing since \(since): ") && table.contains("database or disk is full"), "\(table)")
        #expect(table.contains("journal down"), "\(table)")

        unlink(filler)
        try d.waitIdle(jobs: 1, timeout: 30)
        let after = try json(d, ["status"])
        #expect(after["dependencies"]?["journal"] == "up" && after["journal_write_error"] == .null, "\(after)")
        let (_, healthy, _) = try DaemonHarness.run(["status", "--home", d.home])
        #expect(!healthy.contains("failing since") && healthy.contains("journal up"), "\(healthy)")
        #expect(d.stop().status == 0)
    }

    /// Photos dropped while the journal cannot write are not yet jobs: they are the
    /// backlog (so `status` is not "idle" while they wait) and are taken soon after space
    /// returns, not at the next periodic rescan (a minute by default, 10 here).
    @Test func photosTheJournalCannotTakeAreBacklogAndTakenWhenSpaceReturns() throws {
        let d = try DaemonHarness()
        let unmount = try smallDisk(d, megabytes: 16)
        defer { unmount() }
        try d.start(args: ["--rescan-interval", "10"])
        let photos = ["orientation_landscape_1.jpg", "orientation_landscape_2.jpg", "Nikon_D70.jpg"]
        for (i, photo) in photos.enumerated() {
            try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(photo).path, toPath: d.home + "/inbox/.p\(i).part")
        }
        let filler = d.home + "/filler"
        _ = try DaemonHarness.spawn(["/bin/sh", "-c", "head -c 20000000 /dev/zero > \(filler)"])
        for i in photos.indices { rename(d.home + "/inbox/.p\(i).part", d.home + "/inbox/p\(i).jpg") }
        try d.waitUntil("the journal refuses them") { d.log.components(separatedBy: "cannot record inbox file").count > 3 }
        #expect(try json(d, ["status"])["backlog"]?["inbox_files"]?.intValue == 3)
        unlink(filler)
        let freed = Date()
        try d.waitIdle(jobs: 3, timeout: 30)
        #expect(Date().timeIntervalSince(freed) < 8, "taken \(Date().timeIntervalSince(freed)) s after space returned")
        #expect(try d.stateCounts()["done"] == 3)
        #expect(try json(d, ["status"])["backlog"]?["inbox_files"]?.intValue == 0)
        #expect(d.stop().status == 0)
    }
}
