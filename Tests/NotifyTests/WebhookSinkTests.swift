import Foundation
import Notify
import PhotomemoCore
import Testing

/// `Sink.post` against a real HTTP listener on loopback: what arrives, and what a failed
/// delivery says (the deliverer retries every `.failed` with back-off).
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
        #expect(r == .failed("\(listener.url) answered HTTP 503"))
        #expect(listener.requests.value.count == 1)  // it did arrive: the failure is the receiver's answer
    }

    @Test func aRefusedConnectionIsAFailureNamingTheURL() throws {
        let url = "http://127.0.0.1:\(try HTTPListener.closedPort())/hook"
        guard case .failed(let why) = Sink.post(url: url, body: Self.body, secret: nil, eventID: "e") else {
            Issue.record("delivered to a closed port")
            return
        }
        #expect(why.hasPrefix(url + ": "))
        #expect(why.lowercased().contains("connect"))
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
        #expect(why.lowercased().contains("timeout") || why.lowercased().contains("timed out"), "\(why)")
        #expect(took >= 0.25 && took < 5, "took \(took) s")  // curl's timer may end a hair early
    }
}
