import CPosix
import CUV
import Glibc
import StageKit

/// A Unix-domain stream socket listening on the loop (`uv_pipe_t`). Each accepted client
/// is a `PipeConnection` handed to `onConnection`.
public final class PipeServer: LoopHandle {
    private let loop: EventLoop
    private var onConnection: ((PipeConnection) -> Void)?
    public let path: String

    /// Binds `path` with `mode` (and `group` when given) before listening, so no client
    /// can connect while the socket is more open than asked. A stale file at `path` is
    /// removed: the caller holds the home's lock, so no live daemon owns it.
    public init(loop: EventLoop, path: String, mode: mode_t, group: gid_t? = nil,
                _ onConnection: @escaping (PipeConnection) -> Void) throws {
        // uv_pipe_bind in libuv 1.44 silently truncates longer paths (PLATFORM.md).
        guard path.utf8.count <= 107 else {
            throw SystemError("socket path \(path) is \(path.utf8.count) bytes, over the 107-byte limit", errno: ENAMETOOLONG)
        }
        self.loop = loop
        self.path = path
        super.init(type: UV_NAMED_PIPE)
        try uvCheck(uv_pipe_init(loop.uv, pipe, 0), "uv_pipe_init")
        retainFromHandle()
        self.onConnection = onConnection
        unlink(path)
        do {
            try uvCheck(uv_pipe_bind(pipe, path), "bind \(path)")
            if let group { try syscall("chown \(path)", blocking: { chown(path, UInt32.max, group) }) }
            try syscall("chmod \(path)", blocking: { chmod(path, mode) })
            try uvCheck(uv_listen(UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_stream_t.self), 128, { server, status in
                guard status == 0 else { return }
                LoopHandle.owner(UnsafeMutableRawPointer(server), as: PipeServer.self).accept()
            }), "listen \(path)")
        } catch {
            close()
            throw error
        }
    }

    private var pipe: UnsafeMutablePointer<uv_pipe_t> { raw.assumingMemoryBound(to: uv_pipe_t.self) }

    private func accept() {
        guard let client = try? PipeConnection(loop: loop) else { return }
        let rc = uv_accept(UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_stream_t.self), client.stream)
        guard rc == 0 else { client.close(); return }
        client.readPeer()
        onConnection?(client)
    }

    override func didClose() {
        onConnection = nil
        unlink(path)
    }
}

/// One connected client: reads arrive as byte chunks, writes are queued and counted so
/// the owner can bound what a slow reader costs. A Unix-socket client, or a TCP one
/// (`TCPServer`): past accepting, a stream is a stream.
public final class PipeConnection: LoopHandle {
    public struct Peer: Sendable, Equatable {
        public let pid: Int32
        public let uid: UInt32
        public let gid: UInt32
    }

    public private(set) var peer = Peer(pid: 0, uid: UInt32.max, gid: UInt32.max)
    /// Bytes handed to `write` whose write callback has not run yet.
    public private(set) var pendingWriteBytes = 0
    /// Loop time (ms) of the last write that completed, or that started with nothing
    /// pending: how long a client has been leaving its replies unread.
    public private(set) var lastWriteProgressMs: UInt64 = 0
    /// Runs after each completed write, so the owner can send more once the buffer drains.
    public var onWriteProgress: (() -> Void)?
    public private(set) var isReadingPaused = false
    private var onRead: (([UInt8]) -> Void)?
    private var onClose: (() -> Void)?
    private let loop: EventLoop
    private var lingerTimer: LoopTimer?

