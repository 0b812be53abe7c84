import CPosix
import Foundation
import Glibc
import StageKit

/// A child started with posix_spawnp in a process group of its own, with a clean signal
/// mask, default handlers and exactly `environment`; our ends of its stdin (a socket
/// pair: a child that exits without reading gives EPIPE, not SIGPIPE), stdout and stderr
/// are non-blocking, and `pidfd` (or -1 on kernels without pidfd_open) polls on its exit.
/// `diesWithParent` (long-lived exec workers): forked with PR_SET_PDEATHSIG, so a SIGKILL
/// of the daemon (more exactly, the end of the spawning thread) leaves no orphan.
struct SpawnedChild {
    let pid: pid_t
    let stdin: Int32
    let stdout: Int32
    let stderr: Int32
    let pidfd: Int32

    init(_ argv: [String], environment: [String: String], diesWithParent: Bool = false) throws {
        guard let program = argv.first, !program.isEmpty else { throw PhotomemoError(.badRequest, "empty command") }
        var stdinPair: [Int32] = [0, 0], outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        try syscall("socketpair", blocking: {
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &stdinPair)
        })
        try syscall("pipe", blocking: { pm_pipe_cloexec(&outPipe) })
        try syscall("pipe", blocking: { pm_pipe_cloexec(&errPipe) })
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { cArgs.forEach { free($0) }; cEnv.forEach { free($0) } }
        var pid: pid_t = 0
        var rc: Int32 = 0
        if diesWithParent {
            var spawnErrno: Int32 = 0
            let path = Self.resolve(program, path: environment["PATH"] ?? "/usr/bin:/bin")
            pid = pm_spawn_dying_with_parent(path, cArgs, cEnv, stdinPair[0], outPipe[1], errPipe[1], &spawnErrno)
            if pid < 0 { rc = spawnErrno }
        } else {
            rc = Self.spawn(program, cArgs, cEnv, &pid, stdin: stdinPair[0], stdout: outPipe[1], stderr: errPipe[1])
        }
        close(stdinPair[0]); close(outPipe[1]); close(errPipe[1])
        guard rc == 0 else {
            close(stdinPair[1]); close(outPipe[0]); close(errPipe[0])
            throw SystemError("spawn \(program)", errno: rc)
        }
        self.pid = pid
        stdin = stdinPair[1]
        stdout = outPipe[0]
        stderr = errPipe[0]
        for fd in [stdin, stdout, stderr] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let p = pm_pidfd_open(pid)
        if p >= 0 { _ = fcntl(p, F_SETFD, FD_CLOEXEC) }
        pidfd = p
    }

    private static func spawn(_ program: String, _ cArgs: [UnsafeMutablePointer<CChar>?], _ cEnv: [UnsafeMutablePointer<CChar>?],
                              _ pid: inout pid_t, stdin: Int32, stdout: Int32, stderr: Int32) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Nothing else the daemon holds (see pm_cloexec_from).
        pm_spawn_close_from(&actions, 3)
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
        return posix_spawnp(&pid, program, &actions, &attr, cArgs, cEnv)
    }

    /// `program` searched in `path` as posix_spawnp would (the fork path has no PATH search
    /// that is safe after fork): a name with a slash as is; else the first executable file.
    static func resolve(_ program: String, path: String) -> String {
        if program.contains("/") { return program }
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(program)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return program  // execve fails with ENOENT, reported as today's spawn error
    }
}
