import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// `photomemo reprocess` (DESIGN.md, "Running for months"): records run again from their
/// stored originals through the definition in force, keeping their ids, at a priority
/// below fresh drops, each user only over the records they may write.
@Suite(.serialized) struct ReprocessTests {
    static func definition(width: Int) -> String {
        """
        {"name": "w\(width)", "database": "sqlite:photomemo.sqlite", "store": "file:store", "stages": [
          {"use": "validate", "with": {}},
          {"use": "compress", "with": {"renditions": [{"name": "display", "width": \(width), "format": "jpeg", "quality": 80}]}},
          {"use": "upload", "with": {}},
          {"use": "index", "with": {}}]}
        """
    }

    /// A grey PNG of its own size (so its own bytes) dropped as `name`.
    static func dropPNG(_ d: DaemonHarness, _ name: String, width: Int, height: Int = 300) throws {
        let temp = d.root + "/" + name
        try makePNG(temp, mode: "grey", width: width, height: height)
        #expect(rename(temp, d.home + "/inbox/" + name) == 0)
    }

    /// A daemon (renditions 60 px wide) with two records of their own photos, done.
    static func twoRecords() throws -> DaemonHarness {
        let d = try DaemonHarness(stages: definition(width: 60))
        try d.start()
        try dropPNG(d, "a.png", width: 300)
        try dropPNG(d, "b.png", width: 310)
        try d.waitIdle(jobs: 2)
        return d
    }

