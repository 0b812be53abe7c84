import Foundation
import Glibc

/// systemd's `Type=notify` protocol: datagrams like `READY=1` to `$NOTIFY_SOCKET`
/// (a path, or an abstract socket when it starts with `@`). Without the variable, a no-op.
struct SystemdNotify {
    let path: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    @discardableResult
    func send(_ message: String) -> Bool {
        guard let path, path.utf8.count < 108 else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let sent = message.withCString { msg in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, msg, strlen(msg), Int32(MSG_NOSIGNAL), $0, len) }
            }
        }
        return sent >= 0
    }
}
