import Foundation
import Glibc
import StageKit
import Testing
@testable import EventLoop

/// Every test ends like libuv's own: the loop closes with no handle left open.
@Suite(.serialized) struct EventLoopTests {
    func tempDir() throws -> String {
        let d = NSTemporaryDirectory() + "pm-loop-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    @Test func timerFiresRepeatsAndClosesCleanly() throws {
        let loop = try EventLoop()
        let timer = try LoopTimer(loop: loop)
        var fired = 0
        timer.start(afterMs: 1, repeatMs: 1) {
            fired += 1
            if fired == 3 { timer.close() }
        }
        loop.run()
        #expect(fired == 3)
        #expect(loop.close() == 0)
    }

    @Test func closeReportsHandlesLeftOpen() throws {
        let loop = try EventLoop()
        let timer = try LoopTimer(loop: loop)
        #expect(loop.close() != 0)
        #expect(loop.handleCount == 1)
        timer.close()
        loop.run()
        #expect(loop.close() == 0)
    }

    @Test func workRunsOffTheLoopThreadAndCompletesOnIt() throws {
        let loop = try EventLoop()
        let loopThread = pthread_self()
        var results: [Int] = []
        for i in 0..<8 {
            loop.submit({ () -> (Int, Bool) in
                (i * i, pthread_equal(pthread_self(), loopThread) != 0)
            }) { (value, ranOnLoop) in
                #expect(!ranOnLoop)
                #expect(pthread_equal(pthread_self(), loopThread) != 0)
                results.append(value)
            }
        }
        loop.run()
        #expect(results.sorted() == [0, 1, 4, 9, 16, 25, 36, 49])
        #expect(loop.close() == 0)
    }

    @Test func wakeupRunsClosuresFromOtherThreadsOnTheLoop() throws {
        let loop = try EventLoop()
        let wakeup = try LoopWakeup(loop: loop)
        let sender = wakeup.sender
        nonisolated(unsafe) let onLoop = wakeup  // only touched on the loop thread
        let loopThread = pthread_self()
        nonisolated(unsafe) var received = 0
        for _ in 0..<4 {
            Thread.detachNewThread {
                for _ in 0..<250 {
                    sender.execute {
                        precondition(pthread_equal(pthread_self(), loopThread) != 0)
                        received += 1
                        if received == 1000 { onLoop.close() }
                    }
                }
            }
        }
        loop.run()
        #expect(received == 1000)
        #expect(loop.close() == 0)
    }

    @Test func signalIsDeliveredOnTheLoop() throws {
        let loop = try EventLoop()
        var got: Int32 = 0
        let watcher = try SignalWatcher(loop: loop, signal: SIGUSR1) { signum in
            got = signum
        }
        let timer = try LoopTimer(loop: loop)
        timer.start(afterMs: 1) { raise(SIGUSR1) }
        let guardTimer = try LoopTimer(loop: loop)
        guardTimer.start(afterMs: 5, repeatMs: 5) {
            if got != 0 { watcher.close(); timer.close(); guardTimer.close() }
        }
        loop.run()
        #expect(got == SIGUSR1)
        #expect(loop.close() == 0)
    }

    @Test func folderWatcherReportsCloseWriteAndMoveInButNotPartialWrites() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        var events: [FolderWatcher.Event] = []
        let watcher = try FolderWatcher(loop: loop, path: dir) { events += $0 }
        let steps = try LoopTimer(loop: loop)
        var step = 0
        var fd: Int32 = -1
        steps.start(afterMs: 5, repeatMs: 5) {
            step += 1
            switch step {
            case 1:
                fd = open(dir + "/slow.jpg", O_WRONLY | O_CREAT, 0o644)
                _ = write(fd, "abc", 3)
            case 2:
                // Still open: only created, no close-write yet.
                #expect(events == [.created("slow.jpg")])
                close(fd)
                _ = FileManager.default.createFile(atPath: dir + "/.a.part", contents: Data("x".utf8))
                rename(dir + "/.a.part", dir + "/a.jpg")
            case 3:
                #expect(events.contains(.closedAfterWrite("slow.jpg")))
                #expect(events.contains(.movedIn("a.jpg")))
                watcher.close()
                steps.close()
            default: break
            }
        }
        loop.run()
        #expect(loop.close() == 0)
    }

    @Test func folderWatcherReportsAReplacedFolderAndRearms() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        var events: [FolderWatcher.Event] = []
        let watcher = try FolderWatcher(loop: loop, path: dir) { events += $0 }
        let steps = try LoopTimer(loop: loop)
        var step = 0
        steps.start(afterMs: 5, repeatMs: 5) {
            step += 1
            switch step {
            case 1:
                try? FileManager.default.removeItem(atPath: dir)
            case 2:
                #expect(events.contains(.folderGone))
                #expect(!watcher.isWatching)
                #expect(throws: SystemError.self) { try watcher.rearm() }
                try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
                #expect(throws: Never.self) { try watcher.rearm() }
                events.removeAll()
                _ = FileManager.default.createFile(atPath: dir + "/b.jpg", contents: Data("y".utf8))
            case 3:
                #expect(events.contains(.closedAfterWrite("b.jpg")))
                watcher.close()
                steps.close()
            default: break
            }
        }
        loop.run()
        #expect(loop.close() == 0)
    }

    @Test func syscallWrapperRetriesNothingOnSuccessAndNamesTheCallOnFailure() {
        #expect(throws: Never.self) { try syscall("getpid", blocking: { getpid() }) }
        do {
            try syscall("open /nonexistent/x", blocking: { open("/nonexistent/x", O_RDONLY) })
            Issue.record("no error")
        } catch let e as SystemError {
            #expect(e.errno == ENOENT)
            #expect(e.description == "open /nonexistent/x: No such file or directory")
        } catch {
            Issue.record("\(error)")
        }
    }
}
