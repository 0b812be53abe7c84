import Foundation
import Notify
import PhotomemoCore
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
        #expect(r == .failed(.retryable("\(listener.url) answered HTTP 503")))
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

    /// A receiver's answer goes into a reason that is stored (PostgreSQL refuses NUL) and
    /// printed to an admin's terminal: control characters arrive escaped.
    @Test func controlCharactersInTheAnswerAreEscaped() throws {
        let listener = try HTTPListener(status: 400, body: "bad\u{0}\u{1B}]52;c;aGk=\u{07}\u{9B}2J")
        defer { listener.close() }
        let r = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e")
        #expect(r == .failed(Sink.Failure(.permanent, "\(listener.url) answered HTTP 400: bad\\x0\\x1B]52;c;aGk=\\x7\\x9B2J")))
    }

    @Test(arguments: [408, 429, 500, 502, 503])
    func timeoutsThrottlingAnd5xxStayRetryable(status: Int) throws {
        let listener = try HTTPListener(status: status)
        defer { listener.close() }
        guard case .failed(let why) = Sink.post(url: listener.url, body: Self.body, secret: nil, eventID: "e") else {
            Issue.record("HTTP \(status) delivered")
            return
        }
        #expect(why.code == .retryable)
    }

    @Test func aRefusedConnectionIsAFailureNamingTheURL() throws {
        let url = "http://127.0.0.1:\(try HTTPListener.closedPort())/hook"
        guard case .failed(let why) = Sink.post(url: url, body: Self.body, secret: nil, eventID: "e") else {
            Issue.record("delivered to a closed port")
            return
        }
        #expect(why.code == .retryable)
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
        #expect(why.code == .retryable)
        #expect(why.reason.lowercased().contains("timeout") || why.reason.lowercased().contains("timed out"), "\(why)")
        #expect(took >= 0.25 && took < 5, "took \(took) s")  // curl's timer may end a hair early
    }
}
