import ControlProtocol
import FuzzDriver
import Index
import StageKit
@testable import Runtime

// A control-socket line as ControlConnection takes it: ControlRequestLine (JSON → id, cmd,
// arguments), AccessPolicy.check for an admin and for a user, then the argument readers
// the command runs before touching the journal or the index (CommandArguments). A
// refusal must be a PhotomemoError the client gets as a reply (or a PredicateSyntaxError,
// which RecordCommands turns into one); anything else, or a trap, is a bug. The reply
// itself must be JSON the client can read.

let callers = [Caller(uid: 0), Caller(uid: 60_001)]

/// The error reply line, as ControlConnection.send(error:id:) writes it, parses back.
func expectReadableReply(id: JSONValue, _ error: PhotomemoError) {
    let reply: JSONValue = ["id": id, "ok": false, "error": ["code": .string(error.code.rawValue), "message": .string(error.message)]]
    guard (try? JSONValue.parse(reply.jsonString)) == reply else { bug("unreadable reply \(reply.jsonString)") }
}

runFuzzer { bytes in
    // The connection splits on newlines: a request line never holds one.
    let line = Array(bytes.prefix { $0 != 0x0A })
    switch ControlRequestLine(line) {
    case .blank:
        return
    case .invalid(let id, let error):
        expectReadableReply(id: id, error)
    case .request(let id, let cmd, let request):
        for caller in callers {
            do {
                // An unknown name is the router's `unknown_command`, a PhotomemoError reply.
                guard let command = ControlCommand(rawValue: cmd) else { continue }
                try AccessPolicy.check(command, request.values, by: caller)
                try CommandArguments.read(cmd, request)
            } catch let e as PhotomemoError {
                expectReadableReply(id: id, e)
            } catch is PredicateSyntaxError {
                continue
            } catch {
                bug("\(cmd) refused with \(error), which the client would see as internal")
            }
        }
    }
}
