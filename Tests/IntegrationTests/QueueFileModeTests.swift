import Foundation
import StageKit
import TestSupport
import Testing

/// A queue file's state changes while the daemon holds it open (issue 24, items 6 and 7).
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct QueueFileModeTests {
    let stranger = "nobody", victim = "daemon"

    /// A home other users can reach, as docs/who-may-do-what.md's multi-user setup.
    func start() throws -> DaemonHarness {
        let d = try DaemonHarness()
        try FileManager.default.createDirectory(atPath: d.home, withIntermediateDirectories: true)
        chmod(d.root, 0o755)
        chmod(d.home, 0o751)
        try d.start()
        return d
    }

    func queueFile(_ d: DaemonHarness) -> [JSONValue] {
        ((try? json(d, ["status"]))?["queue_files"]?.arrayValue ?? []).filter { $0["name"] == "queue.jsonl" }
    }

    /// `chmod 666 queue.jsonl` on a running daemon: the mode change is seen at once (status
    /// and log say why the file is not read), a line another uid appends meanwhile is never
    /// read as the admin's — its `"owner"` is not honoured, it goes to quarantine — and
    /// once the mode is fixed, reading goes on after it.
    @Test func aQueueFileMadeWritableByOthersWhileHeldStopsAndItsForeignLinesAreNotTrusted() throws {
        let d = try start()
        let file = d.home + "/queue.jsonl"
        try d.append(#"{"memo":"before"}"# + "\n")
        try d.waitIdle(jobs: 1)

        #expect(chmod(file, 0o666) == 0)
        try d.waitUntil("status says the file is not read", timeout: 2) {
            queueFile(d).first?["error"]?.stringValue?.contains("chmod go-w") == true
        }
        let line = #"{"memo":"forged","owner":"\#(victim)"}"#
        #expect(try DaemonHarness.run(as: stranger, ["/bin/sh", "-c", "printf '%s\\n' '\(line)' >> \(file)"]).0 == 0)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try d.jobs().count == 1, "a line was read from a file others may write")

        #expect(chmod(file, 0o644) == 0)
        try d.waitUntil("status says the file is read again", timeout: 2) { queueFile(d).first?["error"] == .null }
        try d.append(#"{"memo":"after"}"# + "\n")
        try d.waitUntil("the line appended after the fix is a job") {
            try d.jobs().contains { $0.memo.contains("after") } && (d.stateCounts()["queued"] ?? 0) + (d.stateCounts()["running"] ?? 0) == 0
        }
        let memos = try d.jobs().map { (try JSONValue.parse($0.memo))["memo"]?.stringValue }
        #expect(memos == ["before", "after"])
        #expect(try d.jobs().allSatisfy { !$0.memo.contains(victim) })
        let quarantined = try d.quarantined().map { try String(contentsOfFile: d.home + "/quarantine/" + $0, encoding: .utf8) }
        #expect(quarantined.contains { $0.contains("forged") }, "\(quarantined)")
        #expect(d.log.components(separatedBy: "writable by users other than its owner").count - 1 == 1, "said once:\n\(d.log)")
        #expect(d.stop().status == 0)
    }

    /// A queue file truncated to nothing is said once, not at every read.
    @Test func aQueueFileTruncatedToNothingIsLoggedOnce() throws {
        let d = try start()
        let file = d.home + "/queue.jsonl"
        try d.append(#"{"memo":"one"}"# + "\n")
        try d.waitIdle(jobs: 1)
        #expect(truncate(file, 0) == 0)
        try d.waitUntil("the truncation is noticed") { d.log.contains("queue.jsonl truncated") }
        for _ in 0..<5 {
            // Opened for writing and closed: a close-write event, so the daemon reads again.
            close(open(file, O_WRONLY | O_APPEND))
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(d.log.components(separatedBy: "queue.jsonl truncated").count - 1 == 1, "\(d.log)")
        try d.append(#"{"memo":"two"}"# + "\n")
        try d.waitIdle(jobs: 2)
        #expect(d.stop().status == 0)
    }
}
