import Foundation
import StageKit
import TestSupport
import Testing

/// Issue 25's last row with no quota to stop it: bob fills the home's disk through the
/// inbox under an ignored name. That is an outage for everyone, never a crash: the daemon
/// stays up and answers, alice's requests get a clear error instead of hanging, nothing of
/// hers fails or is quarantined, and everything goes on once the file is gone.
extension WhoMayDoWhatTests {
    @Test func bobFillingTheDiskIsAnOutageThatEndsWhenHisFileGoes() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        let unmount = try FullDiskTests().smallDisk(d, megabytes: 48)
        defer { unmount() }
        try makeDropBoxes(d)
        let port = HTTPHealthTests.freePort()
        try d.start(args: ["--socket-group", "nogroup", "--http", "127.0.0.1:\(port)"])
        _ = try alicesPhotoSeconds(d, "before", count: 1)

        let fill = d.home + "/inbox/.fill.part"
        let written = try python(as: bob, """
            import sys
            n = 0
            with open(sys.argv[1], "wb", buffering=0) as f:
                for size in (1 << 20, 4096, 1):  # to the last byte
                    try:
                        while True: n += f.write(b"\\0" * size)
                    except OSError as e: errno = e.errno
            print(n, errno)
            """, [fill])()
        #expect(String(decoding: written, as: UTF8.self).hasSuffix(" \(ENOSPC)\n"), "bob's dd: \(String(decoding: written, as: UTF8.self))")

        // Full to the last byte: alice's enqueue is refused for the disk, not for what she
        // asked, and never hangs; status and queries are answered and show the outage.
        let replies = try raw(alice, d, [["id": 1, "cmd": "enqueue", "job": ["memo": "while the fill"]],
                                         ["id": 2, "cmd": "query", "predicate": "TRUEPREDICATE"]], seconds: 5)
        let enqueue = try #require(replies.first { $0["id"] == 1 }, "no answer to alice's enqueue: \(replies)")
        #expect(enqueue["error"]?["code"] == "no_space", "\(enqueue.jsonString)")
        #expect(replies.first { $0["id"] == 2 }?["ok"] == true, "alice's query on a full disk: \(replies)")
        try d.waitUntil("the outage is shown", timeout: 30) {
            let deps = try cliJSON(alice, d, ["status"])["dependencies"]
            return deps?["disk"] == "down" || deps?["journal"] == "down"
        }
        let health = try HTTPHealthTests.get(port, "/health")
        #expect(health.status == 503 && health.body.contains("disk: down"), "\(health)")
        #expect(d.process?.isRunning == true)

        // The operator removes bob's file: the outage ends and alice goes on.
        unlink(fill)
        _ = try alicesPhotoSeconds(d, "after", count: 2)
        #expect(try HTTPHealthTests.get(port, "/health").status == 200)
        let (status, _, err) = try cli(alice, d, ["enqueue", "--memo", "after the fill"])
        #expect(status == 0, "\(err)")
        try d.waitUntil("alice's memos are records", timeout: 60) {
            try records(alice, d).filter { ($0["memo"]?.stringValue ?? "").contains("fill") }.count == 1
        }
        #expect(try d.jobs("state IN ('failed', 'quarantined')").isEmpty)
        #expect(d.quarantined().isEmpty)
        #expect(d.stop().status == 0)
    }
}
