import Foundation
import Glibc
import Journal
import PhotomemoCore
import TestSupport
import Testing
@testable import Runtime

/// A memo sidecar is looked for, and read, in its photo's folder as the walk holds it open:
/// the folder's owner may swap it for a link (to a folder they cannot read) between the
/// walk and the read, and the daemon (root) must then neither read what is there into
/// their memo nor tell them what exists there.
@Suite struct SidecarBeneathTests {
    @Test func aFolderSwappedForALinkAfterTheWalkLeadsTheSidecarNowhere() throws {
        let t = try TestHome()
        let dcim = t.home.inbox + "/DCIM"
        try FileManager.default.createDirectory(atPath: dcim, withIntermediateDirectories: true)
        try Data("photo bytes".utf8).write(to: URL(fileURLWithPath: dcim + "/IMG.jpg"))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dcim + "/OTHER.jpg.json"))
        // Behind the link: a memo the owner never wrote, and a photo of someone else's.
        let secret = t.home.root + "/secret"
        try FileManager.default.createDirectory(atPath: secret, withIntermediateDirectories: false)
        try Data(#"{"memo": "what root keeps"}"#.utf8).write(to: URL(fileURLWithPath: secret + "/IMG.jpg.json"))
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: secret + "/OTHER.jpg"))
        chown(secret + "/OTHER.jpg", 65534, 65534)

        let root = try OpenFolder(t.home.inbox, followLink: true)
        let held = try root.subfolder("DCIM", create: false)  // as the walk holds it
        #expect(rename(dcim, dcim + ".old") == 0 && symlink(secret, dcim) == 0)

        let scanner = t.scanner(settle: 0)
        var report = InboxScanner.Report()
        let photo = try #require(scanner.examine("DCIM/IMG.jpg", requireSettled: false, &report, root: root, held: (held, "IMG.jpg")))
        #expect(photo.sidecar == nil, "read through the link: \(String(describing: photo.sidecar))")
        _ = scanner.examine("DCIM/OTHER.jpg.json", requireSettled: false, &report, root: root, held: (held, "OTHER.jpg.json"))
        #expect(report.skipped["DCIM/OTHER.jpg.json"]?.reason == "memo sidecar waiting for its photo DCIM/OTHER.jpg",
                "told what is behind the link: \(String(describing: report.skipped["DCIM/OTHER.jpg.json"]))")
    }
}
