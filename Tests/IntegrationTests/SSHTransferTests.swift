import Foundation
import TestSupport
import Testing

/// OpenSSH's own clients through a real sshd on loopback into the inbox (issue #26), as a
/// phone app (PhotoSync, WinSCP) or a script sends photos: `sftp` (a batch of `put`s) and
/// `scp` (which speaks SFTP too since OpenSSH 9), each sending a tree with its folders
/// (`put -R`, `scp -r`). Both write the final name in place; the photo is taken once closed.
struct SSHTransferTests {
    static let photos = ["orientation_landscape_3.jpg", "orientation_portrait_6.jpg", "xmp_no_exif.jpg", "IMG_5195.HEIC"]

    @Test func sftpBatchPut() throws {
        let sftp = try realTool("sftp", package: "openssh-client")
        let sshd = try SSHServer()
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        let batch = t.d.root + "/batch"
        // The whole source tree, times kept (-p), as a phone app's upload does.
        try "lcd \(t.source)\ncd \(t.inbox)\nput -R -p *\n".write(toFile: batch, atomically: true, encoding: .utf8)
        try t.run([sftp, "-F", sshd.config, "-b", batch, sshd.host])
        try t.expectEachPhotoStoredOnce()
    }

    @Test func scpTheTree() throws {
        let scp = try realTool("scp", package: "openssh-client")
        let sshd = try SSHServer()
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        let entries = try FileManager.default.contentsOfDirectory(atPath: t.source).map { t.source + "/" + $0 }
        try t.run([scp, "-F", sshd.config, "-r", "-p"] + entries + [sshd.host + ":" + t.inbox + "/"])
        try t.expectEachPhotoStoredOnce()
    }
}
