import Foundation
import HTTP
import PhotomemoCore
import StageKit

/// Delivers one event to its sink: an HTTP POST of the event JSON, signed with
/// `X-Photomemo-Signature: sha256=<HMAC of the body>`, or a command with the event on
/// stdin. Blocking: the daemon runs it on the work pool.
public enum Sink {
    public enum Result: Sendable, Equatable {
        case delivered
        case failed(Failure)
    }

    /// Why a delivery did not arrive, and whether trying again can help.
    public struct Failure: Sendable, Equatable, CustomStringConvertible {
        public enum Code: String, Sendable {
            /// The receiver cannot be reached or cannot take it now (no connection, a name that
            /// does not resolve, 5xx, 408, 429; an exec sink's exit 69, EX_UNAVAILABLE): an
            /// outage, tried again with capped back-off for as long as it lasts, never parked.
            case unavailable
            /// A failure of the sink's own (an exec sink's other non-zero exit, one that
            /// cannot start): tried again with back-off, parked after `max_attempts`.
            case retryable
            /// The receiver refused this delivery for good (any other 4xx), or answered with a
            /// redirect (3xx), which is never followed: retrying only hammers it, so it is
            /// marked failed at once.
            case permanent
            /// The sink did not answer in time (an exec sink past `--sink-timeout`, a webhook
            /// past its timeout): an outage too, and its subscription backs off while it keeps hanging.
            case timedOut
        }

        public let code: Code
        public let reason: String
        public var description: String { reason }

        public init(_ code: Code, _ reason: String) {
            self.code = code
            self.reason = reason
        }

        public static func retryable(_ reason: String) -> Failure { Failure(.retryable, reason) }

        /// Whether it is the sink's outage (DESIGN.md: "an outage is not a failure").
        public var isOutage: Bool { code == .unavailable || code == .timedOut }
    }

    /// A 4xx other than 408 (request timeout) and 429 (too many requests) refuses the
    /// delivery itself, and a 3xx would answer the same every time (a redirect is not
    /// followed: the signed body must not go wherever a receiver points); everything else
    /// that is not 2xx may pass.
    public static func isPermanent(status: Int) -> Bool {
        (300..<400).contains(status) || ((400..<500).contains(status) && status != 408 && status != 429)
    }

    /// How much of a refusing receiver's answer goes into the reason.
    static let bodyExcerptBytes = 200

    /// How long a webhook may take to answer.
    public static let webhookTimeoutMs = 10_000

    /// With `refusePrivate` (a user's webhook), an address `WebhookDestination` refuses is
    /// never connected to, whatever the name resolves to at the time: a permanent failure.
    public static func post(url: String, body: Data, secret: String?, eventID: String, timeoutMs: Int = webhookTimeoutMs,
                            refusePrivate: Bool = false) -> Result {
        var r = HTTPRequest("POST", url)
        if refusePrivate { r.refuseAddress = { WebhookDestination.whyRefused(ip: $0) } }
        r.headers = ["Content-Type: application/json", "X-Photomemo-Event: \(eventID)", "Expect:"]
            + (secret.map { ["X-Photomemo-Signature: sha256=\(HMACSHA256.hex(key: $0, data: body))"] } ?? [])
        r.body = .bytes(body)
        r.timeoutMs = timeoutMs
        r.keepBodyBytes = bodyExcerptBytes  // only for the reason of a failure
        do {
            let response = try r.perform()
            let status = response.status
            if (200..<300).contains(status) { return .delivered }
            let excerpt = Log.oneLine(String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            var reason = "\(url) answered HTTP \(status)"
            if (300..<400).contains(status) {
                let location = response.headers["location"].map { "a redirect to \(Log.oneLine(String($0.prefix(bodyExcerptBytes))))" } ?? "a redirect with no Location"
                reason += ", \(location) (redirects are not followed: subscribe with the new URL)"
            }
            if !excerpt.isEmpty { reason += ": \(excerpt)" }
            return .failed(Failure(isPermanent(status: status) ? .permanent : .unavailable, reason))
        } catch let e as HTTPRequest.Failure where e.refused != nil {
            return .failed(Failure(.permanent, WebhookDestination.refusal(url, e.refused ?? "")))
        } catch let e as HTTPRequest.Failure where e.timedOut {
            return .failed(Failure(.timedOut, "\(url): \(e)"))
        } catch {
            return .failed(Failure(.unavailable, "\(url): \(error)"))
        }
    }

    /// The default deadline of an exec sink (`photomemo serve --sink-timeout`).
    public static let defaultExecTimeoutMs = 30_000

    /// Runs `command` with the event on stdin, in a clean environment (`PATH`, `HOME`,
    /// `LANG` and `variables`, e.g. `PHOTOMEMO_SUBSCRIPTION`), ended with its process group
    /// after `timeoutMs`. Exit 69 (EX_UNAVAILABLE, as for an exec stage) says what it talks to
    /// is down; any other non-zero exit is its own failure.
    public static func exec(command: [String], body: Data, variables: [String: String] = [:],
                            timeoutMs: Int = defaultExecTimeoutMs) -> Result {
        guard !command.isEmpty else { return .failed(.retryable("empty command")) }
        do {
            let r = try Subprocess.run(command, stdin: [UInt8](body) + [0x0A],
                                       environment: SubprocessEnvironment.clean(documented: variables), timeoutMs: timeoutMs)
            if r.timedOut { return .failed(Failure(.timedOut, "\(command[0]) timed out after \(timeoutMs) ms")) }
            if r.stopped { return .failed(Failure(.unavailable, "\(command[0]) was stopped: the daemon is shutting down")) }
            if r.status == 0 { return .delivered }
            if r.status == 69 { return .failed(Failure(.unavailable, "\(command[0]) exit 69 (unavailable): \(r.stderrTail.suffix(200))")) }
            return .failed(.retryable("\(command[0]) exited with \(r.status.map(String.init) ?? "signal \(r.signal ?? 0)"): \(r.stderrTail.suffix(200))"))
        } catch {
            return .failed(.retryable("cannot start \(command[0]): \(error)"))
        }
    }
}
