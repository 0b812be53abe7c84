import Foundation
import Glibc
import StageKit

/// A real HTTP/1.1 listener on 127.0.0.1 (a random port), on a thread of its own: it
/// records each request (request line, headers, body) and answers `status` with `body`,
/// with `headers` (e.g. a redirect's `Location`), or with `answer` false reads the request
/// and never answers (for timeouts).
public final class HTTPListener: @unchecked Sendable {  // fd is set once; the rest is behind locks
    public struct Request: Sendable {
        public let line: String
        public let headers: [String: String]  // names lower-cased
        public let body: Data
    }

    public let port: Int
    public let requests = LockedValue<[Request]>([])
    private let fd: Int32
    private let open = LockedValue<[Int32]>([])
    private let closed = LockedValue(false)

    public init(status: Int = 200, body: String = "", headers: [String] = [], answer: Bool = true) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw PhotomemoError(.internalError, "cannot listen: errno \(errno)") }
        port = Int(UInt16(bigEndian: addr.sin_port))
        // The thread owns the descriptors and closes them: `close()` only shuts them down, so
        // no descriptor number is closed under it and reused by another test's socket.
        Thread.detachNewThread { [self] in
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 {
                    if errno == EINTR { continue }  // the test process gets signals (other tests' children)
                    for held in open.value { Glibc.close(held) }
                    Glibc.close(fd)
                    return
                }
                if let r = Self.read(c) { requests.withLock { $0.append(r) } }
                guard answer else {
                    open.withLock { $0.append(c) }  // held open until the listener closes
                    if closed.value { shutdown(c, Int32(SHUT_RDWR)) }
                    continue
                }
                let reply = "HTTP/1.1 \(status) X\r\n" + headers.map { $0 + "\r\n" }.joined()
                    + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
                let bytes = Array(reply.utf8)  // a body may hold a NUL
                _ = bytes.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                shutdown(c, Int32(SHUT_RDWR))
                Glibc.close(c)
            }
        }
    }

    public var url: String { "http://127.0.0.1:\(port)/hook" }

    /// Once: a second close could close a descriptor number another test has opened since.
    public func close() {
        guard !closed.withLock({ c in defer { c = true }; return c }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))  // wakes the blocked accept, which then closes everything
        for c in open.value { shutdown(c, Int32(SHUT_RDWR)) }
    }

    deinit { close() }

    /// Reads one request: the head, then `Content-Length` bytes of body.
    static func read(_ c: Int32) -> Request? {
        var data = Data()
        var buf = [UInt8](repeating: 0, count: 65536)
        func more() -> Bool {
            var n: Int
            repeat { n = recv(c, &buf, buf.count, 0) } while n < 0 && errno == EINTR
            if n > 0 { data.append(contentsOf: buf[0..<n]) }
            return n > 0
        }
        let separator = Data("\r\n\r\n".utf8)
        var headEnd: Range<Data.Index>?
        while headEnd == nil {
            guard more() else { return nil }
            headEnd = data.range(of: separator)
        }
        let headText = String(decoding: data[..<headEnd!.lowerBound], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let line = lines.removeFirst()
        var headers: [String: String] = [:]
        for l in lines {
            guard let colon = l.firstIndex(of: ":") else { continue }
            headers[l[..<colon].lowercased()] = l[l.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while data.count - headEnd!.upperBound < length { guard more() else { break } }
        return Request(line: line, headers: headers, body: Data(data[headEnd!.upperBound...]))
    }

    /// A port nothing listens on: bound, then closed.
    public static func closedPort() throws -> Int {
        let l = try HTTPListener()
        let p = l.port
        l.close()
        return p
    }
}
