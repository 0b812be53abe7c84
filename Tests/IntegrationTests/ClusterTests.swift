import Foundation
import StageKit
import TestSupport
import Testing

/// Several daemons — separate homes, one PostgreSQL database, one S3 bucket — are one
/// cluster (DESIGN.md, "Scaling past one machine"): each photo and memo is one record
/// wherever it was dropped, visible from every host; a killed host loses nothing.
@Suite(.serialized) struct ClusterTests {
    /// The seed job definition (validate → compress → upload → index → notify).
    static let definition = try! String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)

    final class Cluster {
        let url: String
        let s3: SeaweedFS
        let hosts: [DaemonHarness]

        init(_ names: [String], database: String? = nil) throws {
            url = try database ?? PostgresServer.freshDatabase()
            s3 = try SeaweedFS()
            hosts = try names.map { _ in try DaemonHarness(stages: ClusterTests.definition) }
            for (h, name) in zip(hosts, names) {
                h.database = url
                try start(h, name)
            }
        }

        func start(_ h: DaemonHarness, _ name: String) throws {
            h.s3 = s3
            try h.start(args: ["--host-id", name, "--lease", "2"])
        }

        func records(_ h: DaemonHarness) throws -> [JSONValue] {
            try json(h, ["query", "TRUEPREDICATE", "--limit", "500"])["records"]?.arrayValue ?? []
        }

        func stop() { for h in hosts { h.stop() } }
    }

    @Test func photosAndMemosDroppedOnDifferentHostsAreEachOneRecordSeenFromEveryHost() throws {
        let c = try Cluster(["a", "b", "c"])
        let (a, b, hc) = (c.hosts[0], c.hosts[1], c.hosts[2])
        // A follower on c hears every create, wherever it happened.
        let follower = try SocketClient(path: hc.home + "/photomemo.sock")
        #expect(follower.call("subscribe", ["type": .string(MemoJob.defaultPhotoType), "fires_on": "create"])?["ok"] == true)
        let memoFollower = try SocketClient(path: hc.home + "/photomemo.sock")
        #expect(memoFollower.call("subscribe", ["type": "Memo", "fires_on": "create"])?["ok"] == true)

        try a.drop("orientation_landscape_1.jpg", as: "one.jpg")
        try b.drop("orientation_landscape_2.jpg", as: "two.jpg")
        try hc.drop("orientation_landscape_1.jpg", as: "same-bytes-as-one.jpg")  // one record
        // A memo on a joins the photo that arrives on b.
        try a.append(#"{"memo":"joined across hosts","photo":"three.jpg","type":"Memo"}"# + "\n")
        try a.waitUntil("the memo waits for its photo") { try a.jobs("state = 'waiting'").count == 1 }
        try b.drop("orientation_landscape_3.jpg", as: "three.jpg")

        try a.waitIdle(jobs: 4, timeout: 90)
        #expect(try a.stateCounts() == ["done": 4])
        for h in c.hosts {
            let rs = try c.records(h)
            #expect(rs.count == 3, "\(h.home): \(rs.count) records")
            #expect(rs.contains { $0["memo"] == "joined across hosts" && $0["type"] == "Memo" })
        }
        let photos = (0..<2).compactMap { _ in follower.readLine(timeout: 20)?["record"]?["id"]?.stringValue }
        #expect(Set(photos).count == 2)
        #expect(memoFollower.readLine(timeout: 20)?["record"]?["memo"] == "joined across hosts")
        #expect(follower.readLine(timeout: 1) == nil)  // nothing twice
        // Each host ran the photo stages of its own photos.
        let hosts = try json(a, ["hosts"])["hosts"]?.arrayValue?.compactMap { $0["host"]?.stringValue } ?? []
        #expect(Set(hosts) == ["a", "b", "c"])
        c.stop()
    }

    @Test func aHostKilledMidwayLosesNothingAndDoesNothingTwice() throws {
        let c = try Cluster(["a", "b"])
        let (a, b) = (c.hosts[0], c.hosts[1])
        let names = (1...8).map { "orientation_landscape_\($0).jpg" } + (1...8).map { "orientation_portrait_\($0).jpg" }
        for n in names { try a.drop(n) }
        try a.waitUntil("some jobs are running") { try !a.jobs("state = 'running'").isEmpty }
        a.stop(SIGKILL)
        // Its running jobs' leases run out: b may not run their photo stages (the files
        // are on a), but a restarted a takes them back, and nothing runs twice.
        try c.start(a, "a")
        try b.waitIdle(jobs: names.count, timeout: 120)
        #expect(try b.stateCounts() == ["done": names.count])
        let rs = try c.records(b)
        #expect(rs.count == names.count)
        #expect(Set(rs.compactMap { $0["id"]?.stringValue }).count == names.count)
        c.stop()
    }

    /// Reprocess jobs queued on a host that is then gone: their copies of the originals
    /// were on its disk, the originals are in the shared store. After three leases without
    /// its heartbeat another host makes its own copies and runs them (they waited for ever).
    @Test func aGoneHostsReprocessJobsRunOnAnother() throws {
        let c = try Cluster(["a", "b"])
        defer { c.stop() }
        let (a, b) = (c.hosts[0], c.hosts[1])
        for n in ["orientation_landscape_1.jpg", "orientation_portrait_6.jpg"] { try a.drop(n) }
        try a.waitIdle(jobs: 2, timeout: 60)
        _ = try json(a, ["pause", "compress"])
        #expect(try json(a, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        a.stop(SIGKILL)
        _ = try json(b, ["resume", "compress"])
        try b.waitUntil("b runs a's reprocess jobs", timeout: 60) { try b.jobs("origin = 'reprocess' AND state = 'done'").count == 2 }
        #expect(b.log.contains("took 2 reprocess jobs of host a"), "\(b.log)")
        #expect(try b.stateCounts() == ["done": 4])
        #expect(try c.records(b).count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: b.home + "/reprocess").isEmpty, "upload removed b's copies")
    }

    @Test func aPostgreSQLRestartMidRunIsAnOutageThenEverythingFinishes() throws {
        // A server of its own: the shared one serves other suites meanwhile.
        let pg = try PostgresServer()
        defer { pg.shutdown() }
        let c = try Cluster(["a"], database: try pg.createDatabase("outage"))
        let a = c.hosts[0]
        try a.drop("orientation_landscape_1.jpg")
        try a.waitIdle(jobs: 1, timeout: 60)
        pg.stop(now: true)
        for n in ["orientation_landscape_2.jpg", "orientation_landscape_3.jpg"] { try a.drop(n) }
        try a.waitUntil("status shows the journal down") {
            try json(a, ["status"])["dependencies"]?["journal"] == "down"
        }
        #expect(a.process?.isRunning == true)
        // The text form says which daemon answered, and that the counts are unknown, not zero.
        let (_, text, _) = try DaemonHarness.run(["status", "--home", a.home])
        #expect(text.contains("host        a on postgres") && text.contains("jobs        unknown: the journal cannot be read ("), "\(text)")
        Thread.sleep(forTimeInterval: 2)  // the outbox's claim fails 4 times a second meanwhile
        try pg.start()
        try a.waitIdle(jobs: 3, timeout: 90)
        // Said when it starts and when it ends, not at every failed claim (5 lines a second).
        try a.waitUntil("the outbox says it works again") { a.log.contains("notifications: works again after") }
        #expect(a.log.components(separatedBy: " error notifications: ").count - 1 == 1, "\(a.log)")
        #expect(try a.stateCounts() == ["done": 3])
        #expect(try c.records(a).count == 3)
        c.stop()
    }
}
