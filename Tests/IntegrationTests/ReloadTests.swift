import Foundation
import PhotomemoCore
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
}
