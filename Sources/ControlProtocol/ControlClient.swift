import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// A client's side of the control socket (the CLI's, the bench's): connect, send one
/// request line, read reply and event lines. Blocking, with timeouts so it never hangs.
public final class ControlClient {
    public let socketPath: String
    public let home: String
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var nextID: Int64 = 1
    /// The id of the last request sent: event lines of its stream carry it (`asset`).
    public private(set) var lastRequestID: Int64 = 0

    /// Connects on the first request, so a usage error is reported before the daemon is
    /// needed; a failed connect is tried again by the next request. `home` names the
    /// daemon in errors.
    public init(socketPath: String, home: String) {
        self.socketPath = socketPath
        self.home = home
    }

    private func connectIfNeeded() throws {
        guard fd < 0 else { return }
        let address = try UnixSocketAddress(socketPath)
        do { fd = try syscall("socket", blocking: { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }) } catch let e as SystemError {
            throw PhotomemoError(.io, "socket: \(e.reason)")
        }
        do { try syscall("connect", blocking: { address.connect(fd) }) } catch let error as SystemError {
            let e = error.errno
            close(fd)
            fd = -1
            if e == ENOENT || e == ECONNREFUSED {
                throw PhotomemoError(.notRunning,
                    "photomemo is not running on \(home) (nothing answers on \(socketPath)); start it with: photomemo serve --home \(home)")
            }
            if e == EACCES {
                throw PhotomemoError(.notRunning, "permission denied on \(socketPath): the daemon's socket does not admit this user")
            }
            throw PhotomemoError(.io, "connect \(socketPath): \(error.reason)")
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends a request and returns its `result`, or throws the daemon's error.
    public func request(_ cmd: ControlCommand, _ args: [String: JSONValue] = [:], timeoutMs: Int32 = 30_000) throws -> JSONValue {
        try connectIfNeeded()
        let id = nextID
        nextID += 1
        lastRequestID = id
        var o = args
        o[ControlArgument.id] = .int(id)
        o[ControlArgument.cmd] = .string(cmd.rawValue)
        try send(.object(o))
        while true {
            guard let line = try readLine(timeoutMs: timeoutMs) else { continue }
            guard line[ControlArgument.id] == .int(id) else { continue }  // an event of an earlier stream
            return try ControlReply.result(of: line).get()
        }
    }

    /// Sends a streaming request, then calls `onEvent` for each event line until it
    /// returns false or the daemon closes the connection. `tick` runs about once a second.
    public func stream(_ cmd: ControlCommand, _ args: [String: JSONValue] = [:], tick: () -> Void = {}, onEvent: (JSONValue) -> Bool) throws {
        _ = try request(cmd, args)
        while true {
            guard let line = try readLine(timeoutMs: 1000, allowTimeout: true) else { tick(); continue }
            if line["event"] == "error" {
                throw PhotomemoError(.tooSlow, line["error"]?["message"]?.stringValue ?? "disconnected by the daemon")
            }
            if !onEvent(line) { return }
        }
    }

    /// The next event line of request `id`'s stream (lines of other streams are skipped);
    /// an error if none comes within `timeoutMs`.
    public func nextEvent(for id: Int64, timeoutMs: Int32 = 30_000) throws -> JSONValue {
        while true {
            guard let line = try readLine(timeoutMs: timeoutMs) else { continue }
            if line["id"] == .int(id), line["event"] != nil { return line }
        }
    }

    private func send(_ value: JSONValue) throws {
        let bytes = Array((value.jsonString + "\n").utf8)
        var off = 0
        while off < bytes.count {
            guard let n = try? syscall("send", blocking: { bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }) else {
                throw PhotomemoError(.io, "the daemon closed the connection")
            }
            off += n
        }
    }

    /// The next line as JSON; nil on timeout when `allowTimeout`.
    private func readLine(timeoutMs: Int32, allowTimeout: Bool = false) throws -> JSONValue? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return try JSONValue.parse(Data(line))
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled: Int32?
            do { polled = try syscall("poll", interruptible: { poll(&p, 1, timeoutMs) }) } catch let e as SystemError {
                throw PhotomemoError(.io, "poll: \(e.reason)")
            }
            guard let r = polled else { continue }  // a signal: wait again
            if r == 0 {
                if allowTimeout { return nil }
                throw PhotomemoError(.io, "no reply from the daemon within \(timeoutMs / 1000) s")
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { throw PhotomemoError(.io, "the daemon closed the connection") }
            buffer += chunk[0..<n]
        }
    }
}
