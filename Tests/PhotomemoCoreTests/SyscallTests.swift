import Foundation
import Glibc
import StageKit
import Synchronization
import Testing

/// The one errno wrapper, on real calls: a read a signal interrupts is retried, not
/// failed; a failure says the call and what the errno means.
@Suite(.serialized) struct SyscallTests {
    /// SIGURG is ignored by default and sent by no one here: a handler without SA_RESTART
    /// makes a blocked read fail with EINTR, as any signal would in the daemon.
    /// The test's thread (a dispatch worker) blocks signals: it takes SIGURG until `restore`.
    static func interruptingHandler() -> sigset_t {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGURG, &action, nil)
        var urg = sigset_t(), old = sigset_t()
        sigemptyset(&urg)
        sigaddset(&urg, SIGURG)
        pthread_sigmask(SIG_UNBLOCK, &urg, &old)
        return old
    }

    static func restore(_ mask: sigset_t) {
        var mask = mask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }

    @Test func aReadASignalInterruptsIsRetriedUntilItsData() throws {
        let mask = Self.interruptingHandler()
        defer { Self.restore(mask) }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let calls = Atomic<Int>(0)
        let reader = pthread_self()
        let writeEnd = fds[1]
        // Signals the reader until its read has been interrupted once (it was called a
        // second time), then gives it a byte; gives up after 5 s.
        let signaller = Thread {
            let deadline = Date().addingTimeInterval(5)
            while calls.load(ordering: .acquiring) < 2 && Date() < deadline {
                pthread_kill(reader, SIGURG)
                usleep(10_000)
            }
            var byte: UInt8 = 0x2A
            _ = write(writeEnd, &byte, 1)
        }
        signaller.start()
        var got: UInt8 = 0
        let n = try syscall("read pipe", blocking: { () -> Int in
            calls.add(1, ordering: .releasing)
            return read(fds[0], &got, 1)
        })
        #expect(n == 1 && got == 0x2A)
        #expect(calls.load(ordering: .acquiring) >= 2)  // interrupted at least once, and retried
    }

    @Test func aFailureNamesTheCallAndSaysWhatTheErrnoMeans() {
        do {
            try syscall("open /nonexistent/x", blocking: { open("/nonexistent/x", O_RDONLY) })
            Issue.record("opened a file that does not exist")
        } catch let e as SystemError {
            #expect(e.errno == ENOENT)
            #expect(e.reason == "No such file or directory")
            #expect(e.description == "open /nonexistent/x: No such file or directory")
        } catch {
            Issue.record("not a SystemError: \(error)")
        }
        #expect(SystemError.reason(EACCES) == "Permission denied")
    }

    @Test func aNullPointerIsTheCallsErrno() {
        #expect(throws: SystemError.self) { try syscall("fdopendir", pointer: { fdopendir(-1) }) }
    }

    @Test func aNonblockingReadWithNothingToReadIsNil() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        defer { close(fds[0]); close(fds[1]) }
        var byte: UInt8 = 0
        #expect(try syscall("read pipe", nonblocking: { read(fds[0], &byte, 1) }) == nil)
        close(fds[1]); fds[1] = -1
        #expect(try syscall("read pipe", nonblocking: { read(fds[0], &byte, 1) }) == 0)  // end of file
    }

    @Test func anInterruptedWaitIsNilForItsCallerToRecompute() throws {
        let mask = Self.interruptingHandler()
        defer { Self.restore(mask) }
        let reader = pthread_self()
        let done = Atomic<Bool>(false)
        let signaller = Thread {
            while !done.load(ordering: .acquiring) {
                pthread_kill(reader, SIGURG)
                usleep(10_000)
            }
        }
        signaller.start()
        var p = pollfd(fd: -1, events: 0, revents: 0)  // nothing to wait for: only a signal ends it
        let r = try syscall("poll", interruptible: { poll(&p, 1, 5000) })
        done.store(true, ordering: .releasing)
        #expect(r == nil)
    }
}
