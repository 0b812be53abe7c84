import Foundation
import TestSupport
import Testing

/// rsync into the inbox (issue #26), the real tool: locally and through a real sshd on
/// loopback. By default it writes `.NAME.XXXXXX` and renames it in; `--inplace` writes the
/// final name directly (taken once closed); `--partial` keeps what an interrupted transfer
/// wrote. Each photo, at the top of the tree or in its folders, must become one record of its
/// complete bytes.
struct RsyncTests {
    static let photos = ["Canon_40D.jpg", "Nikon_D70.jpg", "orientation_portrait_1.jpg", "exif-org_nikon-e950.jpg"]

    @Test func rsyncIntoTheInbox() throws {
        let rsync = try realTool("rsync", package: "rsync")
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        try t.run([rsync, "-a", t.source + "/", t.inbox + "/"])
        try t.expectEachPhotoStoredOnce()
    }

    @Test(arguments: [[], ["--partial"], ["--inplace"], ["--inplace", "--partial"]])
    func rsyncOverSSH(_ options: [String]) throws {
        let rsync = try realTool("rsync", package: "rsync")
        let sshd = try SSHServer()
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        try t.run([rsync, "-a", "-e", sshd.ssh.joined(separator: " ")] + options + [t.source + "/", sshd.host + ":" + t.inbox + "/"])
        try t.expectEachPhotoStoredOnce()
    }

    /// A transfer cut off halfway and sent again, with the partial file kept in a `.`
    /// folder (`--partial-dir`, made in the photo's own folder) as docs/inbox.md's recipe says: the inbox never sees the cut
    /// file under the photo's name, and the resumed transfer renames the whole photo in.
    @Test func anInterruptedRsyncResumedFromItsPartialDir() throws {
        let rsync = try realTool("rsync", package: "rsync")
        let sshd = try SSHServer()
        let t = try ToolDelivery(["IMG_5195.HEIC"], folders: ["DCIM/100APPLE"])
        let folder = t.inbox + "/DCIM/100APPLE"
        let argv = [rsync, "-a", "--partial-dir=.rsync-partial", "-e", sshd.ssh.joined(separator: " "),
                    t.source + "/", sshd.host + ":" + t.inbox + "/"]
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: rsync)
        slow.arguments = Array(argv.dropFirst()).inserted("--bwlimit=100", at: 1)  // 100 KB/s: 8 s for the 814 KB photo
        slow.standardOutput = FileHandle.nullDevice
        slow.standardError = FileHandle.nullDevice
        try slow.run()
        // Cut off once part of it has arrived (rsync's temporary name, a `.` name).
        try t.d.waitUntil("part of the photo has arrived", timeout: 15) {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains { $0.hasPrefix(".IMG_5195.HEIC.") }
        }
        Thread.sleep(forTimeInterval: 0.5)
        kill(slow.processIdentifier, SIGINT)
        slow.waitUntilExit()
        #expect(slow.terminationStatus != 0, "the transfer was meant to be cut off")
        try t.d.waitUntil("the remote rsync kept the partial file", timeout: 10) {
            FileManager.default.fileExists(atPath: folder + "/.rsync-partial/IMG_5195.HEIC")
        }
        Thread.sleep(forTimeInterval: 1)  // past --settle and into a rescan: nothing is taken
        #expect(try t.d.jobs().isEmpty && t.d.quarantined().isEmpty)
        try t.run(argv)
        try t.expectEachPhotoStoredOnce()
    }
}

private extension Array {
    func inserted(_ element: Element, at i: Int) -> [Element] { var a = self; a.insert(element, at: i); return a }
}
