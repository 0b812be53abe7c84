import Foundation
import TestSupport
import Testing

/// rclone into the inbox (issue #26), the real tool (Debian's 1.60: it writes the final name
/// in place, then reads it back): `copy` leaves the source as it was, `move` removes each
/// source file once it is sent. Locally, and over SFTP to a real sshd on loopback; each run
/// carries a tree (`ToolDelivery.tree`) and makes its folders in the inbox.
struct RcloneTests {
    static let photos = ["Pentax_K10D.jpg", "exif-org_canon-ixus.jpg", "orientation_landscape_2.jpg", "orientation_portrait_5.jpg"]

    /// `rclone VERB SOURCE DEST`, with no config file of the machine's user.
    func rclone(_ verb: String, _ options: [String], _ t: ToolDelivery, to dest: String) throws {
        let rclone = try realTool("rclone", package: "rclone")
        try t.run([rclone, verb, "--config", "/dev/null"] + options + [t.source, dest])
        let left = ToolDelivery.snapshot(t.source)
        if verb == "move" {
            #expect(left.isEmpty, "rclone move leaves nothing behind once sent: \(left)")
        } else {
            #expect(left == t.hashes, "rclone copy leaves the source as it was")
        }
    }

    @Test(arguments: ["copy", "move"])
    func rcloneIntoTheInbox(_ verb: String) throws {
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        try rclone(verb, [], t, to: t.inbox)
        try t.expectEachPhotoStoredOnce()
        guard verb == "copy" else { return }
        // The inbox consumed what the first copy sent, so the next copy sends it all again:
        // duplicates of stored photos, no new record.
        try rclone(verb, [], t, to: t.inbox)
        try t.d.waitIdle(jobs: 2 * t.photos.count)
        try t.expectEachPhotoStoredOnce()
    }

    /// `rclone copy` into a `keep` inbox (docs/inbox.md's recipe for copy): the photos stay, so
    /// the next run finds them there, sends nothing and the inbox takes nothing again — where
    /// a consuming inbox gets everything again (above).
    @Test func rcloneCopyIntoAKeepInboxTwice() throws {
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree, stages: ToolDelivery.keepStages)
        try rclone("copy", [], t, to: t.inbox)
        try t.expectEachPhotoStoredOnce()
        #expect(t.inboxPhotos() == t.hashes)
        let before = KeepOriginalsTests.snapshot(t.inbox)
        try rclone("copy", [], t, to: t.inbox)
        Thread.sleep(forTimeInterval: 2.5)  // past --settle and a rescan: a file rewritten would be taken by now
        #expect(KeepOriginalsTests.snapshot(t.inbox) == before, "the second copy wrote into the inbox")
        let jobs = try t.d.jobs()
        #expect(jobs.count == t.photos.count, "\(jobs.map { ($0.photo, $0.state) })")
    }

    /// Over SFTP rclone checks what it sent after the upload: it sets the file's time and
    /// runs `md5sum` on it through ssh. A photo the inbox has already stored is gone by then,
    /// so each check failed ("corrupted on transfer") and rclone sent every photo again. The
    /// docs/inbox.md's recipe turns both off (`--sftp-set-modtime=false`: rclone then accepts a file
    /// that is gone after upload; SSH already guards the bytes in transit).
    @Test(arguments: ["copy", "move"])
    func rcloneOverSFTP(_ verb: String) throws {
        let sshd = try SSHServer()
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        try rclone(verb, ["--sftp-disable-hashcheck", "--sftp-set-modtime=false"], t, to: sshd.rcloneRemote + t.inbox)
        try t.expectEachPhotoStoredOnce()
    }
}
