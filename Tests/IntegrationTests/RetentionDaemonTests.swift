import Foundation
import TestSupport
import Testing

/// Retention on a real daemon (`"retention": {"done": "2s"}`): finished jobs are pruned
/// while photos and lines keep arriving, the journal holds only tombstones of keyed jobs,
/// and the same photos and keyed lines presented again after their jobs were pruned
/// (and after a restart) are not taken twice. A kill in the middle of a prune batch loses
/// nothing.
@Suite(.serialized) struct RetentionDaemonTests {
    static func definition() -> String {
        let script = packageRoot.appendingPathComponent("Tests/IntegrationTests/Fixtures/effect-stage.sh").path
        return """
            {"name": "test", "retention": {"done": "2s", "cancelled": "2s"}, "stages": [
              {"use": "validate", "with": {}},
              {"use": "exec", "with": {"command": ["\(script)"], "timeout_ms": 20000, "pass_env": ["EFFECTS"]}, "concurrency": 4}],
             "retry": {"max_attempts": 4, "base_ms": 50, "max_ms": 200}}
            """
    }

    static let photos = (1...8).map { "orientation_landscape_\($0).jpg" }

    func count(_ d: DaemonHarness, _ sql: String) throws -> Int { Int(try d.journalDB().queryOne(sql)!.int(0)!) }

    func waitPruned(_ d: DaemonHarness) throws {
        try d.waitUntil("every finished job pruned", timeout: 30) {
            try count(d, "SELECT count(*) FROM jobs WHERE pruned IS NULL") == 0 && count(d, "SELECT count(*) FROM job_events") == 0
        }
    }

    @Test func prunesWhilePhotosArriveAndTakesNothingTwice() throws {
        let d = try DaemonHarness(stages: Self.definition())
        try d.start()
        var lines = 0
        for round in 0..<4 {
            for p in Self.photos[(round * 2)..<(round * 2 + 2)] { try d.drop(p) }
            try d.append((0..<5).map { #"{"memo":"keyed \#(round)-\#($0)","key":"k\#(round)-\#($0)"}"# + "\n" }.joined())
            try d.append((0..<5).map { #"{"memo":"line \#(round)-\#($0)"}"# + "\n" }.joined())
            lines += 10
            Thread.sleep(forTimeInterval: 1.5)
            // Bounded while work keeps arriving: at most what the last few seconds made.
            #expect(try count(d, "SELECT count(*) FROM jobs WHERE pruned IS NULL") <= 3 * 12)
        }
        try waitPruned(d)
        let runs = d.lines("runs.log").count
        #expect(d.lines("effects.log").count == 8 + lines)
        // Keyed lines and stored photos stay as tombstones; unkeyed lines leave no row.
        #expect(try count(d, "SELECT count(*) FROM jobs") <= 8 + 20 + 1)
        let status = try json(d, ["status"])
        #expect(status["pruned"]?["done"]?.intValue == Int64(8 + lines))

        // The same bytes under other names, and the same keyed lines, after their jobs went.
        for (i, p) in Self.photos.enumerated() { try d.drop(p, as: "again-\(i).jpg") }
        try d.append((0..<4).flatMap { r in (0..<5).map { #"{"memo":"again","key":"k\#(r)-\#($0)"}"# + "\n" } }.joined())
        try d.waitUntil("the copies taken as duplicates") {
            try count(d, "SELECT count(*) FROM jobs WHERE duplicate_of IS NOT NULL") + count(d, "SELECT count(*) FROM jobs WHERE pruned IS NOT NULL AND key IS NULL") >= 28
        }
        Thread.sleep(forTimeInterval: 1)
        #expect(d.lines("runs.log").count == runs, "a pruned job's photo or line was taken again")
        #expect(try count(d, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running', 'waiting', 'failed')") == 0)

        // After a restart nothing is read or taken again either.
        #expect(d.stop().status == 0)
        try d.start()
        Thread.sleep(forTimeInterval: 3)
        #expect(d.lines("runs.log").count == runs)
        #expect(d.lines("effects.log").count == 8 + lines)
        try waitPruned(d)
        // `job ID` of a pruned job: not found, saying why it may be gone.
        let (status2, _, err) = try DaemonHarness.run(["job", "1", "--home", d.home])
        #expect(status2 != 0 && err.contains("retention"), "\(err)")
        #expect(d.stop().status == 0)
    }

    @Test func killedInTheMiddleOfAPruneBatchLosesNothing() throws {
        let d = try DaemonHarness(stages: Self.definition())
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "prune.before_commit=1"])
        for p in Self.photos.prefix(3) { try d.drop(p) }
        try d.append((0..<5).map { #"{"memo":"keyed \#($0)","key":"c\#($0)"}"# + "\n" }.joined())
        let end = try d.waitForExit()
        #expect(end.reason == .uncaughtSignal && end.status == SIGKILL)
        #expect(d.log.contains("failpoint prune.before_commit hit"))
        try d.start()
        try waitPruned(d)
        #expect(d.lines("effects.log").count == 8)
        #expect(Set(d.lines("effects.log")).count == 8)
        #expect(try json(d, ["status"])["pruned"]?["done"]?.intValue == 8)
        #expect(try count(d, "SELECT count(*) FROM jobs") == 8)  // every one keyed: a tombstone each
        #expect(d.stop().status == 0)
    }
}
