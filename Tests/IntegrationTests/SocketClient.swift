import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// A raw client of the control socket for tests that must misbehave (garbage, never
/// reading) or measure: newline-delimited JSON over a blocking Unix socket.
final class SocketClient: @unchecked Sendable {  // one thread at a time uses each client
    let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(4)) }
        guard try UnixSocketAddress(path).connect(fd) == 0 else { close(fd); throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func send(_ request: JSONValue) { send(request.jsonString + "\n") }

    /// The next line as JSON, or nil after `timeout` seconds or when the daemon hangs up.
    func readLine(timeout: Double = 10) -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return try? JSONValue.parse(Data(line))
            }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
        }
    }

    /// Sends a request and returns the reply with its id.
    func call(_ cmd: String, _ args: [String: JSONValue] = [:], id: Int64 = 1) -> JSONValue? {
        var o = args
        o["id"] = .int(id)
        o["cmd"] = .string(cmd)
        send(.object(o))
        while let line = readLine() {
            if line["id"] == .int(id) { return line }
        }
        return nil
    }
}
