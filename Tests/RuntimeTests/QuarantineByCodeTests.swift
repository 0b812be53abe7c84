import Foundation
import Journal
import StageKit
@testable import Runtime
import Testing

/// A failed photo's quarantine reads the failure's code from the journal, never its text.
@Suite struct QuarantineByCodeTests {
    /// Two inbox photos fail at validate and are still in the inbox with the bytes taken:
    /// the one whose stage said `photo_gone` (in its own words, then out of attempts) is
    /// back, so it stays and is taken again; the one whose reason merely reads like a gone
    /// photo failed as a bad image and goes to quarantine.
    @Test func aPhotoGoneCodeDecidesAndTheWordsDoNot() throws {
        let t = try TestHome()
        for name in ["back.jpg", "bad.jpg"] { try Data(name.utf8).write(to: URL(fileURLWithPath: t.home.inbox + "/" + name)) }
        #expect(t.scanner(settle: 0).rescan().outcomes.count == 2)
        let claimed = try t.journal.claim(stageIndex: 0, stageName: "validate", limit: 2)
        let back = try #require(claimed.first { $0.context.photoPath?.hasSuffix("/back.jpg") == true })
        let bad = try #require(claimed.first { $0.context.photoPath?.hasSuffix("/bad.jpg") == true })
        let steps = JobStateMachine.steps([
            (back, .retry(.photoGone, "the camera's card was unmounted under it")),
            (bad, .fail(.badImage, "photo file is gone: says the photo's own comment")),
        ], stageCount: 3, retry: .exponentialJitter(maxAttempts: 1, baseMs: 1, maxMs: 1))
        _ = try t.journal.recordSteps(steps, stageName: "validate", durationMs: 1)

        let pending = try t.journal.pendingQuarantines()
        #expect(Set(pending.map(\.code)) == [.photoGone, .badImage], "the journal keeps each failure's code")
        for p in pending {
            let taken = p.job == back.context.id ? back.context.photoSHA256 : bad.context.photoSHA256
            try Scheduler.quarantinePhoto(p, taken: taken, journal: t.journal, quarantine: t.quarantine, copies: t.home.reprocess)
        }
        #expect(FileManager.default.fileExists(atPath: t.home.inbox + "/back.jpg"), "a photo back after photo_gone was moved")
        #expect(try t.journal.job(back.context.id)?.quarantine?.contains("was back after its stage found it gone") == true)
        #expect(try t.quarantined() == ["bad.jpg"], "a bad image was not quarantined")
    }

    /// The file at a failed photo's name grown sparse to a terabyte after its job took it:
    /// it was hashed to its end (holding every job's outcome, and SIGTERM). Bigger than the
    /// photo taken, it is another file without a read, and stays where it is.
    @Test func aFileGrownPastThePhotoTakenIsNotHashed() throws {
        let t = try TestHome()
        let path = t.home.inbox + "/grown.jpg"
        try Data("grown.jpg".utf8).write(to: URL(fileURLWithPath: path))
        #expect(t.scanner(settle: 0).rescan().outcomes.count == 1)
        let job = try #require(try t.journal.claim(stageIndex: 0, stageName: "validate", limit: 1).first)
        let steps = JobStateMachine.steps([(job, .fail(.badImage, "bad"))], stageCount: 3, retry: .exponentialJitter(maxAttempts: 1, baseMs: 1, maxMs: 1))
        _ = try t.journal.recordSteps(steps, stageName: "validate", durationMs: 1)
        #expect(truncate(path, 1 << 40) == 0)
        let started = Date()
        for p in try t.journal.pendingQuarantines() {
            try Scheduler.quarantinePhoto(p, taken: job.context.photoSHA256, takenSize: Int64("grown.jpg".utf8.count),
                                          journal: t.journal, quarantine: t.quarantine, copies: t.home.reprocess)
        }
        #expect(Date().timeIntervalSince(started) < 2, "the grown file was read")
        #expect(try t.journal.job(job.context.id)?.quarantine?.contains("was replaced after this job took it") == true)
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
