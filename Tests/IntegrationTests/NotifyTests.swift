import Foundation
import StageKit
import TestSupport
import Testing

/// A real HTTP receiver on loopback (Python's http.server, started by the test).
final class Receiver {
    let process = Process()
    let log: String
    let port: Int

    init(dir: String, secret: String, failFirst: Int) throws {
        let portFile = dir + "/receiver.port"
        log = dir + "/receiver.log"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", packageRoot.appendingPathComponent("Tests/IntegrationTests/Fixtures/receiver.py").path,
                             portFile, log, secret, String(failFirst)]
        try process.run()
        var port = 0
        for _ in 0..<100 where port == 0 {
            Thread.sleep(forTimeInterval: 0.05)
            port = Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "") ?? 0
        }
        self.port = port
    }

    // SIGKILL: a child started from a test thread inherits a mask that blocks SIGTERM (PLATFORM.md).
    deinit { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }

    var url: String { "http://127.0.0.1:\(port)/hook" }

    var requests: [JSONValue] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
    }
}

@Suite(.serialized) struct NotifyTests {
    static let definition = """
        {"name": "notify-test", "stages": [{"use": "index", "with": {}}, {"use": "notify", "with": {}}],
         "retry": {"max_attempts": 6, "base_ms": 50, "max_ms": 300}}
        """

