import Foundation
import TestSupport
import Testing

/// Running for months on a real daemon: deliveries delivered longer ago than
/// `retention.done` go with the finished jobs (the table kept one row per change and
/// subscription forever), and what was sent is not sent again.
@Suite struct DeliveryRetentionDaemonTests {
    @Test func deliveredDeliveriesArePrunedWithFinishedJobs() throws {
        let d = try DaemonHarness(stages: """
            {"name": "t", "retention": {"done": "2s"}, "stages": [{"use": "index", "with": {}}, {"use": "notify", "with": {}}]}
            """)
        try d.start()
        let sent = d.effects + "/sent.log"
        _ = try json(d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--exec", "echo x >> \(sent)"])
        try d.append((0..<5).map { #"{"memo":"m\#($0)"}"# + "\n" }.joined())
        try d.waitUntil("five deliveries sent", timeout: 30) { d.lines("sent.log").count == 5 }
        func deliveries() throws -> Int { Int(try d.journalDB().queryOne("SELECT count(*) FROM deliveries")!.int(0)!) }
        // The pruner runs each second and the five were delivered over ~0.1 s, so they may
        // go in more than one run; its log lines, written after each run, add up to five.
        func prunedInLog() -> Int {
            d.log.split(separator: "\n").compactMap { line -> Int? in
                guard let r = line.range(of: " finished jobs, ") else { return nil }
                return Int(line[r.upperBound...].prefix { $0.isNumber })
            }.reduce(0, +)
        }
        try d.waitUntil("the delivered rows pruned and logged", timeout: 30) { try deliveries() == 0 && prunedInLog() == 5 }
        Thread.sleep(forTimeInterval: 1.5)
        #expect(d.lines("sent.log").count == 5, "a pruned delivery was sent again")
    }
}
