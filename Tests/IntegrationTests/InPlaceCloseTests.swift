import Foundation
import TestSupport
import Testing

/// Tools that write a photo in place set its time just after they close it (rsync
/// --inplace, rclone 1.60, Samba): a photo taken and removed from the inbox at the close
/// made their `utimes` fail, a failed transfer they report and send again. A file closed in
/// place is taken once untouched for `inbox.quiet_after_close`; one renamed in at once.
@Suite(.serialized) struct InPlaceCloseTests {
    @Test func aToolSettingTheTimeAfterItsCloseFindsItsFileAndARenameIsTakenAtOnce() throws {
        let d = try DaemonHarness(stages: try KeepOriginalsTests.definition(inbox: ""))
        try d.start()
        let path = d.home + "/inbox/inplace.jpg"
        for (round, photo) in ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg"].enumerated() {
            // As rsync --inplace does: write, close, then set the times — here 0.6 s later
            // (rclone over SFTP hashes the file first; a busy machine deschedules a tool),
            // longer than the whole pipeline takes to store and release a photo here.
            try Data(contentsOf: testPhotos.appendingPathComponent(photo)).write(to: URL(fileURLWithPath: path))
            Thread.sleep(forTimeInterval: 0.6)
            #expect(utimes(path, nil) == 0, "round \(round): the file was gone 0.6 s after its close (errno \(errno))")
            try d.waitIdle(jobs: round + 1)
            #expect(!FileManager.default.fileExists(atPath: path), "taken, and released once stored")
        }
        // A rename in is complete: taken well before the quiet time after a close would end.
        let started = Date()
        try d.drop("exif-org_canon-ixus.jpg")
        try d.waitUntil("the renamed photo is a job", timeout: 10) { try d.jobs().count == 4 }
        #expect(Date().timeIntervalSince(started) < 0.9, "a rename waited \(Date().timeIntervalSince(started)) s")
        try d.waitIdle(jobs: 4)
        #expect(try d.jobs().allSatisfy { $0.state == "done" })
        #expect(d.stop().status == 0)
    }

    /// A walk (here the periodic rescan, every 0.3 s) met a file closed in place before its
    /// quiet time ended and took it once unchanged for `--settle`: the tool's `utimes` just
    /// after failed (the test above flaked so on a busy machine). A walk waits it out too.
    @Test func aWalkWaitsOutTheQuietTimeAfterAClose() throws {
        let d = try DaemonHarness(stages: try KeepOriginalsTests.definition(inbox: #""inbox": {"quiet_after_close": "2s"},"#))
        try d.start(args: ["--rescan-interval", "0.3"])  // and --settle 0.3 (the harness's)
        let path = d.home + "/inbox/walked.jpg"
        try Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg")).write(to: URL(fileURLWithPath: path))
        Thread.sleep(forTimeInterval: 1.2)  // walks, each finding it unchanged past --settle
        #expect(utimes(path, nil) == 0, "a walk took the file 1.2 s after its close (errno \(errno))")
        try d.waitIdle(jobs: 1)
        #expect(!FileManager.default.fileExists(atPath: path), "taken, and released once stored")
        #expect(d.stop().status == 0)
    }

    /// A tool that sets the time later than the quiet time (a busy machine, rclone hashing
    /// first) touches a file already taken while its job still runs: the same bytes under a
    /// new mtime were a second job of the same photo, a duplicate that raced the first.
    @Test func aTimeSetOnAPhotoWhoseJobStillRunsTakesNothingNew() throws {
        let d = try DaemonHarness(stages: try KeepOriginalsTests.definition(inbox: #""inbox": {"quiet_after_close": "0s"},"#))
        try d.start(args: ["--rescan-interval", "0.3"])
        #expect(try DaemonHarness.run(["pause", "upload", "--home", d.home]).0 == 0)
        let path = d.home + "/inbox/late-time.jpg"
        try d.drop("Canon_40D.jpg", as: "late-time.jpg")
        try d.waitUntil("the photo is a job", timeout: 10) { try d.jobs().count == 1 }
        #expect(utimes(path, nil) == 0, "the photo stays until its job stores it (errno \(errno))")
        // The rescans (every 0.3 s) have seen the touched file by then.
        try d.append(#"{"memo": "a marker after the touch"}"# + "\n")
        try d.waitUntil("the marker line is a job", timeout: 10) { try d.jobs().contains { $0.memo.contains("a marker after the touch") } }
        Thread.sleep(forTimeInterval: 1.5)
        let photoJobs = try d.jobs("photo IS NOT NULL")
        #expect(photoJobs.count == 1, "one photo, one job: \(photoJobs)")
        #expect(try DaemonHarness.run(["resume", "upload", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 2)
        #expect(try d.jobs().allSatisfy { $0.state == "done" })
        #expect(!FileManager.default.fileExists(atPath: path), "taken, and released once stored")
        #expect(d.stop().status == 0)
    }

    /// A tool's temporary name (`.part`) closed after writing is never taken, so it is not
    /// held for the quiet time either: it counted in `backlog.inbox_files` for that long, and
    /// a tool rewriting it kept the daemon from ever being idle.
    @Test func aTemporaryNameClosedAfterWritingIsNotBacklog() throws {
        let d = try DaemonHarness(stages: try KeepOriginalsTests.definition(inbox: #""inbox": {"quiet_after_close": "5s"},"#))
        try d.start()
        try d.writeInPlace(Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg")), as: "IMG_1.jpg.part", chunks: 2, pause: 0.05)
        // Renamed in after the .part's events: once it is looked at, those were handled.
        try Data("x".utf8).write(to: URL(fileURLWithPath: d.home + "/inbox/.notes.tmp"))
        #expect(rename(d.home + "/inbox/.notes.tmp", d.home + "/inbox/notes.txt") == 0)
        try d.waitUntil("notes.txt is listed as left alone", timeout: 5) { try json(d, ["status"])["backlog"]?["inbox_skipped"]?.intValue == 1 }
        #expect(try json(d, ["status"])["backlog"]?["inbox_files"]?.intValue == 0)
        #expect(d.stop().status == 0)
    }
}
