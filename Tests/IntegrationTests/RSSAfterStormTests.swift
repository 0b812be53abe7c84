import CompressStage
import Foundation
import Index
import TestSupport
import Testing

/// Issue 25: memory a request pins is given back. Bob's query storm (255 ORed
/// `BEGINSWITH ""` over 3,000 records on three connections) and decode storm (three
/// progressive 12 MP JPEGs) raise the daemon's RSS; a few seconds after they end it is
/// back near where it was before them (it stayed at the peak, 67 → 142 MB, while glibc's
/// dynamic thresholds kept freed decode buffers in the heap: `giveBackFreedMemory`).
extension WhoMayDoWhatTests {
    @Test func rssReturnsToItsBaselineAfterAQueryAndDecodeStorm() throws {
        let d = try start(definition: ["memory_mb": 400])
        try restartWithBobsNotes(d)
        let pid = try #require(d.process?.processIdentifier)
        // Warm: one query and one photo of each kind the storm brings, so what is measured
        // after is what the storm kept, not what any first use allocates.
        let staging = d.root + "/storm"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        for i in 0..<4 {
            try SyntheticPhoto.write(to: staging + "/progressive\(i).jpg", width: 4000, height: 3000, seed: 60 + i, quality: 60, progressive: true)
        }
        chmod(d.root, 0o755)
        chmod(staging, 0o755)
        func dropStorm(_ names: [String]) throws {
            #expect(try DaemonHarness.run(as: bob, ["/bin/sh", "-c", names.map {
                "cp \(staging)/\($0) \(d.home)/inbox/.\($0).part && mv \(d.home)/inbox/.\($0).part \(d.home)/inbox/\($0)"
            }.joined(separator: " && ")]).0 == 0)
        }
        let costliest = (0..<255).map { _ in #"t BEGINSWITH """# }.joined(separator: " OR ")
        _ = try loopQueries(bob, d, costliest, connections: 1, seconds: 0.5)()
        try dropStorm(["progressive0.jpg"])
        try d.waitIdle(jobs: 1, timeout: 120)
        Thread.sleep(forTimeInterval: 2)
        let baseline = BoundedResourceTests.rssMB(pid)

        let peak = try sampleRSS(d)
        let storm = try loopQueries(bob, d, costliest, connections: 3, seconds: 6)
        try dropStorm(["progressive1.jpg", "progressive2.jpg", "progressive3.jpg"])
        _ = storm()
        try d.waitIdle(jobs: 4, timeout: 120)
        let highest = peak()
        Thread.sleep(forTimeInterval: 3)
        let after = BoundedResourceTests.rssMB(pid)
        #expect(highest - baseline > 50, "the storm did not raise RSS (\(baseline) → \(highest) MB): it measures nothing")
        #expect(after - baseline < 40, "RSS \(baseline) MB before the storm, \(highest) MB at its peak, \(after) MB 3 s after it")
    }
}
