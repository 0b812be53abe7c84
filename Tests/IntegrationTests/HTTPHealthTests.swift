import Foundation
import Glibc
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// `serve --http ADDR` (issue #28): GET /metrics and /health for monitors, and a
/// listener that bad or slow clients cannot hurt.
@Suite(.serialized) struct HTTPHealthTests {
    /// A port nothing listens on now (the kernel's pick, released).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// A raw TCP client: what a monitor, a broken client or an attacker sends.
    final class Client: @unchecked Sendable {  // only its descriptor, set once
        let fd: Int32
        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(port).bigEndian
            let ok = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            var tv = timeval(tv_sec: 15, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            guard ok else { Glibc.close(fd); throw PhotomemoError(.io, "cannot connect to port \(port): errno \(errno)") }
        }
        deinit { Glibc.close(fd) }

        /// False once the peer has closed or reset.
        @discardableResult
        func send(_ text: String) -> Bool { send(Array(text.utf8)) }
        @discardableResult
        func send(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }

        /// Everything until the peer closes (or the 15 s receive timeout).
        func readAll() -> String {
            var out = [UInt8](), buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = recv(fd, &buf, buf.count, 0)
                if n <= 0 { break }
                out += buf[..<n]
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// (status, headers+body) of one request.
    static func request(_ port: Int, _ text: String) throws -> (status: Int, response: String) {
        let c = try Client(port: port)
        c.send(text)
        let r = c.readAll()
        return (Int(r.split(separator: " ").dropFirst().first ?? "") ?? 0, r)
    }

    static func get(_ port: Int, _ path: String) throws -> (status: Int, body: String) {
        let r = try request(port, "GET \(path) HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n")
        return (r.status, r.response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func metricsAndHealthAnswerAndNothingElseDoes() throws {
        let port = Self.freePort()
        let d = try DaemonHarness()
        try d.start(args: ["--http", "127.0.0.1:\(port)"])
        try d.drop("Nikon_D70.jpg")
        try d.waitIdle(jobs: 1)
        // /metrics: the text of `photomemo metrics`, the same families and samples in the same order.
        let (_, cli, _) = try DaemonHarness.run(["metrics", "--home", d.home])
        let (status, body) = try Self.get(port, "/metrics")
        #expect(status == 200)
        func shape(_ text: String) -> [String] {
            text.split(separator: "\n").map { l in l.hasPrefix("#") ? String(l) : String(l.split(separator: " ").dropLast().joined(separator: " ")) }
        }
        #expect(shape(body) == shape(cli), "\(body)")
        #expect(body.contains("photomemo_jobs{state=\"done\"} 1\n"))
        let health = try Self.get(port, "/health")
        #expect(health.status == 200 && health.body == "ok\n", "\(health)")
        #expect(try Self.request(port, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").status == 404)
        let post = try Self.request(port, "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(post.status == 405 && post.response.contains("Allow: GET\r\n"), "\(post)")
        for bad in ["GET /health\r\n\r\n", "GET /health HTTP/1.1\r\n\r\n", "GET /health HTTP/2.0\r\nHost: x\r\n\r\n",
                    "GET /health HTTP/1.1\nHost: x\n\n", "GET  /health HTTP/1.1\r\nHost: x\r\n\r\n",
                    "GET /health HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "GET /health HTTP/1.1\r\nHost : x\r\n\r\n",
                    "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", "GET health HTTP/1.1\r\nHost: x\r\n\r\n"] {
            let r = try Self.request(port, bad)
            #expect(r.status == 400, "\(bad.debugDescription): \(r.response)")
            #expect(r.response.contains("Connection: close\r\n"))
        }
        #expect(try Self.get(port, "/health").status == 200)
        #expect(d.stop().status == 0)
        #expect(d.log.contains("HTTP: GET /metrics and /health on http://127.0.0.1:\(port)"))
    }

    @Test func healthIs503NamingTheStoreWhileItIsDown() throws {
        let port = Self.freePort(), nothing = Self.freePort()
        let store = "s3://photos/pm?endpoint=http://127.0.0.1:\(nothing)&region=us-east-1"
        let d = try DaemonHarness(stages: UploadTests.definition(store: store))
        try d.start(env: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"], args: ["--http", "127.0.0.1:\(port)"])
        #expect(try Self.get(port, "/health").status == 200)
        try d.drop("Nikon_D70.jpg")
        try d.waitUntil("the store is shown down") { try json(d, ["status"])["dependencies"]?["s3://photos/pm"] == "down" }
        let health = try Self.get(port, "/health")
        #expect(health.status == 503, "\(health)")
        #expect(health.body == "s3://photos/pm: down\n", "\(health)")
        #expect(d.stop().status == 0)
    }

    @Test func aHugeHeadASlowlorisAndIdleConnectionsDoNotStopHealth() throws {
        let port = Self.freePort()
        let d = try DaemonHarness()
        try d.start(args: ["--http", "127.0.0.1:\(port)"])
        // A 1 MB header: 431 (or the connection reset once the daemon stops reading), never a crash.
        let huge = try Client(port: port)
        huge.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        huge.send([UInt8](repeating: 0x61, count: 1 << 20))
        let hugeAnswer = huge.readAll()
        #expect(hugeAnswer.isEmpty || hugeAnswer.hasPrefix("HTTP/1.1 431 "), "\(hugeAnswer.prefix(200))")
        #expect(try Self.get(port, "/health").status == 200)

        // A slowloris: a byte a second. The deadline closes it (408) after about 5 s,
        // however many bytes it sends; meanwhile /health answers at once.
        let slow = try Client(port: port)
        let started = Date()
        let slowDone = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var slowAnswer = ""
        Thread.detachNewThread {
            for b in "GET /health HTTP/1.1\r\nHost: x\r\nX-A: aaaaaaaaaaaaaaaaaaaaaa".utf8 {
                guard slow.send([b]) else { break }
                Thread.sleep(forTimeInterval: 1)
                var probe = pollfd(fd: slow.fd, events: Int16(POLLIN), revents: 0)
                if poll(&probe, 1, 0) > 0 { break }  // the daemon answered or closed
            }
            slowAnswer = slow.readAll()
            slowDone.signal()
        }
        Thread.sleep(forTimeInterval: 2)
        let t0 = Date()
        #expect(try Self.get(port, "/health").status == 200)
        #expect(Date().timeIntervalSince(t0) < 1)
        #expect(slowDone.wait(timeout: .now() + 20) == .success)
        let slowFor = Date().timeIntervalSince(started)
        #expect(slowAnswer.hasPrefix("HTTP/1.1 408 "), "\(slowAnswer)")
        #expect(slowFor > 4 && slowFor < 10, "closed after \(slowFor) s")

        // 200 idle connections (over the cap of 64): /health still answers, at once.
        let idle = try (0..<200).map { _ in try Client(port: port) }
        Thread.sleep(forTimeInterval: 0.5)
        let t1 = Date()
        #expect(try Self.get(port, "/health").status == 200)
        #expect(Date().timeIntervalSince(t1) < 1)
        withExtendedLifetime(idle) {}
        // The control socket served throughout.
        #expect(try json(d, ["status"])["version"] != nil)
        #expect(d.process?.isRunning == true)
        #expect(d.stop().status == 0)
        #expect(!d.log.contains("handles still open"), "\(d.log.suffix(2000))")
    }

    /// 16 clients asking for /metrics as fast as they can: renders made while one is in
    /// flight are shared, so the pool is not theirs alone and every /health is answered.
    @Test func aMetricsFloodDoesNotStopHealth() throws {
        let port = Self.freePort()
        let d = try DaemonHarness()
        try d.start(args: ["--http", "127.0.0.1:\(port)"])
        let end = Date().addingTimeInterval(6)
        let flooders = DispatchGroup()
        let metrics = LockedValue([Int: Int]())
        for _ in 0..<16 {
            flooders.enter()
            Thread.detachNewThread {
                while Date() < end {
                    let status = (try? Self.get(port, "/metrics").status) ?? -1
                    metrics.withLock { $0[status, default: 0] += 1 }
                }
                flooders.leave()
            }
        }
        var health: [Int] = []
        while Date() < end {
            health.append((try? Self.get(port, "/health").status) ?? -1)
            Thread.sleep(forTimeInterval: 0.15)
        }
        flooders.wait()
        #expect(health.count >= 20 && health.allSatisfy { $0 == 200 }, "/health answers: \(health)")
        #expect(metrics.value.keys.sorted() == [200], "/metrics answers by status: \(metrics.value)")
        #expect(d.stop().status == 0)
    }

    @Test func aBusyOrBadAddressIsAClearError() throws {
        let taken = try HTTPListener()
        defer { taken.close() }
        let d = try DaemonHarness()
        let (busy, _, busyErr) = try DaemonHarness.run(["serve", "--home", d.home, "--job", d.jobFile, "--http", "127.0.0.1:\(taken.port)"])
        #expect(busy == 1)
        #expect(busyErr.contains("cannot serve HTTP on 127.0.0.1:\(taken.port): the address is in use"), "\(busyErr)")
        for bad in ["localhost:9464", "127.0.0.1", "127.0.0.1:99999", "127.1:9464", "[::1]", "1.2.3.4:x"] {
            let (rc, _, err) = try DaemonHarness.run(["serve", "--home", d.home, "--http", bad])
            #expect(rc == 2, "\(bad)")
            #expect(err.contains("--http wants HOST:PORT"), "\(bad): \(err)")
        }
    }

    @Test func anIPv6LoopbackAddressServes() throws {
        let port = Self.freePort()
        let d = try DaemonHarness()
        try d.start(args: ["--http", "[::1]:\(port)"])
        let (rc, out, err) = try DaemonHarness.spawn(["/usr/bin/curl", "-s", "-g", "http://[::1]:\(port)/health"])
        #expect(rc == 0 && out == "ok\n", "\(out) \(err)")
        #expect(d.stop().status == 0)
    }
}
