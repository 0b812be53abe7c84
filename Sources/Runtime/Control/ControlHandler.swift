import ControlProtocol
import EventLoop
import Foundation
import Journal
import StageKit

/// A group of control commands and the dependencies they need, like a swift-nio
/// ChannelHandler: `handle` for its commands, a default for a connection that goes away.
protocol ControlHandler: AnyObject {
    typealias Reply = (Result<JSONValue, PhotomemoError>) -> Void
    var commands: Set<ControlCommand> { get }
    /// Runs on the loop thread; anything blocking goes through `loop.reply(...)`.
    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws
    func disconnected(_ conn: ControlConnection)
}

extension ControlHandler {
    func disconnected(_ conn: ControlConnection) {}
}

/// What the transport (`ControlServer`) hands each request line to.
protocol ControlDispatch: AnyObject {
    func run(_ cmd: String, _ req: ControlRequest, from conn: ControlConnection, reply: @escaping ControlHandler.Reply)
    func disconnected(_ conn: ControlConnection)
}

extension EventLoop {
    /// Runs `work` off the loop and replies on it: control errors keep their code, journal
    /// errors become `not_found`/`conflict`, anything else `internal`.
    func reply(_ reply: @escaping ControlHandler.Reply, _ work: @escaping @Sendable () throws -> JSONValue) {
        submit({ () -> Result<JSONValue, PhotomemoError> in
            do { return .success(try work()) } catch let e as PhotomemoError { return .failure(e) } catch JobControlError.notFound {
                return .failure(PhotomemoError(.notFound, "no such job"))
            } catch JobControlError.conflict(let m) {
                return .failure(PhotomemoError(.conflict, m))
            } catch {
                return .failure(PhotomemoError.forClient(error))
            }
        }, then: reply)
    }
}

extension PhotomemoError {
    /// An error no handler named, as a client is told it: `internal`, in words. Foundation's
    /// own text (`Error Domain=NSCocoaErrorDomain Code=4 "..." UserInfo={...}`) is not for
    /// users: a file error says which file and what went wrong, as strerror would (`SystemError.reason`).
    static func forClient(_ error: any Error) -> PhotomemoError {
        guard let e = error as? CocoaError else { return PhotomemoError(.internalError, "\(error)") }
        let what: String
        if let posix = e.userInfo[NSUnderlyingErrorKey] as? POSIXError {
            what = SystemError.reason(posix.code.rawValue)
        } else if [.fileNoSuchFile, .fileReadNoSuchFile].contains(e.code) {
            what = "No such file or directory"
        } else if [.fileReadNoPermission, .fileWriteNoPermission].contains(e.code) {
            what = "Permission denied"
        } else {
            what = "the file operation failed"
        }
        return PhotomemoError(.io, (e.filePath.map { "\($0): " } ?? "") + what)
    }
}
