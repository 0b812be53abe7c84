import Foundation
import StageKit
import TestSupport
import Testing

/// Sinks that hang (issue 24, item 8): each subscription is its own lane, so eight exec
/// sinks stuck until `--sink-timeout` delay no webhook, and a sink that keeps timing out
/// backs off instead of taking a slot again at every timeout.
@Suite(.serialized) struct HungSinkTests {
    /// Runs `sh FILE` once per attempt: the file logs the start, then hangs.
    func hangingSink(_ d: DaemonHarness, _ name: String) throws -> (script: String, starts: String) {
        let script = d.root + "/\(name).sh", starts = d.root + "/\(name).starts"
        try "echo start >> '\(starts)'\nexec sleep 1000\n".write(toFile: script, atomically: true, encoding: .utf8)
        return (script, starts)
    }

    func startCount(_ file: String) -> Int {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    struct Counts { var pending = 0, failed = 0, delivered = 0 }

    func counts(_ d: DaemonHarness) throws -> [String: Counts] {
        var counts: [String: Counts] = [:]
        for s in try json(d, ["subscriptions"])["subscriptions"]?.arrayValue ?? [] {
            let id = s["id"]?.stringValue ?? ""
            let pending = s["pending"]?.intValue ?? 0, failed = s["failed"]?.intValue ?? 0, delivered = s["delivered"]?.intValue ?? 0
            counts[id] = Counts(pending: Int(pending), failed: Int(failed), delivered: Int(delivered))
        }
        return counts
    }

    @Test func eightHungExecSinksDoNotDelayAWebhook() throws {
        let d = try DaemonHarness(stages: NotifyTests.definition)
        try d.start(args: ["--sink-timeout", "3"])
        let receiver = try Receiver(dir: d.root, secret: "k", failFirst: 0)
        var execs: [String] = []
        for i in 0..<8 {
            let sink = try hangingSink(d, "hang\(i)")
            execs.append(try #require(json(d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--exec", "sh '\(sink.script)'"])["id"]?.stringValue))
        }
        let hook = try #require(json(d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--webhook", receiver.url, "--secret", "k"])["id"]?.stringValue)
        let sent = Date()
        try d.append((1...5).map { #"{"memo":"m\#($0)"}"# }.joined(separator: "\n") + "\n")
        try d.waitUntil("the webhook hears of all 5 records", timeout: 60) { Set(receiver.requests.compactMap { $0["body"]?["seq"]?.intValue }).count == 5 }
        let took = Date().timeIntervalSince(sent)
        // Before: the webhook waited behind the hung sinks' turns, 4 × 3 s and more.
        #expect(took < 6, "the webhook's 5 deliveries took \(took) s behind 8 hung exec sinks")
        #expect(receiver.requests.map { $0["body"]?["record"]?["memo"]?.stringValue ?? "" } == (1...5).map { "m\($0)" }, "in change order")
        // Nothing of the hung sinks' is lost: every delivery is still pending (or parked), none dropped.
        let counts = try counts(d)
        #expect(counts[hook]?.delivered == 5)
        for id in execs {
            let c = counts[id] ?? Counts()
            #expect(c.pending + c.failed == 5, "\(id): \(c)")
        }
        #expect(d.stop().status == 0)
    }

    /// One exec sink that hangs every time, `--sink-timeout 1`, five records waiting: it
    /// used to start again about every second (the delivery's own 50–300 ms retry delay);
    /// now each timeout in a row doubles its rest (jittered, up to 1 s, 2 s, 4 s, ...).
    @Test func aSinkThatKeepsTimingOutBacksOff() throws {
        let d = try DaemonHarness(stages: NotifyTests.definition)
        try d.start(args: ["--sink-timeout", "1"])
        let sink = try hangingSink(d, "hang")
        let id = try #require(json(d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--exec", "sh '\(sink.script)'"])["id"]?.stringValue)
        try d.append((1...5).map { #"{"memo":"m\#($0)"}"# }.joined(separator: "\n") + "\n")
        try d.waitUntil("the sink starts") { startCount(sink.starts) > 0 }
        Thread.sleep(forTimeInterval: 12)
        let starts = startCount(sink.starts)
        #expect(starts <= 7, "started \(starts) times in 12 s with a 1 s timeout")
        #expect(d.log.contains("its subscription backs off"))
        let counts = try counts(d)
        let c = counts[id] ?? Counts()
        #expect(c.pending + c.failed == 5, "\(c)")
        #expect(d.stop().status == 0)
    }

    /// The back-off is a hold on the subscription's pending deliveries in the index, not a
    /// loss: stopped while its sink hangs, restarted once the sink works, every event arrives.
    @Test func aHeldSubscriptionDeliversEverythingAfterARestart() throws {
        let d = try DaemonHarness(stages: NotifyTests.definition)
        try d.start(args: ["--sink-timeout", "1"])
        let sink = try hangingSink(d, "hang")
        let out = d.root + "/events.jsonl"
        _ = try json(d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--exec", "sh '\(sink.script)'"])
        try d.append((1...3).map { #"{"memo":"m\#($0)"}"# }.joined(separator: "\n") + "\n")
        try d.waitUntil("the sink times out") { d.log.contains("its subscription backs off") }
        #expect(d.stop().status == 0)
        try "cat >> '\(out)'\n".write(toFile: sink.script, atomically: true, encoding: .utf8)
        try d.start(args: ["--sink-timeout", "1"])
        try d.waitUntil("all 3 events arrive after the hold", timeout: 30) {
            Set(((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                (try? JSONValue.parse(String($0)))?["record"]?["memo"]?.stringValue
            }) == ["m1", "m2", "m3"]
        }
        #expect(d.stop().status == 0)
    }
}
