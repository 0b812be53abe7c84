import Foundation
import Testing
@testable import Journal
import PhotomemoCore
import StageKit
import SQLite
import TestSupport

/// Retention (`Journal.pruneBatch`): finished jobs older than their state's retention go
/// with their history, in batches; unfinished ones never; and every key a dedup decision
/// reads survives, so the same line or photo presented again is not taken twice.
@Suite struct RetentionTests {
    /// done and cancelled after a minute, failed after a day.
    static var retention: Retention {
        var r = Retention()
        (r.done, r.failed, r.cancelled) = (60, 86_400, 60)
        return r
    }

    let old = 1_000_000.0
    var now: Double { old + 3600 }

    func end(_ f: JournalFixture, _ id: Int64, _ state: String, at: Double) throws {
        try f.journal.write { db in
            try db.run("UPDATE jobs SET state = ?, finished = ?, ready_at = NULL, updated = ? WHERE id = ?",
                       [.text(state), .double(at), .double(at), .int(id)])
        }
    }

    func rows(_ f: JournalFixture, _ sql: String) throws -> Int {
        try f.journal.read { db in Int(try db.queryOne(sql)!.int(0)!) }
    }

    @Test(arguments: Engine.allCases) func prunesExactlyTheOldFinishedJobsAndKeepsTheirKeys(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let j = f.journal
        let made = try j.commitMemos([f.memo("queue:queue.jsonl:g0:0"), f.memo("alice/k1"), f.memo("queue:queue.jsonl:g0:9"),
                                      f.memo("queue:queue.jsonl:g0:20"), f.memo("queue:queue.jsonl:g0:30"), f.memo("queue:queue.jsonl:g0:40")],
                                     position: nil, joinTimeoutSeconds: 60, now: old).map { $0.job! }
        let (positional, keyed, young, queued, cancelled, failed) = (made[0], made[1], made[2], made[3], made[4], made[5])
        try end(f, positional, "done", at: old)
        try end(f, keyed, "done", at: old)
        try end(f, young, "done", at: now - 10)
        try end(f, cancelled, "cancelled", at: old)
        try end(f, failed, "failed", at: old)  // a day's retention: kept
        let photo = try #require(try j.commitPhotos([f.photo("a.jpg", sha: "s1")], now: old)[0].job)
        try end(f, photo, "done", at: old)
        let copy = try j.commitPhotos([f.photo("b.jpg", sha: "s1")], now: old)[0]
        #expect(copy.isDuplicate)
        try j.forgetTaken(name: "b.jpg")  // its file left the inbox: nothing refers to the copy
        let running = try #require(try j.commitPhotos([f.photo("c.jpg", sha: "s2")], now: old)[0].job)
        try j.write { db in try db.run("UPDATE jobs SET state = 'running', ready_at = NULL WHERE id = ?", [.int(running)]) }
        let waiting = try #require(try j.commitMemos([f.memo("bob/w", photo: .inbox(name: "never.jpg"))], position: nil,
                                                     joinTimeoutSeconds: 1_000_000, now: old)[0].job)

        let batch = try j.pruneBatch(retention: Self.retention, limit: 500, now: now)
        #expect(batch.pruned == 5)  // positional, keyed, cancelled, photo, copy
        for gone in [positional, keyed, cancelled, photo, copy.job!] {
            #expect(try j.job(gone) == nil)
            #expect(try j.history(gone).isEmpty)
        }
        for kept in [young, queued, failed, running, waiting] { #expect(try j.job(kept) != nil) }
        #expect(try j.history(queued).count >= 1)
        // Only a row nothing needs is deleted; the keyed ones stay as tombstones.
        #expect(try rows(f, "SELECT count(*) FROM jobs WHERE id = \(positional)") == 0)
        #expect(try rows(f, "SELECT count(*) FROM jobs WHERE id IN (\(keyed), \(photo)) AND pruned IS NOT NULL") == 2)
        #expect(try rows(f, "SELECT count(*) FROM job_events WHERE job_id IN (\(keyed), \(photo), \(cancelled))") == 0)

        // The same client key and the same bytes again are duplicates, not new jobs.
        let again = try j.commitMemos([f.memo("alice/k1")], position: nil, joinTimeoutSeconds: 60, now: now)[0]
        #expect(again.isDuplicate)
        let photoAgain = try j.commitPhotos([f.photo("d.jpg", sha: "s1")], now: now)[0]
        #expect(photoAgain.isDuplicate)
        #expect(try j.counts()[.queued] == 1)

        #expect(try j.prunedCounts() == [.done: 4, .cancelled: 1])
        #expect(try j.counts()[.done] == 3)  // young, and the two duplicates just made
        #expect(try j.pruneBatch(retention: Self.retention, limit: 500, now: now).pruned == 0)
    }

    @Test(arguments: Engine.allCases) func prunesInBatchesOfTheLimit(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        let memos = (0..<1200).map { f.memo("queue:queue.jsonl:g0:\($0 * 10)") }
        let ids = try f.journal.commitMemos(memos, position: nil, joinTimeoutSeconds: 60, now: old).map { $0.job! }
        try f.journal.write { db in
            try db.run("UPDATE jobs SET state = 'done', finished = ?, ready_at = NULL WHERE id <= ?", [.double(old), .int(ids.last!)])
        }
        var sizes: [Int] = []
        while true {
            let n = try f.journal.pruneBatch(retention: Self.retention, limit: 500, now: now).pruned
            if n == 0 { break }
            sizes.append(n)
        }
        #expect(sizes == [500, 500, 200])
        #expect(try rows(f, "SELECT count(*) FROM job_events") == 0)
        // Positional keys need no row: all gone but the newest, whose id SQLite would give again.
        #expect(try rows(f, "SELECT count(*) FROM jobs") == (engine == .sqlite ? 1 : 0))
    }
}
