import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

@Suite(.serialized) struct LifecycleTests {
    @Test func sigtermFinishesRunningStagesAndExitsCleanly() throws {
        let d = try DaemonHarness()
        try d.start(env: ["EFFECT_SLEEP": "1"])
        try d.drop("Nikon_D70.jpg")
        try d.waitUntil("the stage is running") { !d.lines("runs.log").isEmpty }
        let end = d.stop(SIGTERM)
        #expect(end.reason == .exit && end.status == 0)
        // The running stage was allowed to finish and was recorded.
        #expect(d.lines("effects.log").count == 1)
        #expect(try d.stateCounts()["done"] == 1)
        #expect(d.log.contains("stopped"))
        #expect(!d.log.contains("handles still open"))
    }

    @Test func aSecondDaemonOnTheSameHomeRefusesToStart() throws {
        let d = try DaemonHarness()
        try d.start()
        let (status, _, err) = try DaemonHarness.run(["serve", "--home", d.home, "--job", d.jobFile])
        #expect(status == 1)
        #expect(err.contains("another photomemo daemon (pid \(d.process!.processIdentifier)) is running"))
        #expect(d.stop().status == 0)
    }

    @Test func aHostNameThatCannotBePartOfAJobKeyIsRefusedBeforeAnythingOpens() throws {
        let d = try DaemonHarness()
        // The database does not answer: the name is refused first, with its own message.
        let (status, _, err) = try DaemonHarness.run(["serve", "--home", d.home, "--job", d.jobFile, "--host-id", "a/b",
                                                      "--database", "postgres://postgres@127.0.0.1:1/none"])
        #expect(status != 0)
        #expect(err.contains(#"--host-id "a/b": use 1–64 letters, digits, '-', '.' or '_'"#), "\(err)")
    }

    /// Seconds past what a timer holds ("inf", "1e300", "nan") are a usage error, not a trap.
    @Test(arguments: [("grace", "1e300"), ("settle", "inf"), ("lease", "nan"), ("sink-timeout", "-1")])
    func aDurationNoTimerCanHoldIsAUsageError(_ option: String, _ value: String) throws {
        let d = try DaemonHarness()
        let (status, _, err) = try DaemonHarness.run(["serve", "--home", d.home, "--job", d.jobFile, "--\(option)", value])
        #expect(status == 2, "\(err)")
        #expect(err.contains("--\(option) needs a number of seconds from 0 to 1000000000, got \"\(value)\""), "\(err)")
    }

    @Test func aHomeOthersCanWriteIsRefused() throws {
        let d = try DaemonHarness()
        try FileManager.default.createDirectory(atPath: d.home, withIntermediateDirectories: true)
        chmod(d.home, 0o777)
        let (status, _, err) = try DaemonHarness.run(["serve", "--home", d.home, "--job", d.jobFile])
        #expect(status == 1)
        #expect(err.contains("is writable by other users"))
    }

    @Test func sighupReloadsAValidDefinitionAndKeepsTheOldOneOnAnError() throws {
        let d = try DaemonHarness()
        try d.start()
        let good = try String(contentsOfFile: d.jobFile, encoding: .utf8)
        try #"{"name": "broken", "stages": [{"use": "validate", "with": {"max_byts": 1}}]}"#.write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        kill(d.process!.processIdentifier, SIGHUP)
        try d.waitUntil("the reload is refused") { d.log.contains("reload failed, keeping test") }
        #expect(d.log.contains(#"unknown option "max_byts""#))
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1)
        #expect(d.lines("effects.log").count == 1)  // still the old two-stage definition
        try good.replacingOccurrences(of: #""name": "test""#, with: #""name": "test2""#).write(toFile: d.jobFile, atomically: true, encoding: .utf8)
        kill(d.process!.processIdentifier, SIGHUP)
        try d.waitUntil("the reload succeeds") { d.log.contains("reloaded job definition test2") }
        #expect(d.stop().status == 0)
    }

    @Test func checkValidatesDefinitionsWithoutStarting() throws {
        let d = try DaemonHarness()
        var (status, out, _) = try DaemonHarness.run(["check", d.jobFile])
        #expect(status == 0)
        #expect(out.contains("ok: job \"test\""))
        (status, _, _) = try DaemonHarness.run(["check", packageRoot.appendingPathComponent("Jobs/local-store.json").path])
        #expect(status == 0)
        // The default definition loads: all five pipeline stages are registered.
        (status, out, _) = try DaemonHarness.run(["check", packageRoot.appendingPathComponent("Jobs/photo-memo.json").path])
        #expect(status == 0)
        #expect(out.contains("validate") && out.contains("notify"))
        let bad = d.root + "/bad.json"
        try #"{"name": "bad", "stages": [{"use": "compres"}]}"#.write(toFile: bad, atomically: true, encoding: .utf8)
        let err: String
        (status, _, err) = try DaemonHarness.run(["check", bad])
        #expect(status == 1)
        #expect(err.contains(#"stages[0]: unknown stage "compres"; valid stages: comment, compress, exec, index, notify, upload, validate"#))
        (status, _, _) = try DaemonHarness.run(["chek", d.jobFile])
        #expect(status == 2)
    }

    /// validate's `scan_data: false` leaves a sealed JPEG's image data to compress's
    /// decoder: a job without compress would take a damaged photo as whole, so it is
    /// refused at load, naming the job and the option; with compress it loads.
    @Test func checkRefusesValidateWithoutItsDataScanInAJobWithoutCompress() throws {
        let d = try DaemonHarness()
        let file = d.root + "/nightly.json"
        func check(_ stages: String) throws -> (Int32, String) {
            try #"{"name": "nightly", "stages": [{"use": "validate", "with": {"scan_data": false}}, "#.appending(stages + "]}")
                .write(toFile: file, atomically: true, encoding: .utf8)
            let (status, _, err) = try DaemonHarness.run(["check", file])
            return (status, err)
        }
        let (refused, err) = try check(#"{"use": "upload", "with": {}}"#)
        #expect(refused == 1)
        #expect(err.contains(#"nightly.json: job "nightly": stages[0] (validate): "scan_data": false leaves a JPEG's image data to a stage that decodes it (compress), and this job has none"#), "\(err)")
        #expect(try check(#"{"use": "compress", "with": {}}, {"use": "upload", "with": {}}"#).0 == 0)
    }
}

@Suite(.serialized) struct SystemdNotifyTests {
    @Test func serveSendsReadyAndStoppingToNotifySocket() throws {
        let d = try DaemonHarness()
        let path = d.root + "/notify.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        #expect(try UnixSocketAddress(path).bind(fd) == 0)
        func receive() -> String? {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 10_000) > 0 else { return nil }
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buf, buf.count, 0)
            return n > 0 ? String(decoding: buf[0..<n], as: UTF8.self) : nil
        }
        try d.start(env: ["NOTIFY_SOCKET": path])
        let ready = try #require(receive())
        #expect(ready.contains("READY=1"))
        #expect(ready.contains("STATUS=serving \(d.home)"))
        d.stop()
        #expect(receive() == "STOPPING=1")
    }

    @Test func jsonLogFormatWritesOneObjectPerLine() throws {
        let d = try DaemonHarness()
        try d.start(args: ["--log-format", "json"])
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1)
        d.stop()
        let lines = d.log.split(separator: "\n")
        #expect(!lines.isEmpty)
        for l in lines { #expect((try? JSONValue.parse(String(l)))?["level"] != nil, "\(l)") }
    }
}
