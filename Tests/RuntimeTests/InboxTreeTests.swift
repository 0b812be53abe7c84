import Foundation
import Journal
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import Runtime

/// The inbox is a tree (issue 26): a photo's name is its path in the inbox; folders are
/// walked, never moved; links are never followed; depth and turns are bounded.
@Suite struct InboxTreeTests {
    func put(_ t: TestHome, _ name: String, _ data: Data = Data("bytes".utf8)) throws {
        let path = t.home.inbox + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }

    @Test func photosInSubfoldersAreTakenUnderTheirPathAndFoldersStay() throws {
        let t = try TestHome()
        for name in ["DCIM/2026/12/IMG_0001.jpg", "DCIM/2026/12/IMG_0002.JPG", "top.jpg", "a b/new\nline.jpg"] { try put(t, name, Data(name.utf8)) }
        for name in [".stversions/old.jpg", "@eaDir/top.jpg/SYNOPHOTO_THUMB.jpg", "#recycle/gone.jpg", "lost+found/x.jpg",
                     "DCIM/2026/12/.syncthing.IMG_3.jpg.tmp", "DCIM/clip.MOV"] { try put(t, name) }
        let report = t.scanner(settle: 0).rescan()
        #expect(Set(report.outcomes.map(\.name)) == ["DCIM/2026/12/IMG_0001.jpg", "DCIM/2026/12/IMG_0002.JPG", "top.jpg", "a b/new\nline.jpg"])
        #expect(Set(try t.jobs().compactMap(\.memo.photo)) == Set(report.outcomes.map(\.name)))
        #expect(try t.journal.isTaken(name: "DCIM/2026/12/IMG_0001.jpg",
                                      identity: PhotoSeal.identity(Files.lstatEntry(t.home.inbox + "/DCIM/2026/12/IMG_0001.jpg"))))
        #expect(report.skipped.mapValues(\.reason) == [
            "DCIM/clip.MOV": "not a photo (.mov)",
            "@eaDir": "a tool's state folder (not looked into)", "#recycle": "a tool's state folder (not looked into)",
            "lost+found": "a tool's state folder (not looked into)",
        ])
        #expect(try t.quarantined().isEmpty && report.rejected.isEmpty)
        for folder in ["DCIM/2026/12", "a b", ".stversions", "@eaDir"] {
            #expect(FileManager.default.fileExists(atPath: t.home.inbox + "/" + folder))
        }
        #expect(t.scanner(settle: 0).rescan().outcomes.isEmpty, "taken once")
    }

    /// A folder that is a symlink (to `/`, to another user's files) is never walked into,
    /// and one swapped in for a folder after the walk saw it leads nowhere either.
    @Test func symlinkedFoldersAreNotFollowed() throws {
        let t = try TestHome()
        #expect(symlink("/", t.home.inbox + "/root") == 0)
        let outside = t.home.root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/IMG.jpg"))
        #expect(symlink(outside, t.home.inbox + "/phone") == 0)
        let report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.isEmpty && report.rejected.isEmpty)
        #expect(report.skipped["root"]?.reason == "not a photo (no photo extension)")
        // A name naming a file through the link (an event, a retake) is not taken either.
        let named = t.scanner(settle: 0).take([("phone/IMG.jpg", true), ("root/etc/passwd", true)])
        #expect(named.outcomes.isEmpty && named.rejected.isEmpty)
        #expect(FileManager.default.fileExists(atPath: outside + "/IMG.jpg"))
    }

    /// A photo candidate that can never be one, deep in a folder, is quarantined under its
    /// whole path made one name: no folder is made in quarantine, none collides.
    @Test func aNestedRejectIsQuarantinedUnderItsFlatName() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.inbox + "/a/b", withIntermediateDirectories: true)
        #expect(mkfifo(t.home.inbox + "/a/b/x.jpg", 0o644) == 0)
        #expect(mkfifo(t.home.inbox + "/a%2Fb%2Fx.jpg", 0o644) == 0)
        #expect(symlink("../../../etc/passwd", t.home.inbox + "/a/b/up.jpg") == 0)
        #expect(symlink("../top.jpg", t.home.inbox + "/a/near.jpg") == 0)
        let report = t.scanner().rescan()
        #expect(report.rejected.count == 4)
        // The flat file named like the nested one's flat name: both kept, neither overwritten.
        let q = try t.quarantined()
        #expect(q.count == 4 && q.filter { $0.hasPrefix("a%2Fb%2Fx.jpg") }.count == 2 && q.contains("a%2Fb%2Fup.jpg") && q.contains("a%2Fnear.jpg"), "\(q)")
        #expect(try t.reason("a%2Fb%2Fup.jpg")["reason"] == "symlink escapes the inbox (points to ../../../etc/passwd)")
        #expect(try t.reason("a%2Fb%2Fup.jpg")["name"] == "a/b/up.jpg")
        #expect(try t.reason("a%2Fnear.jpg")["reason"]?.stringValue?.hasPrefix("a symlink is not taken") == true)
        #expect(FileManager.default.fileExists(atPath: t.home.inbox + "/a/b"))
    }

    /// A name that is not UTF-8: a file goes to quarantine (as in a flat inbox), a folder
    /// stays where it is, listed, not looked into.
    @Test func aFolderWhoseNameIsNotUTF8StaysAndAFileIsQuarantined() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.inbox + "/sub", withIntermediateDirectories: false)
        let bad: [CChar] = Array((t.home.inbox + "/sub/bad").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0]
        #expect(mkdir(bad, 0o755) == 0)
        let badFile: [CChar] = Array((t.home.inbox + "/sub/f").utf8CString.dropLast()) + [CChar(bitPattern: 0xFE)] + Array(".jpg".utf8CString)
        let fd = open(badFile, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0)
        close(fd)
        let report = t.scanner(settle: 0).rescan()
        #expect(report.skipped["sub/bad\\xFF"]?.reason == "a folder whose name is not valid UTF-8 (not looked into)", "\(report.skipped)")
        #expect(access(bad, F_OK) == 0, "the folder stays")
        #expect(try report.rejected.count == 1 && t.quarantined().count == 1)
    }

    /// A name that is not UTF-8 dropped again after its first file was quarantined: the
    /// second file was renamed over the first in quarantine (its reason rewritten). Both
    /// stay now, each with the reason of its own job.
    @Test func aNameThatIsNotUTF8DroppedTwiceKeepsBothFiles() throws {
        let t = try TestHome()
        let path: [CChar] = Array((t.home.inbox + "/IMG").utf8CString.dropLast()) + [CChar(bitPattern: 0xE9)] + Array(".jpg".utf8CString)
        for text in ["first", "second"] {
            let fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0o644)
            #expect(fd >= 0 && write(fd, text, text.utf8.count) == text.utf8.count)
            close(fd)
            #expect(t.scanner(settle: 0).rescan().rejected.count == 1)
        }
        let entries = try t.quarantined()
        #expect(entries.count == 2, "\(entries)")
        let texts = try entries.map { String(decoding: try Data(contentsOf: URL(fileURLWithPath: t.home.quarantine + "/" + $0)), as: UTF8.self) }
        #expect(texts.sorted() == ["first", "second"])
        let jobs = try t.jobs().map(\.id).sorted()
        #expect(try entries.compactMap { try t.reason($0)["job"]?.intValue }.sorted() == jobs && jobs.count == 2)
    }

    /// A file whose name is not UTF-8 (a Latin-1 name from an old tool) is quarantined only
    /// when it is a photo candidate: a sync tool's temporary name, an ignored one and a file
    /// that is no photo stay where they are, as under a UTF-8 name (they were all moved).
    @Test func aFileWhoseNameIsNotUTF8IsQuarantinedOnlyWhenItIsAPhoto() throws {
        let t = try TestHome()
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0, 16]
        let files: [(String, String, [UInt8])] = [("clip", ".MOV", Array("not an image".utf8)), (".IMG", ".jpg.Xa1b2c", jpeg),
                                                  ("IMG", ".jpg.part", jpeg), ("IMG", ".jpg", jpeg), ("raw", "", jpeg)]
        for (head, tail, bytes) in files {
            let path: [CChar] = Array((t.home.inbox + "/" + head).utf8CString.dropLast()) + [CChar(bitPattern: 0xE9)] + Array(tail.utf8CString)
            let fd = open(path, O_CREAT | O_WRONLY, 0o644)
            #expect(fd >= 0 && write(fd, bytes, bytes.count) == bytes.count)
            close(fd)
        }
        let report = t.scanner(settle: 0).rescan()
        #expect(report.skipped["clip\\xE9.MOV"]?.reason == "not a photo (.mov)", "\(report.skipped)")
        #expect(report.rejected.count == 2, "\(report.rejected)")
        #expect(try t.quarantined().count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: t.home.inbox).count == 3)
    }

    /// A photo whose path in the inbox is longer than a path can be (PATH_MAX) could never be
    /// opened by a stage: it was taken, failed every attempt (`File name too long`) and only
    /// then was quarantined. Now it is quarantined at once, saying why.
    @Test func aPhotoTooDeepToOpenIsQuarantinedAtOnce() throws {
        let t = try TestHome()
        var fd = open(t.home.inbox, O_RDONLY | O_DIRECTORY)
        for i in 0..<16 {
            let name = "f\(i)" + String(repeating: "z", count: 250)
            #expect(mkdirat(fd, name, 0o755) == 0)
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY)
            close(fd)
            fd = next
        }
        let photo = openat(fd, String(repeating: "r", count: 250) + ".jpg", O_CREAT | O_WRONLY, 0o644)
        #expect(photo >= 0 && write(photo, [0xFF, 0xD8, 0xFF, 0xE0] as [UInt8], 4) == 4)
        close(photo)
        close(fd)
        let report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.isEmpty && report.rejected.count == 1, "\(report.rejected)")
        #expect(report.rejected.first?.contains("longer than a path can be (4095)") == true, "\(report.rejected)")
        #expect(try t.quarantined().count == 1)
    }

    /// A failed job's nested photo goes to quarantine under its flat name; a folder made
    /// at the photo's name since is a sync tool's and stays where it is.
    @Test func aFailedNestedPhotoIsQuarantinedButAFolderAtItsNameStays() throws {
        let t = try TestHome()
        try put(t, "a/b/x.jpg", Data("x".utf8))
        try put(t, "a/b/y.jpg", Data("y".utf8))
        let report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.count == 2)
        let jobs = try t.jobs()
        let x = try #require(jobs.first { $0.memo.photo == "a/b/x.jpg" }), y = try #require(jobs.first { $0.memo.photo == "a/b/y.jpg" })
        try Scheduler.quarantinePhoto(PendingQuarantine(job: x.id, photoPath: t.home.inbox + "/a/b/x.jpg", stage: "validate", reason: "bad"),
                                      journal: t.journal, quarantine: t.quarantine, copies: t.home.reprocess)
        #expect(try t.quarantined() == ["a%2Fb%2Fx.jpg"] && t.reason("a%2Fb%2Fx.jpg")["name"] == "a/b/x.jpg")
        #expect(FileManager.default.fileExists(atPath: t.home.inbox + "/a/b"))
        try FileManager.default.removeItem(atPath: t.home.inbox + "/a/b/y.jpg")
        try put(t, "a/b/y.jpg/inside.jpg")  // a folder now stands at y.jpg's name
        try Scheduler.quarantinePhoto(PendingQuarantine(job: y.id, photoPath: t.home.inbox + "/a/b/y.jpg", stage: "validate", reason: "bad"),
                                      journal: t.journal, quarantine: t.quarantine, copies: t.home.reprocess)
        #expect(FileManager.default.fileExists(atPath: t.home.inbox + "/a/b/y.jpg/inside.jpg"), "the folder was moved")
    }

    /// A tree deeper than `inbox.depth` is walked to that depth and no further; the folder
    /// at the limit is listed.
    @Test func depthBoundsTheWalk() throws {
        let t = try TestHome()
        let deep = (1...40).map { "d\($0)" }.joined(separator: "/")
        try put(t, deep + "/deep.jpg")
        try put(t, "d1/d2/d3/shallow.jpg")
        var options = InboxOptions()
        options.depth = 3
        let scanner = InboxScanner(inbox: t.home.inbox, journal: t.journal, quarantine: t.quarantine, settleSeconds: 0, options: LockedValue(options))
        let report = scanner.rescan()
        #expect(report.outcomes.map(\.name) == ["d1/d2/d3/shallow.jpg"])
        #expect(report.skipped.mapValues(\.reason) == ["d1/d2/d3/d4": "a folder deeper than inbox.depth (3): not looked into"])
    }

    /// A walk looks at `entries_per_turn` entries a turn, and goes on where it stopped.
    @Test func aWalkGoesATurnAtATime() throws {
        let t = try TestHome()
        for i in 0..<50 { try put(t, "big/n\(i).mov") }
        for i in 0..<3 { try put(t, "big/p\(i).jpg", Data("p\(i)".utf8)) }
        var options = InboxOptions()
        options.entriesPerTurn = 16
        let scanner = InboxScanner(inbox: t.home.inbox, journal: t.journal, quarantine: t.quarantine, settleSeconds: 0, options: LockedValue(options))
        let walk = InboxWalk(under: "")
        var turns = 0, taken = 0
        while !walk.finished {
            let r = scanner.step(walk)
            #expect(r.skipped.count + r.outcomes.count <= 16)
            taken += r.outcomes.count
            turns += 1
        }
        #expect(turns >= 4 && taken == 3 && walk.found.skipped.count() == 50)
    }

    /// A file found fresh is looked at again in its folder alone, not by a walk of the tree.
    @Test func freshFilesAreLookedAtAgainInTheirFolderAlone() throws {
        let t = try TestHome()
        try put(t, "a/fresh.jpg", Data("f".utf8))
        try put(t, "a/sub/deeper.jpg", Data("d".utf8))
        let walk = InboxWalk(under: "")
        while !walk.finished { _ = t.scanner(settle: 60).step(walk) }
        #expect(walk.found.unsettled == ["a": ["a/fresh.jpg"], "a/sub": ["a/sub/deeper.jpg"]])
        let again = InboxWalk(under: "a", deep: false)
        var taken: [String] = []
        while !again.finished { taken += t.scanner(settle: 0).step(again).outcomes.map(\.name) }
        #expect(taken == ["a/fresh.jpg"], "its subfolders are not walked")
    }

    @Test func theInboxSectionTakesTreeLimitsAndIgnoreGlobs() throws {
        let o = try InboxOptions.parse(["depth": 4, "entries_per_turn": 500, "ignore": ["*.mov", "Backup/*"]], place: "x.json")
        #expect(o.depth == 4 && o.entriesPerTurn == 500 && o.ignore == ["*.mov", "Backup/*"])
        #expect(InboxOptions().depth == 16 && InboxOptions().entriesPerTurn == 1000)
        for bad: JSONValue in [["depth": 0], ["depth": "16"], ["entries_per_turn": 1], ["ignore": "*.mov"], ["ignore": [""]], ["ignore": [1]]] {
            #expect(throws: PhotomemoError.self) { try InboxOptions.parse(bad, place: "x.json") }
        }
    }

    /// `inbox.ignore` globs keep names from being taken or listed, by base name or path.
    @Test func ignoreGlobsAreNeverTaken() throws {
        let t = try TestHome()
        try put(t, "Backup/IMG.jpg")
        try put(t, "DCIM/IMG~conflict.jpg")
        try put(t, "DCIM/IMG.jpg")
        var options = InboxOptions()
        options.ignore = ["Backup/*", "*~conflict*"]
        let scanner = InboxScanner(inbox: t.home.inbox, journal: t.journal, quarantine: t.quarantine, settleSeconds: 0, options: LockedValue(options))
        let report = scanner.rescan()
        #expect(report.outcomes.map(\.name) == ["DCIM/IMG.jpg"] && report.skipped.isEmpty)
    }
}