    static func records(_ d: DaemonHarness) throws -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for r in try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? [] { out[r["id"]!.stringValue!] = r }
        return out
    }

    @Test func aChangedWidthReachesTheSameRecordsAndTheOldRenditionsLeaveTheStore() throws {
        let d = try DaemonHarness(stages: Self.definition(width: 860))
        try d.start()
        for (i, w) in [1000, 1100, 1200].enumerated() { try Self.dropPNG(d, "p\(i).png", width: w) }
        try d.waitIdle(jobs: 3)
        let before = try Self.records(d)
        #expect(before.count == 3)
        #expect(before.values.allSatisfy { $0["assets"]?["display"]?["width"]?.intValue == 860 })
        try Self.definition(width: 400).write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        #expect(try DaemonHarness.run(["reload", "--home", d.home]).0 == 0)
        try d.waitUntil("the reload applies") { d.log.contains("reloaded job definition w400") }
        let changesBefore = try json(d, ["changes", "--since", "0"])["changes"]?.arrayValue?.count ?? 0

        #expect(try DaemonHarness.run(["pause", "compress", "--home", d.home]).0 == 0)
        let answer = try json(d, ["reprocess", "TRUEPREDICATE"])
        #expect(answer["enqueued"]?.intValue == 3 && answer["matched"]?.intValue == 3, "\(answer)")
        // A memo edited while its reprocess is queued is kept: the job brings images, not a memo.
        let edited = try #require(before.keys.sorted().first)
        #expect(try DaemonHarness.run(["update", edited, "--memo", "edited meanwhile", "--home", d.home]).0 == 0)
        #expect(try DaemonHarness.run(["resume", "compress", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 6)
        #expect(try d.stateCounts() == ["done": 6])
        let after = try Self.records(d)
        #expect(Set(after.keys) == Set(before.keys), "the same records, no new ones")
        for (id, r) in after {
            let display = try #require(r["assets"]?["display"]?.objectValue)
            #expect(display["width"]?.intValue == 400, "\(id): \(display)")
            #expect(r["memo"] == (id == edited ? "edited meanwhile" : before[id]?["memo"]) && r["type"] == before[id]?["type"], "\(id)")
            #expect(r["assets"]?["original"]?["key"] == before[id]?["assets"]?["original"]?["key"], "the same original")
            // The new rendition is fetchable; the old one leaves the local store once released.
            let out = d.root + "/\(id).jpg"
            #expect(try DaemonHarness.run(["asset", id, "display", "-o", out, "--home", d.home]).0 == 0)
            #expect(FileManager.default.fileExists(atPath: out))
            let old = try #require(before[id]?["assets"]?["display"]?["key"]?.stringValue)
            #expect(d.storeHolds(display["key"]!.stringValue!))
            try d.waitUntil("the old display of \(id) is released") { !d.storeHolds(old) }
        }
        let changes = try json(d, ["changes", "--since", "0"])["changes"]?.arrayValue ?? []
        let updates = changes.dropFirst(changesBefore).filter { $0["op"] == "update" }.compactMap { $0["record_id"]?.stringValue }
        #expect(Set(updates) == Set(before.keys) && updates.count == 4, "\(changes.dropFirst(changesBefore))")  // and the edit
        // The copies of the originals are gone once stored again; status counts the jobs.
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess")) ?? []).isEmpty)
        let status = try json(d, ["status"])
        #expect(status["reprocess"]?["done"]?.intValue == 3)
        // Its rate: the three finished within the last minute (the photos' own jobs are not counted).
        #expect(status["throughput"]?["reprocess_last_minute"]?.intValue == 3)
        #expect(try DaemonHarness.run(["metrics", "--home", d.home]).1.contains(#"photomemo_reprocess_jobs{state="done"} 3"#))
        #expect(d.stop().status == 0)
    }

    /// Fresh drops go first: a photo dropped while 30 reprocess jobs wait at compress is
    /// claimed there before any of them, and is done before they all are.
    @Test func aFreshPhotoGoesBeforeQueuedReprocessJobs() throws {
        let d = try DaemonHarness(stages: Self.definition(width: 60))
        try d.start()
        for i in 0..<30 { try Self.dropPNG(d, "p\(i).png", width: 100 + i, height: 80) }
        try d.waitIdle(jobs: 30, timeout: 120)
        #expect(try DaemonHarness.run(["pause", "compress", "--home", d.home]).0 == 0)
        // Asked twice while they are queued: the second adds none.
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 30)
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 0)
        #expect(try json(d, ["status"])["reprocess"]?["queued"]?.intValue == 30)
        try Self.dropPNG(d, "fresh.png", width: 90, height: 90)
        try d.waitUntil("the fresh photo waits at compress") { try d.jobs("photo = 'fresh.png' AND stage_index = 1 AND state = 'queued'").count == 1 }
        #expect(try DaemonHarness.run(["resume", "compress", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 61, timeout: 120)
        let db = try d.journalDB()
        let fresh = try #require(try db.queryOne("SELECT id, finished FROM jobs WHERE photo = 'fresh.png'"))
        let started = try db.query("""
            SELECT j.origin, min(e.id) FROM job_events e JOIN jobs j ON j.id = e.job_id
            WHERE e.event = 'started' AND e.stage = 'compress' AND j.id > 30 GROUP BY j.id ORDER BY min(e.id)
            """).compactMap { $0.string(0) }
        #expect(started.first == "inbox", "compress claimed in this order: \(started)")
        let lastReprocess = try #require(try db.queryOne("SELECT max(finished) FROM jobs WHERE origin = 'reprocess'")?.double(0))
        #expect(fresh.double(1)! < lastReprocess)
        #expect(try d.stateCounts() == ["done": 61])
        #expect(d.stop().status == 0)
    }

    /// Bob (a real second uid) reprocessing everything touches only his own record; the
    /// job is his, and root's record keeps its change tag.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
    func aUserReprocessesOnlyTheRecordsTheyMayWrite() throws {
        let users = WhoMayDoWhatTests()
        let d = try users.start(stages: Self.definition(width: 60))
        try d.drop("Canon_40D.jpg", as: "root.jpg")
        try users.drop(users.bob, d, "Nikon_D70.jpg", as: "bob.jpg")
        try d.waitIdle(jobs: 2)
        // Root's record shared for reading: bob's query finds it, but he may not write it.
        let roots = try #require(try Self.records(d).values.first { $0["owner"]?.stringValue != users.bob }?["id"]?.stringValue)
        #expect(try DaemonHarness.run(["update", roots, "--acl", #"{"read": ["\#(users.bob)"]}"#, "--home", d.home]).0 == 0)
        #expect(try users.cliJSON(users.bob, d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.count == 2)
        let before = try Self.records(d)
        let bobs = try #require(before.values.first { $0["owner"]?.stringValue == users.bob }?["id"]?.stringValue)
        let answer = try users.cliJSON(users.bob, d, ["reprocess", "TRUEPREDICATE"])
        #expect(answer["enqueued"]?.intValue == 1 && answer["matched"]?.intValue == 1, "\(answer)")
        try d.waitIdle(jobs: 3)
        let job = try #require(try d.jobs("origin = 'reprocess'").first)
        let owner = try JSONValue.parse(job.memo)["owner"]?.stringValue
        #expect(job.state == "done" && owner == users.bob)
        for (id, r) in try Self.records(d) {
            #expect((r["change_tag"] == before[id]?["change_tag"]) == (id != bobs), "\(id)")
        }
        #expect(d.stop().status == 0)
    }

    /// Reprocess jobs have a cap of their own: a user with 1,101 records asking for all of
    /// them gets 1,000 queued (and 1,000 originals copied to HOME/reprocess), told why it
    /// stopped, and `too_many_jobs` when asking again, as `enqueue` and `retry` do; their
    /// fresh memo lines and photos are still taken (an admin's reprocess of everything
    /// made jobs of each owner that locked them out).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
    func aUserReprocessStopsAtTheirUnfinishedJobsCap() throws {
        let users = WhoMayDoWhatTests()
        let d = try users.start(stages: Self.definition(width: 60))
        let png = d.root + "/bob.png"  // a small original: the copies cost little
        try makePNG(png, mode: "grey", width: 64, height: 48)
        chmod(png, 0o644)
        #expect(try DaemonHarness.run(as: users.bob, ["/bin/cp", png, d.home + "/inbox/.bob.png.part"]).0 == 0)
        #expect(try DaemonHarness.run(as: users.bob, ["/bin/mv", d.home + "/inbox/.bob.png.part", d.home + "/inbox/bob.png"]).0 == 0)
        try d.waitIdle(jobs: 1)
        let assets = try #require(try Self.records(d).values.first?["assets"])
        d.stop()
        // 1,100 more records of bob's with that original, straight into the index.
        _ = try RecordStore(path: d.home + "/photomemo.sqlite").apply(batch: (0..<1100).map {
            RecordInput(jobKey: "copy\($0)", photoSHA256: nil, memo: MemoJob(memo: "copy \($0)", type: "Photo", owner: users.bob),
                        assets: assets, exif: .emptyObject, width: nil, height: nil)
        }, now: unixNow())
        try d.start(args: ["--socket-group", "nogroup"])
        #expect(try DaemonHarness.run(["pause", "--home", d.home]).0 == 0)  // the jobs stay queued
        let (status, out, err) = try users.cli(users.bob, d, ["reprocess", "TRUEPREDICATE", "--json"])
        let answer = try JSONValue.parse(out)
        #expect(status == 1 && answer["enqueued"]?.intValue == 1000, "\(out) \(err)")
        #expect(answer["stopped"]?.stringValue?.contains("1000 unfinished reprocess jobs") == true, "\(out)")
        #expect(try d.jobs("origin = 'reprocess'").count == 1000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").count == 1000)
        let (again, _, why) = try users.cli(users.bob, d, ["reprocess", "TRUEPREDICATE"])
        #expect(again == 1 && why.contains("1000 unfinished reprocess jobs"), "\(why)")
        let (enqueued, _, refused) = try users.cli(users.bob, d, ["enqueue", "--memo", "still mine to add"])
        #expect(enqueued == 0, "\(refused)")
        #expect(try d.jobs("origin <> 'reprocess' AND state = 'queued'").count == 1)
        // A retried reprocess job counts toward the reprocess cap (the other cap let 1,001 run).
        let one = try #require(try d.jobs("origin = 'reprocess'").first?.id)
        #expect(try users.cli(users.bob, d, ["cancel", String(one)]).0 == 0)
        #expect(try JSONValue.parse(users.cli(users.bob, d, ["reprocess", "TRUEPREDICATE", "--json"]).1)["enqueued"]?.intValue == 1)
        let (single, _, over) = try users.cli(users.bob, d, ["retry", String(one)])
        #expect(single == 1 && over.contains("1000 unfinished reprocess jobs"), "\(over)")
        let (_, bulk, _) = try users.cli(users.bob, d, ["retry", "--state", "cancelled", "--json"])
        #expect(try JSONValue.parse(bulk)["stopped"]?.stringValue?.contains("1000 unfinished reprocess jobs") == true, "\(bulk)")
        #expect(try d.jobs("origin = 'reprocess' AND state = 'queued'").count == 1000)
        #expect(d.stop().status == 0)
    }

    /// A cancelled reprocess job's copy of its original leaves HOME/reprocess with it (the
    /// original stays in the store): else reprocess, cancel and an update, again and again,
    /// fill the disk with copies no job will use. Retrying it then says the photo is gone,
    /// and to ask `reprocess` again, which runs the records again.
    @Test func aCancelledReprocessJobLeavesNoCopyBehind() throws {
        let d = try Self.twoRecords()
        _ = try json(d, ["pause"])
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        let copies = { try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").count }
        #expect(try copies() == 2)
        let jobs = try d.jobs("origin = 'reprocess'").map(\.id).sorted()
        _ = try json(d, ["cancel", String(jobs[0])])
        #expect(try copies() == 1)
        _ = try json(d, ["cancel", "--state", "queued"])
        #expect(try copies() == 0)
        let (status, _, err) = try DaemonHarness.run(["retry", String(jobs[0]), "--home", d.home])
        #expect(status == 1 && err.contains("photo is gone") && err.contains("photomemo reprocess"), "\(err)")
        // As the error says: asking again runs both records again (the cancelled jobs gave their
        // keys up), from copies of their own: the cancelled jobs' copy names are not reused (a
        // retention round removing an ended job's copy removed the new job's), and the
        // cancelled jobs can no longer be retried (two jobs would update a record twice).
        let ended = Set(try d.journalDB().query("SELECT photo_path FROM jobs WHERE origin = 'reprocess'").compactMap { $0.string(0) })
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        let fresh = Set(try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").map { d.home + "/reprocess/" + $0 })
        #expect(fresh.count == 2 && fresh.isDisjoint(with: ended), "\(fresh) \(ended)")
        let again = try json(d, ["retry", "--state", "cancelled"])
        #expect(again["changed"]?.intValue == 0 && again["refused_total"]?.intValue == 2, "\(again)")
        #expect(again["refused"]?.arrayValue?.first?["error"]?.stringValue?.contains("asked to reprocess again since") == true, "\(again)")
        _ = try json(d, ["resume"])
        try d.waitIdle(jobs: 6)
        #expect(try d.jobs("origin = 'reprocess' AND state = 'done'").count == 2)
        #expect(d.stop().status == 0)
    }

    /// A record deleted while its reprocess job is queued: the job is cancelled with its copy,
    /// and the purged record's photo leaves the store (the job no longer pins it); the other
    /// record's job runs.
    @Test func aPurgedRecordsQueuedReprocessEndsAndItsPhotoLeavesTheStore() throws {
        let d = try Self.twoRecords()
        let records = try Self.records(d)
        let (gone, kept) = (try #require(records.keys.sorted().first), try #require(records.keys.sorted().last))
        let original = d.home + "/store/" + (try #require(records[gone]?["assets"]?["original"]?["key"]?.stringValue))
        #expect(FileManager.default.fileExists(atPath: original))
        _ = try json(d, ["pause", "compress"])
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        #expect(try DaemonHarness.run(["delete", gone, "--purge", "--home", d.home]).0 == 0)
        let cancelled = try d.jobs("origin = 'reprocess' AND state = 'cancelled'")
        #expect(cancelled.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").count == 1, "the cancelled job's copy is gone")
        try d.waitUntil("the purged record's photo leaves the store") { !FileManager.default.fileExists(atPath: original) }
        _ = try json(d, ["resume", "compress"])
        try d.waitIdle(jobs: 4)
        #expect(try d.jobs("origin = 'reprocess' AND state = 'done'").count == 1)
        #expect(try Self.records(d).keys.sorted() == [kept])
        let verify = try json(d, ["verify"])
        #expect(verify["orphans"]?.arrayValue?.isEmpty ?? true && verify["missing"]?.arrayValue?.isEmpty ?? true, "\(verify)")
        #expect(d.stop().status == 0)
    }

    /// A record of a memo alone has no photo to run again: neither matched nor named among
    /// the records without an original (80 memo records there hid the real ones).
    @Test func aMemoOnlyRecordIsNotWithoutAnOriginal() throws {
        let d = try DaemonHarness(stages: Self.definition(width: 60))
        try d.start()
        try Self.dropPNG(d, "a.png", width: 300)
        #expect(try DaemonHarness.run(["enqueue", "--memo", "no photo here", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 2)
        #expect(try Self.records(d).count == 2)
        let answer = try json(d, ["reprocess", "TRUEPREDICATE"])
        #expect(answer["matched"]?.intValue == 1 && answer["enqueued"]?.intValue == 1, "\(answer)")
        #expect(answer["without_original"]?.arrayValue?.isEmpty == true, "\(answer)")
        try d.waitIdle(jobs: 3)
        #expect(d.stop().status == 0)
    }

    /// A reprocess job cancelled by another host (on a shared database its cancel removes
    /// only the copies in its own home): this host's retention round removes the copy.
    @Test func aCopyOfAJobCancelledElsewhereLeavesAtTheNextRetentionRound() throws {
        let d = try DaemonHarness(stages: Self.definition(width: 60).replacingOccurrences(
            of: #""stages": ["#, with: #""retention": {"cancelled": "4s"}, "stages": ["#))
        try d.start()
        try Self.dropPNG(d, "a.png", width: 300)
        try d.waitIdle(jobs: 1)
        _ = try json(d, ["pause"])
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 1)
        let copies = { try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").count }
        #expect(try copies() == 1)
        let job = try #require(try d.jobs("origin = 'reprocess'").first?.id)
        try Journal(path: d.home + "/photomemo.sqlite").cancel(job: job)  // as another host's daemon does
        try d.waitUntil("the copy leaves", timeout: 10) { try copies() == 0 }
        #expect(d.stop().status == 0)
    }

    /// A SIGKILL while reprocess jobs are queued and running loses and duplicates nothing:
    /// after the restart each record is updated once, from its copy still in HOME/reprocess.
    @Test func aKillMidReprocessResumes() throws {
        let d = try DaemonHarness(stages: Self.definition(width: 80))
        try d.start()
        for i in 0..<6 { try Self.dropPNG(d, "p\(i).png", width: 200 + i, height: 100) }
        try d.waitIdle(jobs: 6)
        let before = try Self.records(d)
        try Self.definition(width: 40).write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        #expect(try DaemonHarness.run(["reload", "--home", d.home]).0 == 0)
        try d.waitUntil("the reload applies") { d.log.contains("reloaded job definition w40") }
        #expect(try DaemonHarness.run(["pause", "upload", "--home", d.home]).0 == 0)
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 6)
        try d.waitUntil("the jobs wait at upload") { try d.jobs("origin = 'reprocess' AND stage_index = 2 AND state = 'queued'").count == 6 }
        _ = d.stop(SIGKILL)
        try d.start()
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 0, "still queued: none added")
        #expect(try DaemonHarness.run(["resume", "upload", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 12)
        #expect(try d.stateCounts() == ["done": 12])
        let after = try Self.records(d)
        #expect(Set(after.keys) == Set(before.keys))
        #expect(after.values.allSatisfy { $0["assets"]?["display"]?["width"]?.intValue == 40 }, "\(after)")
        let changes = try json(d, ["changes", "--since", "0"])["changes"]?.arrayValue ?? []
        #expect(changes.filter { $0["op"] == "update" }.count == 6, "one update each")
        #expect(d.stop().status == 0)
    }

    /// A bad predicate and an unknown (or too late a) stage are refused, nothing queued.
    @Test func aBadPredicateOrStageIsAClearError() throws {
        let d = try DaemonHarness(stages: Self.definition(width: 60))
        try d.start()
        let bad = try DaemonHarness.run(["reprocess", "width >>> 3", "--home", d.home])
        #expect(bad.0 != 0 && bad.2.contains("predicate"), "\(bad)")
        let unknown = try DaemonHarness.run(["reprocess", "TRUEPREDICATE", "--from", "compres", "--home", d.home])
        #expect(unknown.0 != 0 && unknown.2.contains(#"no stage "compres""#) && unknown.2.contains(#"did you mean "compress""#), "\(unknown)")
        let late = try DaemonHarness.run(["reprocess", "TRUEPREDICATE", "--from", "index", "--home", d.home])
        #expect(late.0 != 0 && late.2.contains("before upload"), "\(late)")
        #expect(try d.stateCounts().isEmpty)
        #expect(d.stop().status == 0)
    }
}
