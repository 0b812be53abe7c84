#pragma once
#include <uv.h>
#include <sys/inotify.h>
#include <signal.h>
#include <pthread.h>

/* Swift cannot see SIG_BLOCK-style macros as typed values everywhere; keep helpers tiny. */
static inline int pm_unblock_signal(int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    return pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static inline int pm_ignore_signal(int sig) {
    return signal(sig, SIG_IGN) == SIG_ERR ? -1 : 0;
}
