import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Synchronization
import Testing

/// The control socket and CLI, against the real daemon.
@Suite(.serialized) struct ControlTests {
    func cli(_ d: DaemonHarness, _ args: [String]) throws -> (Int32, String, String) {
        try DaemonHarness.run(args + ["--home", d.home])
    }

    @Test func statusNumbersMatchWhatWasDropped() throws {
        let d = try DaemonHarness()
        try d.start()
        for p in ["Nikon_D70.jpg", "Pentax_K10D.jpg", "Canon_40D.jpg", "orientation_landscape_1.jpg", "orientation_landscape_2.jpg"] {
            try d.drop(p)
        }
        try d.drop("corrupted.jpg")
        _ = FileManager.default.createFile(atPath: d.home + "/inbox/empty.jpg", contents: Data())
        try d.append((0..<3).map { #"{"memo":"m\#($0)"}"# + "\n" }.joined())
        try d.waitIdle(jobs: 10)
        let s = try json(d, ["status"])
        #expect(s["jobs"]?["done"] == 8)
        #expect(s["jobs"]?["failed"] == 2)
        #expect(s["jobs"]?["queued"] == 0)
        #expect(s["stages"]?["validate"]?["done"] == 5)
        #expect(s["stages"]?["validate"]?["skipped"] == 3)
        #expect(s["stages"]?["validate"]?["failed"] == 2)
        #expect(s["stages"]?["exec"]?["done"] == 8)
        #expect(s["stages"]?["exec"]?["p50_ms"]?.doubleValue ?? 0 > 0)
        #expect(s["backlog"] == ["inbox_files": 0, "queue_unread_bytes": 0, "inbox_skipped": 0, "inbox_stale": 0, "inbox_stale_bytes": 0])
        #expect(s["dependencies"]?["journal"] == "up")
        #expect(s["throughput"]?["jobs_last_minute"] == 8)
        #expect(s["version"] == .string(PhotomemoVersion.current))
        // The human form says the same.
        let (_, text, _) = try cli(d, ["status"])
        #expect(text.contains("done 8  failed 2"))
        #expect(d.stop().status == 0)
    }

    /// Files the start-up walk found still settling are counted once while they settle and
    /// leave the backlog once taken. The walk's count was kept per walk: the start-up walk's
    /// and each settle re-walk's added up (4 for 2 files), and one taken on its event stayed
    /// counted until the next whole rescan (`statusNumbersMatchWhatWasDropped` saw
    /// `inbox_files: 3` with every job done).
    @Test func filesFoundSettlingAreCountedOnceAndLeaveTheBacklogOnceTaken() throws {
        let d = try DaemonHarness()
        // Stamped 3 s ahead: unsettled for that long, through several settle re-walks.
        let soon = timespec(tv_sec: time(nil) + 3, tv_nsec: 0)
        try FileManager.default.createDirectory(atPath: d.home + "/inbox", withIntermediateDirectories: true)
        for p in ["Nikon_D70.jpg", "Canon_40D.jpg"] {
            try d.drop(p)
            #expect(utimensat(AT_FDCWD, d.home + "/inbox/" + p, [soon, soon], 0) == 0)
        }
        try d.start()
        var most: Int64 = 0
        try d.waitUntil("2 jobs done", timeout: 60) {
            most = max(most, try json(d, ["status"])["backlog"]?["inbox_files"]?.intValue ?? 0)
            return try d.stateCounts()["done"] == 2
        }
        #expect(most == 2)
        let s = try json(d, ["status"])
        #expect(s["backlog"]?["inbox_files"] == 0)
        #expect(d.stop().status == 0)
    }

    @Test func watchShowsEveryTransitionOfAJobInOrder() throws {
        let d = try DaemonHarness()
        try d.start()
        let c = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(c.call("watch")?["result"] == ["watching": true])
        try d.drop("Nikon_D70.jpg")
        var seen: [String] = []
        while let e = c.readLine(), let type = e["event"]?.stringValue {
            seen.append(type + (e["stage"]?.stringValue.map { ":" + $0 } ?? ""))
            if type == "job_done" || type == "job_failed" { break }
        }
        #expect(seen == ["job_accepted", "stage_started:validate", "stage_done:validate", "stage_started:exec", "stage_done:exec", "job_done"])
        #expect(d.stop().status == 0)
    }

    @Test func retryRunsAFailedJobAgainAndCancelEndsAWaitingOne() throws {
        let flag = NSTemporaryDirectory() + "pm-flag-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let d = try DaemonHarness(stages: """
            {"name": "t", "stages": [{"use": "exec", "with": {"command": ["/bin/sh", "-c", "cat >/dev/null; test -e \(flag) || exit 65"]}}]}
            """)
        try d.start()
        let r = try json(d, ["enqueue", "--memo", "needs the flag"])
        let id = try #require(r["job"]?.intValue)
        try d.waitUntil("the job fails") { try d.jobs("id = \(id)").first?.state == "failed" }
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        defer { unlink(flag) }
        #expect(try json(d, ["retry", String(id)])["state"] == "queued")
        try d.waitUntil("the retried job is done") { try d.jobs("id = \(id)").first?.state == "done" }
        let history = try json(d, ["job", String(id)])["history"]?.arrayValue?.compactMap { $0["event"]?.stringValue } ?? []
        #expect(history == ["accepted", "started", "failed", "retried", "started", "done", "finished"])
        // Retrying a done job is a conflict (exit 1, the daemon's message).
        let (status, _, err) = try cli(d, ["retry", String(id)])
        #expect(status == 1)
        #expect(err.contains("only failed or cancelled jobs can be retried"))

        try d.append(#"{"photo":"never.jpg","memo":"waits"}"# + "\n")
        try d.waitUntil("the memo waits") { try d.stateCounts()["waiting"] == 1 }
        let waiting = try #require(try d.jobs("state = 'waiting'").first)
        #expect(try json(d, ["cancel", String(waiting.id)])["state"] == "cancelled")
        #expect(try d.jobs("id = \(waiting.id)").first?.state == "cancelled")
        #expect(try cli(d, ["cancel", "999"]).0 == 1)
        #expect(d.stop().status == 0)
    }

    @Test func pauseStopsNewStageStartsAndSurvivesARestart() throws {
        let d = try DaemonHarness()
        try d.start()
        #expect(try json(d, ["pause"])["paused"] == true)
        try d.drop("Nikon_D70.jpg")
        try d.waitUntil("the photo is a job") { try d.stateCounts()["queued"] == 1 }
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try d.stateCounts()["queued"] == 1)
        #expect(d.lines("runs.log").isEmpty)
        #expect(d.stop().status == 0)
        try d.start()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try json(d, ["status"])["paused"] == true)
        #expect(try d.stateCounts()["queued"] == 1)
        // One stage paused: jobs go through validate and stop before exec.
        #expect(try json(d, ["pause", "exec"])["paused_stages"] == ["exec"])
        #expect(try json(d, ["resume"])["paused"] == false)
        try d.waitUntil("validate ran") { try d.jobs().first?.results.contains("validate") == true }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(d.lines("runs.log").isEmpty)
        #expect(try json(d, ["resume", "exec"])["paused_stages"] == [])
        try d.waitIdle(jobs: 1)
        #expect(d.lines("effects.log").count == 1)
        #expect(try cli(d, ["pause", "nosuchstage"]).0 == 1)
        #expect(d.stop().status == 0)
    }

    @Test func garbageGetsErrorRepliesAndTheConnectionStaysUsable() throws {
        let d = try DaemonHarness()
        try d.start()
        let c = try SocketClient(path: d.home + "/photomemo.sock")
        func code(_ line: String) -> String? {
            c.send(line)
            return c.readLine()?["error"]?["code"]?.stringValue
        }
        #expect(code("hello\n") == "bad_request")
        #expect(code("{bad json\n") == "bad_request")
        #expect(code("[1,2]\n") == "bad_request")
        #expect(code(#"{"id":1,"cmd":5}"# + "\n") == "bad_request")
        #expect(code(#"{"id":2,"cmd":"stauts"}"# + "\n") == "unknown_command")
        #expect(code(#"{"id":3,"cmd":"job","job":"abc"}"# + "\n") == "bad_request")
        #expect(code(#"{"id":4,"cmd":"job","job":12345}"# + "\n") == "not_found")
        #expect(code(#"{"id":5,"cmd":"jobs","state":"sleeping"}"# + "\n") == "bad_request")
        #expect(code(#"{"id":6,"cmd":"enqueue","job":{"memo":1}}"# + "\n") == "bad_request")
        #expect(code(String(repeating: "x", count: (1 << 20) + 100) + "\n") == "request_too_large")
        #expect(code(String(decoding: [0x7B, 0xFF, 0xFE, 0x7D, 0x0A], as: UTF8.self)) == "bad_request")
        let ok = c.call("status", id: 7)
        #expect(ok?["ok"] == true)
        #expect(ok?["id"] == 7)
        #expect(d.process?.isRunning == true)
        #expect(d.stop().status == 0)
    }

    @Test func fiftyClientsWithOneNeverReadingDoNotSlowTheOthers() throws {
        let d = try DaemonHarness(stages: #"{"name": "fast", "stages": [{"use": "validate", "with": {}}]}"#)
        try d.start()
        let path = d.home + "/photomemo.sock"
        let stuck = try SocketClient(path: path, receiveBuffer: 4096)
        stuck.send(#"{"id":1,"cmd":"watch"}"# + "\n")   // and never reads again
        let reader = try SocketClient(path: path)
        #expect(reader.call("watch")?["ok"] == true)
        let others = try (0..<48).map { _ in try SocketClient(path: path) }
        let jobs = 4000
        try d.append((0..<jobs).map { #"{"memo":"m\#($0)"}"# + "\n" }.joined())

        // The reading watcher sees every job finish, while the stuck one backs up.
        // Atomics: the reader thread writes them while this one polls (ThreadSanitizer
        // reported the plain fields as a data race).
        final class Counter: Sendable { let done = Atomic<Int>(0); let finished = Atomic<Bool>(false) }
        let counter = Counter()
        let thread = Thread {
            while let e = reader.readLine(timeout: 30) {
                if e["event"] == "job_done", counter.done.add(1, ordering: .relaxed).newValue == jobs { break }
            }
            counter.finished.store(true, ordering: .releasing)
        }
        thread.start()
        var slowest = 0.0
        var rounds = 0
        // The stuck client reads again as soon as it is dropped (the daemon keeps the final
        // line for 10 s, however long the flood takes on a loaded machine).
        var last: JSONValue?
        var drained = false
        while !counter.finished.load(ordering: .acquiring) {
            for (i, c) in others.enumerated() {
                let t = Date()
                #expect(c.call("status", id: Int64(rounds * 100 + i))?["ok"] == true)
                slowest = max(slowest, Date().timeIntervalSince(t))
            }
            rounds += 1
            if !drained && d.log.contains("events unread (too_slow)") {
                while let e = stuck.readLine(timeout: 2) { last = e }
                drained = true
            }
        }
        #expect(counter.done.load(ordering: .relaxed) == jobs)
        #expect(rounds > 1)
        #expect(slowest < 2, "slowest status reply took \(slowest) s")
        #expect(d.log.contains("events unread (too_slow)"))
        // The stuck client was cut off with a final error line after what was buffered.
        if !drained { while let e = stuck.readLine(timeout: 2) { last = e } }
        #expect(last?["error"]?["code"] == "too_slow")
        #expect(d.stop().status == 0)
    }

    @Test func metricsParseWithPrometheusParser() throws {
        let d = try DaemonHarness()
        try d.start()
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1)
        let (status, text, _) = try cli(d, ["metrics"])
        #expect(status == 0)
        let file = d.root + "/metrics.txt"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let py = Process()
        py.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        py.arguments = ["python3", "-c", """
            import sys
            from prometheus_client.parser import text_string_to_metric_families
            fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
            runs = {(s.labels['stage'], s.labels['outcome']): s.value for s in fams['photomemo_stage_runs'].samples}
            assert runs[('validate', 'done')] == 1, runs
            assert fams['photomemo_stage_duration_seconds'].type == 'histogram'
            assert any(s.labels.get('state') == 'done' and s.value == 1 for s in fams['photomemo_jobs'].samples)
            print('ok', len(fams))
            """, file]
        let out = Pipe()
        py.standardOutput = out
        try py.run()
        py.waitUntilExit()
        #expect(py.terminationStatus == 0)
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).hasPrefix("ok"))
        #expect(d.stop().status == 0)
    }

    /// `--help` lists every command with its summary after it, whole names apart from their
    /// first sentence: `subscriptions` ran into its summary, and "e.g." ended a sentence.
    @Test func helpListsEveryCommandApartFromItsSummary() throws {
        let (status, out, _) = try DaemonHarness.run(["--help"])
        #expect(status == 0)
        for name in ["serve", "unsubscribe", "subscriptions", "gallery"] {
            #expect(out.split(separator: "\n").contains { $0.hasPrefix("  \(name) ") }, "\(name) in:\n\(out)")
        }
        #expect(out.contains("a predicate, e.g. 'salesPrice"), "\(out)")
    }

    @Test func clientsSayWhenTheDaemonIsNotRunning() throws {
        let d = try DaemonHarness()
        let (status, _, err) = try DaemonHarness.run(["status", "--home", d.home])
        #expect(status == 1)
        #expect(err.contains("photomemo is not running on \(d.home)"))
        #expect(err.contains("start it with: photomemo serve --home \(d.home)"))
        #expect(try DaemonHarness.run(["jobs", "--home", d.home, "--stat", "x"]).0 == 2)
        // A bad value is a usage error even with no daemon to ask.
        let (bad, _, badErr) = try DaemonHarness.run(["changes", "--since", "x", "--home", d.home])
        #expect(bad == 2 && badErr.contains("--since needs an integer"))
    }
}

/// Unix permissions on the socket decide who may connect (needs root and runuser).
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct SocketPermissionTests {
    func asNobody(_ d: DaemonHarness) throws -> (Int32, String, String) {
        try DaemonHarness.run(as: "nobody", [DaemonHarness.binary, "status", "--json", "--home", d.home])
    }

    @Test func anotherUserIsRefusedByDefaultAndAdmittedThroughTheSocketGroup() throws {
        let d = try DaemonHarness()
        // The path must be traversable by nobody for the socket's own mode to be what decides.
        for dir in [d.root, d.home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o751)
        }
        try d.start()
        let sock = try FileManager.default.attributesOfItem(atPath: d.home + "/photomemo.sock")
        #expect((sock[.posixPermissions] as? Int) == 0o600)
        let (refused, _, err) = try asNobody(d)
        #expect(refused == 1)
        #expect(err.contains("permission denied"))
        #expect(d.stop().status == 0)

        try d.start(args: ["--socket-group", "nogroup"])
        let sock2 = try FileManager.default.attributesOfItem(atPath: d.home + "/photomemo.sock")
        #expect((sock2[.posixPermissions] as? Int) == 0o660)
        #expect((sock2[.groupOwnerAccountName] as? String) == "nogroup")
        let (admitted, out, err2) = try asNobody(d)
        #expect(admitted == 0, "\(err2)")
        #expect(out.contains("\"jobs\""))
        #expect(d.stop().status == 0)
    }
}
