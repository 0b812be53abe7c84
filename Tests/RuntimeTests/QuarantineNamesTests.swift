import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Testing
@testable import Runtime

/// Quarantine never puts an entry over another's file or reason (`Quarantine.moveEntry`):
/// each entry keeps its bytes and its own reason, under the flat name or the next free one.
@Suite struct QuarantineNamesTests {
    struct Rig {
        let dir = NSTemporaryDirectory() + "pm-qnames-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var inbox: String { dir + "/inbox" }
        var quarantine: Quarantine { Quarantine(folder: dir + "/quarantine", inbox: inbox) }
        init() throws {
            for sub in ["/inbox/DCIM", "/quarantine"] { try FileManager.default.createDirectory(atPath: dir + sub, withIntermediateDirectories: true) }
        }
        func drop(_ name: String, _ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: inbox + "/" + name)) }
        func text(_ path: String) -> String? { (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) } }
        func job(ofReason path: String) -> Int64? {
            (try? JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path + ".reason.json"))))?["job"]?.intValue
        }
        func move(_ name: String, job: Int64?, gone: Bool = false) throws -> String {
            let parent = (name as NSString).deletingLastPathComponent
            let folder = try OpenFolder(parent.isEmpty ? inbox : inbox + "/" + parent)
            return try quarantine.moveEntry((name as NSString).lastPathComponent, in: folder, name: name,
                                            reason: Quarantine.reason("bad", job: job, stage: "validate"), job: job, gone: gone)
        }
    }

    /// A job whose photo was gone left only its reason at the flat name; the next job's
    /// photo of that name goes beside it, and the first reason still names its job.
    @Test func aReasonLeftByAnotherJobIsNeverOverwritten() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        // What the job's `quarantine` says: no file, where its reason is (it named a file never there).
        #expect(try r.move("a.jpg", job: 1, gone: true)
                == "(not moved: \(r.inbox)/a.jpg was gone; its reason is \(r.dir)/quarantine/a.jpg.reason.json)")
        let first = r.dir + "/quarantine/a.jpg"
        #expect(r.job(ofReason: first) == 1)
        try r.drop("a.jpg", "second")
        let second = try r.move("a.jpg", job: 2)
        #expect(second == r.dir + "/quarantine/a.jpg~job2")
        #expect(r.job(ofReason: first) == 1 && r.job(ofReason: second) == 2 && r.text(second) == "second")
    }

    /// Others' entries under every name a job would try (`a.jpg`, `a.jpg~job7`,
    /// `a.jpg~job7~2`, ...: bad photos dropped under those names) left it no name after
    /// 10,000 and its photo in the inbox: past 64 taken names it gets a random one.
    @Test func aJobFindsANameWhenOthersTookTheOnesItWouldTry() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        let taken = ["a.jpg", "a.jpg~job7"] + (2...9_999).map { "a.jpg~job7~\($0)" }
        for name in taken { close(open(r.dir + "/quarantine/" + name, O_CREAT | O_WRONLY, 0o644)) }
        try r.drop("a.jpg", "mine")
        let moved = try r.move("a.jpg", job: 7)
        #expect(!Set(taken.map { r.dir + "/quarantine/" + $0 }).contains(moved), "\(moved)")
        #expect(moved.hasPrefix(r.dir + "/quarantine/a.jpg~job7~") && r.text(moved) == "mine" && r.job(ofReason: moved) == 7)
    }

    /// This job's move run again (a crash after its reason was written, before or after the
    /// file moved) finishes under the same name: no second entry, no reason left alone.
    @Test func aMoveRunAgainFinishesUnderItsName() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        try r.drop("b.jpg", "b")
        try DurableFile.write(Quarantine.reason("bad", job: 3, stage: "validate").jsonData, to: r.dir + "/quarantine/b.jpg.reason.json")
        #expect(try r.move("b.jpg", job: 3) == r.dir + "/quarantine/b.jpg")
        #expect(try r.move("b.jpg", job: 3, gone: true) == r.dir + "/quarantine/b.jpg")
        #expect(try FileManager.default.contentsOfDirectory(atPath: r.dir + "/quarantine").sorted() == ["b.jpg", "b.jpg.reason.json"])
        #expect(r.text(r.dir + "/quarantine/b.jpg") == "b")
    }

    /// `DCIM/a.jpg` and a top-level `DCIM%2Fa.jpg` (one flat name) quarantined at the same
    /// instant from two threads, as the intake lane and a stage's failure may: both files
    /// are kept, each with the reason of its own job.
    @Test func twoEntriesOfOneFlatNameAtOnceBothStay() throws {
        for round in 0..<30 {
            let r = try Rig()
            defer { try? FileManager.default.removeItem(atPath: r.dir) }
            try r.drop("DCIM/a.jpg", "nested")
            try r.drop("DCIM%2Fa.jpg", "top")
            let moved = LockedValue<[Int64: String]>([:])
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                let (name, job) = i == 0 ? ("DCIM/a.jpg", Int64(10)) : ("DCIM%2Fa.jpg", Int64(11))
                if let path = try? r.move(name, job: job) { moved.withLock { $0[job] = path } }
            }
            let paths = moved.value
            #expect(paths.count == 2 && Set(paths.values).count == 2, "round \(round): \(paths)")
            #expect(paths[10].flatMap(r.text) == "nested" && paths[11].flatMap(r.text) == "top", "round \(round): \(paths)")
            #expect(paths[10].flatMap(r.job(ofReason:)) == 10 && paths[11].flatMap(r.job(ofReason:)) == 11, "round \(round)")
        }
    }

    /// A photo whose name is near a file name's 255 bytes is quarantined under a shorter one
    /// (`PhotoPolicy.flatName`), a second of that name too, each reason naming it whole: the
    /// reason's temp file name was past 255 bytes, and the photo never left the inbox.
    @Test func aPhotoWithANameNear255BytesIsQuarantined() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        let name = String(repeating: "a", count: 240) + ".jpg"
        try r.drop(name, "long")
        let first = try r.move(name, job: 1)
        try r.drop(name, "again")
        let second = try r.move(name, job: 2)
        #expect(first != second && r.text(first) == "long" && r.text(second) == "again")
        for path in [first, second] {
            let reason = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path + ".reason.json")))
            #expect((path as NSString).lastPathComponent.utf8.count <= 255 - 12 && reason["job"] != nil)
        }
    }

    /// A photo named like a bad queue line's file goes beside the lines (`inbox-queue-line-…`):
    /// the line written later under that name replaced it (lines rewrite their own names).
    @Test func aPhotoNamedLikeAQueueLineNeverMeetsTheLine() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        let name = "queue-line-queue.d_bob.jsonl-g0-0.jsonl"
        try r.drop(name, "alice's photo")
        let photo = try r.move(name, job: 10)
        #expect(photo == r.dir + "/quarantine/inbox-" + name)
        let line = try r.quarantine.writeLine(Array("not json".utf8)[...], name: name, reason: Quarantine.reason("bad line"), owner: getuid())
        #expect(r.text(photo) == "alice's photo" && r.job(ofReason: photo) == 10 && r.text(line) == "not json")
    }

    /// Bob's bad photo named `v.jpg.reason.json` (any case) goes in as `….reason.json~entry`:
    /// under its own name it was taken for the reason of alice's `v.jpg`, its `job` trusted,
    /// and alice's reason written over bob's file. Reasons in quarantine are only the daemon's.
    @Test func anEntryNamedLikeAReasonIsNeverTakenForOne() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        let bobs = #"{"job": 2, "reason": "bob's"}"#
        for name in ["v.jpg.reason.json", "w.jpg.REASON.Json"] {
            try r.drop(name, bobs)
            let entry = try r.move(name, job: 1)
            #expect(entry == r.dir + "/quarantine/" + name + "~entry" && r.text(entry) == bobs && r.job(ofReason: entry) == 1)
        }
        try r.drop("v.jpg", "alice's")
        let alices = try r.move("v.jpg", job: 2)
        #expect(alices == r.dir + "/quarantine/v.jpg" && r.text(alices) == "alice's" && r.job(ofReason: alices) == 2)
        #expect(r.text(r.dir + "/quarantine/v.jpg.reason.json~entry") == bobs)
        let names = try FileManager.default.contentsOfDirectory(atPath: r.dir + "/quarantine")
        #expect(names.filter { $0.lowercased().hasSuffix(".reason.json") }.count == 3, "\(names.sorted())")
        #expect(names.filter { r.text(r.dir + "/quarantine/" + $0) == bobs }.count == 2, "bob's files are kept")
    }

    /// `retry` brings back only this job's entry: another job's, under the name since (this
    /// one's removed by an admin), stays in quarantine with its reason.
    @Test func retryLeavesAnotherJobsEntryWhereItIs() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        try r.drop("x2.jpg", "bob's")
        let entry = try r.move("x2.jpg", job: 248)
        #expect(throws: PhotomemoError.self) {
            try JobHandlers.bringBack(r.inbox + "/x2.jpg", from: entry, needed: true, job: 247, inbox: r.inbox)
        }
        #expect(r.text(entry) == "bob's" && r.job(ofReason: entry) == 248 && !FileManager.default.fileExists(atPath: r.inbox + "/x2.jpg"))
        try JobHandlers.bringBack(r.inbox + "/x2.jpg", from: entry, needed: true, job: 248, inbox: r.inbox)
        #expect(r.text(r.inbox + "/x2.jpg") == "bob's" && !FileManager.default.fileExists(atPath: entry + ".reason.json"))
    }

    /// A folder made at the photo's name since: `retry` moved nothing back, the job failed
    /// again on the folder ("not a regular file") and pointed at a reason-only entry, and the
    /// photo stayed in quarantine under no job, to be pruned. Now the retry is refused with
    /// why, and the photo stays this job's.
    @Test func retryIsRefusedWhenAFolderStandsAtThePhotosName() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        try r.drop("v.jpg", "victim's")
        let entry = try r.move("v.jpg", job: 11)
        try FileManager.default.createDirectory(atPath: r.inbox + "/v.jpg", withIntermediateDirectories: false)
        do {
            try JobHandlers.bringBack(r.inbox + "/v.jpg", from: entry, needed: true, job: 11, inbox: r.inbox)
            Issue.record("the retry went ahead")
        } catch let e as PhotomemoError {
            #expect(e.code == .conflict && e.message.contains("job 11's photo stays in quarantine") && e.message.contains("is a directory now"), "\(e)")
        }
        #expect(r.text(entry) == "victim's" && r.job(ofReason: entry) == 11)
        try FileManager.default.removeItem(atPath: r.inbox + "/v.jpg")
        try JobHandlers.bringBack(r.inbox + "/v.jpg", from: entry, needed: true, job: 11, inbox: r.inbox)
        #expect(r.text(r.inbox + "/v.jpg") == "victim's")
    }

    /// The owner's folder removed and made again by another user: the photo moved back into
    /// it was theirs to take (rename, delete). It stays in quarantine until the folder is
    /// its owner's (or an admin's) again.
    @Test func retryMovesNothingIntoAFolderAnotherUserOwns() throws {
        let r = try Rig()
        defer { try? FileManager.default.removeItem(atPath: r.dir) }
        try r.drop("DCIM/s.jpg", "victim's")
        #expect(chown(r.inbox + "/DCIM/s.jpg", 60_002, 60_002) == 0 && chown(r.inbox + "/DCIM", 60_002, 60_002) == 0)
        let entry = try r.move("DCIM/s.jpg", job: 12)
        #expect(chown(r.inbox + "/DCIM", 60_001, 60_001) == 0)  // as if removed and made again by 60001
        do {
            try JobHandlers.bringBack(r.inbox + "/DCIM/s.jpg", from: entry, needed: true, job: 12, inbox: r.inbox)
            Issue.record("the photo went into another user's folder")
        } catch let e as PhotomemoError {
            #expect(e.code == .conflict && e.message.contains("is 60001's now, who could take it from there"), "\(e)")
        }
        #expect(r.text(entry) == "victim's" && !FileManager.default.fileExists(atPath: r.inbox + "/DCIM/s.jpg"))
        #expect(chown(r.inbox + "/DCIM", 60_002, 60_002) == 0)  // its owner's again
        try JobHandlers.bringBack(r.inbox + "/DCIM/s.jpg", from: entry, needed: true, job: 12, inbox: r.inbox)
        #expect(r.text(r.inbox + "/DCIM/s.jpg") == "victim's")
        // A folder higher up made by another user: they could rename the owner's folder away.
        try FileManager.default.createDirectory(atPath: r.inbox + "/A/B", withIntermediateDirectories: true)
        try r.drop("A/B/d.jpg", "deep")
        #expect(chown(r.inbox + "/A/B/d.jpg", 60_002, 60_002) == 0 && chown(r.inbox + "/A/B", 60_002, 60_002) == 0)
        let deep = try r.move("A/B/d.jpg", job: 13)
        #expect(chown(r.inbox + "/A", 60_001, 60_001) == 0)
        #expect(throws: PhotomemoError.self) { try JobHandlers.bringBack(r.inbox + "/A/B/d.jpg", from: deep, needed: true, job: 13, inbox: r.inbox) }
        #expect(r.text(deep) == "deep")
    }
}
