import Foundation
import StageKit
import TestSupport
import Testing

/// A gone host's reprocess jobs are taken over only as this host's disk has room for their
/// copies (the tenth a reprocess keeps free): taken over unbounded, a big host's jobs
/// filled a small one's disk. Those with no room wait, the gone host's still, and are
/// taken once there is room. The taking host's home is a small tmpfs (needs root).
@Suite(.serialized, .enabled(if: getuid() == 0))
struct ReprocessAdoptionRoomTests {
    @Test func aGoneHostsReprocessJobsWaitForRoomHereAndAreThenTaken() throws {
        let c = try ClusterTests.Cluster(["a"])
        defer { c.stop() }
        let a = c.hosts[0]
        let b = try DaemonHarness(stages: ClusterTests.definition)
        b.database = c.url
        let unmount = try FullDiskTests().smallDisk(b, megabytes: 32)
        defer {
            b.stop()
            unmount()
        }
        try c.start(b, "b")
        for n in ["orientation_landscape_1.jpg", "orientation_portrait_6.jpg"] { try a.drop(n) }
        try a.waitIdle(jobs: 2, timeout: 60)
        _ = try json(a, ["pause", "compress"])
        #expect(try json(a, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        a.stop(SIGKILL)
        fillReprocessRoom(b.home)  // b's, just under the tenth a reprocess keeps free
        _ = try json(b, ["resume", "compress"])

        let mine = { try b.jobs("origin = 'reprocess' AND host = 'b'").count }
        try b.waitUntil("a is gone and b looks at its jobs", timeout: 60) {
            try b.log.contains("the others are taken once there is room") || mine() > 0
        }
        #expect(try mine() == 0, "b took jobs with no room for their copies")
        #expect(b.log.contains("less than 10% free"), "\(b.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: b.home + "/reprocess").isEmpty)
        #expect(try b.jobs("origin = 'reprocess' AND state = 'queued'").count == 2, "they wait, not lost")

        #expect(unlink(b.home + "/filler") == 0)
        try b.waitUntil("b runs a's reprocess jobs", timeout: 60) { try b.jobs("origin = 'reprocess' AND state = 'done'").count == 2 }
        #expect(b.log.contains("works again"), "\(b.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: b.home + "/reprocess").isEmpty, "upload removed b's copies")
    }
}
