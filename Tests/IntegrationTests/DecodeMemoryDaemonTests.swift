import CompressStage
import Foundation
import StageKit
import TestSupport
import Testing

/// Issue 25, decode memory on the real daemon: with `"memory_mb": 2`, a 3000x2000 photo
/// (about 10 MB to decode) fails with the reason, and a small photo still goes through.
@Suite(.serialized) struct DecodeMemoryDaemonTests {
    @Test func aPhotoLargerThanTheDecodeBudgetFailsWithTheReason() throws {
        let standard = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)
        var definition = try JSONValue.parse(standard).objectValue ?? [:]
        definition["memory_mb"] = 2
        let d = try DaemonHarness(stages: JSONValue.object(definition).jsonString)
        try d.start()
        let big = d.home + "/inbox/.big.jpg.part"
        try SyntheticPhoto.write(to: big, width: 3000, height: 2000, seed: 3, quality: 90)
        #expect(rename(big, d.home + "/inbox/big.jpg") == 0)
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 2, timeout: 60)
        let failed = try d.jobs("state = 'failed'")
        #expect(failed.count == 1 && failed.first?.photo == "big.jpg", "\(failed)")
        #expect(failed.first?.error?.contains("more than the whole decode memory budget (memory_mb: 2)") == true, "\(String(describing: failed.first?.error))")
        #expect(try d.jobs("state = 'done'").count == 1)
    }
}