    @Test func webhookGetsMatchingChangesSignedAndRetriedAndExecGetsDeletes() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let receiver = try Receiver(dir: d.root, secret: "s3cret", failFirst: 3)
        _ = try json(d, ["subscribe", "--type", "Houses", "--predicate", #"address == "Tokyo""#, "--fires-on", "create,update",
                         "--alert", "A new house was added: {memo}", "--webhook", receiver.url, "--secret", "s3cret"])
        let deletes = d.root + "/deletes.jsonl"
        _ = try json(d, ["subscribe", "--type", "Houses", "--fires-on", "delete", "--exec", "cat >> \(deletes)"])
        try d.append([#"{"type":"Houses","memo":"red roof","fields":{"address":"Tokyo"}}"#,
                      #"{"type":"Houses","memo":"blue door","fields":{"address":"Osaka"}}"#,
                      #"{"type":"Memo","memo":"not a house","fields":{"address":"Tokyo"}}"#].joined(separator: "\n") + "\n")
        try d.waitIdle(jobs: 3)
        // 500 three times, then 200: the same event every time, signed.
        try d.waitUntil("the webhook gets the event") { receiver.requests.contains { $0["status"] == 200 } }
        let first = receiver.requests
        #expect(first.count == 4)
        #expect(Set(first.compactMap { $0["event_id"]?.stringValue }).count == 1)
        #expect(first.allSatisfy { $0["signature_ok"] == true })
        let event = try #require(first.last?["body"])
        #expect(event["op"] == "create" && event["record"]?["memo"] == "red roof")
        #expect(event["alert"] == "A new house was added: red roof")

        let tokyo = try #require(event["record"]?["id"]?.stringValue)
        _ = try json(d, ["update", tokyo, "--memo", "red roof, new garden"])
        try d.waitUntil("the update arrives") { receiver.requests.contains { $0["body"]?["op"] == "update" } }
        _ = try json(d, ["delete", tokyo])
        try d.waitUntil("the exec sink gets the delete") { ((try? String(contentsOfFile: deletes, encoding: .utf8)) ?? "").contains("\"delete\"") }
        // Osaka and the Memo never reached the webhook.
        #expect(receiver.requests.allSatisfy { $0["body"]?["record"]?["fields"]?["address"] == "Tokyo" })
        let subs = try json(d, ["subscriptions"])["subscriptions"]?.arrayValue ?? []
        #expect(subs.map { $0["delivered"]?.intValue ?? 0 }.reduce(0, +) == 3)
        #expect(d.stop().status == 0)
    }

    /// A 4xx (but 408, 429) refuses the delivery for good: one attempt, failed with the
    /// status and the start of the answer. A 5xx is an outage (DESIGN.md): tried with capped
    /// back-off for as long as it lasts — past `max_attempts`, never parked — and `status`
    /// shows the webhook host down meanwhile, up once it answers; the next event waits its
    /// turn. (It used to be parked as failed after 6 tries, and delivered only after
    /// `subscriptions --retry-failed`, after newer ones.)
    @Test func aWebhookAnswering410GetsOneAttemptAndA5xxOutageIsWaitedOut() throws {
        let gone = try HTTPListener(status: 410, body: "no such hook")
        defer { gone.close() }
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let down = try Receiver(dir: d.root, secret: "k", failFirst: 10)  // 500 ten times: past the 6 attempts
        _ = try json(d, ["subscribe", "--type", "Memo", "--webhook", gone.url, "--secret", "k"])
        _ = try json(d, ["subscribe", "--type", "Memo", "--webhook", down.url, "--secret", "k"])
        try d.append(#"{"memo":"hello"}"# + "\n" + #"{"memo":"again"}"# + "\n")
        func subscription(_ url: String) throws -> JSONValue? {
            try json(d, ["subscriptions"])["subscriptions"]?.arrayValue?.first { $0["target"]?.stringValue == url }
        }
        let host = "webhook http://127.0.0.1:\(down.port)"
        try d.waitUntil("status shows the receiver down") { try json(d, ["status"])["dependencies"]?[host] == "down" }
        try d.waitUntil("both events arrive once it answers", timeout: 60) { down.requests.filter { $0["status"] == 200 }.count == 2 }
        #expect(down.requests.filter { $0["status"] == 200 }.compactMap { $0["body"]?["record"]?["memo"]?.stringValue } == ["hello", "again"])
        #expect(down.requests.count == 12)
        #expect(try json(d, ["status"])["dependencies"]?[host] == "up")
        let waited = try #require(try subscription(down.url))
        #expect(waited["failed"] == 0 && waited["delivered"] == 2, "\(waited)")
        #expect(d.log.contains("\(host) is down: \(down.url) answered HTTP 500") && d.log.contains("\(host) answers again"))
        #expect(gone.requests.value.count == 2)
        let refused = try #require(try subscription(gone.url))
        #expect(refused["failed"] == 2 && refused["pending"] == 0)
        #expect(refused["last_error"]?.stringValue == "\(gone.url) answered HTTP 410: no such hook")
        #expect(d.stop().status == 0)
    }

    @Test func killedBetweenTheCommitAndThePostItIsDeliveredAfterRestart() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start(env: ["PHOTOMEMO_FAILPOINTS": "notify.before_send=1"])
        let receiver = try Receiver(dir: d.root, secret: "k", failFirst: 0)
        _ = try json(d, ["subscribe", "--type", "Memo", "--webhook", receiver.url, "--secret", "k"])
        try d.append(#"{"memo":"must arrive"}"# + "\n")
        let end = try d.waitForExit()
        #expect(end.status == SIGKILL)
        #expect(receiver.requests.isEmpty)
        try d.start()
        try d.waitUntil("delivered after the restart") { receiver.requests.contains { $0["body"]?["record"]?["memo"] == "must arrive" } }
        #expect(d.stop().status == 0)
    }

    @Test func aFollowerThatReconnectsWithSinceMissesNothing() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        var c: SocketClient? = try SocketClient(path: d.home + "/photomemo.sock")
        let sub = try #require(c!.call("subscribe", ["type": "Memo", "fires_on": "create"])?["result"]?["id"]?.stringValue)
        try d.append(#"{"memo":"one"}"# + "\n")
        let e1 = try #require(c!.readLine(timeout: 10))
        #expect(e1["record"]?["memo"] == "one")
        let seen = try #require(e1["seq"]?.intValue)
        c = nil  // disconnect
        try d.append(#"{"memo":"two"}"# + "\n" + #"{"memo":"three"}"# + "\n")
        try d.waitIdle(jobs: 3)
        let again = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(again.call("subscribe", ["subscription": .string(sub), "since": .int(seen)])?["ok"] == true)
        let memos = [again.readLine(timeout: 10), again.readLine(timeout: 10)].compactMap { $0?["record"]?["memo"]?.stringValue }
        #expect(memos == ["two", "three"])
        #expect(d.stop().status == 0)
    }

    /// Stream lines name their kind under "event" (DESIGN, Control socket), as `watch`'s
    /// do: a follower's line is `{"event": "notification", "event_id", "op", ...}`.
    @Test func followerLinesCarryTheirEventName() throws {
        let d = try DaemonHarness(stages: Self.definition)
        try d.start()
        let follow = Process()
        follow.executableURL = URL(fileURLWithPath: DaemonHarness.binary)
        follow.arguments = ["subscribe", "--type", "Memo", "--fires-on", "create", "--follow", "--json", "--home", d.home]
        let out = Pipe()
        follow.standardOutput = out
        try follow.run()
        defer { kill(follow.processIdentifier, SIGKILL); follow.waitUntilExit() }
        try d.waitUntil("the follower has subscribed") { try json(d, ["subscriptions"])["subscriptions"]?.arrayValue?.count == 1 }
        try d.append(#"{"memo":"streamed"}"# + "\n")
        let pid = follow.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 15) { kill(pid, SIGKILL) }  // a line or EOF within 15 s
        var buffer = Data()
        while !buffer.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer += chunk
        }
        let line = try JSONValue.parse(String(decoding: buffer.prefix { $0 != 0x0A }, as: UTF8.self))
        #expect(line["event"] == "notification")
        #expect(line["op"] == "create" && line["record"]?["memo"] == "streamed" && line["event_id"]?.stringValue?.isEmpty == false)

        let c = try SocketClient(path: d.home + "/photomemo.sock")
        #expect(c.call("subscribe", ["type": "Memo", "fires_on": "create"])?["ok"] == true)
        try d.append(#"{"memo":"raw"}"# + "\n")
        let raw = try #require(c.readLine(timeout: 10))
        #expect(raw["event"] == "notification" && raw["record"]?["memo"] == "raw")
        #expect(d.stop().status == 0)
    }
}
