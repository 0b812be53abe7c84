import Foundation
import Glibc
import Journal
import TestSupport
import Testing
@testable import Runtime

/// Jobs run oldest first, so one user's flood must not be unbounded: a 4 MiB queue file of
/// `{}` lines made 1.4 million jobs, and another user's photo dropped after it waited
/// behind all of them (hours). A user has at most `MemoIntake.maxUnfinishedPerUser`
/// unfinished jobs; the rest of their file waits, unread, and nothing is lost.
@Suite(.serialized) struct UnfinishedJobsCapTests {
    static let cap = MemoIntake.maxUnfinishedPerUser

    /// A user's (uid 60001) queue file of `lines` `{}` lines, read until it is held at the cap.
    static func heldAtTheCap(_ t: TestHome, lines: Int) throws -> (path: String, reader: QueueReader, report: QueueReader.Report) {
        let path = t.home.queueFolder + "/m.jsonl"
        try t.append(String(repeating: "{}\n", count: lines), to: path)
        #expect(chown(path, 60_001, 60_001) == 0)
        let r = QueueReader(path: path, name: "queue.d/m.jsonl", journal: t.journal, quarantine: t.quarantine,
                            intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 600))
        var report = try r.catchUp()
        while report.more { report = try r.catchUp() }
        #expect(try t.journal.counts()[.queued] == Self.cap)
        return (path, r, report)
    }

    @Test func aUsersQueueFileIsReadOnlyWhileTheyHaveRoomForMoreJobs() throws {
        let t = try TestHome()
        var (_, r, report) = try Self.heldAtTheCap(t, lines: Self.cap + 500)
        #expect(report.unreadBytes == 500 * 3)
        #expect(report.notes.contains { $0.contains("60001 has \(Self.cap) unfinished jobs") })
        // As jobs finish, the rest is read; an admin's file is never held.
        for job in try t.journal.jobs(limit: 400) { try t.journal.cancel(job: job.id) }
        report = try r.catchUp()
        #expect(report.lines == 400 && report.unreadBytes == 100 * 3)
        report = try r.catchUp()
        #expect(report.notes.isEmpty)  // held again, but said once
        try t.append(String(repeating: "{}\n", count: 2 * Self.cap))
        report = try t.queueReader().catchUp()
        #expect(report.lines == 2 * Self.cap)
    }

    /// Removing or replacing a held file does not lift the cap: the old file's rest, read
    /// through the descriptor held open, waits like any of the user's lines.
    @Test func aReplacedOrRemovedFileStaysUnderTheCap() throws {
        let t = try TestHome()
        let (path, r, _) = try Self.heldAtTheCap(t, lines: Self.cap + 20_000)
        #expect(unlink(path) == 0)
        for _ in 0..<5 { _ = try r.catchUp() }
        #expect(try t.journal.counts()[.queued] == Self.cap)
    }

    /// A held file renamed over again and again was held open each time, unread behind the
    /// cap: 20,000 renames held every descriptor the daemon had. At most `maxPending`
    /// replacements are held (the newest taking the newest's place), the rest said in a note;
    /// the held file's rest and the newest replacement are read once there is room.
    @Test func aFileRenamedOverAgainAndAgainAtTheCapHoldsAFewDescriptors() throws {
        let t = try TestHome()
        let (path, r, _) = try Self.heldAtTheCap(t, lines: Self.cap + 1)
        func openHere() -> Int { QueueFolderTests.openDescriptors(in: t.home.queueFolder) }
        var notes: [String] = []
        for i in 0..<50 {
            let temp = t.home.queueFolder + "/.m.tmp"
            try #"{"memo":"r\#(i)"}"# .appending("\n").write(toFile: temp, atomically: false, encoding: .utf8)
            #expect(chown(temp, 60_001, 60_001) == 0 && rename(temp, path) == 0)
            notes += try r.catchUp().notes
        }
        #expect(openHere() <= 1 + QueueFileFollower.maxPending, "\(openHere()) descriptors held")
        #expect(notes.contains { $0.contains("replaced more than \(QueueFileFollower.maxPending) times") && $0.contains("of the files in between are not read") }, "\(notes)")
        // Room again: the held file's last line, the first replacements and the newest are read.
        for job in try t.journal.jobs(limit: 100) { try t.journal.cancel(job: job.id) }
        for _ in 0..<10 { _ = try r.catchUp() }
        let memos = Set(try t.journal.jobs(limit: 2000).map(\.memo.memo))
        #expect(memos.isSuperset(of: ["r0", "r1", "r2", "r49"]) && !memos.contains("r30"), "\(memos.filter { $0.hasPrefix("r") }.sorted())")
        #expect(openHere() == 1)
    }

    /// A retried job is unfinished again, so `retry` answers `too_many_jobs` at the cap too:
    /// cancelled jobs retried in bulk got past it. An admin's retry is not capped.
    @Test func retryAnswersTooManyJobsAtTheCap() throws {
        let rig = try ControlRig()
        let cancelled = try rig.rig.enqueue(1, owner: ControlRig.owner.name)[0]
        try rig.journal.cancel(job: cancelled)
        _ = try rig.rig.enqueue(Self.cap, owner: ControlRig.owner.name)
        let (replies, closed) = try rig.run([
            .init(command: "retry", args: ["job": .int(cancelled)], caller: ControlRig.owner),
            .init(command: "retry", args: ["job": .int(cancelled)], caller: ControlRig.admin),
        ])
        #expect(closed == 0)
        #expect(replies.map(\.code) == [.tooManyJobs, nil])
        if case .failure(let e) = replies[0] {
            #expect(e.message == "60001 has \(Self.cap) unfinished jobs, the most a user may have; retry again once some have finished")
        }
    }

    @Test func enqueueAnswersTooManyJobsAtTheCapAndAdminsAreNotCapped() throws {
        let rig = try ControlRig()
        _ = try rig.rig.enqueue(Self.cap, owner: ControlRig.owner.name)
        _ = try rig.rig.enqueue(Self.cap)
        let (replies, closed) = try rig.run([
            .init(command: "enqueue", args: ["job": ["memo": "one more"]], caller: ControlRig.owner),
            .init(command: "enqueue", args: ["job": ["memo": "other user"]], caller: ControlRig.other),
            .init(command: "enqueue", args: ["job": ["memo": "admin"]], caller: ControlRig.admin),
        ])
        #expect(closed == 0)
        #expect(replies.map(\.code) == [.tooManyJobs, nil, nil])
        if case .failure(let e) = replies[0] {
            #expect(e.message == "60001 has \(Self.cap) unfinished jobs, the most a user may have; enqueue again once some have finished")
        }
    }
}

