import Foundation
import Testing
@testable import Runtime

/// The strict HTTP/1.x head parser under `serve --http`, fed whole and a byte at a time.
@Suite struct HTTPRequestHeadTests {
    /// Feeds `text` in chunks of `size` as a connection receives it: the first answer.
    func feed(_ text: String, size: Int, max: Int = 8192) -> Result<HTTPRequestHead, HTTPRequestHead.Refusal>? {
        var got: [UInt8] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let seen = got.count
            got += bytes[i..<min(bytes.count, i + size)]
            i += size
            if let r = HTTPRequestHead.parse(got, maxBytes: max, newFrom: seen) { return r }
        }
        return nil
    }

    @Test func aGoodHeadParsesWholeOrAByteAtATime() throws {
        let text = "GET /metrics?x=1 HTTP/1.1\r\nHost: localhost:9464\r\nUser-Agent: Prometheus/2\r\nAccept: */*\r\n\r\n"
        for size in [1, 2, 3, 7, text.utf8.count] {
            let head = try #require(try feed(text, size: size)?.get(), "size \(size)")
            #expect(head.method == "GET" && head.path == "/metrics" && head.version == "HTTP/1.1")
            #expect(head.headers.map(\.name) == ["host", "user-agent", "accept"])
            #expect(head.headers[0].value == "localhost:9464")
        }
        #expect(feed("GET /health HTTP/1.0\r\n\r\n", size: 1).map { (try? $0.get())?.path } == "/health")
        #expect(feed("GET /health HTTP/1.1\r\nHost: x\r\n", size: 1) == nil)  // not finished yet
    }

    @Test func anythingNotStrictIsRefused() {
        let refused: [(String, Int)] = [
            ("GET /health HTTP/1.1\nHost: x\n\n", 400), ("GET /health HTTP/1.1\r\nHost: x\rY\r\n\r\n", 400),
            ("GET /health HTTP/1.1\r\nHost: x\u{0}\r\n\r\n", 400), ("GET /health HTTP/1.1\r\n\r\n", 400),
            ("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400), ("G(T /health HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("GET http://x/health HTTP/1.1\r\nHost: x\r\n\r\n", 400), ("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", 400),
            ("\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n", 400), ("GET /health HTTP/1.1\r\nHost: x\r\n\tfolded\r\n\r\n", 400),
            ("GET /health HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 9000) + "\r\n\r\n", 431),
            ("GET /health HTTP/1.1\r\nX: " + String(repeating: "a", count: 9000), 431),
        ]
        for (text, status) in refused {
            for size in [1, 5, 100_000] {
                guard case .failure(let r)? = feed(text, size: size) else {
                    Issue.record("accepted or waiting: \(text.prefix(60).debugDescription) in chunks of \(size)")
                    continue
                }
                #expect(r.status == status, "\(text.prefix(60).debugDescription) in chunks of \(size): \(r)")
            }
        }
    }

    @Test func aHeadFedAByteAtATimeIsScannedOnce() {
        // 8,000 one-byte reads of an unfinished head: each looks at its new byte only.
        let text = "GET /health HTTP/1.1\r\nX: " + String(repeating: "a", count: 8000)
        let t0 = Date()
        #expect(feed(text, size: 1) == nil)
        #expect(Date().timeIntervalSince(t0) < 0.5)
    }
}
