import Foundation
import TestSupport
import Testing

/// What any user may give a file besides its bytes: an mtime past 2262 (`touch -d
/// 2400-01-01`, whose nanoseconds overflow Int64), an "extension" of 240 bytes. Each
/// trapped the daemon (attack review, 2026-12-04): the first at intake, on every restart
/// while the photo stayed; the second at upload. Both photos are now taken like any other.
@Suite(.serialized) struct HostileFileMetadataTests {
    @Test func aPhotoFromTheYear2400AndOneWithA240ByteExtensionAreTaken() throws {
        let d = try DaemonHarness()
        try d.start()
        defer { _ = d.stop() }
        let far = d.home + "/inbox/.far.part"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Canon_40D.jpg").path, toPath: far)
        var times = [timespec(tv_sec: 13_569_465_600, tv_nsec: 0), timespec(tv_sec: 13_569_465_600, tv_nsec: 0)]  // 2400-01-01
        #expect(utimensat(AT_FDCWD, far, &times, 0) == 0)
        rename(far, d.home + "/inbox/far.jpg")
        try d.drop("Nikon_D70.jpg", as: "y." + String(repeating: "e", count: 240))
        try d.waitIdle(jobs: 2)
        #expect(try d.stateCounts() == ["done": 2], "\(d.log)")
        #expect(d.process?.isRunning == true && !d.log.contains("fatal signal"), "\(d.log)")
        #expect(try json(d, ["inbox"])["skipped"]?.arrayValue?.isEmpty == true)
    }

    /// On a filesystem with 64-bit times and sparse files past 4 EiB (tmpfs here; XFS and
    /// btrfs alike): two stale `.part` files of 2^62 bytes, a third last written 2^63 s ago,
    /// two queue files of 2^62 unread bytes. Their sums overflowed (at every whole inbox
    /// walk, start-up included, and in `status` and `/metrics`), and the idle time in
    /// `inbox` too: each trapped. Sums now hold at Int64.max.
    @Test(.enabled(if: getuid() == 0)) func exabyteSparseFilesAndAnAncientMtimeAreCountedWithoutATrap() throws {
        let d = try DaemonHarness()
        try FileManager.default.createDirectory(atPath: d.home, withIntermediateDirectories: true)
        let (mounted, _, err) = try DaemonHarness.spawn(["/bin/mount", "-t", "tmpfs", "-o", "size=16m,mode=700", "tmpfs", d.home])
        try #require(mounted == 0, "cannot mount a tmpfs: \(err)")
        defer { _ = try? DaemonHarness.spawn(["/bin/umount", "-l", d.home]) }
        for folder in ["inbox", "queue.d"] { try FileManager.default.createDirectory(atPath: d.home + "/" + folder, withIntermediateDirectories: true) }
        func sparse(_ path: String, seconds: Int) throws {
            let fd = open(path, O_WRONLY | O_CREAT, 0o644)
            try #require(fd >= 0 && ftruncate(fd, 1 << 62) == 0, "\(path): \(String(cString: strerror(errno)))")
            fchmod(fd, 0o644)
            var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
            #expect(futimens(fd, &times) == 0)
            close(fd)
        }
        let threeDaysAgo = Int(Date().timeIntervalSince1970) - 3 * 86_400
        try sparse(d.home + "/inbox/.a.jpg.part", seconds: threeDaysAgo)
        try sparse(d.home + "/inbox/.b.jpg.part", seconds: threeDaysAgo)
        try sparse(d.home + "/inbox/.c.jpg.part", seconds: Int.min)
        try sparse(d.home + "/queue.d/a.jsonl", seconds: threeDaysAgo)
        try sparse(d.home + "/queue.d/b.jsonl", seconds: threeDaysAgo)
        try d.start()
        try d.waitUntil("the daemon answers") { (try? json(d, ["inbox"]))?["stale"]?.arrayValue?.count == 3 }
        let inbox = try json(d, ["inbox"])
        #expect(inbox["stale"]?.arrayValue?.count == 3, "\(inbox)")
        #expect(inbox["stale"]?.arrayValue?.contains { $0["idle_s"]?.intValue == 1_000_000_000_000_000 } == true, "\(inbox)")
        let backlog = try json(d, ["status"])["backlog"]
        #expect(backlog?["inbox_stale_bytes"]?.intValue == .max && backlog?["queue_unread_bytes"]?.intValue == .max, "\(backlog ?? nil)")
        let (metricsStatus, metrics, _) = try DaemonHarness.run(["metrics", "--home", d.home])
        #expect(metricsStatus == 0 && metrics.contains("photomemo_"), "\(metrics.prefix(300))")
        #expect(d.process?.isRunning == true && !d.log.contains("fatal signal"), "\(d.log.suffix(2000))")
    }
}
