import EventLoop
import Foundation
import Index
import StageKit
import Testing
@testable import Runtime

/// A daemon stopped as it starts: the deliverer is closed before its start's first step
/// (putting back what it was sending, on the pool) comes back, which then started the
/// closed timer and trapped ("timer used after close": the daemon died of SIGILL on a
/// SIGTERM seconds after it started).
@Suite struct DelivererStopTests {
    @Test func closedBeforeItsStartComesBackItStartsNothing() throws {
        let root = NSTemporaryDirectory() + "pm-deliverer-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let loop = try EventLoop()
        let records = try RecordStore(path: root + "/records.sqlite")
        let deliverer = try NotificationDeliverer(loop: loop, events: EventBus(), store: records, retry: { .default })
        deliverer.start()
        deliverer.close()
        loop.run()
        #expect(loop.close() == 0)  // nothing left open
    }
}
