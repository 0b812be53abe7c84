import Glibc
import Testing
@testable import EventLoop

@Suite(.serialized) struct SocketPollTests {
    @Test func readableDescriptorCallsBackOnTheLoopUntilClosed() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let loop = try EventLoop()
        let loopThread = pthread_self()
        let poll = try SocketPoll(loop: loop, fd: fds[0])
        let writer = try LoopTimer(loop: loop)
        var received: [UInt8] = []
        var wakeups = 0
        try poll.start { error in
            #expect(error == nil)
            #expect(pthread_equal(pthread_self(), loopThread) != 0)
            wakeups += 1
            var byte: UInt8 = 0
            if read(fds[0], &byte, 1) == 1 { received.append(byte) }
            if received.count == 3 { poll.close(); writer.close() }
        }
        var next: UInt8 = 1
        writer.start(afterMs: 1, repeatMs: 2) {
            _ = write(fds[1], &next, 1)
            next += 1
        }
        loop.run()
        #expect(received == [1, 2, 3])
        #expect(wakeups == 3)
        #expect(poll.isClosed)
        #expect(loop.close() == 0)
    }

    @Test func stoppedPollStaysQuietAndCanRestart() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let loop = try EventLoop()
        let poll = try SocketPoll(loop: loop, fd: fds[0])
        var calls = 0
        try poll.start { _ in calls += 1 }
        poll.stop()
        var byte: UInt8 = 7
        _ = write(fds[1], &byte, 1)
        let steps = try LoopTimer(loop: loop)
        var step = 0
        steps.start(afterMs: 5, repeatMs: 5) {
            step += 1
            if step == 1 {
                #expect(calls == 0)  // readable, but stopped
                try? poll.start { _ in
                    calls += 1
                    var b: UInt8 = 0
                    _ = read(fds[0], &b, 1)
                }
            } else {
                #expect(calls == 1)
                poll.close()
                steps.close()
            }
        }
        loop.run()
        #expect(loop.close() == 0)
    }
}
