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

/* SIGTERM, SIGINT and SIGHUP held pending in the calling thread (and every thread it starts). */
static inline int pm_hold_stop_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Waits up to ms for a held SIGTERM or SIGINT and takes it: the signal, or 0 on timeout. */
static inline int pm_wait_stop_signal(long ms) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
    int s = sigtimedwait(&set, NULL, &t);
    return s > 0 ? s : 0;
}

static inline int pm_ignore_signal(int sig) {
    return signal(sig, SIG_IGN) == SIG_ERR ? -1 : 0;
}
