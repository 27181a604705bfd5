/*
 * sk_os_win32.c: the kernel's OS layer on Windows (MSVC, clang-cl, mingw-w64).
 * See sk_os.h for the interface; sk_os_posix.c is the POSIX one.
 */
#include "sk_os.h"

#if SK_OS_WIN32

#include <process.h>
#include <stdlib.h>

typedef struct {
    void (*fn)(void *);
    void *arg;
} sk_os_start_arg;

/* _beginthreadex, not CreateThread: the thread may use the C runtime. */
static unsigned __stdcall
sk_os_trampoline(void *p)
{
    sk_os_start_arg a = *(sk_os_start_arg *)p;
    free(p);
    a.fn(a.arg);
    return 0;
}

/* No signals to mask: Windows delivers Ctrl+C on a thread of its own. */
int
sk_thread_start(sk_thread *t, void (*fn)(void *), void *arg)
{
    sk_os_start_arg *a = (sk_os_start_arg *)malloc(sizeof(sk_os_start_arg));
    if (a == NULL) {
        return -1;
    }
    a->fn = fn;
    a->arg = arg;
    const uintptr_t h = _beginthreadex(NULL, 0, sk_os_trampoline, a, 0, NULL);
    if (h == 0) {
        free(a);
        return -1;
    }
    *t = (HANDLE)h;
    return 0;
}

void
sk_thread_join(sk_thread t)
{
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}

/* Windows has no fork: nothing to reset in a child. */
void
sk_os_atfork_child(void (*fn)(void))
{
    (void)fn;
}

double
sk_os_now(void)
{
    static double scale = 0.0; /* seconds per count; a benign race sets the same value */
    LARGE_INTEGER t;
    if (scale == 0.0) {
        LARGE_INTEGER f;
        QueryPerformanceFrequency(&f);
        scale = 1.0 / (double)f.QuadPart;
    }
    QueryPerformanceCounter(&t);
    return scale * (double)t.QuadPart;
}

static double
sk_os_filetime_s(const FILETIME *ft) /* 100 ns units */
{
    return 1e-7 * (double)(((unsigned long long)ft->dwHighDateTime << 32) | ft->dwLowDateTime);
}

double
sk_os_cpu_seconds(void)
{
    FILETIME created, exited, kernel, user;
    if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) {
        return 0.0;
    }
    return sk_os_filetime_s(&kernel) + sk_os_filetime_s(&user);
}

/* GetSystemTimes: summed over every CPU; kernel time includes idle time. */
int
sk_os_busy_seconds(double *busy)
{
    FILETIME idle, kernel, user;
    if (!GetSystemTimes(&idle, &kernel, &user)) {
        return -1;
    }
    *busy = sk_os_filetime_s(&kernel) + sk_os_filetime_s(&user) - sk_os_filetime_s(&idle);
    return 0;
}

/* Not asked on Windows (GetLogicalProcessorInformation would say): 0, unknown. */
size_t
sk_os_cache_bytes(void)
{
    return 0;
}

int
sk_os_ncpu(void)
{
    const DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (int)n : 1;
}

#else
typedef int sk_os_win32_unused; /* ISO C: no empty translation unit */
#endif /* SK_OS_WIN32 */
