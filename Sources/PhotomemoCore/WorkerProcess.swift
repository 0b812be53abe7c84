import CPosix
import Foundation
import StageKit
import Glibc

/// A long-lived child (an exec stage's worker) that takes newline-delimited requests on
/// stdin and answers lines on stdout. A thread of its own spawns it (so PR_SET_PDEATHSIG,
/// tied to that thread, ends it if the daemon dies), reads its stdout into lines of at
/// most `maxLineBytes`, its stderr into lines, and reaps it: every event goes to `onEvent`
/// on that thread. `stop` and `kill` only ask; the thread escalates (TERM to the group,
/// KILL `killGraceMs` later) and reports `.exited` once the whole group is gone.
public final class WorkerProcess: @unchecked Sendable {
    public enum Event: Sendable {
        case line([UInt8])
        /// A stdout line past `maxLineBytes`: the rest of it is discarded.
        case lineTooLong
        case stderr(String)
        case exited(status: Int32?, signal: Int32?)
    }

    public let pid: pid_t
    // Safe: set once before `init` returns; the fd is closed in deinit, after every sender.
    private let stdinFD: Int32
    private let termAt = LockedValue<UInt64?>(nil)
    private let inputClosed = LockedValue(false)
    private let sending = NSLock()
    static let stderrLineBytes = 4096

