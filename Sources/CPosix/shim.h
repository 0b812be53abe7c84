#pragma once
#include <unistd.h>
#include <fcntl.h>

/* glibc declares pipe2 only under _GNU_SOURCE, which Swift's Glibc module does not set.
   O_CLOEXEC at creation matters: a pipe end leaked into a concurrently spawned child
   would hold another child's stdout open past its exit. */
extern int pipe2(int pipefd[2], int flags);

static inline int pm_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

#include <sys/socket.h>

/* struct ucred needs _GNU_SOURCE; this has the same layout (pid, uid, gid). */
struct pm_ucred { int pid; unsigned int uid; unsigned int gid; };

static inline int pm_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid) {
    struct pm_ucred c;
    socklen_t len = sizeof(c);
    int rc = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len);
    if (rc == 0) { *pid = c.pid; *uid = c.uid; *gid = c.gid; }
    return rc;
}

#include <malloc.h>

/* glibc's default arenas (8 per core) let RSS creep with a photo per thread; a bound keeps it flat. */
static inline int pm_limit_malloc_arenas(int n) {
    return mallopt(M_ARENA_MAX, n);
}

/* Fixed thresholds (setting them turns glibc's dynamic ones off): a block of at least
   `mmap_bytes` that the heap's free top cannot hold is mapped and unmapped on free, and a
   heap's free top past `trim_bytes` is given back down to `pad_bytes`, kept for the next
   photo. Dynamically, one freed 12 MB decode buffer raised the mmap threshold to it, so
   later ones came from the heap and their pages stayed resident after a storm. */
static inline int pm_malloc_thresholds(int mmap_bytes, int trim_bytes, int pad_bytes) {
    return mallopt(M_MMAP_THRESHOLD, mmap_bytes) && mallopt(M_TRIM_THRESHOLD, trim_bytes) && mallopt(M_TOP_PAD, pad_bytes);
}

/* Gives every arena's free pages back (the main heap's free top too). */
static inline int pm_malloc_trim(void) { return malloc_trim(0); }

#include <errno.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* pidfd_open(2) (Linux 5.3): a descriptor that polls readable when the process exits, so
   a wait with a deadline needs no sleep loop. -1 with errno ENOSYS on older kernels. */
static inline int pm_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* pidfd_send_signal(2) (Linux 5.1): a signal to the process the descriptor names, never to
   a later process that reused its pid. -1 with errno ENOSYS on older kernels. */
