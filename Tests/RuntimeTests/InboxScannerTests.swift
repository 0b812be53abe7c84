import Foundation
import Journal
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import Runtime

@Suite struct InboxScannerTests {
    func write(_ t: TestHome, _ name: String, _ text: String = "bytes") throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: t.home.inbox + "/" + name))
    }

    @Test func rescanTakesSettledFilesOnceAndLeavesFreshOnesToSettle() throws {
        let t = try TestHome()
        try write(t, "a.jpg", "A")
        try write(t, ".hidden.jpg", "H")
        try write(t, "b.jpg.part", "P")
        var report = t.scanner(settle: 60).rescan()
        #expect(report.unsettled == ["a.jpg"])
        #expect(try t.jobs().isEmpty)
        report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.map(\.name) == ["a.jpg"])
        report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.isEmpty)
        #expect(try t.jobs().count == 1)
    }

    @Test func closedFilesAreTakenAtOnceAndCreatedRegularFilesWaitForTheirCloseEvent() throws {
        let t = try TestHome()
        try write(t, "c.jpg", "C")
        #expect(t.scanner(settle: 60).take([("c.jpg", false)]).outcomes.isEmpty)
        #expect(t.scanner(settle: 60).take([("c.jpg", true)]).outcomes.map(\.name) == ["c.jpg"])
        let job = try #require(try t.jobs().first)
        #expect(job.key == "sha256:" + SHA256.hex(Data("C".utf8)))
    }

    @Test func photoNamedEntriesThatCannotBePhotosGoToQuarantineWithTheirReason() throws {
        let t = try TestHome()
        symlink("/etc/passwd", t.home.inbox + "/pw.jpg")
        mkfifo(t.home.inbox + "/fifo.jpg", 0o644)
        try FileManager.default.createDirectory(atPath: t.home.inbox + "/dir.jpg", withIntermediateDirectories: false)
        try write(t, "real.jpg", "R")
        symlink(t.home.inbox + "/real.jpg", t.home.inbox + "/inside.jpg")
        let report = t.scanner().take([("pw.jpg", false), ("fifo.jpg", false), ("dir.jpg", false), ("inside.jpg", false)])
        #expect(report.rejected.count == 3)
        #expect(try t.quarantined() == ["fifo.jpg", "inside.jpg", "pw.jpg"])
        #expect(try t.reason("pw.jpg")["reason"] == "symlink escapes the inbox (points to /etc/passwd)")
        #expect(try t.reason("fifo.jpg")["reason"] == "a FIFO is not a photo")
        // A link's owner need not own its target: links are never taken, even inside the inbox.
        #expect(try t.reason("inside.jpg")["reason"]?.stringValue?.hasPrefix("a symlink is not taken") == true)
        // A folder is a sync tool's, whatever its name: never moved, never taken.
        #expect(report.skipped["dir.jpg"] == nil)
        #expect(FileManager.default.fileExists(atPath: t.home.inbox + "/dir.jpg"))
        #expect(report.outcomes.isEmpty)
        #expect(try t.jobs().filter { $0.state == .failed }.count == 3)
        #expect(!FileManager.default.fileExists(atPath: t.home.inbox + "/fifo.jpg"))
        // Each reason names its job, as a stage failure's does (it had no `job`).
        for job in try t.jobs() {
            let entry = try #require(job.quarantine, "\(job)")
            #expect(try t.reason((entry as NSString).lastPathComponent)["job"]?.intValue == job.id)
        }
    }

    /// What sync tools put beside photos — folders, videos, edit files, thumbnails caches,
    /// files in transit — stays where it is: never a job, never quarantined.
    @Test func foldersAndFilesThatAreNotPhotosAreLeftAlone() throws {
        let t = try TestHome()
        let inbox = t.home.inbox
        try FileManager.default.createDirectory(atPath: inbox + "/DCIM/100APPLE", withIntermediateDirectories: true)
        let jpeg = try Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg"))
        try jpeg.write(to: URL(fileURLWithPath: inbox + "/DCIM/100APPLE/IMG_0001.JPG"))
        for name in ["IMG_0001.MOV", "IMG_0001.AAE", "Thumbs.db", "desktop.ini", "IMG_0002.xmp", "notes"] { try write(t, name, "not an image") }
        for name in ["t.jpg.partial", "t2.jpg.filepart", "t3.JPG.crdownload", "t4.jpg.download", "t5.jpg.!sync", "~$report.docx",
                     "~syncthing~t6.jpg.tmp"] { try jpeg.write(to: URL(fileURLWithPath: inbox + "/" + name)) }
        mkfifo(inbox + "/pipe", 0o644)
        try jpeg.write(to: URL(fileURLWithPath: inbox + "/upload-without-extension"))  // a photo by its bytes
        try jpeg.write(to: URL(fileURLWithPath: inbox + "/IMG_0003.jpeg"))
        let report = t.scanner(settle: 0).rescan()
        #expect(Set(report.outcomes.map(\.name)) == ["upload-without-extension", "IMG_0003.jpeg", "DCIM/100APPLE/IMG_0001.JPG"])
        #expect(report.rejected.isEmpty)
        #expect(try t.quarantined().isEmpty)
        #expect(report.skipped.mapValues(\.reason) == [
            "IMG_0001.MOV": "not a photo (.mov)", "IMG_0001.AAE": "not a photo (.aae)", "Thumbs.db": "not a photo (.db)",
            "desktop.ini": "not a photo (.ini)", "IMG_0002.xmp": "memo sidecar waiting for its photo IMG_0002.*",
            "notes": "not a photo (no photo extension, and its first bytes are no image's)",
            "pipe": "not a photo (no photo extension)",
        ])
        #expect(report.skipped["notes"]?.owner == UnixUser.nameOrNumber(getuid()))
        let left = try FileManager.default.contentsOfDirectory(atPath: inbox)
        #expect(left.count == 17, "\(left.sorted())")
        #expect(FileManager.default.fileExists(atPath: inbox + "/DCIM/100APPLE/IMG_0001.JPG"))
    }

    /// A sidecar with no photo waits where it is, said so; past `join_timeout_s` it says
    /// that too, and is still joined when its photo comes.
    @Test func aSidecarWithoutItsPhotoWaitsAndIsStillJoinedAfterTheTimeout() throws {
        let t = try TestHome()
        try write(t, "IMG_9.jpg.json", #"{"memo": "late photo", "type": "Houses"}"#)
        var report = t.scanner().rescan()
        #expect(report.skipped["IMG_9.jpg.json"]?.reason == "memo sidecar waiting for its photo IMG_9.jpg")
        let timedOut = InboxScanner(inbox: t.home.inbox, journal: t.journal, quarantine: t.quarantine, settleSeconds: 0,
                                    joinTimeoutSeconds: LockedValue(0))
        report = timedOut.rescan()
        #expect(report.skipped["IMG_9.jpg.json"]?.reason
                == "memo sidecar: no photo IMG_9.jpg arrived within join_timeout_s (0); it is still joined if one does")
        try Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg")).write(to: URL(fileURLWithPath: t.home.inbox + "/IMG_9.jpg"))
        report = timedOut.rescan()
        #expect(report.outcomes.map(\.name) == ["IMG_9.jpg"])
        #expect(try t.journal.jobs(limit: 10).map(\.memo.type) == ["Houses"])
        #expect(report.skipped["IMG_9.jpg.json"]?.reason == "memo sidecar of IMG_9.jpg")
    }

    @Test func namesToolsWriteWhileInTransitAreNeverTaken() {
        for name in [".IMG.jpg", "IMG.jpg.part", "IMG.jpg.tmp", "IMG.jpg.partial", "IMG.jpg.PARTIAL", "IMG.jpg.filepart",
                     "IMG.jpg.crdownload", "IMG.jpg.download", "IMG.jpg.!sync", "~syncthing~IMG.jpg.tmp", "~$IMG.jpg",
                     "IMG.jpg.abc123.partial"] {
            #expect(PhotoPolicy.isIgnoredInboxName(name), "\(name)")
        }
        for name in ["IMG.jpg", "IMG.partial.jpg", "download.jpg", "~IMG.jpg", "part.heic"] {
            #expect(!PhotoPolicy.isIgnoredInboxName(name), "\(name)")
        }
    }

    @Test func imagesAreKnownByTheirFirstBytes() throws {
        for name in ["Canon_40D.jpg", "IMG_5195.HEIC"] {
            let head = Array(try Data(contentsOf: testPhotos.appendingPathComponent(name)).prefix(16))
            #expect(PhotoPolicy.startsLikeAnImage(head), "\(name)")
        }
        #expect(PhotoPolicy.startsLikeAnImage([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]))
        #expect(PhotoPolicy.startsLikeAnImage(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)))
        // An ISO media file of a video brand (a .MOV or .MP4) is not an image.
        #expect(!PhotoPolicy.startsLikeAnImage([0, 0, 0, 20] + Array("ftypqt  ".utf8)))
        #expect(!PhotoPolicy.startsLikeAnImage([0, 0, 0, 20] + Array("ftypisom".utf8)))
        #expect(!PhotoPolicy.startsLikeAnImage(Array("hello".utf8)))
        #expect(PhotoPolicy.fileExtension("clip.MOV") == "mov" && PhotoPolicy.fileExtension("notes") == nil
                && PhotoPolicy.fileExtension(".hidden") == nil && PhotoPolicy.fileExtension("x.") == nil)
    }

    /// The daemon runs as root: resolving a link would tell its owner what exists, and
    /// where links lead, in folders they cannot read (`/root/.ssh/id_rsa` exists or not).
    /// The reason says only what the link's text says.
    @Test func aSymlinksReasonTellsNothingTheLinkItselfDoesNot() throws {
        let t = try TestHome()
        let hidden = t.home.root + "/private"
        try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: false)
        symlink("/etc/passwd", hidden + "/inner")
        chmod(hidden, 0o700)
        symlink(hidden + "/inner", t.home.inbox + "/chain.jpg")
        symlink("/nonexistent-\(getpid())/id_rsa", t.home.inbox + "/missing.jpg")
        symlink("../../outside.jpg", t.home.inbox + "/up.jpg")
        symlink("./sub/../real.jpg", t.home.inbox + "/near.jpg")
        let report = t.scanner().take([("chain.jpg", false), ("missing.jpg", false), ("up.jpg", false), ("near.jpg", false)])
        #expect(report.rejected.count == 4)
        #expect(try t.reason("chain.jpg")["reason"] == .string("symlink escapes the inbox (points to \(hidden)/inner)"))
        #expect(try t.reason("missing.jpg")["reason"] == .string("symlink escapes the inbox (points to /nonexistent-\(getpid())/id_rsa)"))
        #expect(try t.reason("up.jpg")["reason"] == "symlink escapes the inbox (points to ../../outside.jpg)")
        #expect(try t.reason("near.jpg")["reason"]?.stringValue?.hasPrefix("a symlink is not taken") == true)
    }
}

