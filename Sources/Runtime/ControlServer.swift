import EventLoop
import Foundation
import PhotomemoCore

/// The control socket: newline-delimited JSON requests and replies (DESIGN.md, "Control
/// socket"), many clients at once, all on the loop thread.
///
///     client ─▶ PipeConnection ─bytes─▶ ControlConnection ─line─▶ JSON ─▶ ControlCommands
///                      ▲                        │ reply / event lines
///                      └────────── write ◀──────┘   (bounded: a slow watcher is dropped)
final class ControlServer {
    private var server: PipeServer?
    private var connections: [ObjectIdentifier: ControlConnection] = [:]
    private let commands: ControlCommands

    init(loop: EventLoop, path: String, group: gid_t?, commands: ControlCommands) throws {
        self.commands = commands
        server = try PipeServer(loop: loop, path: path, mode: group == nil ? 0o600 : 0o660, group: group) { [unowned self] pipe in
            let c = ControlConnection(pipe: pipe, commands: self.commands)
            self.connections[ObjectIdentifier(c)] = c
            c.start { [unowned self] in self.connections.removeValue(forKey: ObjectIdentifier(c)) }
        }
    }

    var clientCount: Int { connections.count }

    func close() {
        server?.close()
        server = nil
        for c in Array(connections.values) { c.close() }
    }
}

/// One client. Requests are lines of at most 1 MiB; each gets exactly one reply line with
/// its `id`. Streaming commands then push event lines; if the client stops reading and
/// more than `maxBufferedBytes` wait unsent, it gets a final `too_slow` error line and is
/// disconnected, so it never costs the daemon more than that.
final class ControlConnection {
    let pipe: PipeConnection
    private let commands: ControlCommands
    private var buffer: [UInt8] = []
    private var discarding = false
    private var dropped = false
    private var onClose: (() -> Void)?
    static let maxRequestBytes = 1 << 20
    static let maxBufferedBytes = 1 << 20

    var peer: PipeConnection.Peer { pipe.peer }

    init(pipe: PipeConnection, commands: ControlCommands) {
        self.pipe = pipe
        self.commands = commands
    }

    func start(onClose: @escaping () -> Void) {
        self.onClose = onClose
        pipe.start(onRead: { [unowned self] bytes in self.received(bytes) }, onClose: { [unowned self] in
            self.commands.disconnected(self)
            self.onClose?()
            self.onClose = nil
        })
    }

    func close() { pipe.close() }

    private func received(_ bytes: [UInt8]) {
        buffer += bytes
        while let nl = buffer.firstIndex(of: 0x0A) {
            let line = Array(buffer[..<nl])
            buffer.removeSubrange(...nl)
            if discarding { discarding = false; continue }
            if line.count > Self.maxRequestBytes { tooLarge(); discarding = false; continue }
            handle(line)
            if pipe.isClosed { return }
        }
        if buffer.count > Self.maxRequestBytes {
            // No newline within 1 MiB: answer now, drop bytes until the line ends.
            buffer.removeAll()
            if !discarding { tooLarge() }
            discarding = true
        }
    }

    private func tooLarge() {
        send(error: PhotomemoError(.requestTooLarge, "request longer than 1 MiB"), id: .null)
    }

    private func handle(_ line: [UInt8]) {
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { return }
        let request: [String: JSONValue]
        do {
            guard case .object(let o) = try JSONValue.parse(Data(line)) else {
                throw PhotomemoError(.badRequest, "a request must be a JSON object")
            }
            request = o
        } catch let e as PhotomemoError {
            send(error: PhotomemoError(.badRequest, e.message), id: .null)
            return
        } catch {
            send(error: PhotomemoError(.badRequest, "\(error)"), id: .null)
            return
        }
        let id = request["id"] ?? .null
        guard let cmd = request["cmd"]?.stringValue else {
            send(error: PhotomemoError(.badRequest, "\"cmd\" (a string) is required"), id: id)
            return
        }
        commands.run(cmd, ControlRequest(values: request), from: self) { [weak self] result in
            switch result {
            case .success(let value): self?.send(result: value, id: id)
            case .failure(let error): self?.send(error: error, id: id)
            }
        }
    }

    func send(result: JSONValue, id: JSONValue) {
        writeLine(["id": id, "ok": true, "result": result])
    }

    func send(error: PhotomemoError, id: JSONValue) {
        writeLine(["id": id, "ok": false, "error": ["code": .string(error.code.rawValue), "message": .string(error.message)]])
    }

    /// Pushes a streamed event; drops the client if it has fallen too far behind: no
    /// more events, a final `too_slow` error line after what is buffered, and the
    /// connection closes once that is read (or after 10 s).
    func push(_ event: JSONValue) {
        guard !pipe.isClosed, !dropped else { return }
        if pipe.pendingWriteBytes > Self.maxBufferedBytes {
            dropped = true
            commands.disconnected(self)
            writeLine(["event": "error", "error": ["code": .string(PhotomemoError.Code.tooSlow.rawValue),
                       "message": "client did not read events fast enough; disconnected"]])
            Log.warning("dropping a control client (pid \(peer.pid)) that stopped reading")
            pipe.closeAfterWrites(lingerMs: 10_000)
            return
        }
        writeLine(event)
    }

    private func writeLine(_ value: JSONValue) {
        pipe.write(Array((value.jsonString + "\n").utf8))
    }
}

/// A request's arguments with typed accessors whose errors name the argument.
struct ControlRequest {
    let values: [String: JSONValue]

    func string(_ name: String) throws -> String? {
        guard let v = values[name], v != .null else { return nil }
        guard let s = v.stringValue else { throw PhotomemoError(.badRequest, "argument \"\(name)\" must be a string, got \(v.typeName)") }
        return s
    }

    func int(_ name: String) throws -> Int64? {
        guard let v = values[name], v != .null else { return nil }
        if let i = v.intValue { return i }
        if let s = v.stringValue, let i = Int64(s) { return i }
        throw PhotomemoError(.badRequest, "argument \"\(name)\" must be an integer, got \(v.typeName)")
    }

    func requiredString(_ name: String) throws -> String {
        guard let s = try string(name), !s.isEmpty else { throw PhotomemoError(.badRequest, "argument \"\(name)\" is required") }
        return s
    }

    func requiredInt(_ name: String) throws -> Int64 {
        guard let i = try int(name) else { throw PhotomemoError(.badRequest, "argument \"\(name)\" is required") }
        return i
    }
}
