import Foundation
import TestSupport
import Testing

/// rclone into the inbox (issue #26), the real tool (Debian's 1.60: it writes the final name
/// in place, then reads it back): `copy` leaves the source as it was, `move` removes each
/// source file once it is sent. Locally, and over SFTP to a real sshd on loopback.
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
        let t = try ToolDelivery(Self.photos)
        try rclone(verb, [], t, to: t.inbox)
        try t.expectEachPhotoStoredOnce()
        guard verb == "copy" else { return }
        // The inbox consumed what the first copy sent, so the next copy sends it all again:
        // duplicates of stored photos, no new record.
        try rclone(verb, [], t, to: t.inbox)
        try t.d.waitIdle(jobs: 2 * t.photos.count)
        try t.expectEachPhotoStoredOnce()
    }

    /// Over SFTP rclone checks what it sent after the upload: it sets the file's time and
    /// runs `md5sum` on it through ssh. A photo the inbox has already stored is gone by then,
    /// so each check failed ("corrupted on transfer") and rclone sent every photo again. The
    /// README's recipe turns both off (`--sftp-set-modtime=false`: rclone then accepts a file
    /// that is gone after upload; SSH already guards the bytes in transit).
    @Test(arguments: ["copy", "move"])
    func rcloneOverSFTP(_ verb: String) throws {
        let sshd = try SSHServer()
        let t = try ToolDelivery(Self.photos)
        try rclone(verb, ["--sftp-disable-hashcheck", "--sftp-set-modtime=false"], t, to: sshd.rcloneRemote + t.inbox)
        try t.expectEachPhotoStoredOnce()
    }
}
