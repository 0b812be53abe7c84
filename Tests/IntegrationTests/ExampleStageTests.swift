import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// The example stage of docs/writing-a-stage.md (`comment`, Plugins/Comment) between
/// compress and upload in the real daemon: it rewrites the display rendition, and the
/// working set carries its new bytes' hash to the store and the record, not compress's.
@Suite(.serialized) struct ExampleStageTests {
    @Test func aStageBetweenCompressAndUploadHasItsOutputStoredAndRecorded() throws {
        let definition = try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8)
            .replacingOccurrences(of: #"{"use": "upload",   "with": {}},"#,
                                  with: #"{"use": "comment", "with": {"text": "seen by photomemo"}}, {"use": "upload", "with": {}},"#)
        #expect(definition.contains(#""use": "comment""#))
        let d = try DaemonHarness(stages: definition)
        try d.start()
        try d.drop("Canon_40D.jpg")
        try d.waitIdle(jobs: 1)
        let all = try d.jobs()
        let job = try #require(all.first { $0.state == "done" }, "\(all)")
        let results = try JSONValue.parse(job.results)
        let compressed = try #require(results["compress"]?["renditions"]?["display"]?["sha256"]?.stringValue)
        let commented = try #require(results["comment"]?["sha256"]?.stringValue)
        #expect(commented != compressed)
        #expect(results["upload"]?["assets"]?["display"]?["sha256"]?.stringValue == commented)

        // The record names the new bytes, and the store gives them back.
        let record = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.first)
        #expect(record["assets"]?["display"]?["sha256"]?.stringValue == commented)
        let out = d.root + "/display.jpg"
        _ = try json(d, ["asset", try #require(record["id"]?.stringValue), "display", "-o", out])
        let stored = try Data(contentsOf: URL(fileURLWithPath: out))
        #expect(SHA256.hex(stored) == commented)
        #expect(stored.starts(with: [0xFF, 0xD8, 0xFF, 0xFE]) && String(decoding: stored.prefix(200), as: UTF8.self).contains("seen by photomemo"))
        // The rendition compress wrote and the one the stage wrote are both released.
        #expect(try FileManager.default.subpathsOfDirectory(atPath: d.home + "/renditions").filter { $0.hasSuffix(".jpg") }.isEmpty)
        #expect(d.stop().status == 0)
    }
}
