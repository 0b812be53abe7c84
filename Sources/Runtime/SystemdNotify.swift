import Foundation
import Glibc
import PhotomemoCore

/// systemd's `Type=notify` protocol: datagrams like `READY=1` to `$NOTIFY_SOCKET`
/// (a path, or an abstract socket when it starts with `@`). Without the variable, a no-op.
struct SystemdNotify {
    let path: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    @discardableResult
    func send(_ message: String) -> Bool {
        guard let path, let address = try? UnixSocketAddress(path) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let sent = message.withCString { msg in
            address.withSockaddr { sendto(fd, msg, strlen(msg), Int32(MSG_NOSIGNAL), $0, $1) }
        }
        return sent >= 0
    }
}
