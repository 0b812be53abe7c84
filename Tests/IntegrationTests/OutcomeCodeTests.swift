import Foundation
import StageKit
import TestSupport
import Testing

/// An outcome's code decides what the daemon does, never its words (issue #27): an exec
/// program's `"code"` reaches the engine, the journal and `photomemo job`.
@Suite struct OutcomeCodeTests {
    /// One program, two jobs, one attempt each (`max_attempts: 1`). The first answers a
    /// retry with `"code": "no_space"` once: the disk's outage, which spends no attempt, so
    /// it is done at its next run. The second fails with `bad_input` in words that quote
    /// ENOSPC: it fails, and `job` shows its code with its message.
    @Test func anExecProgramsCodeDecidesAndJobShowsIt() throws {
        let dir = NSTemporaryDirectory() + "pm-codes-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = dir + "/stage.sh"
        try """
            #!/bin/sh
            input=$(cat)
            case "$input" in
            *says-full*) echo '{"outcome":"fail","code":"bad_input","reason":"write: No space left on device, says the memo"}'; exit 0;;
            esac
            seen=\(dir)/seen-$PHOTOMEMO_JOB_ID
            [ -e "$seen" ] && exit 0
            touch "$seen"
            echo '{"outcome":"retry","code":"no_space","reason":"cannot write the scratch file"}'
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let d = try DaemonHarness(stages: """
            {"name": "t", "stages": [{"use": "exec", "with": {"command": ["\(script)"]}}],
             "retry": {"max_attempts": 1, "base_ms": 50, "max_ms": 200}}
            """)
        try d.start()
        let waits = try #require(try json(d, ["enqueue", "--memo", "needs room"])["job"]?.intValue)
        let fails = try #require(try json(d, ["enqueue", "--memo", "says-full"])["job"]?.intValue)
        try d.waitIdle(jobs: 2)

        let waited = try json(d, ["job", String(waits)])
        #expect(waited["state"] == "done", "the outage spent the job's only attempt: \(waited)")
        let events = waited["history"]?.arrayValue ?? []
        #expect(events.contains { $0["event"] == "unavailable"
                && $0["message"]?.stringValue?.hasPrefix("disk: no space left to write (cannot write the scratch file)") == true },
                "\(events)")

        let failed = try json(d, ["job", String(fails)])
        #expect(failed["state"] == "failed")
        #expect(failed["code"] == "bad_input" && failed["error"] == "write: No space left on device, says the memo", "\(failed)")
        let (status, text, _) = try DaemonHarness.run(["job", String(fails), "--home", d.home])
        #expect(status == 0 && text.contains("[bad_input] write: No space left on device"), "\(text)")
        #expect(d.stop().status == 0)
    }
}
