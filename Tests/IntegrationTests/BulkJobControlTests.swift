import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// `retry --state` and `cancel --state` (issue #28): after an outage, one command for
/// every failed job; a user's bulk action touches only their own jobs.
extension WhoMayDoWhatTests {
    /// An exec stage that fails (permanently) while `flag` exists, and succeeds after.
    static func failingWhile(_ flag: String, root: String) throws -> String {
        let script = root + "-fails.sh"
        try """
            #!/bin/sh
            cat > /dev/null
            if [ -e \(flag) ]; then echo '{"outcome": "fail", "reason": "the flag says no"}'; else echo '{}'; fi
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return """
            {"name": "bulk", "stages": [{"use": "exec", "with": {"command": ["\(script)"]}, "concurrency": 8}],
             "retry": {"max_attempts": 2, "base_ms": 10, "max_ms": 50}}
            """
    }

    @Test func fiveHundredFailedJobsAreRetriedByOneCommand() throws {
        let root = NSTemporaryDirectory() + "pm-bulk-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let flag = root + "-down"
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        defer { for f in [flag, root + "-fails.sh"] { unlink(f) } }
        let d = try start(stages: try Self.failingWhile(flag, root: root))
        try d.append((0..<500).map { #"{"memo": "note \#($0)"}"# + "\n" }.joined())
        try d.waitUntil("500 jobs failed", timeout: 120) { try d.stateCounts()["failed"] == 500 }
        unlink(flag)
        // Bad filters are usage errors, before anything changes.
        for (args, says) in [(["retry", "--state", "done"], "retry --state takes failed or cancelled"),
                             (["retry", "--state", "failed", "--stage", "nope"], "no stage \"nope\""),
                             (["retry", "--state", "failed", "--since", "yesterday"], "\"since\" is an ISO-8601"),
                             (["cancel", "--state", "failed"], "cancel --state takes queued or waiting"),
                             (["retry", "7", "--state", "failed"], "an ID or --state, not both"),
                             (["retry", "--stage", "exec"], "narrows --state")] {
            let (rc, _, err) = try DaemonHarness.run(args + ["--home", d.home])
            #expect(rc == 2, "\(args): \(err)")
            #expect(err.contains(says), "\(args): \(err)")
        }
        // A time after every failure matches none.
        let none = try json(d, ["retry", "--state", "failed", "--since", isoTimestamp(unixNow() + 60)])
        #expect(none["changed"] == 0)
        let t0 = Date()
        let (rc, out, err) = try DaemonHarness.run(["retry", "--state", "failed", "--stage", "exec", "--since", "2020-01-01", "--home", d.home])
        let took = Date().timeIntervalSince(t0)
        #expect(rc == 0, "\(err)")
        #expect(out == "500 jobs retried\n", "\(out)")
        try d.waitUntil("500 jobs done", timeout: 120) { try d.stateCounts()["done"] == 500 }
        // Each retried once, by request, in the job's history.
        let retried = try d.journalDB().queryOne("SELECT count(*) FROM job_events WHERE event = 'retried'")?.int(0)
        #expect(retried == 500)
        print("bulk retry of 500 failed jobs: \(String(format: "%.2f", took)) s")
        #expect(d.stop().status == 0)
    }

    @Test func aUsersBulkRetryAndCancelTouchOnlyTheirOwnJobs() throws {
        let root = NSTemporaryDirectory() + "pm-bulk-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let flag = root + "-down"
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        defer { for f in [flag, root + "-fails.sh"] { unlink(f) } }
        let d = try start(stages: try Self.failingWhile(flag, root: root))
        for user in [bob, alice] {
            #expect(try DaemonHarness.run(as: user, ["/bin/sh", "-c", """
                umask 022; for i in 1 2 3 4 5; do echo "{\\"memo\\":\\"\(user) $i\\"}"; done > \(d.home)/queue.d/\(user).jsonl.tmp \
                && mv \(d.home)/queue.d/\(user).jsonl.tmp \(d.home)/queue.d/\(user).jsonl
                """]).0 == 0)
        }
        try d.waitUntil("10 jobs failed", timeout: 60) { try d.stateCounts()["failed"] == 10 }
        unlink(flag)
        let (rc, out, err) = try cli(bob, d, ["retry", "--state", "failed"])
        #expect(rc == 0 && out == "5 jobs retried\n", "\(out) \(err)")
        try d.waitUntil("bob's jobs are done") { try d.jobs("owner = '\(bob)' AND state = 'done'").count == 5 }
        #expect(try d.jobs("owner = '\(alice)' AND state = 'failed'").count == 5)
        // Nothing of alice's is bob's to retry again; alice's own command retries hers.
        #expect(try cliJSON(bob, d, ["retry", "--state", "failed"])["changed"] == 0)
        // Cancel: pause so jobs stay queued; bob cancels his, alice's stay queued.
        #expect(try DaemonHarness.run(["pause", "--home", d.home]).0 == 0)
        #expect(try cliJSON(bob, d, ["retry", "--state", "failed"])["changed"] == 0)
        try d.append(#"{"memo": "the daemon's own"}"# + "\n")
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", "echo '{\"memo\":\"bob 6\"}' >> \(d.home)/queue.d/\(bob).jsonl"]).0 == 0)
        try d.waitUntil("two new jobs are queued") { try d.jobs("state = 'queued'").count == 2 }
        let cancelled = try cliJSON(bob, d, ["cancel", "--state", "queued"])
        #expect(cancelled["changed"] == 1, "\(cancelled)")
        #expect(try d.jobs("owner = '\(bob)' AND state = 'cancelled'").count == 1)
        #expect(try d.jobs("state = 'queued'").count == 1)
        #expect(try cliJSON(alice, d, ["retry", "--state", "failed"])["changed"] == 5)
        #expect(try DaemonHarness.run(["resume", "--home", d.home]).0 == 0)
        try d.waitUntil("alice's jobs are done") { try d.jobs("owner = '\(alice)' AND state = 'done'").count == 5 }
        #expect(d.stop().status == 0)
    }
}
