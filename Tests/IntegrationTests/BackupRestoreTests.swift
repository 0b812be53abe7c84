import Foundation
import Glibc
import PhotomemoCore
import SQLite
import StageKit
import TestSupport
import Testing

/// `photomemo backup` while the daemon takes photos, `photomemo restore` into a fresh home,
/// and a daemon on it (DESIGN.md, "Running for months": backup and restore).
@Suite(.serialized) struct BackupRestoreTests {
    static let definition = (try? String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)) ?? ""
    /// Photos with distinct bytes (the same bytes twice are one record).
    static let photos: [String] = ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg", "exif-org_canon-ixus.jpg", "exif-org_nikon-e950.jpg",
                                   "xmp_no_exif.jpg"] + (1...8).flatMap { ["orientation_landscape_\($0).jpg", "orientation_portrait_\($0).jpg"] }

    func records(_ d: DaemonHarness) throws -> [JSONValue] {
        try json(d, ["query", "TRUEPREDICATE", "--limit", "1000"])["records"]?.arrayValue ?? []
    }

    /// Every record's assets in the backup's database copy are objects in the backup whose
    /// bytes hash to their key.
    func expectEveryAssetInBackup(_ dir: String) throws -> Int {
        let db = try Database(path: dir + "/photomemo.sqlite", readOnly: true)
        let keys = try db.query("SELECT key FROM record_assets", []).compactMap { $0.string(0) }
        for key in keys {
            let (hex, _) = try SHA256.hexOfFile(atPath: dir + "/store/" + key)
            #expect(key.hasSuffix(hex), "\(key) in the backup")
        }
        return try db.queryOne("SELECT count(*) FROM records", [])?.int(0).map(Int.init) ?? 0
    }

    @Test func aBackupWhilePhotosArriveRestoresToTheSameRecordsAssetsChangesAndSubscriptions() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        for p in Self.photos.prefix(6) { try d.drop(p) }
        try d.waitIdle(jobs: 6)
        let sub = try json(d, ["subscribe", "--type", "Photo", "--fires-on", "create", "--exec", "true"])
        // Photos keep arriving while the backup runs.
        let dropping = DispatchSemaphore(value: 0)
        let later = Array(Self.photos.dropFirst(6))
        let inbox = d.home + "/inbox"
        let drop = { @Sendable (p: String) in  // as DaemonHarness.drop, from another thread
            let tmp = inbox + "/.\(p).part"
            try? FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(p).path, toPath: tmp)
            rename(tmp, inbox + "/" + p)
        }
        Thread.detachNewThread {
            for p in later { drop(p); Thread.sleep(forTimeInterval: 0.05) }
            dropping.signal()
        }
        let dir = d.root + "/backup"
        Thread.sleep(forTimeInterval: 0.2)
        let result = try json(d, ["backup", dir])
        dropping.wait()
        #expect(result["manifest"]?["missing"]?.arrayValue?.isEmpty == true)
        #expect(result["manifest"]?["damaged"]?.arrayValue?.isEmpty == true)
        let backedUp = try expectEveryAssetInBackup(dir)
        #expect(backedUp >= 6)
        try d.waitIdle(jobs: Self.photos.count)

        let r = try DaemonHarness(stages: Self.definition)
        let (status, out, err) = try DaemonHarness.run(["restore", dir, "--home", r.home])
        #expect(status == 0, "\(err)")
        #expect(out.contains("restored sqlite database"))
        try r.start()
        // Jobs unfinished at the backup's instant resume: one past upload makes its record
        // here too (the same id as the original's; a later change).
        try r.waitUntil("resumed jobs finish") { try r.stateCounts().keys.allSatisfy { ["done", "failed"].contains($0) } }
        let inBackup = Set(try Database(path: dir + "/photomemo.sqlite", readOnly: true).query("SELECT id FROM records", []).compactMap { $0.string(0) })
        // The restored home holds the records of the backup's instant, each as the original has it.
        let restored = try records(r)
        #expect(Set(restored.compactMap { $0["id"]?.stringValue }).isSuperset(of: inBackup) && inBackup.count == backedUp)
        let originals = Dictionary(uniqueKeysWithValues: try records(d).map { ($0["id"]?.stringValue ?? "", $0) })
        for rec in restored {
            let id = try #require(rec["id"]?.stringValue)
            #expect(originals[id] != nil, "record \(id)")
            guard inBackup.contains(id) else { continue }
            #expect(originals[id] == rec, "record \(id)")
            for rendition in ["original", "display", "thumbnail"] {
                let file = r.root + "/\(id).\(rendition)"
                _ = try json(r, ["asset", id, rendition, "-o", file])
                #expect(try SHA256.hexOfFile(atPath: file).hex == rec["assets"]?[rendition]?["sha256"]?.stringValue)
            }
        }
        // The same change numbers, a prefix of the original's feed.
        func changes(_ h: DaemonHarness) throws -> [String] {
            (try json(h, ["changes", "--since", "0"])["changes"]?.arrayValue ?? []).map {
                "\($0["seq"]?.intValue ?? -1) \($0["op"]?.stringValue ?? "") \($0["record"]?["id"]?.stringValue ?? "")"
            }
        }
        let restoredChanges = try changes(r), originalChanges = try changes(d)
        #expect(restoredChanges.count == restored.count)
        #expect(Array(originalChanges.prefix(backedUp)) == Array(restoredChanges.prefix(backedUp)))
        let subs = try json(r, ["subscriptions"])
        #expect(subs.jsonString.contains(try #require(sub["id"]?.stringValue)))
        // The restored daemon takes new photos: one the original has not seen.
        let fresh = r.root + "/fresh.jpg"
        var bytes = try Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg"))
        bytes.append(contentsOf: Array("restored".utf8))  // after the JPEG's end: new bytes, the same picture
        try bytes.write(to: URL(fileURLWithPath: fresh))
        rename(fresh, r.home + "/inbox/fresh.jpg")
        try r.waitUntil("the restored daemon took a new photo") { try self.records(r).count == restored.count + 1 }
        #expect(try json(r, ["verify"])["damaged"]?.arrayValue?.isEmpty == true)
    }

    /// One backup, then copies of it each broken one way: restore names the fault and
    /// writes nothing to NEWHOME.
    /// A definition naming a `file:` store of its own folder: the restored definition names
    /// the restored home's store instead, so the homes never share objects. With the
    /// original's, the restored home's `verify --repair` deleted what the original stored
    /// after the backup, as orphans (attack review).
    @Test func aRestoredDefinitionNamesTheRestoredStoreNotTheOriginals() throws {
        let objects = NSTemporaryDirectory() + "pm-objects-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: objects) }
        var job = try #require(try JSONValue.parse(Data(Self.definition.utf8)).objectValue)
        job["store"] = .string("file:" + objects)
        let d = try DaemonHarness(stages: JSONValue.object(job).jsonString)
        try d.start()
        for p in Self.photos.prefix(2) { try d.drop(p) }
        try d.waitIdle(jobs: 2)
        let dir = d.root + "/backup"
        _ = try json(d, ["backup", dir])
        let r = try DaemonHarness(stages: Self.definition)
        let (status, out, err) = try DaemonHarness.run(["restore", dir, "--home", r.home])
        #expect(status == 0, "\(err)")
        #expect(out.contains("its definition's store file:\(objects) is now file:store, restored in \(r.home)"), "\(out)")
        let restoredJob = try String(contentsOfFile: r.home + "/job.json", encoding: .utf8)
        #expect(try JSONValue.parse(Data(restoredJob.utf8))["store"] == "file:store")
        // The original goes on: a photo the backup does not have.
        try d.drop(Self.photos[2])
        try d.waitIdle(jobs: 3)
        try restoredJob.write(toFile: r.jobFile, atomically: true, encoding: .utf8)  // started as the restore says
        try r.start()
        #expect(try records(r).count == 2)
        _ = try json(r, ["verify", "--repair"])
        let original = try json(d, ["verify"])
        #expect(original["missing"]?.arrayValue?.isEmpty == true && original["damaged"]?.arrayValue?.isEmpty == true, "\(original)")
        #expect(try json(r, ["verify"])["missing"]?.arrayValue?.isEmpty == true)
    }

    @Test func restoreRefusesATamperedBackupBeforeWritingAnything() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        for p in Self.photos.prefix(2) { try d.drop(p) }
        try d.waitIdle(jobs: 2)
        let dir = d.root + "/backup"
        _ = try json(d, ["backup", dir])
        // One file per thing: the database copy is not left in WAL mode (no -wal or -shm beside it).
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir)) == ["manifest.json", "photomemo.sqlite", "job.json", "store"])
        let manifest = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: dir + "/manifest.json")))
        let key = try #require(manifest["objects"]?.arrayValue?.first?["key"]?.stringValue)

        func broken(_ name: String, _ damage: (String) throws -> Void) throws -> String {
            let copy = d.root + "/" + name
            try FileManager.default.copyItem(atPath: dir, toPath: copy)  // a copy: the backup's objects are links to the store's
            try damage(copy)
            return copy
        }
        func expectRefused(_ backup: String, _ words: String) throws {
            let target = d.root + "/restored-" + (backup as NSString).lastPathComponent
            let (status, _, err) = try DaemonHarness.run(["restore", backup, "--home", target])
            #expect(status == 1, "\(backup): \(err)")
            #expect(err.contains(words), "\(backup): \(err)")
            #expect(!FileManager.default.fileExists(atPath: target), "\(target) written")
            let staged = try FileManager.default.contentsOfDirectory(atPath: d.root).filter { $0.contains(".restoring-") }
            #expect(staged.isEmpty)
        }
        try expectRefused(try broken("one-byte") { copy in
            let fd = open(copy + "/store/" + key, O_WRONLY)
            _ = pwrite(fd, "X", 1, 10)
            close(fd)
        }, "object \(key) is damaged")
        try expectRefused(try broken("missing-object") { unlink($0 + "/store/" + key) }, "object \(key) is missing")
        try expectRefused(try broken("missing-database") { unlink($0 + "/photomemo.sqlite") }, "file photomemo.sqlite is missing")
        try expectRefused(try broken("newer-schema") { copy in
            var m = manifest.objectValue ?? [:]
            m["schemas"] = ["journal": 1, "record_index": 999]
            try JSONValue.object(m).jsonData.write(to: URL(fileURLWithPath: copy + "/manifest.json"))
        }, "record_index of schema version 999, newer than this photomemo opens")
        try expectRefused(try broken("interrupted") { unlink($0 + "/manifest.json") }, "is not a complete backup")
        // NEWHOME that holds anything is never written over.
        let occupied = d.root + "/occupied"
        try FileManager.default.createDirectory(atPath: occupied, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: occupied + "/keep", contents: Data("mine".utf8))
        let (status, _, err) = try DaemonHarness.run(["restore", dir, "--home", occupied])
        #expect(status == 1 && err.contains("is not an empty folder"), "\(err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: occupied) == ["keep"])
        // And a backup folder that is not empty is refused by backup, leaving it as it was.
        let (bstatus, _, berr) = try DaemonHarness.run(["backup", occupied, "--home", d.home])
        #expect(bstatus == 1 && berr.contains("is not empty"), "\(berr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: occupied) == ["keep"])
    }
}

