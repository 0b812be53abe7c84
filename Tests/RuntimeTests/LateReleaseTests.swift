import Foundation
import Glibc
import Journal
import StageKit
import TestSupport
import Testing
@testable import Runtime

/// A photo whose job stored it but whose release found nothing — its folder renamed A→B
/// and back around upload's removal — was left in a `delete` inbox for good: its ledger
/// identity matched, so no look took it or removed it (issue 26). The next look releases it.
@Suite struct LateReleaseTests {
    /// Finishes `job` as the scheduler records a one-stage definition's success.
    func finish(_ t: TestHome, _ job: Int64) throws {
        let claimed = try t.journal.claim(stageIndex: 0, stageName: "upload", limit: 1)
        #expect(claimed.map(\.context.id) == [job])
        _ = try t.journal.recordSteps(JobStateMachine.steps(claimed.map { ($0, .continue()) }, stageCount: 1, retry: .default),
                                      stageName: "upload", durationMs: 1)
    }

    @Test func aStoredOriginalFoundStillInADeleteInboxIsReleasedByTheNextLook() throws {
        let t = try TestHome()
        let a = t.home.inbox + "/A"
        try FileManager.default.createDirectory(atPath: a, withIntermediateDirectories: true)
        try Data("photo bytes".utf8).write(to: URL(fileURLWithPath: a + "/IMG.jpg"))
        let scanner = t.scanner()
        _ = scanner.rescan()
        let job = try #require(try t.jobs().first?.id)
        _ = scanner.rescan()
        #expect(FileManager.default.fileExists(atPath: a + "/IMG.jpg"), "released before its job stored it")
        // Upload stored it while A was B, and released nothing; A is back.
        #expect(rename(a, t.home.inbox + "/B") == 0 && rename(t.home.inbox + "/B", a) == 0)
        try finish(t, job)
        let report = scanner.rescan()
        #expect(!FileManager.default.fileExists(atPath: a + "/IMG.jpg"), "a stored original left in the inbox")
        #expect(report.releasedLate == ["A/IMG.jpg"] && FileManager.default.fileExists(atPath: a))
        #expect(try t.jobs().count == 1)
    }
}
