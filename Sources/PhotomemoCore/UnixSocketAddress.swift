import Glibc
import StageKit

/// A `sockaddr_un` for a path (or, with a leading `@`, Linux's abstract namespace), built
/// in one place: the 107-byte limit is checked here instead of being silently truncated.
public struct UnixSocketAddress {
    private var addr = sockaddr_un()
    private let length: socklen_t

    public init(_ path: String) throws {
        var bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw PhotomemoError(.badUsage, "socket path \(path) is empty or longer than 107 bytes")
        }
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes[0] == 0 ? 0 : 1))
    }

    public func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        var a = addr
        return try withUnsafePointer(to: &a) { try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) } }
    }

    /// connect(2) `fd` to the address: 0, or -1 with errno set.
    public func connect(_ fd: Int32) -> Int32 { withSockaddr { Glibc.connect(fd, $0, $1) } }

    /// bind(2) `fd` to the address: 0, or -1 with errno set.
    public func bind(_ fd: Int32) -> Int32 { withSockaddr { Glibc.bind(fd, $0, $1) } }
}
