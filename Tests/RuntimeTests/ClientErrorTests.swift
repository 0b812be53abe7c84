import ControlProtocol
import Foundation
import StageKit
import Testing
@testable import EventLoop
@testable import Runtime

/// Errors a client is told never carry Foundation's NSError text (issue 24: a retry
/// printed `Error Domain=NSCocoaErrorDomain Code=4 ...`).
@Suite struct ClientErrorTests {
    /// What a control reply says when its work throws `error`.
    func replied(_ error: any Error) throws -> PhotomemoError? {
        let loop = try EventLoop()
        var got: Result<JSONValue, PhotomemoError>?
        loop.reply({ got = $0 }) { throw error }
        loop.run()
        #expect(loop.close() == 0)
        if case .failure(let e) = got { return e }
        return nil
    }

    @Test func aFoundationFileErrorIsSaidInWordsWithItsFile() throws {
        let moved = CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "/home/q/quarantine/b.jpg"])
        let e = try #require(try replied(moved))
        #expect(e.code == .io)
        #expect(e.message == "/home/q/quarantine/b.jpg: No such file or directory")
        #expect(!e.message.contains("NSCocoaErrorDomain") && !e.message.contains("Code="))
        let denied = CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: "/x", NSUnderlyingErrorKey: POSIXError(.EACCES)])
        #expect(try replied(denied)?.message == "/x: Permission denied")
    }
}

/// Every command, thrown at synchronously: what the router's own catch-all answers.
private final class ThrowingHandler: ControlHandler {
    let error: any Error
    init(_ error: any Error) { self.error = error }
    var commands: Set<ControlCommand> { Set(ControlCommand.allCases) }
    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws { throw error }
}

extension ClientErrorTests {
    /// A handler that throws before it replies (not through `loop.reply`) is answered the
    /// same way: an admin, whose errors are not screened, never sees Foundation's text.
    @Test func aHandlersOwnFoundationErrorIsSaidInWordsToo() throws {
        let loop = try EventLoop()
        let router = ControlRouter([ThrowingHandler(CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "/q/b.jpg"]))])
        let conn = ControlConnection(pipe: try PipeConnection(loop: loop), commands: router)
        var got: Result<JSONValue, PhotomemoError>?
        router.run("status", ControlRequest(values: [:]), from: conn, as: Caller(uid: 0)) { got = $0 }
        conn.close()
        loop.run()
        #expect(loop.close() == 0)
        guard case .failure(let e) = got else { Issue.record("no failure: \(String(describing: got))"); return }
        #expect(e.code == .io && e.message == "/q/b.jpg: No such file or directory", "\(e)")
    }
}
