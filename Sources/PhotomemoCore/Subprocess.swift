import CPosix
import Foundation
import Glibc

/// Runs a program with bytes on its stdin and collects its stdout and the tail of its
/// stderr, with a deadline. posix_spawn, not Foundation.Process: the child gets a clean
/// signal mask and default handlers, its own process group (a timeout kills the whole
/// group), and no thread of ours is involved besides the caller's.
public struct Subprocess {
    public struct Result {
        public var status: Int32?      // exit status, nil if killed by a signal
        public var signal: Int32?
        public var stdout: [UInt8]
        public var stderrTail: String
        public var timedOut: Bool
    }

    static let maxStdout = 1 << 20
    static let stderrTailBytes = 4096

    public static func run(_ argv: [String], stdin input: [UInt8], environment: [String: String], timeoutMs: Int) throws -> Result {
        var stdinPair: [Int32] = [0, 0], outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        // stdin is a socket pair, not a pipe: send(MSG_NOSIGNAL) to a child that exits
        // without reading gets EPIPE instead of killing us with SIGPIPE.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &stdinPair) == 0,
              pm_pipe_cloexec(&outPipe) == 0, pm_pipe_cloexec(&errPipe) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPair[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setpgroup(&attr, 0)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup("\($0)=\($1)") } + [nil]
        defer { cArgs.forEach { free($0) }; cEnv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, &attr, cArgs, cEnv)
        close(stdinPair[0]); close(outPipe[1]); close(errPipe[1])
        guard rc == 0 else {
            close(stdinPair[1]); close(outPipe[0]); close(errPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO)
        }

        for fd in [stdinPair[1], outPipe[0], errPipe[0]] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        var result = Result(status: nil, signal: nil, stdout: [], stderrTail: "", timedOut: false)
        var stderrBytes: [UInt8] = []
        var inOff = 0
        var fds = [pollfd(fd: stdinPair[1], events: Int16(POLLOUT), revents: 0),
                   pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0),
                   pollfd(fd: errPipe[0], events: Int16(POLLIN), revents: 0)]
        if input.isEmpty { close(stdinPair[1]); fds[0].fd = -1 }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMs) * 1_000_000
        var buf = [UInt8](repeating: 0, count: 65536)
        while fds[1].fd >= 0 || fds[2].fd >= 0 {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { result.timedOut = true; break }
            let waitMs = Int32(min(1000, (deadline - now) / 1_000_000 + 1))
            if poll(&fds, nfds_t(fds.count), waitMs) < 0 && errno != EINTR { break }
            if fds[0].fd >= 0, fds[0].revents != 0 {
                let n = input.withUnsafeBytes { send(fds[0].fd, $0.baseAddress! + inOff, $0.count - inOff, Int32(MSG_NOSIGNAL)) }
                if n > 0 { inOff += n }
                if n < 0 && errno != EAGAIN || inOff >= input.count {
                    close(fds[0].fd); fds[0].fd = -1  // done, or the child stopped reading
                }
            }
            for k in 1...2 where fds[k].fd >= 0 && fds[k].revents != 0 {
                let n = read(fds[k].fd, &buf, buf.count)
                if n > 0 {
                    if k == 1 {
                        if result.stdout.count < maxStdout { result.stdout += buf[0..<min(n, maxStdout - result.stdout.count)] }
                    } else {
                        stderrBytes += buf[0..<n]
                        if stderrBytes.count > stderrTailBytes { stderrBytes.removeFirst(stderrBytes.count - stderrTailBytes) }
                    }
                } else if n == 0 || errno != EAGAIN {
                    close(fds[k].fd); fds[k].fd = -1
                }
            }
        }
        for f in fds where f.fd >= 0 { close(f.fd) }
        if result.timedOut { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if status & 0x7F == 0 { result.status = (status >> 8) & 0xFF } else { result.signal = status & 0x7F }
        result.stderrTail = String(decoding: stderrBytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return result
    }
}
