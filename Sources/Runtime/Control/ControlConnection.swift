import ControlProtocol
import EventLoop
import Foundation
import StageKit

/// One client of the control socket. Requests are lines of at most 1 MiB; each gets
/// exactly one reply line with its `id`. What a client costs the daemon is bounded:
/// - at most `maxRequestsInFlight` requests (an `asset` stream counts until its end) run
///   at once; further lines wait unread: the connection stops reading the socket while it
///   has that many, or while `readPauseBytes` of replies are still unsent;
/// - asset chunks are read and sent only while the unsent bytes are under
///   `streamWatermark`, so an original is never held whole;
/// - a client with more than `maxQueuedReplyBytes` unsent, or that has requests waiting
///   and reads nothing for `stallMs`, is disconnected with a log line naming its uid/pid;
/// - a `watch`/follow client more than `maxBufferedBytes` behind gets a final `too_slow`
///   event and is disconnected.
final class ControlConnection {
    let pipe: PipeConnection
    private let commands: any ControlDispatch
    private var buffer: [UInt8] = []
    private var discarding = false
    private(set) var dropped = false
    private var processing = false
    private var onClose: (() -> Void)?
    /// Requests read and not yet answered, plus asset streams not yet ended.
    var inFlight = 0
    /// Asset replies being streamed (ControlConnection+Streams), taking turns from `nextStream`.
    var streams: [AssetStream] = []
    var nextStream = 0

    static let maxRequestBytes = 1 << 20
    static let maxBufferedBytes = 1 << 20
    static let maxRequestsInFlight = 16
    static let readPauseBytes = 1 << 20
    static let maxQueuedReplyBytes = 8 << 20
    static let streamWatermark = 256 << 10
    static let stallMs: UInt64 = 10_000

    var peer: PipeConnection.Peer { pipe.peer }
    /// Who the peer is, looked up once (a passwd lookup per request would read NSS on the loop).
    private(set) lazy var caller = Caller(uid: peer.uid)

    init(pipe: PipeConnection, commands: any ControlDispatch) {
        self.pipe = pipe
        self.commands = commands
    }

    func start(onClose: @escaping () -> Void) {
        self.onClose = onClose
        pipe.onWriteProgress = { [unowned self] in
            self.pumpStreams()
            self.takeRequests()
        }
        pipe.start(onRead: { [unowned self] bytes in
            self.buffer += bytes
            self.takeRequests()
        }, onClose: { [unowned self] in
            self.streams.removeAll()
            self.commands.disconnected(self)
            self.onClose?()
            self.onClose = nil
        })
    }

    func close() { pipe.close() }

    private var acceptsRequests: Bool {
        inFlight < Self.maxRequestsInFlight && pipe.pendingWriteBytes < Self.readPauseBytes
    }

    /// Handles the complete lines buffered, as long as the limits allow; reads the socket
    /// again only then.
    func takeRequests() {
        guard !processing, !pipe.isClosed else { return }
        processing = true
        defer { processing = false }
        while !pipe.isClosed && !dropped && acceptsRequests {
            guard let nl = buffer.firstIndex(of: 0x0A) else {
                if buffer.count > Self.maxRequestBytes {
                    // No newline within 1 MiB: answer now, drop bytes until the line ends.
                    buffer.removeAll()
                    if !discarding { tooLarge() }
                    discarding = true
                }
                break
            }
            let line = Array(buffer[..<nl])
            buffer.removeSubrange(...nl)
            if discarding { discarding = false; continue }
            if line.count > Self.maxRequestBytes { tooLarge(); continue }
            handle(line)
        }
        guard !pipe.isClosed, !dropped else { return }
        if acceptsRequests { pipe.resumeReading() } else { pipe.pauseReading() }
    }

    private func tooLarge() {
        send(error: PhotomemoError(.requestTooLarge, "request longer than 1 MiB"), id: .null)
    }

    private func handle(_ line: [UInt8]) {
        let id: JSONValue, cmd: String, request: ControlRequest
        switch ControlRequestLine(line) {
        case .blank: return
        case .invalid(let errorID, let error):
            send(error: error, id: errorID)
            return
        case .request(let i, let c, let r): (id, cmd, request) = (i, c, r)
        }
        inFlight += 1
        commands.run(cmd, request, from: self) { [weak self] result in
            guard let self else { return }
            self.inFlight -= 1
            switch result {
            case .success(let value): self.send(result: value, id: id)
            case .failure(let error): self.send(error: error, id: id)
            }
            self.takeRequests()
        }
    }

    func send(result: JSONValue, id: JSONValue) {
        writeReply(ControlReply.ok(id: id, result))
    }

    func send(error: PhotomemoError, id: JSONValue) {
        writeReply(ControlReply.error(id: id, error))
    }

    private func writeReply(_ value: JSONValue) {
        guard !pipe.isClosed, !dropped else { return }
        pipe.write(Array((value.jsonString + "\n").utf8))
        if pipe.pendingWriteBytes > Self.maxQueuedReplyBytes {
            disconnect("\(pipe.pendingWriteBytes) bytes of replies unread (limit \(Self.maxQueuedReplyBytes))")
        }
    }

    /// Disconnects a client that has requests waiting on it and has read nothing of its
    /// replies for `stallMs` (the server's timer calls this once a second).
    func dropIfStalled() {
        guard !pipe.isClosed, !dropped, pipe.pendingWriteBytes > 0,
              inFlight > 0 || buffer.contains(0x0A) else { return }
        let idle = pipe.nowMs &- pipe.lastWriteProgressMs
        if idle >= Self.stallMs {
            disconnect("read none of its \(pipe.pendingWriteBytes) bytes of replies for \(idle / 1000) s with \(inFlight) requests in flight")
        }
    }

    private func disconnect(_ why: String) {
        Log.warning("disconnecting control client uid \(peer.uid) pid \(peer.pid): \(why)")
        dropped = true
        streams.removeAll()
        pipe.close()
    }

    /// Pushes a streamed event; drops the client if it has fallen too far behind: no
    /// more events, a final `too_slow` error line after what is buffered, and the
    /// connection closes once that is read (or after 10 s).
    func push(_ event: JSONValue) {
        guard !pipe.isClosed, !dropped else { return }
        if pipe.pendingWriteBytes > Self.maxBufferedBytes {
            dropped = true
            commands.disconnected(self)
            pipe.write(Array((JSONValue.object(["event": "error", "error": ["code": .string(PhotomemoError.Code.tooSlow.rawValue),
                       "message": "client did not read events fast enough; disconnected"]]).jsonString + "\n").utf8))
            Log.warning("disconnecting control client uid \(peer.uid) pid \(peer.pid): more than \(Self.maxBufferedBytes >> 20) MiB of events unread (too_slow)")
            pipe.closeAfterWrites(lingerMs: 10_000)
            return
        }
        pipe.write(Array((event.jsonString + "\n").utf8))
    }
}
