import Foundation
import Testing

/// A SIGKILLed daemon leaves its exec stages' processes running (and what they started);
/// the next start ends them, and only them.
@Suite(.serialized) struct LeftoverProcessTests {
    /// Whether `pid` runs (a zombie waiting for init to reap it has ended).
    static func runs(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(close, offsetBy: 2)...].hasPrefix("Z")
    }

    @Test func theNextStartEndsWhatAKilledDaemonLeftRunning() throws {
        // The stage starts a child in the background, records its pid and sleeps on.
        let d = try DaemonHarness(stages: """
            {"name": "test", "stages": [
              {"use": "exec", "with": {"command": ["/bin/sh", "-c", "sleep 120 & echo $! >> \\"$EFFECTS/children\\"; exec sleep 120"],
               "timeout_ms": 120000, "pass_env": ["EFFECTS"]}}]}
            """)
        var children: [pid_t] { d.lines("children").compactMap { pid_t($0) } }
        defer { for pid in children { kill(pid, SIGKILL) } }
        try d.start()
        try d.append(#"{"memo": "long"}"# + "\n")
        try d.waitUntil("the stage started its child") { children.count == 1 }
        let left = children[0]
        #expect(d.stop(SIGKILL).status == SIGKILL)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(Self.runs(left), "the child outlives the daemon's SIGKILL (what the next start is for)")

        try d.start()
        try d.waitUntil("the next start ended the last run's child") { !Self.runs(left) }
        #expect(d.log.contains("ended 2 processes the last run left running"))  // the stage's sleep and its child
        // The job runs again: its new processes are this run's, left alone.
        try d.waitUntil("the job's stage runs again") { children.count == 2 }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(Self.runs(children[1]))
        d.stop(SIGKILL)  // a graceful stop would wait out the stage's sleep; the defer ends them
    }

    /// A stage's program holds its stdin, stdout and stderr and nothing else of the daemon's:
    /// no descriptor the daemon inherited (the harness's own pipe, here, whose EOF it waits
    /// for: it used to stay open in the stage's processes, so a killed daemon seemed to live
    /// on as long as they ran).
    @Test func aStageHoldsOnlyItsOwnThreeDescriptors() throws {
        let d = try DaemonHarness(stages: """
            {"name": "test", "stages": [
              {"use": "exec", "with": {"command": ["/bin/sh", "-c", "echo $$ > \\"$EFFECTS/pid.tmp\\"; mv \\"$EFFECTS/pid.tmp\\" \\"$EFFECTS/pid\\"; exec sleep 60"],
               "pass_env": ["EFFECTS"]}}]}
            """)
        try d.start()
        try d.append(#"{"memo": "fds"}"# + "\n")
        try d.waitUntil("the stage runs") { !d.lines("pid").isEmpty }
        let pid = try #require(pid_t(d.lines("pid")[0]))
        defer { kill(pid, SIGKILL) }
        try d.waitUntil("the stage's shell became sleep") {
            (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) == "sleep\n"
        }
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        #expect(fds.sorted() == ["0", "1", "2"])
        d.stop(SIGKILL)
    }
}
