import Foundation
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
        (status, _, _) = try DaemonHarness.run(["check", packageRoot.appendingPathComponent("Jobs/validate-only.json").path])
        #expect(status == 0)
        let err: String
        (status, _, err) = try DaemonHarness.run(["check", packageRoot.appendingPathComponent("Jobs/photo-memo.json").path])
        #expect(status == 1)
        #expect(err.contains(#"stages[1]: unknown stage "compress"; valid stages: exec, validate"#))
        (status, _, _) = try DaemonHarness.run(["chek", d.jobFile])
        #expect(status == 2)
    }
}
