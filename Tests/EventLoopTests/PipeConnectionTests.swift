import Foundation
import Glibc
import PhotomemoCore
import StageKit
import Testing
@testable import EventLoop

/// The backpressure the control socket is built on: a paused connection leaves the
/// client's bytes in the kernel, and unsent reply bytes are counted until the client
/// reads them.
@Suite(.serialized) struct PipeConnectionTests {
    final class Log: @unchecked Sendable {  // written on the loop thread, read after loop.run returns
        var received = 0
        var receivedWhilePaused = -1
        var pendingWhileUnread = -1
        var progressBeforeRead = -1
        var progress = 0
        var clientRead = 0
    }

    @Test func pausedReadingWaitsAndUnsentBytesAreCountedUntilTheClientReads() throws {
        let loop = try EventLoop()
        let path = NSTemporaryDirectory() + "pm-pipe-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let log = Log()
        let reply = 4 << 20
        let timer = try LoopTimer(loop: loop)
        nonisolated(unsafe) var server: PipeServer?
        server = try PipeServer(loop: loop, path: path, mode: 0o600) { c in
            c.onWriteProgress = { log.progress += 1 }
            c.start(onRead: { bytes in
                if log.received == 0 { c.pauseReading() }  // after the first request, take no more for now
                log.received += bytes.count
            }, onClose: {
                timer.close()
                server?.close()
            })
            c.write([UInt8](repeating: 0x61, count: reply))
            timer.start(afterMs: 600) {
                log.receivedWhilePaused = log.received
                log.pendingWhileUnread = c.pendingWriteBytes
                log.progressBeforeRead = log.progress
                c.resumeReading()
            }
        }
        // The client's writes to `log` are read here after it signals: the socket's close
        // orders them in the kernel, which ThreadSanitizer cannot see (it reported a race).
        let clientDone = DispatchSemaphore(value: 0)
        let client = Thread {
            defer { clientDone.signal() }
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            _ = try? UnixSocketAddress(path).connect(fd)
            let ten = [UInt8](repeating: 0x0A, count: 10)
            _ = send(fd, ten, 10, Int32(MSG_NOSIGNAL))
            Thread.sleep(forTimeInterval: 0.3)
            _ = send(fd, ten, 10, Int32(MSG_NOSIGNAL))  // arrives while paused
            Thread.sleep(forTimeInterval: 0.6)
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            while log.clientRead < reply {
                let n = read(fd, &buf, buf.count)
                if n <= 0 { break }
                log.clientRead += n
            }
            Thread.sleep(forTimeInterval: 0.2)  // let the resumed read take the second request
            close(fd)
        }
        client.start()
        loop.run()
        clientDone.wait()
        #expect(log.receivedWhilePaused == 10)
        #expect(log.received == 20)
        #expect(log.pendingWhileUnread > 0 && log.pendingWhileUnread <= reply)
        #expect(log.progressBeforeRead == 0)
        #expect(log.progress >= 1)
        #expect(log.clientRead == reply)
        #expect(loop.close() == 0)
    }
}
