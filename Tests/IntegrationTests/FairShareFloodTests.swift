import Foundation
import SQL
import TestSupport
import Testing

/// Issue 25, fair share per owner, on the real daemon: bob floods his queue file with
/// 2,000 lines; alice then enqueues one memo. Claims take jobs round robin by owner, so
/// hers is done within a turn or two of each stage, not behind his backlog (it was behind
/// every one of his jobs already queued: about 1,000, his unfinished-jobs cap).
extension WhoMayDoWhatTests {
    @Test(arguments: ["sqlite", "postgres"]) func oneUsersQueueFloodDelaysOnlyTheirOwnJobs(_ engine: String) throws {
        let d = try start(database: engine == "postgres" ? try PostgresServer.freshDatabase() : nil)
        let file = d.home + "/queue.d/\(bob).jsonl"
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", """
            umask 022; i=0; while [ $i -lt 2000 ]; do echo "{\\"memo\\":\\"flood $i\\"}"; i=$((i+1)); done > \(file).tmp && mv \(file).tmp \(file)
            """]).0 == 0)
        try d.waitUntil("bob's flood is queued", timeout: 60) { try d.jobs("owner = '\(bob)'").count >= 900 }
        let t0 = Date()
        let enqueued = try cliJSON(alice, d, ["enqueue", "--memo", "alice's one memo"])
        let job = try #require(enqueued["job"]?.intValue)
        try d.waitUntil("alice's job is done", timeout: 120) { try d.jobs("id = \(job) AND state = 'done'").count == 1 }
        let latency = Date().timeIntervalSince(t0)
        let db = try d.journalDB()
        let during = try db.queryOne("""
            SELECT count(*) FROM jobs WHERE owner = '\(bob)' AND state = 'done'
              AND finished > (SELECT created FROM jobs WHERE id = \(job)) AND finished < (SELECT finished FROM jobs WHERE id = \(job))
            """)?.int(0) ?? -1
        let bobs = try db.queryOne("SELECT count(*) FROM jobs WHERE owner = '\(bob)' AND state IN ('queued', 'running', 'waiting')")?.int(0) ?? -1
        // Stages run batches (the index stage up to 64 jobs a run): a few of bob's batches
        // may finish while hers waits, never his backlog. Jobs of his done before she
        // enqueued do not count (a slow machine works through his flood while it is read).
        #expect(during < 300 && bobs > 500, "bob's jobs done while alice's waited: \(during), still open after: \(bobs); alice waited \(latency) s")
    }
}

/// Issue 25 at intake: bob drops 40 sparse files of 30 MB (a JPEG's head, then holes: they
/// cost him no disk), then another user one photo. A look hashes at most 64 MB of one
/// owner's files and the rest go round again, behind others' drops, so the photo is taken
/// within a turn or two, not after all 1.2 GB of his (600 such files held every user's
/// photos for 73 s: attack review, 2026-12-04).
extension WhoMayDoWhatTests {
    @Test func oneUsersFloodOfSparseDropsDoesNotHoldAnothersPhoto() throws {
        let d = try start()
        defer { _ = d.stop() }
        let bobUID = try #require(getpwnam(bob)?.pointee.pw_uid)
        let head = try Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg")).prefix(4096)
        // Made outside the inbox first, then moved in at once: on a loaded machine the
        // daemon would otherwise take some while the rest are still being written.
        let staging = d.home + "/flood-staging"
        #expect(mkdir(staging, 0o700) == 0)
        for i in 0..<40 {
            let tmp = staging + "/f\(i).jpg"
            try (head + Data([UInt8(i)])).write(to: URL(fileURLWithPath: tmp))
            #expect(truncate(tmp, 30 << 20) == 0 && chown(tmp, bobUID, gid_t.max) == 0)
            chmod(tmp, 0o644)
        }
        for i in 0..<40 { #expect(rename(staging + "/f\(i).jpg", d.home + "/inbox/f\(i).jpg") == 0) }
        try d.drop("Nikon_D70.jpg", as: "other.jpg")
        try d.waitUntil("the other user's photo is done", timeout: 120) { try d.jobs("photo = 'other.jpg' AND state = 'done'").count == 1 }
        let other = try #require(try d.jobs("photo = 'other.jpg'").first?.id)
        let bobsFirst = try d.jobs("photo LIKE 'f%.jpg' AND id < \(other)").count
        #expect(bobsFirst < 20, "\(bobsFirst) of bob's 40 files were taken before the other user's photo")
        try d.waitIdle(jobs: 41)
    }
}