extension InboxScannerTests {
    /// A user's drops count toward their 1,000 unfinished jobs like queue lines: at the cap
    /// their files wait in the inbox, unread, and are taken as jobs finish; an admin's are not held.
    @Test func aUsersDropsWaitAtTheirCapOfUnfinishedJobs() throws {
        let t = try TestHome()
        let user = UnixUser.nameOrNumber(65534)
        let flood = (0..<MemoIntake.maxUnfinishedPerUser).map {
            TakenPhoto(name: "f\($0).jpg", path: t.home.inbox + "/f\($0).jpg", identity: "i\($0)", sha256: SHA256.hex(Data("f\($0)".utf8)), owner: user)
        }
        _ = try t.journal.commitPhotos(flood)
        for name in ["u1.jpg", "u2.jpg", "u3.jpg"] {
            try write(t, name, name)
            #expect(chown(t.home.inbox + "/" + name, 65534, 65534) == 0)
        }
        try write(t, "admin.jpg", "admin")
        var report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.map(\.name) == ["admin.jpg"])
        #expect(report.atCap == [user] && report.untaken == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: t.home.inbox).count == 4)  // nothing moved
        // Two of the user's jobs end: two files are taken, the third still waits.
        let ids = try t.journal.jobs(limit: 10_000).filter { $0.state == .queued }.map(\.id).prefix(2)
        for id in ids { try t.journal.cancel(job: id) }
        report = t.scanner(settle: 0).rescan()
        #expect(report.outcomes.count == 2 && report.untaken == 1, "\(report.outcomes.map(\.name))")
    }
}

