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
