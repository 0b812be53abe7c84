import EventLoop
import Foundation
import PhotomemoCore
import StageKit

/// The control socket: newline-delimited JSON requests and replies (DESIGN.md, "Control
/// socket"), many clients at once, all on the loop thread.
///
///     client ─▶ PipeConnection ─bytes─▶ ControlConnection ─line─▶ JSON ─▶ ControlRouter
///                      ▲                        │ reply / event lines
///                      └────────── write ◀──────┘   (bounded: see ControlConnection)
///
/// It knows nothing of commands. A user (not an admin) has at most `maxPerUser`
/// connections, and users together `maxUsers`, so no one user can take every descriptor
/// the daemon has (idle connections cost one each); admins are never refused.
final class ControlServer {
    static let maxPerUser = 32
    static let maxUsers = 512

    private var server: PipeServer?
    private var connections: [ObjectIdentifier: ControlConnection] = [:]
    private var perUser: [UInt32: Int] = [:]
    private var lastRefusalLog = 0.0
    private let commands: any ControlDispatch
    /// Once a second: drops clients that leave their replies unread (ControlConnection.stallMs).
    private let stallTimer: LoopTimer

    init(loop: EventLoop, path: String, group: gid_t?, commands: any ControlDispatch) throws {
        self.commands = commands
        stallTimer = try LoopTimer(loop: loop)
        server = try PipeServer(loop: loop, path: path, mode: group == nil ? 0o600 : 0o660, group: group) { [unowned self] pipe in
            self.accept(pipe)
        }
        stallTimer.start(afterMs: 1000, repeatMs: 1000) { [unowned self] in
            for c in Array(self.connections.values) { c.dropIfStalled() }
        }
    }

    var clientCount: Int { connections.count }

    private func accept(_ pipe: PipeConnection) {
        let uid = pipe.peer.uid
        let user = !UnixUser.isAdmin(uid: uid)
        if user {
            let users = perUser.values.reduce(0, +)
            guard perUser[uid, default: 0] < Self.maxPerUser, users < Self.maxUsers else {
                if unixNow() - lastRefusalLog >= 1 {  // one line a second, however fast they come
                    lastRefusalLog = unixNow()
                    Log.warning("refusing a control connection from uid \(uid) pid \(pipe.peer.pid): it has \(perUser[uid, default: 0]) "
                                + "(at most \(Self.maxPerUser) per user, \(Self.maxUsers) for all users; \(users) open)")
                }
                pipe.close()
                return
            }
            perUser[uid, default: 0] += 1
        }
        let c = ControlConnection(pipe: pipe, commands: commands)
        connections[ObjectIdentifier(c)] = c
        c.start { [unowned self] in
            self.connections.removeValue(forKey: ObjectIdentifier(c))
            if user { self.perUser[uid, default: 1] -= 1; if self.perUser[uid] == 0 { self.perUser.removeValue(forKey: uid) } }
        }
    }

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
