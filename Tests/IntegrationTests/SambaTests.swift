import Foundation
import TestSupport
import Testing

/// Samba (issue #26): a share on the inbox, as a phone app's SMB upload (or a desktop's
/// file manager) sends to it: `put` of single photos and `mput` of a folder of them, as a
/// user logged in to the share (alice = "daemon": the files are hers). smbclient writes the
/// final name in place and Samba sets its time after the close: each photo must still be
/// one record of its complete bytes, into a consuming inbox and into a `keep` one.
@Suite(.enabled(if: getuid() == 0))
struct SambaTests {
    static let photos = ["orientation_landscape_3.jpg", "orientation_portrait_6.jpg", "xmp_no_exif.jpg", "IMG_5195.HEIC"]

    /// The photos at the top of the tree one `put` each, then the camera folder with `mput`.
    func upload(_ t: ToolDelivery) throws {
        // The daemon's home is 0750; alice reaches the inbox through it, as docs/who-may-do-what.md's per-user setup does.
        chmod(t.d.home, 0o751)
        chmod(t.inbox, 0o1777)
        let smb = try SambaServer(sharing: t.inbox, user: "daemon")
        let top = t.photos.filter { !$0.contains("/") }
        let puts = top.map { "put \($0)" }.joined(separator: "; ")
        try t.run(try smb.client("lcd \(t.source); \(puts); recurse; prompt; mput DCIM"), progress: "putting file ")
    }

    @Test func putAndMputIntoADeleteInbox() throws {
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree)
        try upload(t)
        try t.expectEachPhotoStoredOnce()
        try t.d.waitUntil("the stored photos left the inbox", timeout: 10) { t.inboxPhotos().isEmpty }
    }

    @Test func putAndMputIntoAKeepInbox() throws {
        let t = try ToolDelivery(Self.photos, folders: ToolDelivery.tree, stages: ToolDelivery.keepStages)
        try upload(t)
        try t.expectEachPhotoStoredOnce()
        #expect(t.inboxPhotos() == ToolDelivery.snapshot(t.source), "the keep inbox is not the sent tree")
    }
}