extension BackupRestoreTests {
    /// PostgreSQL + S3: `pg_dump` into the backup, the bucket's objects named with their
    /// sha256; `restore --database` into an empty database gives a daemon on the same
    /// bucket the same records and change numbers.
    @Test func aPostgresAndS3BackupRestoresIntoAnEmptyDatabase() throws {
        let d = try DaemonHarness(stages: Self.definition)
        d.database = try PostgresServer.freshDatabase()
        d.s3 = try SeaweedFS()
        try d.start()
        for p in Self.photos.prefix(3) { try d.drop(p) }
        try d.waitIdle(jobs: 3)
        let dir = d.root + "/backup"
        let m = try json(d, ["backup", dir])["manifest"] ?? .null
        #expect(m["engine"] == "postgres")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir)) == ["manifest.json", "database.pgdump", "job.json"])
        let objects = m["objects"]?.arrayValue ?? []
        #expect(objects.count == 9 && objects.allSatisfy { $0["copied"] == false && ($0["key"]?.stringValue ?? "").hasSuffix($0["sha256"]?.stringValue ?? "?") })

        let r = try DaemonHarness(stages: Self.definition)
        r.database = try PostgresServer.freshDatabase("restored")
        r.s3 = d.s3
        let (refused, _, why) = try DaemonHarness.run(["restore", dir, "--home", r.home])
        #expect(refused == 1 && why.contains("name the empty database"), "\(why)")
        let (status, _, err) = try DaemonHarness.run(["restore", dir, "--home", r.home, "--database", try #require(r.database)])
        #expect(status == 0, "\(err)")
        try r.start()
        #expect(try records(r).sorted { "\($0["id"]!)" < "\($1["id"]!)" } == (try records(d)).sorted { "\($0["id"]!)" < "\($1["id"]!)" })
        #expect(try json(r, ["changes", "--since", "0"])["changes"]?.arrayValue?.compactMap { $0["seq"]?.intValue }
                == (try json(d, ["changes", "--since", "0"])["changes"]?.arrayValue?.compactMap { $0["seq"]?.intValue }))
        // Into a database that already holds photomemo's tables: refused.
        let again = r.root + "/again"
        let (twice, _, twiceErr) = try DaemonHarness.run(["restore", dir, "--home", again, "--database", try #require(r.database)])
        #expect(twice == 1 && twiceErr.contains("already holds photomemo tables") && !FileManager.default.fileExists(atPath: again), "\(twiceErr)")
    }
}
