import EventLoop
import Foundation
import PhotomemoCore

/// The control socket: newline-delimited JSON requests and replies (DESIGN.md, "Control
/// socket"), many clients at once, all on the loop thread.
///
///     client ─▶ PipeConnection ─bytes─▶ ControlConnection ─line─▶ JSON ─▶ ControlCommands
///                      ▲                        │ reply / event lines
///                      └────────── write ◀──────┘   (bounded: see ControlConnection)
final class ControlServer {
    private var server: PipeServer?
    private var connections: [ObjectIdentifier: ControlConnection] = [:]
    private let commands: ControlCommands
    /// Once a second: drops clients that leave their replies unread (ControlConnection.stallMs).
    private let stallTimer: LoopTimer

    init(loop: EventLoop, path: String, group: gid_t?, commands: ControlCommands) throws {
        self.commands = commands
        stallTimer = try LoopTimer(loop: loop)
        server = try PipeServer(loop: loop, path: path, mode: group == nil ? 0o600 : 0o660, group: group) { [unowned self] pipe in
            let c = ControlConnection(pipe: pipe, commands: self.commands)
            self.connections[ObjectIdentifier(c)] = c
            c.start { [unowned self] in self.connections.removeValue(forKey: ObjectIdentifier(c)) }
        }
        stallTimer.start(afterMs: 1000, repeatMs: 1000) { [unowned self] in
            for c in Array(self.connections.values) { c.dropIfStalled() }
        }
    }

    var clientCount: Int { connections.count }

    func close() {
        stallTimer.close()
        server?.close()
        server = nil
        for c in Array(connections.values) { c.close() }
    }
}

/// A request's arguments with typed accessors whose errors name the argument.
struct ControlRequest: Equatable {
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
