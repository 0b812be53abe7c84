import Foundation
import Testing
@testable import Journal
import StageKit

/// A photo is its file's owner's: another user's job of the same inbox name has no say in
/// it (`Journal.addPhoto`), though the ledger (`inbox_taken`) knows a name, not an owner.
@Suite struct InboxNameOwnersTests {
    /// Bob's FIFO named y.jpg is rejected (job J) and `retry J` has it wait for its photo.
    /// Alice's y.jpg then waited behind J (`after_job`) up to the join timeout; it runs at
    /// once now, and bob's own y.jpg still joins J. Alice's file with the bytes of bob's
    /// unfinished job was taken for his photo (no job of hers at all); now it is a job of hers.
    @Test(arguments: Engine.allCases) func anotherUsersJobOfTheNameNeverHoldsUpAPhoto(_ engine: Engine) throws {
        let f = try JournalFixture(engine)
        func photo(_ identity: String, _ sha: String, _ owner: String) -> TakenPhoto {
            TakenPhoto(name: "y.jpg", path: f.dir + "/inbox/y.jpg", identity: identity, sha256: sha, owner: owner)
        }
        let bobs = try f.journal.recordRejectedEntry(name: "y.jpg", identity: "fifo", owner: "bob", reason: "a FIFO is not a photo",
                                                     quarantinePath: f.dir + "/quarantine/y.jpg")
        try f.journal.retry(job: bobs, joinTimeoutSeconds: 600) { _, _, _ in }
        #expect(try f.summary(bobs).state == .waiting)
        guard case .created(let alices, .queued) = try f.journal.commitPhotos([photo("a1", "s1", "alice")])[0] else {
            Issue.record("alice's photo is not a job of its own"); return
        }
        #expect(try f.journal.claim(stageIndex: 0, stageName: "s", limit: 10).map(\.context.id) == [alices], "it waits for no job of bob's")
        #expect(try !f.journal.history(alices).contains { $0.event == "updates" })
        #expect(try f.journal.commitPhotos([photo("b1", "s2", "bob")]) == [.joined(job: bobs)])
        guard case .created(let again, .queued) = try f.journal.commitPhotos([photo("a2", "s2", "alice")])[0] else {
            Issue.record("alice's file with the bytes of bob's job is not a job of hers"); return
        }
        #expect(try f.summary(again).memo.owner == "alice" && !f.journal.history(again).contains { $0.event == "updates" })
    }
}
