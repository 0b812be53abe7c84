import Foundation
import PhotomemoCore
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
