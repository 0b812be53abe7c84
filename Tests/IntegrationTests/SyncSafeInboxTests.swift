import Foundation
import TestSupport
import Testing

/// Issue 26, the first part: what sync and transfer tools put in the inbox besides finished
/// photos — folders, videos, edit files, files in transit under their tools' names — is
/// left where it is, on a real daemon, with real uids: never a job, never quarantined,
/// counted in `status` and listed by `photomemo inbox` (a user sees only their own).
extension WhoMayDoWhatTests {
    @Test func foldersVideosAndFilesInTransitAreLeftAloneAndListed() throws {
        let d = try start()
        let inbox = d.home + "/inbox"
        // Bob's phone app makes a folder and puts a video and an edit file beside a photo.
        #expect(try DaemonHarness.run(as: bob, ["/bin/mkdir", "-p", inbox + "/DCIM/100APPLE"]).0 == 0)
        for (name, text) in [("IMG_0001.MOV", "moov"), ("IMG_0001.AAE", "<plist/>")] {
            #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", "printf '%s' '\(text)' > '\(inbox)/\(name)'"]).0 == 0)
        }
        // Each transfer tool's temporary name, written slowly past the settle time, then
        // renamed by the tool itself: its rename must find the file where it left it.
        let tools = ["rclone.jpg.partial", "winscp.jpg.filepart", "browser.jpg.crdownload", "safari.jpg.download", "resilio.jpg.!sync"]
        let photos = ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg", "exif-org_canon-ixus.jpg", "exif-org_nikon-e950.jpg"]
            .map { testPhotos.appendingPathComponent($0).path }
        for (name, photo) in zip(tools, photos) {
            #expect(try DaemonHarness.run(as: alice, ["/bin/sh", "-c", "head -c 3000 '\(photo)' > '\(inbox)/\(name)'"]).0 == 0)
        }
        Thread.sleep(forTimeInterval: 1.5)  // past --settle 0.3 and a rescan
        for (name, photo) in zip(tools, photos) {
            #expect(try DaemonHarness.run(as: alice, ["/bin/sh", "-c", "tail -c +3001 '\(photo)' >> '\(inbox)/\(name)'"]).0 == 0)
            let final = String(name[..<name.range(of: ".jpg")!.upperBound])
            let (status, _, err) = try DaemonHarness.run(as: alice, ["/bin/mv", inbox + "/" + name, inbox + "/" + final])
            #expect(status == 0, "the tool's own rename of \(name): \(err)")
        }
        try d.waitIdle(jobs: tools.count, timeout: 90)
        #expect(try records(alice, d).count == tools.count)
        let jobs = try d.jobs()
        #expect(jobs.allSatisfy { $0.state == "done" } && Set(jobs.compactMap(\.photo)) == Set(tools.map { String($0[..<$0.range(of: ".jpg")!.upperBound]) }),
                "\(jobs.map { ($0.photo, $0.state, $0.error) })")
        #expect(d.quarantined().isEmpty, "\(d.quarantined())")
        for kept in ["DCIM/100APPLE", "IMG_0001.MOV", "IMG_0001.AAE"] {
            #expect(FileManager.default.fileExists(atPath: inbox + "/" + kept), "\(kept) was moved")
        }

        try d.waitUntil("a rescan has counted what is left alone", timeout: 10) {
            try cliJSON(bob, d, ["status"])["backlog"]?["inbox_skipped"] == 2
        }
        let bobs = try cliJSON(bob, d, ["inbox"])["skipped"]?.arrayValue ?? []
        // The folder is walked (a photo in it would be taken), not listed: it is the inbox's.
        #expect(bobs.compactMap { $0["name"]?.stringValue } == ["IMG_0001.AAE", "IMG_0001.MOV"])
        #expect(bobs.first { $0["name"] == "IMG_0001.MOV" }?["reason"] == "not a photo (.mov)")
        #expect((try cliJSON(alice, d, ["inbox"])["skipped"]?.arrayValue ?? []).isEmpty, "alice sees none of bob's file names")
        let (status, out, err) = try DaemonHarness.run(["inbox", "--home", d.home])
        #expect(status == 0 && out.contains("IMG_0001.MOV") && out.contains(bob) && out.contains("not a photo (.mov)"), "\(status) \(out) \(err)")
    }
}

extension WhoMayDoWhatTests {
    /// A file left alone and then renamed or removed leaves no name behind: `photomemo inbox`
    /// and `status` show what is there, not every name it ever had. (A user renaming one
    /// video through a million names grew the daemon's list without bound until the next
    /// full rescan, every name in it to be listed and sorted on the loop.)
    @Test func aFileLeftAloneThenRenamedOrRemovedLeavesNoNameBehind() throws {
        let d = try start(["--rescan-interval", "600"])
        let inbox = d.home + "/inbox"
        let script = "cd '\(inbox)' && printf moov > v0.mov && i=0; while [ $i -lt 200 ]; do mv v$i.mov v$((i+1)).mov; i=$((i+1)); done;"
            + " printf aae > gone.aae && sleep 0.3 && rm gone.aae"
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", script]).0 == 0)
        try d.waitUntil("bob's list is what his inbox holds", timeout: 15) {
            (try cliJSON(bob, d, ["inbox"])["skipped"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue } == ["v200.mov"]
        }
        #expect(try cliJSON(bob, d, ["status"])["backlog"]?["inbox_skipped"] == 1)
    }
}

extension WhoMayDoWhatTests {
    /// `photomemo inbox` lists at most 1,000 entries (by name) and says how many there are:
    /// a user's 100,000 files that are not photos made a reply of 11.7 MB, over what a
    /// connection may leave unread, and the client was disconnected without its list.
    @Test func theInboxListIsBoundedAndSaysHowManyThereAre() throws {
        let d = try start()
        let script = "cd '\(d.home)/inbox' && i=0; while [ $i -lt 1500 ]; do : > n$i.mov; i=$((i+1)); done"
        #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", script]).0 == 0)
        try d.waitUntil("all 1,500 are counted", timeout: 20) {
            try cliJSON(bob, d, ["status"])["backlog"]?["inbox_skipped"] == 1500
        }
        let r = try cliJSON(bob, d, ["inbox"])
        #expect(r["skipped"]?.arrayValue?.count == 1000 && r["total"] == 1500)
        #expect(r["skipped"]?.arrayValue?.first?["name"] == "n0.mov")
        let (status, out, _) = try cli(bob, d, ["inbox"])
        #expect(status == 0 && out.hasSuffix("… and 500 more\n"), "\(out.suffix(200))")
    }
}