extension InboxScannerTests {
    /// A file under an ignored name untouched for `stale_temp` (a transfer that died, or
    /// `dd` into `.fill.part`) is reported with its owner and size, and never removed.
    @Test func filesUnderIgnoredNamesUntouchedForStaleTempAreReported() throws {
        let t = try TestHome()
        for name in [".fill.part", "IMG.jpg.partial", ".IMG.jpg.Xy12Ab", "fresh.jpg.part"] { try write(t, name, "0123456789") }
        try FileManager.default.createDirectory(atPath: t.home.inbox + "/.stfolder", withIntermediateDirectories: false)
        let twoDaysAgo = Date().addingTimeInterval(-2 * 86_400)
        for name in [".fill.part", "IMG.jpg.partial", ".IMG.jpg.Xy12Ab", ".stfolder"] {
            try FileManager.default.setAttributes([.modificationDate: twoDaysAgo], ofItemAtPath: t.home.inbox + "/" + name)
        }
        let scanner = InboxScanner(inbox: t.home.inbox, journal: t.journal, quarantine: t.quarantine, settleSeconds: 0)
        let report = scanner.rescan()
        #expect(Set(report.stale.keys) == [".fill.part", "IMG.jpg.partial", ".IMG.jpg.Xy12Ab"])
        #expect(report.stale[".fill.part"]?.bytes == 10 && report.stale[".fill.part"]!.idleSeconds > 86_400)
        #expect(report.outcomes.isEmpty && report.skipped.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: t.home.inbox).count == 5)
        scanner.options.value.staleTempSeconds = 3 * 86_400  // a reload
        #expect(scanner.rescan().stale.isEmpty)
    }

