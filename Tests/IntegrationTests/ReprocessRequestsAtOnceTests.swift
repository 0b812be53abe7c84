import Foundation
import StageKit
import TestSupport
import Testing

/// `reprocess` requests run at once on the daemon's pool: each page's copies take their
/// turn in one room that reads the free space afresh, so together they leave the home's
/// filesystem its tenth free. Each request had read the free space once and copied up to
/// it: three at once copied three times what there was room for. The home is a small
/// tmpfs (needs root).
@Suite(.serialized, .enabled(if: getuid() == 0))
struct ReprocessRequestsAtOnceTests {
    @Test func requestsAtOnceTogetherCopyNoMoreThanTheDiskHasRoomFor() throws {
        let d = try DaemonHarness(stages: ReprocessTests.definition(width: 60))
        let unmount = try FullDiskTests().smallDisk(d, megabytes: 32)
        defer { unmount() }
        try d.start()
        let photos = (1...8).map { "orientation_landscape_\($0).jpg" } + (1...4).map { "orientation_portrait_\($0).jpg" }
        for p in photos { try d.drop(p) }  // 130-141 KB each
        try d.waitIdle(jobs: 12)
        _ = try json(d, ["pause", "compress"])  // the copies stay: a job done removes its own
        let records = try ReprocessTests.records(d)
        let ids = records.keys.sorted()
        let sizes = records.values.compactMap { $0["assets"]?["original"]?["bytes"]?.intValue }
        let biggest = Int(sizes.max() ?? 0) / 4096 * 4096 + 4096
        try #require(sizes.count == 12)
        fillReprocessRoom(d.home, leaving: biggest * 11 / 2)  // five copies and a half

        // Three requests of four records each, in one write: the daemon runs them at once.
        let client = try SocketClient(path: d.home + "/photomemo.sock")
        client.send((0..<3).map { i -> String in
            let four = ids[4 * i..<4 * i + 4].map { "\"\($0)\"" }.joined(separator: ", ")
            return JSONValue.object(["id": .int(Int64(i)), "cmd": "reprocess", "predicate": .string("id IN {\(four)}")]).jsonString + "\n"
        }.joined())
        let answers = (0..<3).map { _ in client.readLine(timeout: 60) }
        let enqueued = answers.map { $0?["result"]?["enqueued"]?.intValue ?? -1 }
        #expect(enqueued.allSatisfy { $0 >= 0 }, "\(answers)")
        #expect(enqueued.reduce(0, +) <= 5, "\(answers)")
        #expect(answers.contains { $0?["result"]?["stopped"]?.stringValue?.contains("less than 10% free") == true }, "\(answers)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").count == enqueued.reduce(0, +))
    }
}
