import Foundation
import Notify
import TestSupport
import Testing

/// `Sink.post` against a real HTTP listener on loopback: what arrives, and what a failed
/// delivery says and whether it may be retried (the deliverer retries a retryable one with
/// back-off and marks a permanent one failed at once).
@Suite struct WebhookSinkTests {
    static let body = Data(#"{"event_id":"s1-7","op":"create"}"#.utf8)
    /// `printf '%s' BODY | openssl dgst -sha256 -hmac s3cret`: an independent HMAC.
    static let signature = "sha256=66b5f18f8aa3a3fc7c90b47ed8792962fb789a60f4a0089f13dbea0dc921db46"

    @Test func postDeliversTheBodyWithItsSignatureAndEventID() throws {
        let listener = try HTTPListener(status: 204)
        defer { listener.close() }
        #expect(Sink.post(url: listener.url, body: Self.body, secret: "s3cret", eventID: "s1-7") == .delivered)
        let requests = listener.requests.value
        #expect(requests.count == 1)
        let r = try #require(requests.first)
        #expect(r.line == "POST /hook HTTP/1.1")
        #expect(r.body == Self.body)
        #expect(r.headers["x-photomemo-signature"] == Self.signature)
        #expect(r.headers["x-photomemo-event"] == "s1-7")
        #expect(r.headers["content-type"] == "application/json")
    }

    @Test func withoutASecretThereIsNoSignatureHeader() throws {
        let listener = try HTTPListener()
        defer { listener.close() }
        #expect(Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e") == .delivered)
        #expect(listener.requests.value.first?.headers["x-photomemo-signature"] == nil)
    }

    @Test func aNon2xxAnswerIsAFailureNamingTheStatus() throws {
        let listener = try HTTPListener(status: 503)
        defer { listener.close() }
        let r = Sink.post(url: listener.url, body: Self.body, secret: "s3cret", eventID: "s1-7")
        #expect(r == .failed(Sink.Failure(.unavailable, "\(listener.url) answered HTTP 503")))
        #expect(listener.requests.value.count == 1)  // it did arrive: the failure is the receiver's answer
    }

    @Test(arguments: [400, 401, 403, 404, 410, 413, 422])
    func a4xxIsAPermanentFailureWithTheStartOfTheAnswer(status: Int) throws {
        let answer = "gone: " + String(repeating: "x", count: 500)
        let listener = try HTTPListener(status: status, body: answer)
        defer { listener.close() }
        let r = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e")
        #expect(r == .failed(Sink.Failure(.permanent, "\(listener.url) answered HTTP \(status): " + answer.prefix(200))))
    }

    /// A redirect is never followed (the receiver's new address could be anywhere, and
    /// the signed body would go there): retrying it would only loop for ever, so it fails
    /// at once and the reason says where it pointed.
    @Test(arguments: [301, 302, 303, 307, 308])
    func aRedirectIsAPermanentFailureNamingItsLocation(status: Int) throws {
        let target = try HTTPListener()
        defer { target.close() }
        let listener = try HTTPListener(status: status, body: "moved", headers: ["Location: \(target.url)/new"])
        defer { listener.close() }
        let r = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e")
        #expect(r == .failed(Sink.Failure(.permanent,
            "\(listener.url) answered HTTP \(status), a redirect to \(target.url)/new (redirects are not followed: subscribe with the new URL): moved")))
        #expect(target.requests.value.isEmpty)
    }

    /// A receiver's answer goes into a reason that is stored (PostgreSQL refuses NUL) and
    /// printed to an admin's terminal: control characters arrive escaped.
    @Test func controlCharactersInTheAnswerAreEscaped() throws {
        let listener = try HTTPListener(status: 400, body: "bad\u{0}\u{1B}]52;c;aGk=\u{07}\u{9B}2J")
        defer { listener.close() }
        let r = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e")
        #expect(r == .failed(Sink.Failure(.permanent, "\(listener.url) answered HTTP 400: bad\\x0\\x1B]52;c;aGk=\\x7\\x9B2J")))
    }

    @Test(arguments: [408, 429, 500, 502, 503])
    func timeoutsThrottlingAnd5xxAreAnOutage(status: Int) throws {
        let listener = try HTTPListener(status: status)
        defer { listener.close() }
        guard case .failed(let why) = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e") else {
            Issue.record("HTTP \(status) delivered")
            return
        }
        #expect(why.code == .unavailable && why.isOutage)
    }

    @Test func aRefusedConnectionIsAFailureNamingTheURL() throws {
        let url = "http://127.0.0.1:\(try HTTPListener.closedPort())/hook"
        guard case .failed(let why) = Sink.post(url: url, body: Self.body, secret: nil, eventID: "e") else {
            Issue.record("delivered to a closed port")
            return
        }
        #expect(why.code == .unavailable && why.isOutage)
        #expect(why.reason.hasPrefix(url + ": "))
        #expect(why.reason.lowercased().contains("connect"))
    }

    @Test func aReceiverThatNeverAnswersTimesOut() throws {
        let listener = try HTTPListener(answer: false)
        defer { listener.close() }
        let started = Date()
        let r = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e", timeoutMs: 300)
        let took = Date().timeIntervalSince(started)
        guard case .failed(let why) = r else {
            Issue.record("delivered without an answer")
            return
        }
        #expect(why.code == .timedOut)
        #expect(why.reason.lowercased().contains("timeout") || why.reason.lowercased().contains("timed out"), "\(why)")
        #expect(took >= 0.25 && took < 5, "took \(took) s")  // curl's timer may end a hair early
    }

    /// A user's webhook (`refusePrivate`) never connects to a loopback address, however
    /// the URL names it: the check is on the socket's address, not on the URL's text.
    @Test(arguments: ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433", "0x7f.1"])
    func aUsersWebhookNeverConnectsToLoopback(host: String) throws {
        let listener = try HTTPListener()
        defer { listener.close() }
        let url = "http://\(host):\(listener.port)/hook"
        guard case .failed(let why) = Sink.post(url: url, body: Self.body, secret: nil, eventID: "e", refusePrivate: true) else {
            Issue.record("delivered to \(url)")
            return
        }
        #expect(why.code == .permanent)
        #expect(why.reason.hasPrefix("webhook \(url): ") && why.reason.contains("is a loopback address"), "\(why)")
        #expect(listener.requests.value.isEmpty)
        #expect(Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e") == .delivered, "an admin's may")
    }

    @Test func theRefusedRangesAreLoopbackLinkLocalPrivateAndTheirIPv6Spellings() {
        let refused = ["127.0.0.1", "127.255.0.9", "0.0.0.0", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                       "169.254.169.254", "100.64.0.1", "224.0.0.1", "255.255.255.255", "::", "::1", "::ffff:10.0.0.1",
                       "::127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1", "ff02::1"]
        for ip in refused { #expect(WebhookDestination.whyRefused(ip: ip) != nil, "\(ip)") }
        let allowed = ["1.1.1.1", "8.8.8.8", "172.32.0.1", "192.169.0.1", "100.128.0.1", "169.255.0.1", "2606:4700::1111",
                       "::ffff:8.8.8.8", "2002:0808:0808::"]
        for ip in allowed { #expect(WebhookDestination.whyRefused(ip: ip) == nil, "\(ip)") }
        #expect(WebhookDestination.whyRefused(url: "http://localhost:8080/x") == "localhost is a loopback name")
        #expect(WebhookDestination.whyRefused(url: "http://2130706433/x") == "2130706433 is a loopback address"
                || WebhookDestination.whyRefused(url: "http://2130706433/x") == "127.0.0.1 is a loopback address")
        #expect(WebhookDestination.whyRefused(url: "http://user@[::1]:8080/x") == "::1 is a loopback address")
        #expect(WebhookDestination.whyRefused(url: "https://93.184.215.14/hook") == nil)
    }
}