extension UnfinishedJobsCapTests {
    /// Each edit of a sidecar may be a job: at the cap a user's sidecar waits, unread, like
    /// their photos, and is applied once they have room.
    @Test func aUsersSidecarWaitsAtTheCapLikeTheirPhotos() throws {
        let t = try TestHome()
        let photo = t.home.inbox + "/a.jpg"
        try Data(contentsOf: testPhotos.appendingPathComponent("Canon_40D.jpg")).write(to: URL(fileURLWithPath: photo))
        #expect(chown(photo, 60_001, 60_001) == 0)
        #expect(t.scanner().rescan().outcomes.count == 1)
        _ = try Self.heldAtTheCap(t, lines: Self.cap)
        let sidecar = t.home.inbox + "/a.jpg.json"
        try Data(#"{"memo": "later"}"#.utf8).write(to: URL(fileURLWithPath: sidecar))
        #expect(chown(sidecar, 60_001, 60_001) == 0)
        var report = t.scanner().rescan()
        #expect(report.outcomes.isEmpty && report.atCap == ["60001"], "\(report.outcomes)")
        #expect(report.skipped["a.jpg.json"]?.reason == "memo sidecar of a.jpg (waiting: 60001 has \(Self.cap) unfinished jobs)")
        for job in try t.journal.jobs(limit: 1) { try t.journal.cancel(job: job.id) }
        report = t.scanner().rescan()
        #expect(report.outcomes.map(\.name) == ["a.jpg.json"])
    }
}
