import Foundation
import TestSupport
import Testing

/// A daemon run as a user of its own (not root) cannot read another user's mode-600 file
/// in a shared inbox. That never passes by waiting: it was retried as if the disk were
/// full, an error logged every few seconds, forever, and the daemon was never idle again.
/// It is quarantined at once with its reason. "daemon" runs the daemon, "nobody" drops.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct UnreadablePhotoTests {
    @Test func aPhotoTheDaemonMayNotReadIsQuarantinedAtOnceNotRetriedForever() throws {
        let d = try DaemonHarness()
        try FileManager.default.createDirectory(atPath: d.home + "/inbox", withIntermediateDirectories: true)
        chmod(d.root, 0o755)
        chmod(d.home, 0o751)
        chmod(d.home + "/inbox", 0o1777)
        for path in [d.home, d.home + "/inbox"] { #expect(chown(path, 1, 1) == 0) }  // the "daemon" user
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        daemon.arguments = ["-u", "daemon", "--", DaemonHarness.binary, "serve", "--home", d.home, "--log-level", "info",
                            "--settle", "0.3", "--rescan-interval", "2"]
        _ = FileManager.default.createFile(atPath: d.logPath, contents: nil)
        daemon.standardError = FileHandle(forWritingAtPath: d.logPath)
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        defer {
            // runuser waits for the daemon: end the daemon itself (its pid is in the lock file).
            if let pid = try? String(contentsOfFile: d.home + "/photomemo.lock", encoding: .utf8), let p = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(p, SIGTERM)
            }
            daemon.waitUntilExit()
        }
        try d.waitUntil("the daemon is up") { d.log.contains("serving") }
        let (status, _, err) = try DaemonHarness.run(as: "nobody", ["/bin/sh", "-c", "umask 077 && printf photo > \(d.home)/inbox/secret.jpg"])
        #expect(status == 0, "\(err)")
        let reason = d.home + "/quarantine/secret.jpg.reason.json"
        try d.waitUntil("the unreadable photo is quarantined", timeout: 10) { FileManager.default.fileExists(atPath: reason) }
        #expect(try String(contentsOfFile: reason, encoding: .utf8).contains("the daemon (uid 1) may not read it; make it readable (chmod a+r) and drop it again"))
        #expect(!d.log.contains("Permission denied"))
    }
}
