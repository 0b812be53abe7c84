import EventLoop
import Foundation
import StageKit

/// `serve --http ADDR`: a few fixed GET routes (`/metrics`, `/health`) for monitors, on
/// the loop, with every cost bounded so a client cannot hurt the daemon:
/// - a request head over `maxHeadBytes` is answered 431 and closed;
/// - a head not complete `headDeadlineMs` after connecting (slowloris) is answered 408
///   and closed: a trickle of bytes does not extend it;
/// - at most `maxConnections` at once; a new one past that closes the oldest still
///   sending its head, so idle connections cannot lock a monitor out;
/// - one answer per connection (`Connection: close`); an answer the client does not read
///   is dropped with the connection after `lingerMs`.
final class HealthHTTPServer {
    static let maxHeadBytes = 8192
    static let maxConnections = 64
    static let headDeadlineMs: UInt64 = 5000
    static let lingerMs: UInt64 = 5000

    struct Answer {
        var status: Int
        var body: String
        var contentType = "text/plain; charset=utf-8"
    }
    /// Answers on the loop, once.
    typealias Route = (@escaping (Answer) -> Void) -> Void

    /// One connection and what it has sent of its head.
    private final class Client {
        let conn: PipeConnection
        let acceptedMs: UInt64
        var head: [UInt8] = []
        var answering = false
        init(_ conn: PipeConnection) { self.conn = conn; acceptedMs = conn.nowMs }
    }

    private let routes: [String: Route]
    private var server: TCPServer?
    private var clients: [ObjectIdentifier: Client] = [:]
    /// Closes heads past their deadline; one timer for all connections.
    private let sweep: LoopTimer
    let address: TCPServer.Address

    init(loop: EventLoop, address: TCPServer.Address, routes: [String: Route]) throws {
        self.routes = routes
        self.address = address
        sweep = try LoopTimer(loop: loop)
        do {
            server = try TCPServer(loop: loop, address: address) { [unowned self] conn in self.accept(conn) }
        } catch let e as SystemError {
            sweep.close()
            throw PhotomemoError(.badUsage, "cannot serve HTTP on \(address): \(Self.why(e))")
        }
        sweep.start(afterMs: 250, repeatMs: 250) { [unowned self] in self.closeLateHeads() }
        Log.notice("HTTP: GET /metrics and /health on http://\(address)")
    }

    private static func why(_ e: SystemError) -> String {
        switch e.errno {
        case EADDRINUSE: return "the address is in use (another process listens there; pick another port)"
        case EADDRNOTAVAIL: return "no interface of this machine has that address"
        case EACCES: return "a port below 1024 needs root"
        default: return e.description
        }
    }

    var connectionCount: Int { clients.count }

    private func accept(_ conn: PipeConnection) {
        if clients.count >= Self.maxConnections {
            guard let oldest = clients.values.filter({ !$0.answering }).min(by: { $0.acceptedMs < $1.acceptedMs }) else {
                conn.close()  // every slot is answering: they end within the linger time
                return
            }
            oldest.conn.close()
        }
        let client = Client(conn)
        let key = ObjectIdentifier(client)
        clients[key] = client
        conn.start(onRead: { [unowned self, unowned client] bytes in
            self.received(bytes, from: client)
        }, onClose: { [unowned self] in
            self.clients.removeValue(forKey: key)
        })
    }

    private func received(_ bytes: [UInt8], from client: Client) {
        guard !client.answering else { return }
        let seen = client.head.count
        client.head += bytes
        switch HTTPRequestHead.parse(client.head, maxBytes: Self.maxHeadBytes, newFrom: seen) {
        case nil: return
        case .failure(let refusal)?: answer(client, Answer(status: refusal.status, body: refusal.reason + "\n"))
        case .success(let head)?:
            guard let route = routes[head.path] else { return answer(client, Answer(status: 404, body: "no such path; try /metrics or /health\n")) }
            guard head.method == "GET" else { return answer(client, Answer(status: 405, body: "only GET is served here\n")) }
            client.answering = true
            client.head = []
            client.conn.pauseReading()
            route { [weak self, weak client] answer in
                guard let self, let client else { return }
                self.answer(client, answer)
            }
        }
    }

    private func answer(_ client: Client, _ a: Answer) {
        client.answering = true
        client.head = []
        let body = Array(a.body.utf8)
        var head = "HTTP/1.1 \(a.status) \(Self.reasonPhrase(a.status))\r\nContent-Type: \(a.contentType)\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\nCache-Control: no-store\r\n"
        if a.status == 405 { head += "Allow: GET\r\n" }
        client.conn.write(Array((head + "\r\n").utf8) + body)
        client.conn.closeAfterWrites(lingerMs: Self.lingerMs)
    }

    private func closeLateHeads() {
        guard let now = clients.values.first?.conn.nowMs else { return }
        for c in clients.values where !c.answering && now - c.acceptedMs >= Self.headDeadlineMs {
            answer(c, Answer(status: 408, body: "the request head did not arrive within \(Self.headDeadlineMs / 1000) s\n"))
        }
    }

    static func reasonPhrase(_ status: Int) -> String {
        [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
         431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"][status] ?? "Unknown"
    }

    func close() {
        sweep.close()
        server?.close()
        server = nil
        for c in Array(clients.values) { c.conn.close() }
    }
}
