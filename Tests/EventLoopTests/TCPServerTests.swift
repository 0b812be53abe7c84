import Foundation
import Glibc
import StageKit
import Testing
@testable import EventLoop

/// The TCP listener under `serve --http`: addresses it takes, a client served and every
/// handle closed (the loop closes with none left).
@Suite struct TCPServerTests {
    @Test func addressesAreNumericWithAPort() {
        #expect(TCPServer.Address("127.0.0.1:9464") != nil)
        #expect(TCPServer.Address("9464")?.description == "127.0.0.1:9464")
        #expect(TCPServer.Address("[::1]:9464")?.description == "[::1]:9464")
        #expect(TCPServer.Address("0.0.0.0:80") != nil)
        for bad in ["localhost:9464", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.1:9464", "[::1]", "::1:9464x", "", ":", "[::1]9464"] {
            #expect(TCPServer.Address(bad) == nil, "\(bad)")
        }
    }

    @Test func aClientIsServedAndTheLoopClosesWithNoHandleLeft() throws {
        let loop = try EventLoop()
        // The kernel's pick of a free port, released for the listener.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, len) == 0 && getsockname(probe, $0, &len) == 0 } }
        let port = UInt16(bigEndian: a.sin_port)
        close(probe)
        nonisolated(unsafe) var server: TCPServer?
        server = try TCPServer(loop: loop, address: #require(TCPServer.Address("127.0.0.1:\(port)"))) { c in
            c.start(onRead: { bytes in
                c.write(bytes)
                c.closeAfterWrites(lingerMs: 1000)
            }, onClose: { server?.close() })
        }
        // A second listener on the same address is refused with the errno.
        #expect(throws: SystemError.self) { try TCPServer(loop: loop, address: TCPServer.Address("127.0.0.1:\(port)")!) { _ in } }
        let echoed = LockedValue(""), clientDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var to = sockaddr_in()
            to.sin_family = sa_family_t(AF_INET)
            to.sin_addr.s_addr = inet_addr("127.0.0.1")
            to.sin_port = port.bigEndian
            _ = withUnsafePointer(to: &to) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            _ = send(fd, "ping", 4, Int32(MSG_NOSIGNAL))
            var buf = [UInt8](repeating: 0, count: 16)
            let n = recv(fd, &buf, 16, 0)
            echoed.withLock { $0 = String(decoding: buf[..<max(0, n)], as: UTF8.self) }
            close(fd)
            clientDone.signal()
        }
        loop.run()
        clientDone.wait()
        #expect(echoed.value == "ping")
        #expect(loop.handleCount == 0)
        #expect(loop.close() == 0)
    }
}
