/*
 * sk_os_posix.c: the kernel's OS layer on POSIX systems (Linux, macOS, the
 * BSDs). See sk_os.h for the interface; sk_os_win32.c is the Windows one.
 */
#include "sk_os.h"

#if !SK_OS_WIN32

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <sys/resource.h>
#include <sys/sysctl.h>
#endif

typedef struct {
    void (*fn)(void *);
    void *arg;
} sk_os_start_arg;

static void *
sk_os_trampoline(void *p)
{
    sk_os_start_arg a = *(sk_os_start_arg *)p;
    free(p);
    a.fn(a.arg);
    return NULL;
}

int
sk_thread_start(sk_thread *t, void (*fn)(void *), void *arg)
{
    sigset_t block, saved;
    sk_os_start_arg *a = (sk_os_start_arg *)malloc(sizeof(sk_os_start_arg));
    if (a == NULL) {
        return -1;
    }
    a->fn = fn;
    a->arg = arg;
    sigfillset(&block);
    sigdelset(&block, SIGSEGV);
    sigdelset(&block, SIGBUS);
    sigdelset(&block, SIGFPE);
    sigdelset(&block, SIGILL);
    sigdelset(&block, SIGTRAP);
    sigdelset(&block, SIGABRT);
    sigdelset(&block, SIGSYS);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    const int rc = pthread_create(t, NULL, sk_os_trampoline, a); /* joinable */
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        free(a);
        return -1;
    }
    return 0;
}

void
sk_thread_join(sk_thread t)
{
    pthread_join(t, NULL);
}

void
sk_os_atfork_child(void (*fn)(void))
{
    pthread_atfork(NULL, NULL, fn);
}

#if defined(__APPLE__)
/*
 * macOS: mach_absolute_time and getrusage exist on every version, where
 * clock_gettime needs a deployment target of 10.12 or later.
 */
double
sk_os_now(void)
{
    static double scale = 0.0; /* seconds per tick; a benign race sets the same value */
    if (scale == 0.0) {
        mach_timebase_info_data_t tb;
        mach_timebase_info(&tb);
        scale = 1e-9 * (double)tb.numer / (double)tb.denom;
    }
    return scale * (double)mach_absolute_time();
}

double
sk_os_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* host_statistics(HOST_CPU_LOAD_INFO): ticks of every CPU by state, at CLK_TCK. */
int
sk_os_busy_seconds(double *busy)
{
    static mach_port_t host = MACH_PORT_NULL; /* one send right, kept */
    host_cpu_load_info_data_t info;
    mach_msg_type_number_t count = HOST_CPU_LOAD_INFO_COUNT;
    if (host == MACH_PORT_NULL) {
        host = mach_host_self();
    }
    if (host_statistics(host, HOST_CPU_LOAD_INFO, (host_info_t)&info, &count) != KERN_SUCCESS) {
        return -1;
    }
    long hz = sysconf(_SC_CLK_TCK);
    hz = hz > 0 ? hz : 100;
    *busy = (double)((unsigned long long)info.cpu_ticks[CPU_STATE_USER] +
                     info.cpu_ticks[CPU_STATE_SYSTEM] + info.cpu_ticks[CPU_STATE_NICE]) /
            (double)hz;
    return 0;
}
#else
/* Seconds on `clock` (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID). */
static double
sk_os_clock(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double
sk_os_now(void)
{
    return sk_os_clock(CLOCK_MONOTONIC);
}

double
sk_os_cpu_seconds(void)
{
    return sk_os_clock(CLOCK_PROCESS_CPUTIME_ID);
}

/* Linux: the first line of /proc/stat. Elsewhere (no /proc/stat) -1: no guard. */
int
sk_os_busy_seconds(double *busy)
{
    static long hz = 0;
    char buf[512];
    unsigned long long v[8] = {0};
    const int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    const ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = 0;
    /* user nice system idle iowait irq softirq steal (guest time is inside user) */
    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) < 7) {
        return -1;
    }
    if (hz == 0) {
        hz = sysconf(_SC_CLK_TCK);
        hz = hz > 0 ? hz : 100;
    }
    *busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
    return 0;
}
#endif /* __APPLE__ */

/*
 * The largest cache of CPU 0: Linux's sysfs (the kernel's own reading of the
 * CPU, which a hypervisor's odd cpuid leaves do not fool as glibc's sysconf
 * can), macOS's sysctl. 0 where neither answers.
 */
size_t
sk_os_cache_bytes(void)
{
#if defined(__APPLE__)
    static const char *const names[] = {"hw.l3cachesize", "hw.l2cachesize"};
    for (int i = 0; i < 2; i++) {
        uint64_t v = 0;
        size_t len = sizeof(v);
        if (sysctlbyname(names[i], &v, &len, NULL, 0) == 0 && len == sizeof(v) && v > 0) {
            return (size_t)v;
        }
    }
    return 0;
#else
    unsigned long long best = 0;
    for (int i = 0; i < 8; i++) {
        char path[64], buf[32], *end;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        const int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            break;
        }
        const ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0) {
            continue;
        }
        buf[n] = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        v <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        best = v > best ? v : best;
    }
    return (size_t)best;
#endif
}

int
sk_os_ncpu(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

#else
typedef int sk_os_posix_unused; /* ISO C: no empty translation unit */
#endif /* !SK_OS_WIN32 */