    /// Spawns `argv`; throws when it cannot start (or the daemon is stopping).
    public init(_ argv: [String], environment: [String: String], maxLineBytes: Int, killGraceMs: Int = 2000,
                groups: SubprocessGroups = .shared, onEvent: @escaping @Sendable (Event) -> Void) throws {
        if groups.isStopping { throw PhotomemoError(.notRunning, "not starting \(argv.first ?? "?"): the daemon is stopping") }
        let started = LockedValue<Result<SpawnedChild, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0), known = DispatchSemaphore(value: 0)
        let box = LockedValue<WorkerProcess?>(nil)
        let thread = Thread {
            let child: SpawnedChild
            do { child = try SpawnedChild(argv, environment: environment, diesWithParent: true) } catch {
                started.value = .failure(error)
                ready.signal()
                return
            }
            started.value = .success(child)
            ready.signal()
            known.wait()  // until `init` has set `box`
            Self.supervise(child, maxLineBytes: maxLineBytes, killGraceMs: killGraceMs, groups: groups,
                           termAt: { box.value?.termAt.value }, onEvent: onEvent)
            box.value = nil
        }
        thread.name = "exec worker \(argv.first ?? "")"
        thread.start()
        ready.wait()
        let child = try started.value!.get()
        pid = child.pid
        stdinFD = child.stdin
        box.value = self
        // Before the thread reaps it, so the entry cannot outlive the group.
        if !groups.register(child.pid, stop: { [weak self] in self?.stop(graceMs: 1000) }) { terminate() }
        known.signal()
    }

    deinit { close(stdinFD) }

    /// Writes `bytes` to the child's stdin by `deadline` (uptime ns). false: it stopped
    /// reading (EPIPE), its input is closed, or the deadline passed with bytes unsent.
    public func send(_ bytes: [UInt8], deadline: UInt64) -> Bool {
        sending.lock()
        defer { sending.unlock() }
        var off = 0
        while off < bytes.count {
            if inputClosed.value { return false }
            let now = Subprocess.nowNs()
            if now >= deadline { return false }
            var p = pollfd(fd: stdinFD, events: Int16(POLLOUT), revents: 0)
            let waitMs = Int32(min(100, (deadline - now) / 1_000_000 + 1))
            guard (try? syscall("poll", interruptible: { poll(&p, 1, waitMs) })) != nil else { return false }
            if p.revents == 0 { continue }
            let sent: Int?
            do {
                sent = try syscall("send", nonblocking: {
                    bytes.withUnsafeBytes { Glibc.send(stdinFD, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
                })
            } catch { return false }
            off += sent ?? 0
        }
        return true
    }

    /// Closes its stdin (a worker ends when it reads end of file) and ends its group if it
    /// is still there `graceMs` later.
    public func stop(graceMs: Int) {
        if !inputClosed.withLock({ c in defer { c = true }; return c }) { _ = shutdown(stdinFD, Int32(SHUT_WR)) }
        let at = Subprocess.nowNs() + UInt64(graceMs) * 1_000_000
        termAt.withLock { t in t = min(t ?? at, at) }
    }

    /// TERM to its group now (KILL after the kill grace).
    public func terminate() { stop(graceMs: 0) }

    private static func supervise(_ child: SpawnedChild, maxLineBytes: Int, killGraceMs: Int, groups: SubprocessGroups,
                                  termAt: () -> UInt64?, onEvent: (Event) -> Void) {
        var fds = [pollfd(fd: child.stdout, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: child.stderr, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: child.pidfd, events: Int16(POLLIN), revents: 0)]
        var lines = [LineSplitter(max: maxLineBytes), LineSplitter(max: stderrLineBytes)]
        var buf = [UInt8](repeating: 0, count: 65536)
        var termSent = false, killSent = false
        let killGrace = UInt64(killGraceMs) * 1_000_000

        // At most `chunks` reads, so a child that writes without end (a 100 MB line) still
        // lets the loop see a stop request.
        func drain(_ k: Int, chunks: Int = 16) {
            for _ in 0..<chunks where fds[k].fd >= 0 {
                let got: Int?
                do { got = try syscall("read", nonblocking: { read(fds[k].fd, &buf, buf.count) }) } catch { got = 0 }
                guard let n = got else { return }
                if n == 0 { close(fds[k].fd); fds[k].fd = -1; return }
                lines[k].take(buf[0..<n]) { piece in
                    switch (k, piece) {
                    case (0, .line(let l)): onEvent(.line(l))
                    case (0, .tooLong): onEvent(.lineTooLong)
                    case (_, .line(let l)): onEvent(.stderr(String(decoding: l, as: UTF8.self)))
                    case (_, .tooLong): onEvent(.stderr("(a line longer than \(stderrLineBytes) bytes, left out)"))
                    }
                }
            }
        }

        while pm_child_exited(child.pid) == 0 {
            let now = Subprocess.nowNs()
            if let t = termAt(), now >= t {
                if !termSent { kill(-child.pid, SIGTERM); termSent = true }
                if !killSent, now >= t + killGrace { kill(-child.pid, SIGKILL); killSent = true }
            }
            let waitMs: Int32 = fds[2].fd < 0 ? 20 : 100  // also how soon a stop request is seen
            do { _ = try syscall("poll", interruptible: { poll(&fds, nfds_t(fds.count), waitMs) }) } catch { break }
            for k in 0...1 where fds[k].fd >= 0 && fds[k].revents != 0 { drain(k) }
        }
        drain(0, chunks: 64); drain(1, chunks: 64)
        kill(-child.pid, SIGKILL)  // what it left in its group; its pid still names the group
        var status: Int32 = 0
        _ = try? syscall("waitpid", blocking: { waitpid(child.pid, &status, 0) })
        Subprocess.reapGroup(child.pid)
        groups.unregister(child.pid)
        for f in fds where f.fd >= 0 { close(f.fd) }
        if status & 0x7F == 0 { onEvent(.exited(status: (status >> 8) & 0xFF, signal: nil)) } else { onEvent(.exited(status: nil, signal: status & 0x7F)) }
    }
}

/// Splits a byte stream into lines of at most `max` bytes (without the newline); a longer
/// line is reported once as `.tooLong` and skipped to its end, never buffered whole.
struct LineSplitter {
    enum Piece { case line([UInt8]), tooLong }
    let max: Int
    private var pending: [UInt8] = []
    private var skipping = false

    init(max: Int) { self.max = max }

    mutating func take(_ bytes: ArraySlice<UInt8>, _ emit: (Piece) -> Void) {
        var rest = bytes
        while !rest.isEmpty {
            let nl = rest.firstIndex(of: 0x0A)
            let chunk = rest[rest.startIndex..<(nl ?? rest.endIndex)]
            if !skipping {
                if pending.count + chunk.count > max {
                    emit(.tooLong)
                    pending = []
                    skipping = true
                } else {
                    pending += chunk
                }
            }
            guard let nl else { return }
            if !skipping { emit(.line(pending)) }
            pending = []
            skipping = false
            rest = rest[(nl + 1)...]
        }
    }
}
