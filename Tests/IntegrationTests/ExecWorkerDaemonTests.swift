import Foundation
import StageKit
import PhotomemoCore
import TestSupport
import Testing

/// `exec` workers under the real daemon: they outlive jobs, not the daemon (SIGKILL leaves
/// no orphan and the jobs finish after the restart), a reload replaces them, SIGTERM ends them.
@Suite(.serialized) struct ExecWorkerDaemonTests {
    func harness(marker: String, slowMs: Int) throws -> DaemonHarness {
        let script = try ExecWorkerScript.install()
        return try DaemonHarness(stages: """
            {"name": "workers", "stages": [{"use": "exec", "with": {"command": ["python3", "\(script)", "serve", "\(marker)"],
              "workers": 2, "timeout_ms": 20000, "env": {"SLOW_MS": "\(slowMs)"}}, "concurrency": 2}],
             "retry": {"max_attempts": 4, "base_ms": 50, "max_ms": 200}}
            """)
    }

    func workers(_ marker: String) -> [Int32] { BoundedResourceTests.processes(with: marker) }

    func pids(_ d: DaemonHarness) throws -> Set<Int64> {
        Set(try d.jobs().compactMap { try? JSONValue.parse($0.results)["exec"]?["pid"]?.intValue })
    }

    /// A worker printing 20,000 stderr lines for one job (as one printing a line per pixel
    /// or per echoed memo) gets 100 a second into the daemon's log and a count of the rest,
    /// not 20,000 lines: the log must not fill the disk. The job is done as usual.
    @Test func aWorkerFloodingStderrDoesNotFloodTheLog() throws {
        let d = try DaemonHarness(stages: "{}")
        let worker = d.root + "/flood.py"
        try """
            import json, sys
            for line in sys.stdin:
                job = json.loads(line)
                for i in range(20000): print("flood %d" % i, file=sys.stderr)
                sys.stderr.flush()
                print(json.dumps({"request": job["request"], "outcome": "continue"}), flush=True)
            """.write(toFile: worker, atomically: true, encoding: .utf8)
        try """
            {"name": "flood", "stages": [{"use": "exec", "with": {"command": ["python3", "\(worker)"], "workers": 1, "timeout_ms": 20000}}]}
            """.write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        try d.start()
        try d.append(#"{"memo":"one"}"# + "\n")
        try d.waitIdle(jobs: 1)
        #expect(try d.jobs().first?.state == "done")
        let log = try String(contentsOfFile: d.logPath, encoding: .utf8)
        let logged = log.split(separator: "\n").filter { $0.contains(": flood ") }.count
        #expect(logged >= 100 && logged <= 1000, "\(logged) stderr lines logged")
        #expect(log.contains("stderr lines not logged (over 100 a second)"))
        #expect(d.stop().status == 0)
    }

    /// A worker flooding stdout with lines that answer no job is ended at the first, and
    /// nothing more it says is read or logged: it wrote 204,829 warnings (29 MB of log)
    /// for one job while it was being ended (attack review). The job is retried and done.
    @Test func aWorkerFloodingStdoutIsEndedOnceAndDoesNotFloodTheLog() throws {
        let d = try DaemonHarness(stages: "{}")
        let worker = d.root + "/flood.py"
        let flooded = d.root + "/flooded"
        try """
            import json, os, sys
            for line in sys.stdin:
                job = json.loads(line)
                if not os.path.exists("\(flooded)"):
                    open("\(flooded)", "w").close()
                    for i in range(100000): print(json.dumps({"junk": i}))
                    sys.stdout.flush()
                print(json.dumps({"request": job["request"], "outcome": "continue"}), flush=True)
            """.write(toFile: worker, atomically: true, encoding: .utf8)
        try """
            {"name": "flood", "stages": [{"use": "exec", "with": {"command": ["python3", "\(worker)"], "workers": 1, "timeout_ms": 20000}}],
             "retry": {"max_attempts": 4, "base_ms": 50, "max_ms": 200}}
            """.write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        try d.start()
        try d.append(#"{"memo":"one"}"# + "\n")
        try d.waitIdle(jobs: 1)
        #expect(try d.jobs().first?.state == "done")
        let ended = try String(contentsOfFile: d.logPath, encoding: .utf8).split(separator: "\n").filter { $0.contains("not an answer to a job it has") }
        #expect(ended.count == 1, "\(ended.count) lines")
        #expect(d.stop().status == 0)
    }

    @Test func aSIGKILLedDaemonLeavesNoWorkerAndItsJobsFinishAfterTheRestart() throws {
        let marker = "pm-worker-\(UInt32.random(in: 0...UInt32.max))"
        // Each job takes 6 s: a worker left behind notices its closed pipes only when it
        // answers, seconds after the daemon died. (Checked red with the spawn's
        // PR_SET_PDEATHSIG taken out: both workers outlived the daemon.)
        let d = try harness(marker: marker, slowMs: 6000)
        try d.start()
        for i in 0..<4 { try d.append(#"{"memo":"continue","fields":{"n":"\#(i)"}}"# + "\n") }
        try d.waitUntil("two workers run") { workers(marker).count == 2 }
        try d.waitUntil("jobs are in flight") { (try d.stateCounts()["running"] ?? 0) > 0 }
        // Watched from the kill itself: reaping the daemon (Process.waitUntilExit) can wait
        // for what its children hold, which hid a surviving worker until its job ended.
        let pid = try #require(d.process?.processIdentifier)
        kill(pid, SIGKILL)
        try d.waitUntil("the daemon died", timeout: 5) { !Self.isAlive(pid) }
        try d.waitUntil("the workers died with the daemon", timeout: 1.5) { workers(marker).isEmpty }
        #expect(d.stop(SIGKILL).status == SIGKILL)
        try d.start()
        try d.waitIdle(jobs: 4, timeout: 60)
        #expect(try d.stateCounts()["done"] == 4)
        #expect(try pids(d).count >= 1 && pids(d).count <= 2)  // two long-lived workers took all four
        #expect(d.stop().status == 0)
        #expect(workers(marker).isEmpty)
    }

    /// Whether `pid` runs (not gone, not a zombie waiting to be reaped).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let close = stat.lastIndex(of: UInt8(ascii: ")")), close + 2 < stat.count else { return false }
        return stat[close + 2] != UInt8(ascii: "Z")
    }

    @Test func reloadReplacesTheWorkersAndSIGTERMEndsThemGracefully() throws {
        let marker = "pm-worker-\(UInt32.random(in: 0...UInt32.max))"
        let d = try harness(marker: marker, slowMs: 0)
        try d.start()
        try d.append(#"{"memo":"continue"}"# + "\n")
        try d.waitIdle(jobs: 1)
        let before = Set(workers(marker))
        #expect(!before.isEmpty)  // started as jobs need them
        #expect(try DaemonHarness.run(["reload", "--home", d.home]).0 == 0)
        try d.waitUntil("the old workers ended", timeout: 10) { Set(workers(marker)).isDisjoint(with: before) }
        try d.append(#"{"memo":"continue"}"# + "\n")
        try d.waitIdle(jobs: 2)
        let after = try #require(try d.jobs().last.flatMap { try JSONValue.parse($0.results)["exec"]?["pid"]?.intValue })
        #expect(!before.contains(Int32(after)))
        let start = Date()
        #expect(d.stop().status == 0)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(workers(marker).isEmpty)
        #expect(!d.log.contains("did not end"))
    }
}

extension ExecWorkerDaemonTests {
    @Test func aWorkerThatCrashesAtStartShowsItsStageDownWithTheReasonInStatus() throws {
        let script = try ExecWorkerScript.install()
        let d = try DaemonHarness(stages: """
            {"name": "crashing", "stages": [{"use": "exec", "with": {"command": ["python3", "\(script)", "crash"], "workers": 1,
              "dependency": "tagger"}}], "retry": {"max_attempts": 4, "base_ms": 50, "max_ms": 200}}
            """)
        try d.start()
        try d.append(#"{"memo":"continue"}"# + "\n")
        try d.waitUntil("the tagger is down", timeout: 15) { try json(d, ["status"])["dependencies"]?["tagger"] == "down" }
        let reason = try json(d, ["status"])["dependency_reasons"]?["tagger"]?.stringValue ?? ""
        #expect(reason.contains("crashed at start 3 times") && reason.contains("no model file"), "\(reason)")
        #expect(try d.stateCounts()["failed"] == nil)  // waiting, its attempts not all spent
        #expect(d.stop().status == 0)
    }
}
