import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Testing
@testable import ExecStage

/// The deadline holds until the child is reaped, the group goes with it, and the child's
/// environment is exactly what it is given.
@Suite(.serialized) struct SubprocessTests {
    func groupIsGone(_ pgid: pid_t) -> Bool { kill(-pgid, 0) != 0 && errno == ESRCH }

    @Test func aChildThatClosesItsOutputAndSleepsIsEndedAtTheDeadline() throws {
        let start = Date()
        let r = try Subprocess.run(["/bin/sh", "-c", "sleep 1000 >/dev/null 2>&1"], stdin: [], environment: [:], timeoutMs: 500)
        #expect(Date().timeIntervalSince(start) < 0.5 + 3)
        #expect(r.timedOut)
        #expect(r.signal == SIGTERM)
        #expect(groupIsGone(r.pid))
    }

    @Test func aChildThatIgnoresSIGTERMIsKilledAfterTheGrace() throws {
        let start = Date()
        let r = try Subprocess.run(["/bin/sh", "-c", "trap '' TERM; exec >/dev/null 2>&1; while :; do sleep 0.1; done"],
                                   stdin: [], environment: ["PATH": "/usr/bin:/bin"], timeoutMs: 300, killGraceMs: 500)
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.8 && elapsed < 0.3 + 0.5 + 3)
        #expect(r.timedOut && r.signal == SIGKILL)
        #expect(groupIsGone(r.pid))
    }

    @Test func whatTheProgramLeavesRunningInItsGroupIsKilledWhenItExits() throws {
        let r = try Subprocess.run(["/bin/sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo started"], stdin: [],
                                   environment: ["PATH": "/usr/bin:/bin"], timeoutMs: 10_000)
        #expect(r.status == 0 && String(decoding: r.stdout, as: UTF8.self) == "started\n")
        #expect(groupIsGone(r.pid))
    }

    @Test func stoppingTheGroupsEndsRunningChildrenAndRefusesNewOnes() throws {
        let groups = SubprocessGroups()
        let started = Date()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { groups.terminate() }
        let r = try Subprocess.run(["/bin/sh", "-c", "exec sleep 1000"], stdin: [], environment: ["PATH": "/usr/bin:/bin"],
                                   timeoutMs: 60_000, groups: groups)
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(r.stopped && !r.timedOut && r.signal == SIGTERM)
        #expect(groupIsGone(r.pid))
        #expect(groups.liveCount == 0)
        #expect(throws: PhotomemoError.self) { try Subprocess.run(["/bin/true"], stdin: [], environment: [:], timeoutMs: 1000, groups: groups) }
    }

    @Test func theExecStageChildSeesExactlyTheAllowedEnvironment() throws {
        setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-the-test", 1)
        setenv("PHOTOMEMO_FAILPOINTS", "stage.before_journal=99", 1)
        setenv("PM_TEST_PASSED", "passed-through", 1)
        defer { unsetenv("AWS_SECRET_ACCESS_KEY"); unsetenv("PHOTOMEMO_FAILPOINTS"); unsetenv("PM_TEST_PASSED") }
        let stage = try ExecStage(options: StageOptions(validating: [
            "command": ["/usr/bin/env"], "env": ["MODEL": "small"], "pass_env": ["PM_TEST_PASSED", "PM_TEST_UNSET"],
        ], against: ExecStage.options, place: "test"), environment: StageEnvironment(home: URL(fileURLWithPath: "/srv/pm")))
        let job = JobContext(id: 7, key: "k1", photoPath: "/tmp/x.jpg", memo: MemoJob(memo: "hi"), results: [:], attempt: 2)
        let r = try Subprocess.run(["/usr/bin/env"], stdin: [], environment: stage.environment(for: job), timeoutMs: 5000)
        let seen = Set(String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").map(String.init))
        let parent = ProcessInfo.processInfo.environment
        var expected: Set<String> = ["MODEL=small", "PM_TEST_PASSED=passed-through", "PHOTOMEMO_HOME=/srv/pm", "PHOTOMEMO_JOB_ID=7",
                                     "PHOTOMEMO_JOB_KEY=k1", "PHOTOMEMO_ATTEMPT=2", "PHOTOMEMO_PHOTO=/tmp/x.jpg"]
        for name in ["PATH", "HOME", "LANG"] { if let v = parent[name] { expected.insert("\(name)=\(v)") } }
        #expect(seen == expected)
        #expect(!seen.contains { $0.hasPrefix("AWS_") || $0.hasPrefix("PHOTOMEMO_FAILPOINTS") })
    }

    @Test func envOptionsAreCheckedAtLoadTime() {
        for bad: [String: JSONValue] in [["env": ["PHOTOMEMO_JOB_ID": "1"]], ["env": ["A": 1]], ["pass_env": ["BAD-NAME"]],
                                         ["env": ["1X": "y"]]] {
            #expect(throws: PhotomemoError.self) {
                try ExecStage(options: StageOptions(validating: bad.merging(["command": ["/bin/true"]]) { a, _ in a },
                                                    against: ExecStage.options, place: "t"),
                              environment: StageEnvironment(home: URL(fileURLWithPath: "/tmp")))
            }
        }
    }
}
