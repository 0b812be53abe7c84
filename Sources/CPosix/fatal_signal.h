#pragma once
/* The fatal-signal log line (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT; a Swift
   trap is SIGILL or SIGTRAP): one line in the daemon's log format naming the signal and
   the jobs and stages running at that instant, to stderr and to the crash file, then the
   signal's default action (exit status and core dump unchanged). The handler only formats
   into its own stack and calls write(2) and raise(3), both async-signal-safe, and runs on
   an alternate stack so a stack overflow can still log.

   The state is `static`: each C translation unit (each Swift file calling these) would
   get its own copy, so one Swift file (Runtime/FatalSignalLog.swift) makes every call. */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PM_FATAL_RUNNING_MAX 8192
#define PM_FATAL_ALTSTACK_BYTES (128 * 1024)

static struct {
    int log_fd, crash_fd, json;
    volatile sig_atomic_t current;             /* which text is whole; the other is being written */
    char running[2][PM_FATAL_RUNNING_MAX];     /* "job=12 stage=compress, job=13 stage=upload" */
} pm_fatal = { 2, -1, 0, 0, {{0}, {0}} };

/* Called on the loop thread only, so one writer: fill the spare text, then flip to it. */
static inline void pm_fatal_set_running(const char *text) {
    int next = 1 - pm_fatal.current;
    size_t n = strlen(text);
    if (n >= PM_FATAL_RUNNING_MAX) n = PM_FATAL_RUNNING_MAX - 1;
    memcpy(pm_fatal.running[next], text, n);
    pm_fatal.running[next][n] = 0;
    __atomic_store_n(&pm_fatal.current, next, __ATOMIC_RELEASE);
}

static inline size_t pm_fatal_put(char *out, size_t at, size_t cap, const char *s) {
    while (*s && at + 1 < cap) out[at++] = *s++;
    return at;
}

static inline size_t pm_fatal_put_num(char *out, size_t at, size_t cap, long v, int width) {
    char digits[24];
    int n = 0;
    do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v > 0 && n < 23);
    while (n < width && n < 23) digits[n++] = '0';
    while (n > 0 && at + 1 < cap) out[at++] = digits[--n];
    return at;
}

/* 2026-12-01T08:30:00.123Z from CLOCK_REALTIME, without gmtime (not async-signal-safe):
   days to civil date by Howard Hinnant's algorithm. */
static inline size_t pm_fatal_put_time(char *out, size_t at, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long secs = (long)ts.tv_sec, days = secs / 86400, rem = secs % 86400;
    long z = days + 719468, era = z / 146097, doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
    at = pm_fatal_put_num(out, at, cap, y, 4); at = pm_fatal_put(out, at, cap, "-");
    at = pm_fatal_put_num(out, at, cap, m, 2); at = pm_fatal_put(out, at, cap, "-");
    at = pm_fatal_put_num(out, at, cap, d, 2); at = pm_fatal_put(out, at, cap, "T");
    at = pm_fatal_put_num(out, at, cap, rem / 3600, 2); at = pm_fatal_put(out, at, cap, ":");
    at = pm_fatal_put_num(out, at, cap, rem / 60 % 60, 2); at = pm_fatal_put(out, at, cap, ":");
    at = pm_fatal_put_num(out, at, cap, rem % 60, 2); at = pm_fatal_put(out, at, cap, ".");
    at = pm_fatal_put_num(out, at, cap, ts.tv_nsec / 1000000, 3);
    return pm_fatal_put(out, at, cap, "Z");
}

static inline const char *pm_fatal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGILL: return "SIGILL (illegal instruction: a Swift trap)";
    case SIGTRAP: return "SIGTRAP (trap: a Swift trap)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGABRT: return "SIGABRT (abort)";
    default: return "unknown signal";
    }
}

/* One log line; `json` picks the daemon's JSON log format. */
static inline size_t pm_fatal_compose(char *out, size_t cap, int json, int sig, const char *running) {
    size_t at = pm_fatal_put(out, 0, cap, json ? "{\"time\":\"" : "");
    at = pm_fatal_put_time(out, at, cap);
    at = pm_fatal_put(out, at, cap, json ? "\",\"level\":\"error\",\"message\":\"fatal signal " : " error fatal signal ");
    at = pm_fatal_put(out, at, cap, pm_fatal_name(sig));
    at = pm_fatal_put(out, at, cap, running[0] ? " while running " : " while no stage ran");
    at = pm_fatal_put(out, at, cap, running);
    at = pm_fatal_put(out, at, cap, "; the daemon dies with it (a job it kills twice at one stage fails at the next start)");
    at = pm_fatal_put(out, at, cap, json ? "\"}\n" : "\n");
    return at;
}

static inline void pm_fatal_write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w; n -= (size_t)w;
    }
}

static void pm_fatal_handler(int sig, siginfo_t *info, void *context) {
    (void)info; (void)context;
    char line[PM_FATAL_RUNNING_MAX + 512];
    const char *running = pm_fatal.running[__atomic_load_n(&pm_fatal.current, __ATOMIC_ACQUIRE)];
    pm_fatal_write_all(pm_fatal.log_fd, line, pm_fatal_compose(line, sizeof line, pm_fatal.json, sig, running));
    if (pm_fatal.crash_fd >= 0)
        pm_fatal_write_all(pm_fatal.crash_fd, line, pm_fatal_compose(line, sizeof line, 0, sig, running));
    /* SA_RESETHAND restored the default action: the raised signal is delivered with it on return. */
    raise(sig);
}

/* An alternate signal stack for the calling thread (each thread needs its own), unless it has one. */
static inline int pm_fatal_ensure_altstack(void) {
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE)) return 0;
    void *p = mmap(NULL, PM_FATAL_ALTSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    stack_t st = { .ss_sp = p, .ss_flags = 0, .ss_size = PM_FATAL_ALTSTACK_BYTES };
    return sigaltstack(&st, NULL);
}

static inline int pm_fatal_install(int log_fd, int crash_fd, int json) {
    pm_fatal.log_fd = log_fd;
    pm_fatal.crash_fd = crash_fd;
    pm_fatal.json = json;
    if (pm_fatal_ensure_altstack() != 0) return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = pm_fatal_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    int signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (sigaction(signals[i], &sa, NULL) != 0) return -1;
    return 0;
}
