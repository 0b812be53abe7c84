import Foundation
import StageKit
import TestSupport
import Testing

/// Issue 26, the recursive inbox, on a real daemon with real uids: sync tools make folders
/// (`mkdir -p`, then write), and a photo's name is its path in the inbox everywhere.
extension WhoMayDoWhatTests {
    @Test func photosInFoldersMadeAfterStartAreTakenUnderTheirPathAndTheFoldersStay() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        let photo = { (name: String) in testPhotos.appendingPathComponent(name).path }
        // A memo waiting for a nested photo, joined when it lands.
        #expect(try cli(alice, d, ["enqueue", "Trip/day 1/lunch.jpg", "--memo", "lunch by the lake"]).0 == 0)
        // Bob's phone app: mkdir -p, then write in place (cp), and rsync-like: temp name, rename.
        let bobs = """
            set -e; cd '\(inbox)'
            mkdir -p DCIM/2026/12 && cp '\(photo("Canon_40D.jpg"))' DCIM/2026/12/IMG_0001.jpg
            mkdir -p Camera/a/b && cp '\(photo("Nikon_D70.jpg"))' Camera/a/b/.IMG_0002.jpg.Xy12 && mv Camera/a/b/.IMG_0002.jpg.Xy12 Camera/a/b/IMG_0002.jpg
            ln -s / root
            """
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", bobs]).0 == 0)
        // Alice's folder, open to others (a shared album): each photo is its file's owner's.
        let alices = """
            set -e; cd '\(inbox)'
            mkdir -p 'Trip/day 1' Shared && chmod 1777 Shared
            cp '\(photo("Pentax_K10D.jpg"))' 'Trip/day 1/lunch.jpg'
            cp '\(photo("exif-org_canon-ixus.jpg"))' Shared/alice.jpg
            cp '\(photo("exif-org_nikon-e950.jpg"))' "$(printf 'Shared/new\\nline.jpg')"
            """
        #expect(try DaemonHarness.run(as: alice, ["/bin/sh", "-c", alices]).0 == 0)
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", "cp '\(photo("orientation_landscape_1.jpg"))' '\(inbox)/Shared/bob.jpg'"]).0 == 0)

        let expected: Set = ["DCIM/2026/12/IMG_0001.jpg", "Camera/a/b/IMG_0002.jpg", "Trip/day 1/lunch.jpg", "Shared/alice.jpg",
                             "Shared/new\nline.jpg", "Shared/bob.jpg"]
        try d.waitIdle(jobs: expected.count, timeout: 120)
        let jobs = try d.jobs()
        #expect(Set(jobs.compactMap(\.photo)) == expected, "\(jobs.map { ($0.photo, $0.state, $0.error) })")
        #expect(jobs.allSatisfy { $0.state == "done" }, "\(jobs.map { ($0.photo, $0.state, $0.error) })")
        // Owner rules: a photo is its file's owner's, wherever it sits.
        #expect(try records(bob, d).count == 3 && records(alice, d).count == 3)
        let lunch = try records(alice, d).first { $0["memo"] == "lunch by the lake" }
        #expect(lunch != nil, "the memo joined its nested photo's job")
        // Folders stay (empty now: the originals left once stored); the link was not followed.
        for folder in ["DCIM/2026/12", "Camera/a/b", "Trip/day 1", "Shared"] {
            var isDir: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: inbox + "/" + folder, isDirectory: &isDir) && isDir.boolValue, "\(folder)")
        }
        #expect(!jobs.contains { $0.photo?.hasPrefix("root/") == true } && d.quarantined().isEmpty, "\(d.quarantined())")
        #expect(try cliJSON(bob, d, ["inbox"])["skipped"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["root"])
        let (status, out, _) = try DaemonHarness.run(["jobs", "--home", d.home])
        #expect(status == 0 && out.contains("DCIM/2026/12/IMG_0001.jpg"), "\(out)")
    }

    /// A tree 1,000 folders deep (a hostile user, or a bind-mount loop) is walked to
    /// `inbox.depth` and no further: the daemon stays up and takes what is within reach.
    @Test func aThousandFoldersDeepIsBoundedByDepth() throws {
        let d = try start(["--rescan-interval", "1"])
        let script = """
            import os, sys
            os.chdir(sys.argv[1])
            for i in range(1000):
                os.mkdir("d"); os.chdir("d")
                if i == 1: open("near.jpg", "wb").write(open(sys.argv[2], "rb").read())
            open("deep.jpg", "wb").write(open(sys.argv[2], "rb").read())
            """
        let (status, _, err) = try DaemonHarness.run(as: bob, ["/usr/bin/python3", "-c", script, d.home + "/inbox",
                                                                testPhotos.appendingPathComponent("Canon_40D.jpg").path])
        #expect(status == 0, "\(err)")
        try d.waitIdle(jobs: 1, timeout: 60)
        Thread.sleep(forTimeInterval: 2.5)  // past more rescans
        #expect(try d.jobs().map(\.photo) == ["d/d/near.jpg"])
        let deepest = Array(repeating: "d", count: 17).joined(separator: "/")
        try d.waitUntil("the folder past the depth is listed") {
            try cliJSON(bob, d, ["inbox"])["skipped"]?.arrayValue?.first?["name"]?.stringValue == deepest
        }
        #expect(d.process?.isRunning == true && !d.log.contains("Fatal"))
    }
}

