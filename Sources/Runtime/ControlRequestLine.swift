import Foundation
import StageKit

/// What one control-socket line is before any command runs, kept apart from the connection
/// so that it is a pure function of the bytes (the fuzz target `fuzz-request` drives it).
enum ControlRequestLine: Equatable {
    /// Only spaces and tabs: no reply at all.
    case blank
    case request(id: JSONValue, cmd: String, ControlRequest)
    /// Answered with this error; `id` is the request's own when it could be read, else null.
    case invalid(id: JSONValue, PhotomemoError)

    init(_ line: [UInt8]) {
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) {
            self = .blank
            return
        }
        let values: [String: JSONValue]
        do {
            guard case .object(let o) = try JSONValue.parse(Data(line)) else {
                throw PhotomemoError(.badRequest, "a request must be a JSON object")
            }
            values = o
        } catch let e as PhotomemoError {
            self = .invalid(id: .null, PhotomemoError(.badRequest, e.message))
            return
        } catch {
            self = .invalid(id: .null, PhotomemoError(.badRequest, "\(error)"))
            return
        }
        let id = values["id"] ?? .null
        guard let cmd = values["cmd"]?.stringValue else {
            self = .invalid(id: id, PhotomemoError(.badRequest, "\"cmd\" (a string) is required"))
            return
        }
        self = .request(id: id, cmd: cmd, ControlRequest(values: values))
    }
}
