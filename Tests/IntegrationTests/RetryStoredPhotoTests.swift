import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Killed after upload stored the original and released the inbox file, but before its
/// outcome was written, a job spends an attempt on the interrupted run and may fail with
/// its photo gone (an attacker's finding: 3 photos in 200 kills). The original is in the
/// store: `retry` resumes the job at upload, which finds it there, and the record comes.
@Suite(.serialized) struct RetryStoredPhotoTests {
    @Test(.enabled(if: !DaemonHarness.sharedEngines)) func aJobFailedAfterItsPhotoWasStoredIsRetriedToItsRecord() throws {
        let base = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8)
        let d = try DaemonHarness(stages: base.replacingOccurrences(of: #""max_attempts": 6"#, with: #""max_attempts": 1"#))
        // The third stage run is upload's (validate, compress, upload): killed before its outcome.
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "stage.before_journal=3"])
        try d.drop("Nikon_D70.jpg", as: "a.jpg")
        #expect(try d.waitForExit().status == SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: d.home + "/inbox/a.jpg"), "upload released the photo")
        try d.start()
        try d.waitUntil("the interrupted job fails (one attempt)") { try d.jobs().first?.state == "failed" }
        let id = try #require(try d.jobs().first?.id)
        _ = try json(d, ["retry", String(id)])
        try d.waitIdle(jobs: 1)
        #expect(try d.jobs().map(\.state) == ["done"])
        let records = try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue ?? []
        let sha = try SHA256.hexOfFile(atPath: testPhotos.appendingPathComponent("Nikon_D70.jpg").path).hex
        #expect(records.count == 1 && records.first?["sha256"]?.stringValue == sha, "\(records)")
        #expect(d.stop().status == 0)
    }
}