/// Folders come and go under a watch: one removed and made again, one moved in from
/// outside with photos in it, one moved within the inbox. No periodic rescan helps here
/// (`--rescan-interval 600`): the watches alone find every photo.
@Suite(.serialized) struct InboxTreeWatchTests {
    @Test func foldersRemovedRemadeAndMovedInAreWatchedAgain() throws {
        let d = try DaemonHarness()
        try d.start(args: ["--rescan-interval", "600"])
        let inbox = d.home + "/inbox"
        let photo = { (name: String) in testPhotos.appendingPathComponent(name).path }
        let fm = FileManager.default
        try fm.createDirectory(atPath: inbox + "/X/y", withIntermediateDirectories: true)
        try fm.copyItem(atPath: photo("Canon_40D.jpg"), toPath: inbox + "/X/y/a.jpg")
        try d.waitUntil("X/y/a.jpg is taken") { try d.jobs().compactMap(\.photo) == ["X/y/a.jpg"] }
        try fm.removeItem(atPath: inbox + "/X")
        try fm.createDirectory(atPath: inbox + "/X/y", withIntermediateDirectories: true)
        Thread.sleep(forTimeInterval: 0.3)  // the new folders watched: the copy below is an event of theirs
        try fm.copyItem(atPath: photo("Nikon_D70.jpg"), toPath: inbox + "/X/y/b.jpg")
        // Made outside, then moved in whole (mv of a finished transfer).
        try fm.createDirectory(atPath: d.root + "/staging/M/n", withIntermediateDirectories: true)
        try fm.copyItem(atPath: photo("Pentax_K10D.jpg"), toPath: d.root + "/staging/M/n/c.jpg")
        #expect(rename(d.root + "/staging/M", inbox + "/M") == 0)
        try d.waitUntil("both are taken", timeout: 10) { Set(try d.jobs().compactMap(\.photo)) == ["X/y/a.jpg", "X/y/b.jpg", "M/n/c.jpg"] }
        // Moved within the inbox: its watches follow the new name.
        #expect(rename(inbox + "/M", inbox + "/Moved") == 0)
        Thread.sleep(forTimeInterval: 0.3)
        try fm.copyItem(atPath: photo("exif-org_canon-ixus.jpg"), toPath: inbox + "/Moved/n/d.jpg")
        try d.waitUntil("the photo in the moved folder is taken under its new path", timeout: 10) {
            try d.jobs().compactMap(\.photo).contains("Moved/n/d.jpg")
        }
        #expect(!d.log.contains("rescanning"))
    }
}

/// A nested photo that fails is quarantined under its path made one name, and `retry`
/// puts it back beneath the inbox only: its folder swapped for a link since (to anywhere)
/// gets nothing moved into it.
@Suite(.serialized) struct InboxTreeQuarantineTests {
    @Test func aNestedFailureIsQuarantinedFlatAndRetryNeverMovesItThroughALink() throws {
        let d = try DaemonHarness()
        try d.start()
        let inbox = d.home + "/inbox"
        try FileManager.default.createDirectory(atPath: inbox + "/Bad/x", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("corrupted.jpg").path, toPath: inbox + "/Bad/x/corrupted.jpg")
        try d.waitIdle(jobs: 1)
        let job = try #require(try d.jobs().first)
        #expect(job.state == "failed" && job.photo == "Bad/x/corrupted.jpg")
        try d.waitUntil("it is quarantined") { d.quarantined() == ["Bad%2Fx%2Fcorrupted.jpg"] }
        let reason = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: d.home + "/quarantine/Bad%2Fx%2Fcorrupted.jpg.reason.json")))
        #expect(reason["name"] == "Bad/x/corrupted.jpg" && reason["job"] == .int(job.id))
        #expect(FileManager.default.fileExists(atPath: inbox + "/Bad/x"), "the folder stays")

        // The folder is swapped for a link to a folder outside: retry moves nothing there.
        let outside = d.root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        #expect(rename(inbox + "/Bad/x", inbox + "/Bad/x.old") == 0 && symlink(outside, inbox + "/Bad/x") == 0)
        let (status, _, err) = try DaemonHarness.run(["retry", String(job.id), "--home", d.home])
        #expect(status != 0 && err.contains("symlink"), "\(err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        #expect(d.quarantined() == ["Bad%2Fx%2Fcorrupted.jpg"])

        // Its real folder back: retry puts the photo where it was taken.
        #expect(unlink(inbox + "/Bad/x") == 0 && rename(inbox + "/Bad/x.old", inbox + "/Bad/x") == 0)
        #expect(try DaemonHarness.run(["retry", String(job.id), "--home", d.home]).0 == 0)
        try d.waitUntil("it failed again, back from its folder") { try d.jobs().first?.state == "failed" && d.quarantined().count == 1 }
    }
}
