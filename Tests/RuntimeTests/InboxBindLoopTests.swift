import Foundation
import Glibc
import Journal
import TestSupport
import Testing
@testable import Runtime

/// A bind mount of the inbox inside itself (issue 26; only root can make one): the walk
/// must not go round it — every level down to `inbox.depth` listed the tree again, and each
/// photo was taken again under each of its names (`sub/loop/IMG.jpg`, `sub/loop/sub/loop/...`).
@Suite(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")))
struct InboxBindLoopTests {
    @Test func aBindMountLoopIsWalkedOnceAndListed() throws {
        let t = try TestHome()
        let loop = t.home.inbox + "/sub/loop"
        try FileManager.default.createDirectory(atPath: loop, withIntermediateDirectories: true)
        try Data("photo bytes".utf8).write(to: URL(fileURLWithPath: t.home.inbox + "/IMG.jpg"))
        try Data("nested bytes".utf8).write(to: URL(fileURLWithPath: t.home.inbox + "/sub/IMG2.jpg"))
        guard try runTool(["/usr/bin/mount", "--bind", t.home.inbox, loop]).0 == 0 else {
            Issue.record("cannot bind-mount here")
            return
        }
        defer { _ = try? runTool(["/usr/bin/umount", loop]) }
        let scanner = t.scanner()
        let whole = scanner.rescan()
        #expect(Set(try t.jobs().compactMap(\.photo)) == ["IMG.jpg", "sub/IMG2.jpg"])
        #expect(whole.skipped["sub/loop"]?.reason == "a folder already walked under another name (a bind mount or a loop): not looked into",
                "\(whole.skipped)")
        // A walk of the subtree alone (a folder just made) knows its ancestors too.
        let walk = InboxWalk(under: "sub")
        while !walk.finished { _ = scanner.step(walk) }
        let after = try t.jobs().compactMap(\.photo)
        #expect(after.count == 2, "\(after)")
    }
}
