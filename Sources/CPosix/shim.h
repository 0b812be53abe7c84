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
