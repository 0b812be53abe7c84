import Foundation
import StageKit
import Testing
@testable import ExecStage

@Suite struct ExecStageTests {
    func stage(_ script: String, timeoutMs: Int64 = 10_000) throws -> ExecStage {
        try ExecStage(options: StageOptions(validating: ["command": ["/bin/sh", "-c", .string(script)], "timeout_ms": .int(timeoutMs)],
                                            against: ExecStage.options, place: "test"),
                      environment: StageEnvironment(home: URL(fileURLWithPath: "/tmp")))
    }

    let job = JobContext(id: 7, key: "sha256:abc", photoPath: "/tmp/x.jpg", memo: MemoJob(memo: "hi"), results: ["validate": ["width": 3]], attempt: 2)

    @Test func jobArrivesAsJSONOnStdinAndStdoutBecomesTheResult() throws {
        // The script echoes back what it received plus its environment.
        let s = try stage(#"read line; printf '{"got": %s, "key": "%s", "attempt": "%s"}' "$line" "$PHOTOMEMO_JOB_KEY" "$PHOTOMEMO_ATTEMPT""#)
        guard case .continue(let r) = s.run(job) else { Issue.record("not continue"); return }
        #expect(r["got"] == job.json)
        #expect(r["key"] == "sha256:abc")
        #expect(r["attempt"] == "2")
    }

    @Test func exitCodesMapToOutcomes() throws {
        #expect(try stage("exit 0").run(job) == .continue())
        guard case .fail(let f) = try stage("echo broken >&2; exit 65").run(job) else { Issue.record("65"); return }
        #expect(f.contains("rejected the job (exit 65): broken"))
        guard case .unavailable(let dep, _) = try stage("exit 69").run(job) else { Issue.record("69"); return }
        #expect(dep == "exec")
        guard case .retry(let r, _) = try stage("exit 75").run(job) else { Issue.record("75"); return }
        #expect(r.contains("status 75"))
        guard case .retry(let k, _) = try stage("kill -9 $$").run(job) else { Issue.record("signal"); return }
        #expect(k.contains("signal 9"))
    }

    @Test func stdoutCanChooseTheOutcome() throws {
        #expect(try stage(#"echo '{"outcome":"skip","reason":"nothing to do"}'"#).run(job) == .skip(reason: "nothing to do"))
        #expect(try stage(#"echo '{"outcome":"retry","reason":"later","after_ms":250}'"#).run(job)
            == .retry(reason: "later", after: .milliseconds(250)))
        #expect(try stage(#"echo '{"outcome":"continue","result":{"n":1}}'"#).run(job) == .continue(result: ["n": 1]))
        guard case .retry = try stage("echo not-json").run(job) else { Issue.record("garbage accepted"); return }
    }

    /// `"annotations"` in a continuing answer go into the working set (the record's fields);
    /// a bad one is a retry, as a broken program's answer is, and leaves the set as it was.
    @Test func stdoutAnnotationsGoIntoTheWorkingSet() throws {
        let job = self.job
        #expect(try stage(#"echo '{"outcome":"continue","annotations":{"ocr_text":"SALE","labels":["a","b"]}}'"#).run(job) == .continue())
        #expect(job.working.annotations == ["ocr_text": "SALE", "labels": ["a", "b"]])
        let plain = JobContext(id: 8, key: "k", photoPath: nil, memo: MemoJob(), results: [:], attempt: 1)
        guard case .continue = try stage(#"echo '{"annotations":{"pages":3}}'"#).run(plain) else { Issue.record("not continue"); return }
        #expect(plain.working.annotations == ["pages": 3])
        // A skip's annotations are not taken.
        let skipped = JobContext(id: 9, key: "k", photoPath: nil, memo: MemoJob(), results: [:], attempt: 1)
        _ = try stage(#"echo '{"outcome":"skip","reason":"x","annotations":{"pages":3}}'"#).run(skipped)
        #expect(skipped.working.annotations.isEmpty)
        for (bad, why) in [(#"{"memo":"x"}"#, "built-in record key"), (#"{"1st":"x"}"#, "letters, digits and _"),
                           (#"{"ref":{"ref":"r1"}}"#, "got object"), (#"[1]"#, "must be an object")] {
            let fresh = JobContext(id: 10, key: "k", photoPath: nil, memo: MemoJob(), results: [:], attempt: 1)
            let outcome = try stage("echo '{\"annotations\":\(bad)}'").run(fresh)
            guard case .retry(let reason, _) = outcome else { Issue.record("\(bad): \(outcome)"); continue }
            #expect(reason.contains(why), "\(reason)")
        }
    }

    @Test func timeoutKillsTheWholeProcessGroup() throws {
        let marker = NSTemporaryDirectory() + "pm-exec-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let start = Date()
        // The grandchild would touch the marker after 2 s if it survived the kill.
        let outcome = try stage("(sleep 2; touch \(marker)) & sleep 5", timeoutMs: 300).run(job)
        #expect(Date().timeIntervalSince(start) < 2)
        guard case .retry(let reason, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("timed out after 300 ms"))
        Thread.sleep(forTimeInterval: 2.3)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func aMissingProgramIsARetryWithTheReason() throws {
        let s = try ExecStage(options: StageOptions(validating: ["command": ["/nonexistent/prog"]], against: ExecStage.options, place: "t"),
                              environment: StageEnvironment(home: URL(fileURLWithPath: "/tmp")))
        guard case .retry(let reason, _) = s.run(job) else { Issue.record("ran"); return }
        #expect(reason.contains("cannot start /nonexistent/prog"))
    }

    @Test func commandIsRequired() {
        #expect(throws: PhotomemoError.self) {
            try ExecStage(options: StageOptions(validating: [:], against: ExecStage.options, place: "t"),
                          environment: StageEnvironment(home: URL(fileURLWithPath: "/tmp")))
        }
    }
}
