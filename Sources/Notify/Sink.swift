import Foundation
import HTTP
import PhotomemoCore

/// Delivers one event to its sink: an HTTP POST of the event JSON, signed with
/// `X-Photomemo-Signature: sha256=<HMAC of the body>`, or a command with the event on
/// stdin. Blocking: the daemon runs it on the work pool.
public enum Sink {
    public enum Result: Sendable, Equatable {
        case delivered
        case failed(String)
    }

    public static func post(url: String, body: Data, secret: String?, eventID: String, timeoutMs: Int = 10_000) -> Result {
        var r = HTTPRequest("POST", url)
        r.headers = ["Content-Type: application/json", "X-Photomemo-Event: \(eventID)", "Expect:"]
            + (secret.map { ["X-Photomemo-Signature: sha256=\(HMACSHA256.hex(key: $0, data: body))"] } ?? [])
        r.body = .bytes(body)
        r.timeoutMs = timeoutMs
        r.keepBody = false  // the response body is not needed
        do {
            let status = try r.perform().status
            return (200..<300).contains(status) ? .delivered : .failed("\(url) answered HTTP \(status)")
        } catch {
            return .failed("\(url): \(error)")
        }
    }

    /// The default deadline of an exec sink (`photomemo serve --sink-timeout`).
    public static let defaultExecTimeoutMs = 30_000

    /// Runs `command` with the event on stdin, in a clean environment (`PATH`, `HOME`,
    /// `LANG` and `variables`, e.g. `PHOTOMEMO_SUBSCRIPTION`), ended with its process group
    /// after `timeoutMs`.
    public static func exec(command: [String], body: Data, variables: [String: String] = [:],
                            timeoutMs: Int = defaultExecTimeoutMs) -> Result {
        guard !command.isEmpty else { return .failed("empty command") }
        do {
            let r = try Subprocess.run(command, stdin: [UInt8](body) + [0x0A],
                                       environment: SubprocessEnvironment.clean(documented: variables), timeoutMs: timeoutMs)
            if r.timedOut { return .failed("\(command[0]) timed out after \(timeoutMs) ms") }
            if r.stopped { return .failed("\(command[0]) was stopped: the daemon is shutting down") }
            if r.status == 0 { return .delivered }
            return .failed("\(command[0]) exited with \(r.status.map(String.init) ?? "signal \(r.signal ?? 0)"): \(r.stderrTail.suffix(200))")
        } catch {
            return .failed("cannot start \(command[0]): \(error)")
        }
    }
}
