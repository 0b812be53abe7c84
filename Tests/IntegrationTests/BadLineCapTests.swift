import Foundation
import TestSupport
import Testing

/// An attack review's finding, on the real daemon: bob's bad queue lines cost the daemon
/// two files each (40 KB of `x` lines made 40,024 files in 10 s, past any quota). At 1,000
/// in quarantine, his next bad line and the rest of his file wait unread, said once in the
/// log; the files are his; alice's lines go on.
extension WhoMayDoWhatTests {
    @Test func aUsersBadQueueLinesStopAtTheCapAndNoOneElseWaits() throws {
        let d = try start()
        let file = d.home + "/queue.d/\(bob).jsonl"
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", """
            umask 022; i=0; while [ $i -lt 1010 ]; do echo "x$i"; i=$((i+1)); done > \(file).tmp \
              && echo '{"memo":"bob after"}' >> \(file).tmp && mv \(file).tmp \(file)
            """]).0 == 0)
        let quarantine = d.home + "/quarantine"
        func bobsLines() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: quarantine).filter { $0.hasPrefix("queue-line-queue.d_\(bob)") && !$0.hasSuffix(".reason.json") }
        }
        try d.waitUntil("bob's bad lines reach the cap", timeout: 60) { try bobsLines().count >= 1000 }
        try d.waitUntil("the cap is logged") { d.log.contains("\(bob) has 1000 bad queue lines in quarantine, the most a user may have") }
        try appendLine(alice, #"{"memo":"alice goes on"}"#, to: d.home + "/queue.d/\(alice).jsonl")
        try d.waitUntil("alice's line is taken") { try d.jobs("owner = '\(alice)'").count == 1 }
        Thread.sleep(forTimeInterval: 1)
        #expect(try bobsLines().count == 1000)
        #expect(try d.jobs("owner = '\(bob)'").isEmpty, "bob's line after the held ones was read")
        let uid = try #require(getpwnam(bob)?.pointee.pw_uid)
        let owners = Set(try bobsLines().map { try FileManager.default.attributesOfItem(atPath: quarantine + "/" + $0)[.ownerAccountID] as? UInt32 })
        #expect(owners == [uid], "quarantined lines owned by \(owners)")
        #expect(d.log.components(separatedBy: "bad queue lines in quarantine").count - 1 == 1, "said more than once")
    }
}
