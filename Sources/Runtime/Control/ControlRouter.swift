import ControlProtocol
import StageKit

/// Routes each request to the handler of its command, after the one authorization point
/// (`AccessPolicy`) has seen the caller (SO_PEERCRED).
///
///     ControlServer ─line─▶ ControlRouter ─▶ AccessPolicy.check ─▶ JobHandlers | StatusHandlers
///                                                                 | RecordHandlers | SubscriptionHandlers
final class ControlRouter: ControlDispatch {
    private let handlers: [ControlCommand: any ControlHandler]
    private let all: [any ControlHandler]

    init(_ handlers: [any ControlHandler]) {
        var byCommand: [ControlCommand: any ControlHandler] = [:]
        for h in handlers {
            for c in h.commands {
                precondition(byCommand[c] == nil, "two handlers for \(c.rawValue)")  // a programming error
                byCommand[c] = h
            }
        }
        precondition(byCommand.count == ControlCommand.allCases.count, "a command without a handler")
        self.handlers = byCommand
        all = handlers
    }

    func run(_ cmd: String, _ req: ControlRequest, from conn: ControlConnection, reply: @escaping ControlHandler.Reply) {
        run(cmd, req, from: conn, as: nil, reply: reply)
    }

    /// `caller`: who asks; the connection's peer (SO_PEERCRED) unless a test names one.
    func run(_ cmd: String, _ req: ControlRequest, from conn: ControlConnection, as caller: Caller?,
             reply: @escaping ControlHandler.Reply) {
        let caller = caller ?? conn.caller
        let reply = Self.screened(reply, for: caller, cmd)
        do {
            guard let command = ControlCommand(rawValue: cmd), let handler = handlers[command] else {
                let names = ControlCommand.allCases.map(\.rawValue)
                let hint = didYouMean(cmd, names).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw PhotomemoError(.unknownCommand, "unknown command \"\(cmd)\"\(hint); commands: \(names.joined(separator: ", "))")
            }
            // No command's argument may carry a NUL: nothing the daemon keeps can hold one
            // (subscriptions, ACLs, predicates...), and C strings would cut it short.
            for (name, v) in req.values.sorted(by: { $0.key < $1.key }) {
                if let place = v.placeOfNUL("argument \"\(name)\"") {
                    throw PhotomemoError(.badRequest, "\(place) contains a NUL character (U+0000), which no request may carry")
                }
            }
            try AccessPolicy.check(command, req.values, by: caller)
            try handler.handle(command, req, caller, from: conn, reply: reply)
        } catch let e as PhotomemoError {
            reply(.failure(e))
        } catch {
            reply(.failure(PhotomemoError.forClient(error)))
        }
    }

    /// A database or internal error's text (SQL, the engine's words, Foundation's NSError
    /// descriptions, other users' keys) is an admin's to read: a user gets the stable code
    /// and a generic message, and the detail goes to the log.
    static func screened(_ reply: @escaping ControlHandler.Reply, for caller: Caller, _ cmd: String) -> ControlHandler.Reply {
        guard !caller.isAdmin else { return reply }
        return { result in
            guard case .failure(let e) = result, e.code == .database || e.code == .noSpace || e.code == .internalError else { return reply(result) }
            Log.error("control: \(Log.oneLine(String(cmd.prefix(40)))) from uid \(caller.uid) failed: \(e)")
            let what = e.code == .internalError ? "an internal error" : "a database error"
            reply(.failure(PhotomemoError(e.code, "\(what) ended this request; the daemon's log has the detail (an admin's to read)")))
        }
    }

    func disconnected(_ conn: ControlConnection) {
        for h in all { h.disconnected(conn) }
    }
}
