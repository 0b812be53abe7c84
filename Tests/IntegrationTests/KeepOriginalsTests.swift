import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Issue 26, originals and receipts, on the real daemon and the whole pipeline: a `keep`
/// inbox (a folder a two-way sync tool owns) is never written to; a path is taken once per
/// bytes, and new bytes update its record; a `create` change is the photo's receipt.
@Suite(.serialized) struct KeepOriginalsTests {
    /// `Jobs/local-store.json` with `inbox` (a section's text), upload's options, and the
    /// notify stage (which fans the pipeline's changes out to subscriptions).
    static func definition(inbox: String = #""inbox": {"originals": "keep"},"#, upload: String = "{}") throws -> String {
        let base = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8)
        return base.replacingOccurrences(of: #"{ "name": "local-store","#, with: #"{ "name": "keep", "# + inbox)
            .replacingOccurrences(of: #"{"use": "upload",   "with": {}}"#, with: #"{"use": "upload",   "with": \#(upload)}"#)
            .replacingOccurrences(of: #"{"use": "index",    "with": {}}"#, with: #"{"use": "index", "with": {}}, {"use": "notify", "with": {}}"#)
    }

    /// Every entry under `root`, and `root` itself: type and mode, size, inode, mtime, ctime
    /// and, for a file, the SHA-256 of its bytes (a link's text for a link).
    static func snapshot(_ root: String) -> [String: String] {
        var out: [String: String] = [:]
        for rel in [""] + (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []) {
            let path = rel.isEmpty ? root : root + "/" + rel
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            let content = switch st.st_mode & S_IFMT {
            case S_IFREG: (try? SHA256.hexOfFile(atPath: path).hex) ?? "unreadable"
            case S_IFLNK: (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
            default: "-"
            }
            out[rel] = "\(st.st_mode) \(st.st_size) \(st.st_ino) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) \(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec) \(content)"
        }
        return out
    }

    static func sha(_ photo: String) throws -> String { try SHA256.hexOfFile(atPath: testPhotos.appendingPathComponent(photo).path).hex }

    /// Whether the daemon's store (its folder, or the harness's S3 bucket) holds `key`.
    func records(_ d: DaemonHarness) throws -> [JSONValue] { try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? [] }
    func changes(_ d: DaemonHarness) throws -> [JSONValue] { try json(d, ["changes", "--since", "0"])["changes"]?.arrayValue ?? [] }

    /// What a sync tool does when a photo changes on the phone: the new bytes under a
    /// temporary name, renamed over the old file.
    func replace(_ d: DaemonHarness, _ name: String, with photo: String) throws {
        let tmp = d.home + "/inbox/.syncthing.\(name).tmp"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(photo).path, toPath: tmp)
        #expect(rename(tmp, d.home + "/inbox/" + name) == 0)
    }

    /// Two rescans (`--rescan-interval 2`) have looked at everything since.
    func waitForRescans() { Thread.sleep(forTimeInterval: 4.5) }

    @Test func aKeepInboxStaysByteIdenticalAndARestartTakesNothingAgain() throws {
        let d = try DaemonHarness(stages: try Self.definition())
        let inbox = d.home + "/inbox"
        try FileManager.default.createDirectory(atPath: inbox + "/DCIM", withIntermediateDirectories: true)
        for (photo, name) in [("Nikon_D70.jpg", "a.jpg"), ("Canon_40D.jpg", "b.jpg"), ("Nikon_D70.jpg", "copy-of-a.jpg"),
                              ("corrupted.jpg", "bad.jpg")] {
            try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(photo).path, toPath: inbox + "/" + name)
        }
        #expect(symlink("a.jpg", inbox + "/link.jpg") == 0)
        try Data("moov".utf8).write(to: URL(fileURLWithPath: inbox + "/DCIM/clip.MOV"))
        // A name that is not UTF-8 ("f\xFF\xFE.jpg"), which a delete inbox renames into quarantine.
        let badName = Array((inbox + "/").utf8) + [0x66, 0xFF, 0xFE, 0x2E, 0x6A, 0x70, 0x67, 0]
        func badNameStat() -> String {
            var st = stat()
            let ok = badName.withUnsafeBufferPointer { lstat(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), &st) } == 0
            return ok ? "\(st.st_ino) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) \(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)" : "gone"
        }
        let fd = badName.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT, 0o644) }
        #expect(fd >= 0)
        close(fd)
        Thread.sleep(forTimeInterval: 0.05)  // the folder's mtime settles before it is looked at
        let before = Self.snapshot(inbox)
        let badBefore = badNameStat()

        try d.start()
        try d.waitIdle(jobs: 6, timeout: 90)  // a, b, the copy (a duplicate), bad, the link, the bad name
        waitForRescans()
        #expect(Self.snapshot(inbox) == before, "the daemon wrote in a keep inbox")
        #expect(badNameStat() == badBefore)
        #expect(d.quarantined().isEmpty)
        let found = try records(d)
        // One record per bytes: the copy is a duplicate of a.jpg (whichever a walk met first).
        let sources = Dictionary(found.compactMap { r in r["source"]?.stringValue.map { ($0, r["sha256"]?.stringValue ?? "") } }) { a, _ in a }
        let (nikon, canon) = (try Self.sha("Nikon_D70.jpg"), try Self.sha("Canon_40D.jpg"))
        #expect(found.count == 2 && sources["b.jpg"] == canon, "\(found)")
        #expect((sources["a.jpg"] ?? sources["copy-of-a.jpg"]) == nikon, "\(found)")
        // The bad photo's reason is recorded, it stays, it is listed, and it is not tried again.
        let jobs = try d.jobs()
        let bad = try #require(jobs.first { $0.photo == "bad.jpg" })
        #expect(bad.state == "failed" && (bad.error ?? "").contains("JPEG is damaged"), "\(bad)")
        let quarantine = try d.journalDB().queryOne("SELECT quarantine FROM jobs WHERE id = ?", [.int(bad.id)])?.string(0) ?? ""
        #expect(quarantine.hasPrefix("(kept in place: ") && quarantine.contains("bad.jpg"), "\(quarantine)")
        let listed = try json(d, ["inbox"])["skipped"]?.arrayValue ?? []
        let reasons = Dictionary(listed.compactMap { e in e["name"]?.stringValue.map { ($0, e["reason"]?.stringValue ?? "") } }) { a, _ in a }
        #expect(reasons["bad.jpg"]?.hasPrefix("kept in place, not taken: ") == true && reasons["bad.jpg"]!.contains("JPEG is damaged"), "\(listed)")
        #expect(reasons["link.jpg"]?.contains("a symlink is not taken") == true, "\(listed)")
        #expect(reasons["a.jpg"] == nil)
        #expect(reasons[#"f\xFF\xFE.jpg"#]?.contains("is not valid UTF-8") == true, "\(listed)")

        #expect(d.stop().status == 0)
        try d.start()
        waitForRescans()
        let after = try d.jobs()
        #expect(after.count == 6, "a restart took a kept file again: \(after.map { ($0.photo, $0.state) })")
        #expect(try records(d).count == 2)
        #expect(Self.snapshot(inbox) == before && badNameStat() == badBefore)
        #expect(d.stop().status == 0)
    }

    @Test func anEditedPhotoUpdatesItsRecordReleasesTheOldOriginalAndARemovedOneLeavesIt() throws {
        let d = try DaemonHarness(stages: try Self.definition())
        try d.start()
        let watcher = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(watcher.call("watch")?["ok"] == true)
        let follower = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(follower.call("subscribe", ["type": "Photo", "predicate": "TRUEPREDICATE", "fires_on": "create,update"])?["ok"] == true)
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        let first = try #require(try records(d).first)
        let id = try #require(first["id"]?.stringValue)
        let oldKey = try #require(first["assets"]?["original"]?["key"]?.stringValue)
        #expect(d.storeHolds(oldKey))

        try replace(d, "a.jpg", with: "Canon_40D.jpg")
        try d.waitIdle(jobs: 2, timeout: 60)
        let now = try records(d)
        #expect(now.count == 1 && now.first?["id"]?.stringValue == id, "\(now)")
        #expect(now.first?["sha256"]?.stringValue == (try Self.sha("Canon_40D.jpg")) && now.first?["source"] == "a.jpg")
        let (status, shown, _) = try DaemonHarness.run(["get", id, "--home", d.home])
        let canon = try Self.sha("Canon_40D.jpg")
        #expect(status == 0 && shown.contains("  source      a.jpg\n") && shown.contains("  sha256      \(canon)\n"), "\(shown)")
        let newKey = try #require(now.first?["assets"]?["original"]?["key"]?.stringValue)
        #expect(newKey != oldKey)
        let feed = try changes(d)
        #expect(feed.compactMap { $0["op"]?.stringValue } == ["create", "update"])
        #expect(feed.last?["record"]?["sha256"] == now.first?["sha256"])
        // `watch` shows each record the pipeline wrote, with its receipt.
        var written: [JSONValue] = []
        while written.count < 2, let e = watcher.readLine(timeout: 5) {
            if e["event"]?.stringValue?.hasPrefix("record_") == true { written.append(e) }
        }
        #expect(written.map { $0["event"] } == ["record_create", "record_update"] && written.allSatisfy { $0["record"] == .string(id) }, "\(written)")
        let nikon = try Self.sha("Nikon_D70.jpg")
        #expect(written.first?["source"] == "a.jpg" && written.first?["sha256"]?.stringValue == nikon, "\(written)")
        #expect(written.last?["sha256"] == now.first?["sha256"])
        // So do a subscription's events (a webhook's and a command's carry the same record).
        let pushed = [follower.readLine(timeout: 10), follower.readLine(timeout: 10)]
        #expect(pushed.map { $0?["op"] } == ["create", "update"] && pushed.first??["record"]?["source"] == "a.jpg", "\(pushed)")
        #expect(pushed.first??["record"]?["sha256"]?.stringValue == nikon && pushed.last??["record"]?["sha256"] == now.first?["sha256"])
        try d.waitUntil("the old original leaves the store") { !d.storeHolds(oldKey) }
        #expect(d.storeHolds(newKey))

        // Touched (same bytes, new mtime): not taken again.
        #expect(utimes(d.home + "/inbox/a.jpg", nil) == 0)
        waitForRescans()
        #expect(try d.jobs().count == 2)
        // Removed: its record stays.
        #expect(unlink(d.home + "/inbox/a.jpg") == 0)
        waitForRescans()
        #expect(try records(d).map { $0["id"] } == [.string(id)])
        #expect(try changes(d).count == 2)
        #expect(d.stop().status == 0)
    }

    @Test func keepOriginalsIsTheOldNameAndBothDifferingIsABadDefinition() throws {
        let d = try DaemonHarness(stages: try Self.definition(inbox: "", upload: #"{"keep_originals": "keep"}"#))
        try d.start()
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        #expect(try d.stateCounts() == ["done": 1])
        waitForRescans()
        #expect(FileManager.default.fileExists(atPath: d.home + "/inbox/a.jpg"), "keep_originals: keep removed the original")
        #expect(d.stop().status == 0)

        let both = d.root + "/both.json"
        try Self.definition(upload: #"{"keep_originals": "delete"}"#).write(toFile: both, atomically: true, encoding: .utf8)
        let (status, _, err) = try DaemonHarness.run(["check", both])
        #expect(status != 0 && err.contains(#"keep_originals is "delete" but inbox.originals is "keep""#), "\(status) \(err)")
    }

    /// The receipt: SIGKILL as the original is about to be renamed into the store — no
    /// `create` change exists yet; after the restart exactly one, with `source` and `sha256`,
    /// and the store holds those bytes. (A record written before its original was stored
    /// would be in the feed at the kill.) The failpoint is the local store's.
    @Test(.enabled(if: !DaemonHarness.sharedEngines)) func aCreateChangeIsWrittenOnlyOnceTheOriginalIsStored() throws {
        let d = try DaemonHarness(stages: try Self.definition())
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "store.before_rename=1"])
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        #expect(try d.waitForExit().status == SIGKILL)
        #expect(try d.journalDB().queryOne("SELECT count(*) FROM changes")?.int(0) == 0, "a create change before its original was stored")
        try d.start()
        try d.waitIdle(jobs: 1, timeout: 60)
        let feed = try changes(d)
        let sha = try Self.sha("Nikon_D70.jpg")
        #expect(feed.count == 1 && feed.first?["op"] == "create" && feed.first?["record"]?["source"] == "a.jpg", "\(feed)")
        #expect(feed.first?["record"]?["sha256"]?.stringValue == sha)
        let key = try #require(feed.first?["record"]?["assets"]?["original"]?["key"]?.stringValue)
        #expect(try SHA256.hexOfFile(atPath: d.home + "/store/" + key).hex == sha)
        #expect(d.stop().status == 0)
    }

    /// SIGKILL while an edit is taken (between hashing and the journal's commit), and
    /// between the index stage's write of the update and the journal's record of it (the
    /// 9th stage run: five for the first job, then validate, compress, upload, index):
    /// after the restart, one record, one `update`, nothing taken twice.
    @Test(arguments: ["inbox.before_commit=2", "stage.before_journal=9"])
    func killedWhileAnEditIsTakenOrIndexedItIsOneUpdate(_ failpoint: String) throws {
        let d = try DaemonHarness(stages: try Self.definition())
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": failpoint])
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        try d.waitIdle(jobs: 1, timeout: 60)
        try replace(d, "a.jpg", with: "Canon_40D.jpg")
        #expect(try d.waitForExit().status == SIGKILL)
        try d.start()
        try d.waitIdle(jobs: 2, timeout: 60)
        waitForRescans()
        #expect(try d.jobs().count == 2)
        let found = try records(d)
        let canon = try Self.sha("Canon_40D.jpg")
        #expect(found.count == 1 && found.first?["sha256"]?.stringValue == canon, "\(found)")
        #expect(try changes(d).compactMap { $0["op"]?.stringValue } == ["create", "update"])
        #expect(d.stop().status == 0)
    }
}
