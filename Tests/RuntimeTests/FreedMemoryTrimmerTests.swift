import EventLoop
import Foundation
import Testing
@testable import Runtime

/// Freed memory goes back only when the daemon is quiet: a tick in which a stage ran or
/// started trims nothing (the next photo reuses what the last one freed), a quiet tick
/// trims on the pool.
@Suite struct FreedMemoryTrimmerTests {
    @Test func trimsOnlyInTicksWithNoStageStartedOrRunning() throws {
        let loop = try EventLoop()
        let trimmed = LockedCounter()
        var ticks = 0, trimsWhileBusy = -1
        var trimmer: FreedMemoryTrimmer?
        // Ticks 1–10: a stage started since the last tick (none running now); 11–20: one
        // running, none started; from 21: quiet.
        trimmer = try FreedMemoryTrimmer(loop: loop, periodMs: 5, activity: {
            ticks += 1
            if ticks == 21 { trimsWhileBusy = trimmed.value }
            if ticks == 40 { trimmer?.close() }
            return ticks <= 10 ? (ticks, 0) : ticks <= 20 ? (10, 1) : (10, 0)
        }, trim: { trimmed.add() })
        trimmer?.start()
        loop.run()
        #expect(trimsWhileBusy == 0, "trimmed while stages ran")
        #expect(trimmed.value >= 2, "19 quiet ticks, \(trimmed.value) trims")
        #expect(trimmer?.trims == trimmed.value)
        #expect(loop.close() == 0)  // nothing left open
    }
}

private final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
