import Foundation
import PhotomemoCore
import TestSupport
import Testing

/// The seed apps, headless: files into the inbox, lines into queue.jsonl, the CLI for the rest.
@Suite(.serialized) struct SeedAppTests {
    func json(_ d: DaemonHarness, _ args: [String]) throws -> JSONValue {
        let (status, out, err) = try DaemonHarness.run(args + ["--home", d.home, "--json"])
        #expect(status == 0, "\(args): \(err)")
        return try JSONValue.parse(out)
    }

    func records(_ d: DaemonHarness, _ predicate: String, _ extra: [String] = []) throws -> [JSONValue] {
        try json(d, ["query", predicate] + extra)["records"]?.arrayValue ?? []
    }

    func daemon(_ job: String = "Jobs/photo-memo.json") throws -> DaemonHarness {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent(job), encoding: .utf8))
        try d.start()
        return d
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
        let deleted = try json(d, ["delete", restaurant])
        #expect(deleted["deleted"]?.arrayValue?.count == 3)
        #expect(try records(d, "TRUEPREDICATE").isEmpty)
        for k in keys { #expect(!FileManager.default.fileExists(atPath: d.home + "/store/" + k)) }
        #expect(d.stop().status == 0)
    }
}
