import Foundation
import Journal
import TestSupport
import Testing

/// A photo that crashes the daemon (a fatal signal, here SIGSEGV raised by the
/// `stage.run@STAGE:PHOTO=segv` failpoint) costs two restarts, not six: the second crash
/// at the same stage fails it with the reason and quarantines it, and each crash leaves
/// one log line naming the signal and the jobs running then. A clean stop is no crash.
@Suite(.serialized) struct CrashLoopTests {
    static let poison = ["PHOTOMEMO_FAILPOINTS": "stage.run@validate:poison.jpg=segv"]

    func poisonJob(_ d: DaemonHarness) throws -> Int64 {
        try #require(try d.jobs("photo = 'poison.jpg'").first?.id)
    }

    @Test func aPoisonousPhotoFailsAfterTwoCrashesAndOthersFinish() throws {
        let d = try DaemonHarness()
        try d.start(env: Self.poison)
        try d.drop("Canon_40D.jpg", as: "good1.jpg")
        try d.drop("Nikon_D70.jpg", as: "poison.jpg")
        try d.drop("Pentax_K10D.jpg", as: "good2.jpg")
        var end = try d.waitForExit()
        #expect(end.reason == .uncaughtSignal && end.status == SIGSEGV)  // the default action still ends it
        let id = try poisonJob(d)
        // One line in the log format: time, level, the signal, the job and stage.
        let line = try #require(d.log.split(separator: "\n").first { $0.contains(" error fatal signal ") })
        #expect(line.contains(" error fatal signal SIGSEGV (invalid memory access) while running "))
        #expect(line.contains("job=\(id) stage=validate"))
        #expect(line.first?.isNumber == true && line.contains("Z error "))

        // Restarted: the job that crashed once runs alone and crashes again.
        try d.start(env: Self.poison)
        end = try d.waitForExit()
        #expect(end.reason == .uncaughtSignal && end.status == SIGSEGV)
        #expect(d.log.contains("job=\(id) stage=validate running alone"))
        let second = try #require(d.log.split(separator: "\n").first { $0.contains(" error fatal signal ") })
        #expect(second.contains("while running job=\(id) stage=validate;"))  // alone: no bystander named

        // The third start fails it with the reason and quarantines it; the others finish.
        try d.start(env: Self.poison)
        try d.waitIdle(jobs: 3)
        let reason = "the daemon died twice while stage validate ran on this job (last: SIGSEGV); not retried (photomemo retry \(id) runs it again)"
        #expect(try d.jobs("id = \(id)").first?.error == reason)
        #expect(try d.jobs("state = 'done'").map(\.photo) == ["good1.jpg", "good2.jpg"])
        try d.waitUntil("the poison is quarantined") { d.quarantined() == ["poison.jpg"] }
        #expect(d.process?.isRunning == true && d.starts == 3)
        d.stop()
    }

    @Test func aCleanStopWhoseGraceRunsOutIsNoCrash() throws {
        let d = try DaemonHarness()
        // One crash at the exec stage...
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "stage.run@exec:slow.jpg=segv"])
        try d.drop("Canon_40D.jpg", as: "slow.jpg")
        _ = try d.waitForExit()
        let id = try #require(try d.jobs("photo = 'slow.jpg'").first?.id)
        // ...then a SIGTERM while the same stage runs past the grace: not a second crash.
        try d.start(env: ["EFFECT_SLEEP": "20"], args: ["--grace", "1"])
        try d.waitUntil("the exec stage runs again") { d.lines("runs.log").count == 1 }
        let end = d.stop(SIGTERM)
        #expect(end.reason == .exit && end.status == 0)
        #expect(!d.log.contains(" error fatal signal "))
        #expect((try? String(contentsOfFile: d.home + "/crash.log", encoding: .utf8)) == "")
        try d.start()
        try d.waitIdle(jobs: 1)
        #expect(try d.jobs("id = \(id)").first?.state == "done")
        #expect(!d.log.contains("died twice"))
        d.stop()
    }

    /// The grace running out while compress decodes in-process (three 176 MP HEIC grids made
    /// of a real photo's tiles, on one core): the daemon ends with status 0. It used to end by
    /// exit(3), whose atexit handlers and C++ destructors ran under the decoders: SIGSEGV.
    @Test func aGraceRunningOutDuringADecodeEndsWithoutACrash() throws {
        let d = try DaemonHarness(stages: """
            {"name": "big", "stages": [
              {"use": "validate", "with": {"max_pixels": 200000000}},
              {"use": "compress", "with": {"max_pixels": 200000000, "renditions": [{"name": "display", "width": 860, "format": "jpeg"}]},
               "concurrency": 3}, {"use": "upload", "with": {}}]}
            """)
        let grid = d.root + "/grid.heic"
        let (status, _, err) = try DaemonHarness.spawn([try realTool("python3", package: "python3"), packageRoot.appendingPathComponent("bench/heic_grid.py").path,
                                                        testPhotos.appendingPathComponent("IMG_5195.HEIC").path, grid, "28", "24", "14336", "12288"])
        try #require(status == 0, "heic_grid.py: \(err)")
        try d.start(args: ["--grace", "0"], launcher: ["/usr/bin/taskset", "-c", "0"])
        for i in 0..<3 {  // three files: a trailing free box of its own each
            var bytes = try Data(contentsOf: URL(fileURLWithPath: grid))
            bytes.append(contentsOf: [0, 0, 0, 9, 0x66, 0x72, 0x65, 0x65, UInt8(i)])
            try bytes.write(to: URL(fileURLWithPath: d.home + "/inbox/.g\(i).part"))
            rename(d.home + "/inbox/.g\(i).part", d.home + "/inbox/g\(i).heic")
        }
        try d.waitUntil("the three decode") { try d.jobs("state = 'running' AND stage_index = 1").count == 3 }
        let end = d.stop(SIGTERM)
        #expect(end.reason == .exit && end.status == 0, "ended by \(end)")
        #expect(d.log.contains("grace period over with 3 stages running"))
        #expect(!d.log.contains(" error fatal signal "), "\(d.log)")
    }
}
