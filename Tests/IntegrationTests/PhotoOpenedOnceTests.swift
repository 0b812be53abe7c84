import Foundation
import Glibc
import PhotomemoCore
import TestSupport
import Testing

/// A stage opens a job's photo once, beneath the folder intake allowed, and checks it is
/// the owner's file taken (`PhotoFile`): bob cannot make the root daemon read a file
/// outside --allow-root, nor learn the hash or size of alice's file from his job's error.
extension WhoMayDoWhatTests {
    /// Whether anyone opened or read `path` between this call and the returned function's.
    func watchOpens(_ path: String) -> () -> Bool {
        let fd = inotify_init1(O_NONBLOCK | O_CLOEXEC)
        #expect(fd >= 0 && inotify_add_watch(fd, path, UInt32(IN_OPEN | IN_ACCESS)) >= 0)
        return {
            defer { close(fd) }
            var buf = [UInt8](repeating: 0, count: 4096)
            return buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } > 0
        }
    }

    /// A root-only folder holding a root-only file: (folder, file, its sha256 and size).
    func rootOnlyFile(_ name: String) throws -> (dir: String, file: String, sha256: String, size: Int) {
        let dir = NSTemporaryDirectory() + "pm-root-only-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o700)
        let bytes = Data((0..<780).map { _ in UInt8.random(in: 0x61...0x7A) })
        try bytes.write(to: URL(fileURLWithPath: dir + "/" + name))
        chmod(dir + "/" + name, 0o600)
        return (dir, dir + "/" + name, SHA256.hex(bytes), bytes.count)
    }

    @Test func aFolderSwappedForALinkAfterIntakeIsNotFollowed() throws {
        let allowed = NSTemporaryDirectory() + "pm-allowed-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let target = try rootOnlyFile("shadow.jpg")
        defer { for p in [allowed, target.dir] { try? FileManager.default.removeItem(atPath: p) } }
        try FileManager.default.createDirectory(atPath: allowed + "/bob", withIntermediateDirectories: true)
        chmod(allowed, 0o755)
        #expect(chown(allowed + "/bob", 65534, 65534) == 0)
        let d = try start(["--allow-root", allowed])
        _ = try json(d, ["pause", "validate"])
        // A link of bob's to the root-only file: answered as a missing file would be,
        // without where the daemon (root) found it leads.
        #expect(try DaemonHarness.run(as: bob, ["/bin/ln", "-s", target.file, allowed + "/bob/peek.jpg"]).0 == 0)
        let (peeked, _, peekError) = try cli(bob, d, ["enqueue", allowed + "/bob/peek.jpg", "--memo", "peek"])
        #expect(peeked != 0 && peekError.contains("is not a file of yours") && !peekError.contains(target.dir), "\(peekError)")

        // Bob's own photo, enqueued by its path; then, before validate runs, its folder
        // becomes a link to the root-only folder, where a file of that name is.
        #expect(try DaemonHarness.run(as: bob, ["/bin/mkdir", allowed + "/bob/sub"]).0 == 0)
        #expect(try DaemonHarness.run(as: bob, ["/bin/cp", testPhotos.appendingPathComponent("Canon_40D.jpg").path, allowed + "/bob/sub/shadow.jpg"]).0 == 0)
        let job = try #require(try cliJSON(bob, d, ["enqueue", allowed + "/bob/sub/shadow.jpg", "--memo", "mine"])["job"]?.intValue)
        // And one left alone, which goes all the way (an --allow-root photo still works).
        #expect(try DaemonHarness.run(as: bob, ["/bin/cp", testPhotos.appendingPathComponent("Nikon_D70.jpg").path, allowed + "/bob/kept.jpg"]).0 == 0)
        let kept = try #require(try cliJSON(bob, d, ["enqueue", allowed + "/bob/kept.jpg", "--memo", "kept"])["job"]?.intValue)
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", "mv \(allowed)/bob/sub \(allowed)/bob/old && ln -s \(target.dir) \(allowed)/bob/sub"]).0 == 0)
        let opened = watchOpens(target.file)
        _ = try json(d, ["resume", "validate"])
        try d.waitUntil("job \(job) failed") { try d.jobs("id = \(job)").first?.state == "failed" }
        try d.waitUntil("job \(kept) done", timeout: 60) { try d.jobs("id = \(kept)").first?.state == "done" }
        #expect(try records(bob, d).contains { $0["memo"] == "kept" })

        #expect(!opened(), "the daemon opened \(target.file)")
        let error = try #require(try cliJSON(bob, d, ["job", String(job)])["error"]?.stringValue)
        #expect(!error.contains(target.sha256.prefix(8)) && !error.contains("\(target.size) bytes"), "\(error)")
        #expect(error.contains("symlink"), "\(error)")
        #expect(d.stop().status == 0)
    }

    @Test func aRetryNeverTellsAnotherUsersFileOfTheSameName() throws {
        let d = try start()
        // Bob's leak.jpg fails (not an image) and goes to quarantine.
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", "cd \(d.home)/inbox && printf 'not a photo' > .leak.jpg.part && mv .leak.jpg.part leak.jpg"]).0 == 0)
        try d.waitUntil("bob's job failed") { try d.jobs().first?.state == "failed" }
        let job = try #require(try d.jobs().first?.id)
        // Alice's own mode-600 leak.jpg, held in the inbox (compress paused).
        _ = try json(d, ["pause", "compress"])
        let photo = try testPhoto("Nikon_D70.jpg")
        #expect(try DaemonHarness.run(as: alice, ["/bin/sh", "-c", "cd \(d.home)/inbox && umask 077 && cp \(testPhotos.appendingPathComponent("Nikon_D70.jpg").path) .leak.jpg.part && mv .leak.jpg.part leak.jpg"]).0 == 0)
        try d.waitUntil("alice's photo taken") { try d.jobs().count == 2 }

        let first = try d.jobs("id = \(job)").first?.error
        #expect(try cli(bob, d, ["retry", String(job)]).0 == 0)
        try d.waitUntil("bob's retry failed") {
            let j = try d.jobs("id = \(job)").first
            return j?.state == "failed" && j?.error != first
        }
        let (_, shown, _) = try cli(bob, d, ["job", String(job), "--json"])
        let sha = SHA256.hex(Data(photo))
        #expect(!shown.contains(sha.prefix(8)) && !shown.contains("\(photo.count) bytes"), "\(shown)")
        #expect(shown.contains("changed after it was taken"), "\(shown)")
        _ = try json(d, ["resume", "compress"])
        #expect(d.stop().status == 0)
    }
}