    @Test func theInboxSectionOfADefinitionTakesDurations() throws {
        #expect(DurationText.seconds("24h") == 86_400 && DurationText.seconds("90s") == 90 && DurationText.seconds("7d") == 604_800)
        #expect(DurationText.seconds("24") == nil && DurationText.seconds("h") == nil && DurationText.seconds("-1h") == nil)
        #expect(try InboxOptions.parse(["stale_temp": "2h"], place: "x.json").staleTempSeconds == 7200)
        #expect(try InboxOptions.parse(nil, place: "x.json") == InboxOptions())
        #expect(throws: PhotomemoError(.badDefinition, "x.json: inbox.stale_temp must be a duration: a number with s, m, h or d (e.g. \"24h\"), not 24")) {
            try InboxOptions.parse(["stale_temp": 24], place: "x.json")
        }
        #expect(throws: PhotomemoError.self) { try InboxOptions.parse(["stale_tmp": "1h"], place: "x.json") }
        #expect(InboxOptions().quietAfterCloseSeconds == 1)
        #expect(try InboxOptions.parse(["quiet_after_close": "0.5s"], place: "x.json").quietAfterCloseSeconds == 0.5)
        #expect(try InboxOptions.parse(["quiet_after_close": "0s"], place: "x.json").quietAfterCloseSeconds == 0)
        #expect(throws: PhotomemoError.self) { try InboxOptions.parse(["quiet_after_close": "2m"], place: "x.json") }
    }
}

/// Intake's hashing budget (64 MB of one owner's files a look) counts bytes hashed only: a
/// user at their cap of unfinished jobs, whose files wait unread, sent the rest of each
/// look round again, at every rescan (35% of a core for 8,000 such files: attack review).
extension InboxScannerTests {
    @Test(.enabled(if: getuid() == 0)) func filesOfAUserAtTheCapWaitWithoutGoingRound() throws {
        let t = try TestHome()
        let nobody = try #require(getpwnam("nobody")?.pointee.pw_uid)
        let cap = (0..<MemoIntake.maxUnfinishedPerUser).map {
            QueuedMemo(memo: MemoJob(memo: "m\($0)", owner: "nobody"), photo: .none, key: "cap-\($0)", source: "test")
        }
        _ = try t.journal.commitMemos(cap, position: nil, joinTimeoutSeconds: 600)
        var names: [(name: String, complete: Bool)] = []
        for i in 0..<3 {
            let path = t.home.inbox + "/big\(i).jpg"
            #expect(FileManager.default.createFile(atPath: path, contents: Data([0xFF, 0xD8, 0xFF, UInt8(i)])))
            #expect(truncate(path, 40 << 20) == 0 && chown(path, nobody, gid_t.max) == 0)
            names.append(("big\(i).jpg", true))
        }
        let report = t.scanner().take(names)
        #expect(report.retake.isEmpty && report.untaken == 3 && report.atCap == ["nobody"], "retake \(report.retake), untaken \(report.untaken)")
    }
}
