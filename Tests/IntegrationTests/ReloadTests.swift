import Foundation
import SQLite
import Testing

/// A reload that changes the stages strands no job (issue #13): jobs waiting at a stage the
/// new definition drops go on at the next stage it still has, or are done.
@Suite(.serialized) struct ReloadTests {
    @Test func jobsWaitingAtADroppedStageGoOnAfterTheReload() throws {
        let d = try DaemonHarness(stages: """
            {"name": "three", "stages": [
              {"use": "validate", "with": {}},
              {"use": "exec", "with": {"command": ["/bin/true"]}},
              {"use": "index", "with": {}}]}
            """)
        try d.start()
        #expect(try DaemonHarness.run(["pause", "exec", "--home", d.home]).0 == 0)
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        try d.drop("Pentax_K10D.jpg", as: "b.jpg")
        try d.waitUntil("both photos wait at exec") { try d.jobs("stage_index = 1 AND state = 'queued'").count == 2 }
        // exec is gone: the jobs go on at index, which is now stage 1.
        try #"{"name": "two", "stages": [{"use": "validate", "with": {}}, {"use": "index", "with": {}}]}"#
            .write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        let (status, _, err) = try DaemonHarness.run(["reload", "--home", d.home])
        #expect(status == 0, "\(err)")
        try d.waitIdle(jobs: 2)
        #expect(try d.stateCounts()["done"] == 2)
        #expect(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.count == 2)
        let db = try Database(path: d.home + "/photomemo.sqlite", readOnly: true)
        let moved = try db.query("SELECT message FROM job_events WHERE event = 'moved'").compactMap { $0.string(0) }
        #expect(moved == ["the reload put it at stage index", "the reload put it at stage index"])
        // And with no stage left after validate, a waiting job is simply done.
        #expect(try DaemonHarness.run(["pause", "index", "--home", d.home]).0 == 0)
        try d.drop("Canon_40D.jpg", as: "c.jpg")
        try d.waitUntil("the photo waits at index") { try d.jobs("stage_index = 1 AND state = 'queued'").count == 1 }
        try #"{"name": "one", "stages": [{"use": "validate", "with": {}}]}"#.write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        #expect(try DaemonHarness.run(["reload", "--home", d.home]).0 == 0)
        try d.waitIdle(jobs: 3)
        #expect(try d.stateCounts()["done"] == 3)
        #expect(d.stop().status == 0)
    }

    /// A reload's max_bytes is the inbox's limit from the next drop on: a photo the old
    /// definition took is refused unread under the new one, and a smaller one still goes.
    @Test func aReloadedMaxBytesIsTheLimitForTheNextDrop() throws {
        func definition(_ name: String, maxBytes: Int) -> String {
            #"{"name": "\#(name)", "stages": [{"use": "validate", "with": {"max_bytes": \#(maxBytes)}}, {"use": "index", "with": {}}]}"#
        }
        let d = try DaemonHarness(stages: definition("roomy", maxBytes: 20_000))
        try d.start()
        try d.drop("Nikon_D70.jpg", as: "a.jpg")  // 14,034 bytes
        try d.waitIdle(jobs: 1)
        try definition("tight", maxBytes: 10_000).write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        #expect(try DaemonHarness.run(["reload", "--home", d.home]).0 == 0)
        try d.waitUntil("the reload applies") { d.log.contains("reloaded job definition tight") }
        try d.drop("Pentax_K10D.jpg", as: "b.jpg")  // 12,077 bytes
        try d.drop("Canon_40D.jpg", as: "c.jpg")    // 7,958 bytes
        try d.waitIdle(jobs: 3)
        #expect(d.quarantined() == ["b.jpg"])
        // Refused by the inbox, unread: not by the new validate stage.
        let reason = try String(contentsOfFile: d.home + "/quarantine/b.jpg.reason.json", encoding: .utf8)
        #expect(reason.contains(#""source":"inbox""#) && !reason.contains(#""stage""#), "\(reason)")
        let failed = try d.jobs("state = 'failed'")
        #expect(failed.map(\.photo) == ["b.jpg"])
        #expect(failed.first?.error == "file is 12077 bytes, over max_bytes (10000)")
        #expect(try d.stateCounts()["done"] == 2)
        #expect(d.stop().status == 0)
    }

    /// Reading the definition and building its stages run off the loop: while a reload's
    /// index stage waits (up to SQLite's 5 s busy timeout) to open a database another
    /// process holds locked, the socket still answers; the reload applies once it opens.
    @Test func theSocketAnswersWhileAReloadWaitsToOpenALockedIndex() throws {
        let d = try DaemonHarness(stages: #"{"name": "one", "stages": [{"use": "index", "with": {}}]}"#)
        try d.start()
        let holder = try Database(path: d.home + "/other.sqlite")
        try holder.exec("CREATE TABLE held(x); BEGIN EXCLUSIVE; INSERT INTO held VALUES (1)")
        try #"{"name": "two", "stages": [{"use": "index", "with": {"index": "sqlite:other.sqlite"}}]}"#
            .write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        kill(try #require(d.process).processIdentifier, SIGHUP)
        Thread.sleep(forTimeInterval: 0.5)  // the reload is waiting for the lock
        let client = try SocketClient(path: d.home + "/photomemo.sock")
        let asked = Date()
        #expect(client.call("status")?["ok"] == true)
        #expect(Date().timeIntervalSince(asked) < 2)
        #expect(!d.log.contains("reloaded job definition two"))
        try holder.exec("COMMIT")
        try d.waitUntil("the reload applies") { d.log.contains("reloaded job definition two") }
        #expect(d.stop().status == 0)
    }
}