static inline int pm_pidfd_send_signal(int pidfd, int sig) {
#ifdef SYS_pidfd_send_signal
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* 1 when the child has exited (left unreaped, WNOWAIT, so its pid still names its process
   group and stragglers can be killed safely), 0 when it runs, -1 on error. */
static inline int pm_child_exited(pid_t pid) {
    siginfo_t info;
    info.si_pid = 0;
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid != 0;
}

#include <sys/prctl.h>

/* Orphaned descendants are re-parented to this process instead of init, so a subprocess's
   whole group can be reaped (some inits, e.g. in containers, never reap them). */
static inline int pm_become_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

#include <sys/vfs.h>

/* The filesystem type of an open file (statfs f_type), or 0 when fstatfs fails. */
static inline unsigned long pm_filesystem_type(int fd) {
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 ? (unsigned long)fs.f_type : 0;
}

/* SEEK_DATA (Linux 3.1) needs _GNU_SOURCE: the offset of the next byte at or after `offset`
   that is not in a hole, so a sparse file's unwritten ranges are skipped, not read.
   -1 with errno ENXIO when only a hole (or nothing) is left. */
static inline off_t pm_seek_data(int fd, off_t offset) {
    return lseek(fd, offset, 3 /* SEEK_DATA */);
}

/* SEEK_HOLE likewise: the offset of the next hole at or after `offset` (the end of the file
   counts as one). */
static inline off_t pm_seek_hole(int fd, off_t offset) {
    return lseek(fd, offset, 4 /* SEEK_HOLE */);
}

#include <linux/openat2.h>
#include <sys/random.h>

/* openat2(2) (Linux 5.6; glibc has no wrapper): `path` resolved beneath `dirfd` only, no
   symlink (magic links included) followed at any component, no "..". -1 with errno ENOSYS
   (or EPERM under some seccomp filters) where the kernel lacks it: walk with openat. */
static inline int pm_openat_beneath(int dirfd, const char *path, int flags) {
#ifdef SYS_openat2
    struct open_how how = { .flags = (unsigned long long)flags, .mode = 0,
                            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
#else
    errno = ENOSYS;
    return -1;
#endif
}

#include <stdio.h>

/* renameat2(2) with RENAME_NOREPLACE (glibc declares it only under _GNU_SOURCE): EEXIST
   instead of replacing `to`. Where the filesystem cannot (EINVAL), a check, then a plain
   rename: only the daemon writes the target's folder. */
static inline int pm_rename_noreplace(int fromdir, const char *from, int todir, const char *to) {
    int r = (int)syscall(SYS_renameat2, fromdir, from, todir, to, 1 /* RENAME_NOREPLACE */);
    if (r == 0 || errno != EINVAL) return r;
    if (faccessat(todir, to, F_OK, AT_SYMLINK_NOFOLLOW) == 0) { errno = EEXIST; return -1; }
    return renameat(fromdir, from, todir, to);
}

/* `count` random bytes from the kernel (getrandom(2), blocking only until boot entropy). */
static inline long pm_random_bytes(void *buf, size_t count) {
    return (long)getrandom(buf, count, 0);
}

#include <signal.h>

/* fork+execve for a long-lived worker that must not outlive the daemon: posix_spawn cannot
   set PR_SET_PDEATHSIG. The child gets its own process group, a clean signal mask, default
   SIGPIPE/TERM/INT/HUP/CHLD, `in`/`out`/`err` as 0/1/2, and SIGKILL when the spawning
   thread ends (keep that thread alive as long as the child). Only async-signal-safe calls
   between fork and exec; `path` is already resolved. Returns the pid, or -1 with
   *spawn_errno set (the exec's own errno, reported through a close-on-exec pipe). */
/* Every descriptor from `first` on closes at exec: a child gets 0, 1 and 2 only, never one
   the daemon inherited without close-on-exec (a parent's pipe it waits on for EOF would
   stay open as long as the child, and its children, run). Async-signal-safe. */
static inline void pm_cloexec_from(int first) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) == 0) return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    for (int fd = first; fd < (max > 0 && max < 65536 ? max : 65536); fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
}

#include <spawn.h>
/* glibc 2.34's closefrom action for posix_spawn, declared only under _GNU_SOURCE. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int);
static inline int pm_spawn_close_from(posix_spawn_file_actions_t *actions, int first) {
    return posix_spawn_file_actions_addclosefrom_np(actions, first);
}

static inline pid_t pm_spawn_dying_with_parent(const char *path, char *const argv[], char *const envp[],
                                               int in, int out, int err, int *spawn_errno) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) { *spawn_errno = errno; return -1; }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) { *spawn_errno = errno; close(report[0]); close(report[1]); return -1; }
    if (pid == 0) {
        int sigs[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD};
        for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, 0);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent) _exit(127);  /* the daemon died before the prctl */
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) { int e = errno; (void)!write(report[1], &e, sizeof e); _exit(127); }
        pm_cloexec_from(3);
        execve(path, argv, envp);
        int e = errno;
        (void)!write(report[1], &e, sizeof e);
        _exit(127);
    }
    setpgid(pid, pid);  /* also here: a kill(-pid) right after we return must find the group */
    close(report[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {}
    close(report[0]);
    if (n == (ssize_t)sizeof e) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        *spawn_errno = e;
        return -1;
    }
    return pid;
}
