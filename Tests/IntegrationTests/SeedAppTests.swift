import CompressStage
import Foundation
import StageKit
import TestSupport
import Testing

/// The seed apps, headless: files into the inbox, lines into queue.jsonl, the CLI for the rest.
@Suite(.serialized) struct SeedAppTests {
    func records(_ d: DaemonHarness, _ predicate: String, _ extra: [String] = []) throws -> [JSONValue] {
        try json(d, ["query", predicate] + extra)["records"]?.arrayValue ?? []
    }

    func daemon(_ job: String = "Jobs/photo-memo.json") throws -> DaemonHarness {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent(job), encoding: .utf8))
        try d.start()
        return d
    }

    /// CloudKit CKAsset sample: GoodsMaster records with images over 1 MB; a price range
    /// sorted by price then cost rate; update by code (fields and a new image); delete by code.
    @Test func goodsMasterWithLargeImages() throws {
        let d = try daemon()
        let goods: [(String, Int, Double)] = [("A-001", 1200, 0.35), ("A-002", 450, 0.5), ("B-001", 450, 0.2), ("B-002", 90, 0.1)]
        for (i, (code, price, rate)) in goods.enumerated() {
            let file = d.root + "/\(code).jpg"
            try SyntheticPhoto.write(to: file, width: 2400, height: 1800, orientation: 1, seed: i, quality: 95)
            #expect(((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) > 1_000_000)
            try d.append(#"{"photo":"\#(code).jpg","type":"GoodsMaster","memo":"goods \#(code)","fields":{"code":"\#(code)","name":"item \#(code)","salesPrice":\#(price),"costRate":\#(rate)}}"# + "\n")
            try FileManager.default.copyItem(atPath: file, toPath: d.home + "/inbox/.\(code).part")
            rename(d.home + "/inbox/.\(code).part", d.home + "/inbox/\(code).jpg")
        }
        try d.waitIdle(jobs: 4, timeout: 120)
        #expect(try d.stateCounts()["done"] == 4)
        let found = try records(d, "salesPrice >= 100 AND salesPrice <= 1500", ["--type", "GoodsMaster", "--sort", "-salesPrice,costRate"])
        #expect(found.compactMap { $0["fields"]?["code"]?.stringValue } == ["A-001", "B-001", "A-002"])
        #expect(found.first?["assets"]?["display"]?["width"] == 860)
        #expect((found.first?["assets"]?["original"]?["bytes"]?.intValue ?? 0) > 1_000_000)

        // Update the record whose code is A-002: name, costRate, salesPrice and a new image.
        let target = try #require(try records(d, #"code == "A-002""#).first)
        let id = try #require(target["id"]?.stringValue)
        let oldDisplay = try #require(target["assets"]?["display"]?["key"]?.stringValue)
        let newImage = d.root + "/new.jpg"
        try SyntheticPhoto.write(to: newImage, width: 2400, height: 1800, orientation: 6, seed: 99, quality: 95)
        try d.append(#"{"photo":"A-002-new.jpg","record":"\#(id)","type":"GoodsMaster","memo":"goods A-002","fields":{"name":"renamed","costRate":0.45,"salesPrice":600}}"# + "\n")
        try FileManager.default.copyItem(atPath: newImage, toPath: d.home + "/inbox/A-002-new.jpg")
        try d.waitIdle(jobs: 5, timeout: 60)
        let updated = try json(d, ["get", id])
        #expect(updated["fields"]?["name"] == "renamed" && updated["fields"]?["salesPrice"] == 600 && updated["fields"]?["code"] == "A-002")
        #expect(updated["assets"]?["display"]?["key"]?.stringValue != oldDisplay)
        #expect(updated["assets"]?["display"]?["height"] == 1147)  // the new image is a portrait (orientation 6)
        try d.waitUntil("the replaced image leaves the store") { !d.storeHolds(oldDisplay) }

        // Delete by code.
        let doomed = try #require(try records(d, #"code == "B-002""#).first?["id"]?.stringValue)
        _ = try json(d, ["delete", doomed])
        #expect(try records(d, "TRUEPREDICATE", ["--type", "GoodsMaster"]).count == 3)
        #expect(d.stop().status == 0)
    }

    /// SwiftUI + CoreData task list: Task records sorted by date, edited, deleted; one without an image.
    @Test func taskListWithPhotos() throws {
        let d = try daemon()
        try d.append([
            #"{"photo":"t1.jpg","type":"Task","memo":"buy milk","fields":{"date":"2026-12-03T09:00:00Z","priority":2}}"#,
            #"{"photo":"t2.jpg","type":"Task","memo":"call mum","fields":{"date":"2026-12-01T18:00:00Z","priority":1}}"#,
            #"{"type":"Task","memo":"no picture needed","fields":{"date":"2026-12-02T12:00:00Z","priority":3}}"#,
        ].joined(separator: "\n") + "\n")
        try d.drop("Nikon_D70.jpg", as: "t1.jpg")
        try d.drop("Pentax_K10D.jpg", as: "t2.jpg")
        try d.waitIdle(jobs: 3, timeout: 60)
        let tasks = try records(d, "TRUEPREDICATE", ["--type", "Task", "--sort", "date"])
        #expect(tasks.compactMap { $0["memo"]?.stringValue } == ["call mum", "no picture needed", "buy milk"])
        #expect(tasks[1]["assets"] == .emptyObject)
        #expect(tasks[0]["assets"]?["display"]?["width"] == 860)
        let milk = try #require(tasks[2]["id"]?.stringValue)
        _ = try json(d, ["update", milk, "--memo", "buy oat milk", "--field", "priority=5"])
        #expect(try records(d, "priority >= 5").compactMap { $0["memo"]?.stringValue } == ["buy oat milk"])
        _ = try json(d, ["delete", try #require(tasks[0]["id"]?.stringValue)])
        #expect(try records(d, "TRUEPREDICATE", ["--type", "Task"]).count == 2)
        #expect(d.stop().status == 0)
    }

    /// CloudKit with push: a Houses subscription sees a house added from the inbox.
    @Test func housesWithASubscription() throws {
        let d = try daemon()
        let follower = try SocketClient(path: d.home + "/photomemo.sock")
        let sub = follower.call("subscribe", ["type": "Houses", "predicate": "TRUEPREDICATE", "fires_on": "create",
                                              "alert": "A new house was added"])
        #expect(sub?["ok"] == true)
        try d.append(#"{"photo":"house.jpg","type":"Houses","memo":"sunny, two floors","fields":{"address":"1-2-3 Shibuya, Tokyo"}}"# + "\n")
        try d.drop("orientation_landscape_1.jpg", as: "house.jpg")
        let event = try #require(follower.readLine(timeout: 30))
        #expect(event["alert"] == "A new house was added")
        #expect(event["record"]?["fields"]?["address"] == "1-2-3 Shibuya, Tokyo")
        let found = try records(d, #"address == "1-2-3 Shibuya, Tokyo""#)
        let id = try #require(found.first?["id"]?.stringValue)
        _ = try json(d, ["update", id, "--memo", "sunny, two floors, garden"])
        #expect(try records(d, #"memo CONTAINS "garden""#).count == 1)
        _ = try json(d, ["delete", id])
        #expect(try records(d, "TRUEPREDICATE", ["--type", "Houses"]).isEmpty)
        #expect(d.stop().status == 0)
    }

    /// Hello CloudKit: Photo records referencing a Restaurant with deleteSelf; a 0.9 full
    /// image and a 200x200 0.7 thumbnail; deleting the restaurant deletes its photos and assets.
    @Test func restaurantPhotosWithAReference() throws {
        let d = try daemon("Jobs/hello-cloudkit.json")
        try d.append(#"{"type":"Restaurant","memo":"Noodle bar","fields":{"name":"Ichiran"}}"# + "\n")
        try d.waitIdle(jobs: 1)
        let restaurant = try #require(try records(d, "TRUEPREDICATE", ["--type", "Restaurant"]).first?["id"]?.stringValue)
        for (i, photo) in ["orientation_landscape_1.jpg", "orientation_portrait_1.jpg"].enumerated() {
            try d.append(#"{"photo":"dish\#(i).jpg","type":"Photo","memo":"dish \#(i)","fields":{"restaurant":{"ref":"\#(restaurant)","action":"deleteSelf"}}}"# + "\n")
            try d.drop(photo, as: "dish\(i).jpg")
        }
        try d.waitIdle(jobs: 3, timeout: 60)
        let photos = try records(d, #"restaurant == "\#(restaurant)""#)
        #expect(photos.count == 2)
        let landscape = try #require(photos.first { $0["memo"] == "dish 0" })
        #expect(landscape["assets"]?["full"]?["width"] == 600)  // the full image keeps its size
        #expect(landscape["assets"]?["thumbnail"]?["width"] == 200 && landscape["assets"]?["thumbnail"]?["height"] == 200)
        let keys = photos.flatMap { ($0["assets"]?.objectValue ?? [:]).values.compactMap { $0["key"]?.stringValue } }
        #expect(keys.count == 6)
        // A trashed restaurant trashes its photos, which keep their assets; restoring it
        // brings them back; `--purge` then deletes all three and their assets.
        let deleted = try json(d, ["delete", restaurant])
        #expect(deleted["deleted"]?.arrayValue?.count == 3 && deleted["trashed"]?.arrayValue?.count == 3)
        #expect(try records(d, "TRUEPREDICATE").isEmpty)
        #expect(try json(d, ["trash"])["records"]?.arrayValue?.count == 3)
        #expect(keys.allSatisfy { d.storeHolds($0) })
        #expect(try json(d, ["restore-record", restaurant])["restored"]?.arrayValue?.count == 3)
        #expect(try records(d, "TRUEPREDICATE").count == 3 && records(d, "TRUEPREDICATE", ["--type", "Photo"]).count == 2)
        let purged = try json(d, ["delete", restaurant, "--purge"])
        #expect(purged["deleted"]?.arrayValue?.count == 3 && purged["trashed"] == [])
        try d.waitUntil("the photos' assets leave the store") {
            keys.allSatisfy { !d.storeHolds($0) }
        }
        #expect(d.stop().status == 0)
    }
}

/// Mobile-backend camera memo per user: two Unix users drop photos and memo lines; each
/// record is theirs alone; each lists and fetches their own and sees nothing of the other's.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct CameraMemoPerUserTests {
    /// Runs a command as `user` with group nogroup (the socket's group).
    func run(as user: String, _ argv: [String]) throws -> (Int32, String) {
        let (status, out, _) = try DaemonHarness.run(as: user, group: "nogroup", argv)
        return (status, out)
    }

    @Test func eachUserSeesAndFetchesOnlyTheirOwn() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        // Shared drop boxes: the home is traversable; the inbox and queue.d are sticky and
        // writable by both, and each user appends to a queue file of their own.
        for dir in [d.root, d.home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o751)
        }
        for dir in [d.home + "/inbox", d.home + "/queue.d"] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o1777)
        }
        chmod(d.root, 0o755)
        try d.start(args: ["--socket-group", "nogroup"])
        let cli = DaemonHarness.binary
        for (user, photo) in [("nobody", "orientation_landscape_1.jpg"), ("nobody", "orientation_landscape_2.jpg"), ("daemon", "Nikon_D70.jpg")] {
            let name = "\(user)-\(photo)"
            let line = #"{"photo":"\#(name)","memo":"memo of \#(user)"}"#
            #expect(try run(as: user, ["/bin/sh", "-c", "umask 022; echo '\(line)' >> \(d.home)/queue.d/\(user).jsonl"]).0 == 0)
            #expect(try run(as: user, ["/bin/cp", testPhotos.appendingPathComponent(photo).path, "\(d.home)/inbox/.\(name).part"]).0 == 0)
            #expect(try run(as: user, ["/bin/mv", "\(d.home)/inbox/.\(name).part", "\(d.home)/inbox/\(name)"]).0 == 0)
        }
        try d.waitIdle(jobs: 3, timeout: 90)
        #expect(try d.stateCounts()["done"] == 3)

        func mine(_ user: String) throws -> [JSONValue] {
            let (status, out) = try run(as: user, [cli, "query", "TRUEPREDICATE", "--type", "Memo", "--home", d.home, "--json"])
            #expect(status == 0)
            return (try JSONValue.parse(out))["records"]?.arrayValue ?? []
        }
        let nobodys = try mine("nobody"), daemons = try mine("daemon")
        #expect(nobodys.count == 2 && nobodys.allSatisfy { $0["owner"] == "nobody" })
        #expect(daemons.count == 1 && daemons.allSatisfy { $0["owner"] == "daemon" })
        let theirs = try #require(nobodys.first?["id"]?.stringValue)
        let out = NSTemporaryDirectory() + "pm-fetched-by-nobody-\(getpid()).jpg"  // a folder nobody may write
        defer { unlink(out) }
        #expect(try run(as: "nobody", [cli, "asset", theirs, "display", "-o", out, "--home", d.home]).0 == 0)
        #expect(FileManager.default.fileExists(atPath: out))
        #expect(try run(as: "daemon", [cli, "asset", theirs, "display", "-o", d.root + "/stolen.jpg", "--home", d.home]).0 == 1)
        #expect(try run(as: "daemon", [cli, "get", theirs, "--home", d.home]).0 == 1)
        #expect(try run(as: "daemon", [cli, "update", theirs, "--memo", "mine", "--home", d.home]).0 == 1)
        #expect(try run(as: "nobody", [cli, "update", theirs, "--memo", "still mine", "--home", d.home]).0 == 0)
        #expect(d.stop().status == 0)
    }
}
