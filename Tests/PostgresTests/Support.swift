import Foundation
import Postgres
import TestSupport

/// Databases on the one shared server of the test process.
enum Shared {
    static func database(_ test: String = #function) throws -> String { try PostgresServer.freshDatabase(test) }
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
