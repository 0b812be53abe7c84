import Foundation
import StageKit
import PhotomemoCore
import TestSupport
import Testing
@testable import ExecStage

/// `exec` with `workers`: real Python children taking jobs as JSON lines (ExecWorkerScript).
@Suite(.serialized) struct ExecWorkerTests {
    let script: String

    init() throws { script = try ExecWorkerScript.install() }

    func stage(_ mode: String = "serve", workers: Int64 = 1, inFlight: Int64 = 1, timeoutMs: Int64 = 5_000,
               env: [String: JSONValue] = [:]) throws -> ExecStage {
        try ExecStage(options: StageOptions(validating: ["command": ["python3", .string(script), .string(mode)], "workers": .int(workers),
                                                         "in_flight": .int(inFlight), "timeout_ms": .int(timeoutMs), "env": .object(env)],
                                            against: ExecStage.options, place: "test"),
                      environment: StageEnvironment(home: URL(fileURLWithPath: "/tmp")))
    }

    func job(_ say: String, id: Int64 = 1) -> JobContext {
        JobContext(id: id, key: "k\(id)", photoPath: nil, memo: MemoJob(memo: say), results: [:], attempt: 1)
    }

    func pid(_ outcome: StageOutcome) -> pid_t? {
        guard case .continue(let r) = outcome, let p = r["pid"]?.intValue else { return nil }
        return pid_t(p)
    }

    func alive(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 }

    @Test func oneWorkerAnswersEveryKindOfOutcomeAndStaysRunning() throws {
        let s = try stage()
        defer { s.retire() }
        let first = s.run(job("continue", id: 1))
        guard case .continue(let r) = first, let p = pid(first) else { Issue.record("\(first)"); return }
        #expect(r["key"] == "k1")
        #expect(r["request"] == nil)  // the id is the protocol's, not the result's
        #expect(s.run(job("skip")) == .skip(reason: "because skip"))
        #expect(s.run(job("retry")) == .retry(.stageError, "because retry"))
        #expect(s.run(job("fail")) == .fail(.stageError, "because fail"))
        #expect(s.run(job("unavailable")) == .unavailable(dependency: "exec", .dependency, "because unavailable"))
        #expect(pid(s.run(job("stderr", id: 2))) == p)
        let annotated = job("annotate")
        #expect(s.run(annotated) == .continue())
        #expect(annotated.working.annotations == ["ocr_text": "SALE"])  // as a one-shot run's stdout
        #expect(pid(s.run(job("continue", id: 3))) == p)  // the same process took every job
    }

    @Test func aWorkerThatHangsIsKilledAtTheTimeoutAndStartedAgain() throws {
        // The first job's time includes the interpreter's start, on a loaded machine too.
        let s = try stage(timeoutMs: 1500)
        defer { s.retire() }
        let before = try #require(pid(s.run(job("continue"))))
        let start = Date()
        guard case .retry(let reason, _) = s.run(job("hang")) else { Issue.record("hang answered"); return }
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(reason.message.contains("timed out after 1500 ms"))
        let after = try #require(pid(s.run(job("continue"))))  // the job's retry finds a fresh worker
        #expect(after != before)
        #expect(!alive(before))
    }

    @Test func aWorkerThatExitsMidJobIsARetryAndIsStartedAgain() throws {
        let s = try stage()
        defer { s.retire() }
        let before = try #require(pid(s.run(job("continue"))))
        guard case .retry(let reason, _) = s.run(job("exit")) else { Issue.record("exit answered"); return }
        #expect(reason.message.contains("exited with status 9 mid-job"))
        let after = try #require(pid(s.run(job("continue"))))
        #expect(after != before)
    }

    @Test func garbageOnStdoutIsThatJobsRetryAndTheWorkerIsReplaced() throws {
        let s = try stage()
        defer { s.retire() }
        let before = try #require(pid(s.run(job("continue"))))
        guard case .retry(let reason, _) = s.run(job("garbage")) else { Issue.record("garbage accepted"); return }
        #expect(reason.message.contains("not an answer"))
        #expect(reason.message.contains("this is not json"))
        let after = try #require(pid(s.run(job("continue"))))
        #expect(after != before)
    }

    @Test func aHundredMegabyteLineIsRefusedWithoutBeingHeld() throws {
        let s = try stage()
        defer { s.retire() }
        let start = Date()
        guard case .retry(let reason, _) = s.run(job("huge")) else { Issue.record("huge accepted"); return }
        #expect(reason.message.contains("longer than 1048576 bytes"))
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(pid(s.run(job("continue"))) != nil)
    }

    @Test func aWorkerThatNeverReadsStdinTimesOut() throws {
        let s = try stage("deaf", timeoutMs: 400)
        defer { s.retire() }
        let start = Date()
        guard case .retry(let reason, _) = s.run(job("continue")) else { Issue.record("deaf answered"); return }
        #expect(reason.message.contains("timed out after 400 ms") || reason.message.contains("did not read its job"))
        #expect(Date().timeIntervalSince(start) < 2)
    }

    @Test func aWorkerThatCrashesAtStartMakesTheDependencyDownWithItsReason() throws {
        let s = try stage("crash")
        defer { s.retire() }
        var outcomes: [StageOutcome] = []
        let start = Date()
        for i in 1...4 { outcomes.append(s.run(job("continue", id: Int64(i)))) }
        #expect(Date().timeIntervalSince(start) < 3)
        guard case .retry(let first, _) = outcomes[0] else { Issue.record("\(outcomes[0])"); return }
        #expect(first.message.contains("no model file"))
        guard case .unavailable = outcomes[2] else { Issue.record("the third crash spent an attempt: \(outcomes)"); return }
        guard case .unavailable(let dep, let reason) = outcomes[3] else { Issue.record("\(outcomes)"); return }
        #expect(dep == "exec")
        #expect(reason.message.contains("crashed at start 3 times"))
        #expect(reason.message.contains("no model file"))
    }

    @Test func inFlightSendsAWorkerSeveralJobsAtOnce() throws {
        let s = try stage(workers: 1, inFlight: 4, env: ["SLOW_MS": "300"])
        defer { s.retire() }
        _ = s.run(job("continue"))  // started
        let pids = LockedValue<[pid_t?]>([])
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            let p = pid(s.run(job("continue", id: Int64(10 + i))))
            pids.withLock { $0.append(p) }
        }
        // One worker answers in order: 4 × 300 ms, all four queued on its stdin at once.
        #expect(Set(pids.value).count == 1 && pids.value.allSatisfy { $0 != nil })
        #expect(Date().timeIntervalSince(start) < 3)
    }

    @Test func retireClosesStdinAndTheWorkerEndsByItself() throws {
        let marker = NSTemporaryDirectory() + "pm-worker-bye-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let s = try stage(env: ["MARKER": .string(marker)])
        let p = try #require(pid(s.run(job("continue"))))
        s.retire()
        let deadline = Date().addingTimeInterval(3)
        while alive(p) && Date() < deadline { usleep(20_000) }
        #expect(!alive(p))
        #expect((try? String(contentsOfFile: marker, encoding: .utf8)) == "bye")  // it read end of input: no signal needed
        guard case .retry = s.run(job("continue")) else { Issue.record("a retired stage ran"); return }
    }

    @Test func workersAndInFlightAreChecked() {
        #expect(throws: PhotomemoError.self) { try stage(workers: 65) }
        #expect(throws: PhotomemoError.self) { try stage(workers: -1) }
        #expect(throws: PhotomemoError.self) { try stage(inFlight: 0) }
    }
}
