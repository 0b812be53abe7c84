import CUV
import Glibc
import StageKit

/// A TCP socket listening on the loop (`uv_tcp_t`), for the HTTP health endpoint. Each
/// accepted client is a `PipeConnection` (a stream like the control socket's) handed to
/// `onConnection`. Identity is not asked of a TCP peer: what it serves is for anyone who
/// can reach the address.
public final class TCPServer: LoopHandle {
    /// An address to listen on: `HOST:PORT`, `[IPV6]:PORT`, or a bare `PORT` (loopback).
    public struct Address: Sendable, Equatable, CustomStringConvertible {
        public let host: String
        public let port: UInt16
        public var isIPv6: Bool { host.contains(":") }
        public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// Nil when `text` is not one of the forms above with a numeric IPv4 or IPv6
        /// address (names are not resolved: the daemon binds exactly what it is told).
        public init?(_ text: String) {
            var host = "127.0.0.1", portText = Substring(text)
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
                host = String(text[text.index(after: text.startIndex)..<close])
                portText = text[text.index(close, offsetBy: 2)...]
            } else if let colon = text.lastIndex(of: ":") {
                host = String(text[..<colon])
                portText = text[text.index(after: colon)...]
            }
            guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText), port > 0 else { return nil }
            var probe = sockaddr_in6()
            let ok = host.contains(":") ? uv_ip6_addr(host, 0, &probe) == 0 : Self.ipv4(host, port: 0) != nil
            guard ok else { return nil }
            self.host = host
            self.port = port
        }

        /// A dotted quad only: inet_pton, unlike uv_ip4_addr's inet_aton, takes no `127.1`.
        static func ipv4(_ host: String, port: UInt16) -> sockaddr_in? {
            var a = sockaddr_in()
            guard host.split(separator: ".", omittingEmptySubsequences: false).count == 4, uv_ip4_addr(host, Int32(port), &a) == 0 else { return nil }
            return a
        }
    }

    private let loop: EventLoop
    private var onConnection: ((PipeConnection) -> Void)?
    public let address: Address

    /// Binds and listens; a busy or foreign address is an error naming it (errno kept).
    public init(loop: EventLoop, address: Address, _ onConnection: @escaping (PipeConnection) -> Void) throws {
        self.loop = loop
        self.address = address
        super.init(type: UV_TCP)
        try uvCheck(uv_tcp_init(loop.uv, tcp), "uv_tcp_init")
        retainFromHandle()
        self.onConnection = onConnection
        do {
            let rc: Int32
            if address.isIPv6 {
                var a = sockaddr_in6()
                _ = uv_ip6_addr(address.host, Int32(address.port), &a)
                rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, UInt32(UV_TCP_IPV6ONLY.rawValue)) } }
            } else {
                var a = Address.ipv4(address.host, port: address.port)!
                rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, 0) } }
            }
            try uvCheck(rc, "bind \(address)")
            // libuv reports a busy address at listen, not bind.
            try uvCheck(uv_listen(UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self), 128, { server, status in
                guard status == 0 else { return }
                LoopHandle.owner(UnsafeMutableRawPointer(server), as: TCPServer.self).accept()
            }), "listen on \(address)")
        } catch {
            close()
            throw error
        }
    }

    private var tcp: UnsafeMutablePointer<uv_tcp_t> { raw.assumingMemoryBound(to: uv_tcp_t.self) }

    private func accept() {
        guard let client = try? PipeConnection(loop: loop, tcp: true) else { return }
        let rc = uv_accept(UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self), client.stream)
        guard rc == 0 else { client.close(); return }
        onConnection?(client)
    }

    override func didClose() { onConnection = nil }
}