    init(loop: EventLoop, tcp: Bool = false) throws {
        self.loop = loop
        super.init(type: tcp ? UV_TCP : UV_NAMED_PIPE)
        if tcp {
            try uvCheck(uv_tcp_init(loop.uv, raw.assumingMemoryBound(to: uv_tcp_t.self)), "uv_tcp_init")
        } else {
            try uvCheck(uv_pipe_init(loop.uv, raw.assumingMemoryBound(to: uv_pipe_t.self), 0), "uv_pipe_init")
        }
        retainFromHandle()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { raw.assumingMemoryBound(to: uv_stream_t.self) }

    fileprivate func readPeer() {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(handle, &fd) == 0 else { return }
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        if pm_peer_credentials(fd, &pid, &uid, &gid) == 0 { peer = Peer(pid: pid, uid: uid, gid: gid) }
    }

    /// Starts reading; `onRead` gets each chunk, `onClose` runs once when the peer hangs
    /// up, a read fails, or `close()` is called.
    public func start(onRead: @escaping ([UInt8]) -> Void, onClose: @escaping () -> Void) {
        self.onRead = onRead
        self.onClose = onClose
        startReading()
    }

    /// Stops taking bytes from the socket (backpressure: the client's requests wait
    /// unread in the kernel) until `resumeReading()`.
    public func pauseReading() {
        guard !isClosed, !isReadingPaused else { return }
        isReadingPaused = true
        uv_read_stop(stream)
    }

    public func resumeReading() {
        guard !isClosed, isReadingPaused, lingerTimer == nil else { return }
        isReadingPaused = false
        startReading()
    }

    /// Loop time now, in ms.
    public var nowMs: UInt64 { loop.nowMs }

    private func startReading() {
        uv_read_start(stream, { _, suggested, buf in
            buf!.pointee = uv_buf_init(UnsafeMutablePointer<CChar>.allocate(capacity: 65536), 65536)
        }, { stream, n, buf in
            let me = LoopHandle.owner(UnsafeMutableRawPointer(stream), as: PipeConnection.self)
            defer { buf?.pointee.base?.deallocate() }
            if n > 0 {
                let bytes = UnsafeRawBufferPointer(start: buf!.pointee.base, count: n)
                me.onRead?(Array(bytes))
            } else if n < 0 {
                me.close()
            }
        })
    }

    /// Queues bytes; they are copied and kept alive until libuv's write callback.
    public func write(_ bytes: [UInt8]) {
        guard !isClosed, !bytes.isEmpty else { return }
        let req = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        let data = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        bytes.withUnsafeBytes { data.update(from: $0.bindMemory(to: CChar.self).baseAddress!, count: bytes.count) }
        req.pointee.data = Unmanaged.passRetained(WriteContext(connection: self, data: data, count: bytes.count)).toOpaque()
        var buf = uv_buf_init(data, UInt32(bytes.count))
        if pendingWriteBytes == 0 { lastWriteProgressMs = nowMs }
        pendingWriteBytes += bytes.count
        let rc = uv_write(req, stream, &buf, 1) { req, _ in
            let ctx = Unmanaged<WriteContext>.fromOpaque(req!.pointee.data!).takeRetainedValue()
            let c = ctx.connection
            c.pendingWriteBytes -= ctx.count
            ctx.data.deallocate()
            req!.deallocate()
            guard !c.isClosed else { return }
            c.lastWriteProgressMs = c.nowMs
            c.onWriteProgress?()
        }
        if rc != 0 {
            let ctx = Unmanaged<WriteContext>.fromOpaque(req.pointee.data!).takeRetainedValue()
            pendingWriteBytes -= ctx.count
            data.deallocate()
            req.deallocate()
            close()
        }
    }

    /// Closes once everything written so far has been sent (`uv_shutdown`), or after
    /// `lingerMs` if the peer does not read it: a final message reaches a client that
    /// catches up, and one that never reads costs no more than the linger time.
    public func closeAfterWrites(lingerMs: UInt64) {
        guard !isClosed, lingerTimer == nil else { return }
        uv_read_stop(stream)
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        req.pointee.data = Unmanaged.passRetained(self).toOpaque()
        let rc = uv_shutdown(req, stream) { req, _ in
            let me = Unmanaged<PipeConnection>.fromOpaque(req!.pointee.data!).takeRetainedValue()
            req!.deallocate()
            me.close()
        }
        if rc != 0 {
            Unmanaged<PipeConnection>.fromOpaque(req.pointee.data!).release()
            req.deallocate()
            close()
            return
        }
        lingerTimer = try? LoopTimer(loop: loop)
        lingerTimer?.start(afterMs: lingerMs) { [unowned self] in self.close() }
    }

    override func willClose() {
        lingerTimer?.close()
        lingerTimer = nil
        uv_read_stop(stream)
        let done = onClose
        onClose = nil
        done?()
    }

    override func didClose() {
        onRead = nil
        onWriteProgress = nil
    }
}

/// What a pending write keeps alive: the bytes, and the connection for its counter.
private final class WriteContext {
    let connection: PipeConnection
    let data: UnsafeMutablePointer<CChar>
    let count: Int

    init(connection: PipeConnection, data: UnsafeMutablePointer<CChar>, count: Int) {
        self.connection = connection
        self.data = data
        self.count = count
    }
}
