import Foundation
import StageKit
import TestSupport
import Testing

/// A reprocess job that fails leaves no copy of its record's original in `HOME/reprocess`:
/// kept for the failed job's retention (180 days) and counted by no limit, the copies of
/// failed jobs grew with each request after a change of their records. Retrying one then
/// says the photo is gone and to ask `reprocess` again, which runs the records again.
@Suite(.serialized) struct FailedReprocessCopyTests {
    @Test func aFailedReprocessJobsCopyGoesAndReprocessRunsTheRecordAgain() throws {
        let d = try ReprocessTests.twoRecords()
        func load(_ definition: String, _ name: String) throws {
            try definition.write(toFile: d.jobFile, atomically: true, encoding: .utf8)
            #expect(try DaemonHarness.run(["reload", "--home", d.home]).0 == 0)
            try d.waitUntil("the reload applies") { d.log.contains("reloaded job definition \(name)") }
        }
        let copies = { try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").count }
        // Compress refuses photos over 1,000 pixels: both jobs fail there, before upload.
        try load(ReprocessTests.definition(width: 61).replacingOccurrences(of: #"{"renditions""#, with: #"{"max_pixels": 1000, "renditions""#), "w61")
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        try d.waitUntil("the reprocess jobs fail") { try d.jobs("origin = 'reprocess' AND state = 'failed'").count == 2 }
        try d.waitUntil("their copies go") { try copies() == 0 }
        let failed = try #require(try d.jobs("origin = 'reprocess'").first?.id)
        let (status, _, err) = try DaemonHarness.run(["retry", String(failed), "--home", d.home])
        #expect(status == 1 && err.contains("photo is gone") && err.contains("photomemo reprocess"), "\(err)")

        try load(ReprocessTests.definition(width: 62), "w62")
        #expect(try json(d, ["reprocess", "TRUEPREDICATE"])["enqueued"]?.intValue == 2)
        try d.waitUntil("the records run again") { try d.jobs("origin = 'reprocess' AND state = 'done'").count == 2 }
        #expect(try ReprocessTests.records(d).values.allSatisfy { $0["assets"]?["display"]?["width"]?.intValue == 62 })
        #expect(try copies() == 0)
        #expect(d.stop().status == 0)
    }
}
