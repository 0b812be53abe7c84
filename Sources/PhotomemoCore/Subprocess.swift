import CPosix
import Foundation
import Glibc
import StageKit

/// Runs a program with bytes on its stdin and collects its stdout and the tail of its
/// stderr, with a deadline that holds until the child is reaped (a child that closes its
/// output early, `sleep 1000 >/dev/null 2>&1`, is still ended on time). posix_spawn, not
/// Foundation.Process: the child gets a clean signal mask and default handlers, its own
/// process group, and only the environment it is given.
///
/// At the deadline (or when `groups` is stopping) the whole group gets SIGTERM, then
/// SIGKILL after `killGraceMs`. When the program exits, whatever it left running in its
/// group is killed, so nothing outlives its run.
public struct Subprocess {
    public struct Result {
        public var pid: pid_t           // also the process group id
        public var status: Int32?      // exit status, nil if killed by a signal
        public var signal: Int32?
        public var stdout: [UInt8]
        public var stderrTail: String
        public var timedOut: Bool
        /// Ended because the daemon is stopping (`SubprocessGroups.terminate`).
        public var stopped: Bool
    }

    static let maxStdout = 1 << 20
    static let stderrTailBytes = 4096

    public static func run(_ argv: [String], stdin input: [UInt8], environment: [String: String], timeoutMs: Int,
                           killGraceMs: Int = 2000, groups: SubprocessGroups = .shared) throws -> Result {
        _ = adoptOrphans
        if groups.isStopping { throw PhotomemoError(.notRunning, "not starting \(argv.first ?? "?"): the daemon is stopping") }
        let child = try SpawnedChild(argv, environment: environment)
        if !groups.register(child.pid) { kill(-child.pid, SIGTERM) }
        defer { groups.unregister(child.pid) }
        var result = Result(pid: child.pid, status: nil, signal: nil, stdout: [], stderrTail: "", timedOut: false, stopped: false)
        var stderrBytes: [UInt8] = []
        var inOff = 0
        var fds = [pollfd(fd: child.stdin, events: Int16(POLLOUT), revents: 0),
                   pollfd(fd: child.stdout, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: child.stderr, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: child.pidfd, events: Int16(POLLIN), revents: 0)]
        defer { for f in fds where f.fd >= 0 { close(f.fd) } }
        if input.isEmpty { close(fds[0].fd); fds[0].fd = -1 }
        let deadline = nowNs() + UInt64(timeoutMs) * 1_000_000
        var termSentAt: UInt64?
        var killSent = false
        var buf = [UInt8](repeating: 0, count: 65536)

        func drain(_ k: Int) {
            while fds[k].fd >= 0 {
                let got: Int?
                do { got = try syscall("read", nonblocking: { read(fds[k].fd, &buf, buf.count) }) } catch { got = 0 }  // a read error ends it like EOF
                guard let n = got else { return }  // nothing more now
                if n > 0 {
                    if k == 1 {
                        if result.stdout.count < maxStdout { result.stdout += buf[0..<min(n, maxStdout - result.stdout.count)] }
                    } else {
                        stderrBytes += buf[0..<n]
                        if stderrBytes.count > stderrTailBytes { stderrBytes.removeFirst(stderrBytes.count - stderrTailBytes) }
                    }
                    continue
                }
                close(fds[k].fd); fds[k].fd = -1  // end of file, or a read error
            }
        }

        while pm_child_exited(child.pid) == 0 {
            let now = nowNs()
            if termSentAt == nil && (now >= deadline || groups.isStopping) {
                result.timedOut = now >= deadline
                result.stopped = !result.timedOut
                kill(-child.pid, SIGTERM)
                termSentAt = now
            }
            if let t = termSentAt, !killSent, now >= t + UInt64(killGraceMs) * 1_000_000 {
                kill(-child.pid, SIGKILL)
                killSent = true
            }
            // Wake for output, the exit (pidfd), the next escalation, and a stop request.
            let next = termSentAt.map { $0 + UInt64(killGraceMs) * 1_000_000 } ?? deadline
            var waitMs = Int32(min(killSent ? 100 : 250, (next > now ? next - now : 0) / 1_000_000 + 1))
            if fds[3].fd < 0 { waitMs = min(waitMs, 20) }  // no pidfd: poll for the exit
            do { _ = try syscall("poll", interruptible: { poll(&fds, nfds_t(fds.count), waitMs) }) } catch { break }
            if fds[0].fd >= 0, fds[0].revents != 0 {
                let sent: Int?
                do {
                    sent = try syscall("send", nonblocking: {
                        input.withUnsafeBytes { send(fds[0].fd, $0.baseAddress! + inOff, $0.count - inOff, Int32(MSG_NOSIGNAL)) }
                    }) ?? 0
                } catch { sent = nil }
                if let sent { inOff += sent }
                if sent == nil || inOff >= input.count {
                    close(fds[0].fd); fds[0].fd = -1  // done, or the child stopped reading
                }
            }
            for k in 1...2 where fds[k].fd >= 0 && fds[k].revents != 0 { drain(k) }
        }
        // The child has exited but is not reaped yet, so its pid still names the group:
        // take what it wrote, end what it left behind, then reap it.
        drain(1); drain(2)
        kill(-child.pid, SIGKILL)
        var status: Int32 = 0
        _ = try? syscall("waitpid", blocking: { waitpid(child.pid, &status, 0) })
        reapGroup(child.pid)
        if status & 0x7F == 0 { result.status = (status >> 8) & 0xFF } else { result.signal = status & 0x7F }
        if termSentAt == nil && result.signal != nil && groups.isStopping { result.stopped = true }  // TERM came from terminate()
        result.stderrTail = String(decoding: stderrBytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return result
    }

    /// Reaps the group's other members: killed above, they are (or become, as orphans)
    /// our children, since this process is a child subreaper.
    static func reapGroup(_ pgid: pid_t) {
        var status: Int32 = 0
        while (try? syscall("waitpid", blocking: { waitpid(-pgid, &status, 0) })) != nil {}  // until ECHILD
    }

    private static let adoptOrphans: Bool = pm_become_child_subreaper() == 0

    public static func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
