import Foundation
import Postgres
import TestSupport

/// One server for the suite (each test takes a database of its own); stopped at exit,
/// since a static is never deinitialised.
enum Shared {
    static let server: PostgresServer = {
        let s = try! PostgresServer()
        atexit { Shared.server.shutdown() }
        return s
    }()

    /// A fresh database on the shared server.
    static func database(_ test: String = #function) throws -> String {
        let name = "t_" + test.prefix(while: { $0 != "(" }).lowercased() + "_\(UInt32.random(in: 0...UInt32.max))"
        return try server.createDatabase(name)
    }
}

/// Runs `body` on `n` threads at once (released together) and waits for all.
func onThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for i in 0..<n {
        group.enter()
        Thread.detachNewThread {
            start.wait()
            body(i)
            group.leave()
        }
    }
    for _ in 0..<n { start.signal() }
    group.wait()
}

/// Waits until `fd` is readable or `ms` passed.
func waitReadable(_ fd: Int32, ms: Int32) -> Bool {
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&p, 1, ms) == 1
}
