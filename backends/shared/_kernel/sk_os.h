/*
 * sk_os.h: the kernel's operating-system layer, the one place that knows
 * which OS and which compiler it is built with.
 *
 *   threads       sk_thread_start / sk_thread_join
 *   locks         sk_mutex (init, lock, trylock, unlock), static SK_MUTEX_INIT
 *   conditions    sk_cond (init, wait, signal, broadcast), static SK_COND_INIT
 *   atomics       relaxed loads and stores of the settings other threads read,
 *                 the pool's counters (fetch-add, acquire loads, release adds)
 *   clocks        sk_os_now (monotonic wall seconds), sk_os_cpu_seconds (this
 *                 process's CPU time)
 *   machine load  sk_os_busy_seconds (busy CPU seconds of the whole machine),
 *                 sk_os_ncpu, sk_os_cache_bytes (the last-level cache)
 *   CPU features  sk_os_cpu_features (AVX2, AVX-512 usable: CPU and OS)
 *   fork          sk_os_atfork_child (nothing to do on Windows: no fork)
 *
 * Two implementations: POSIX (Linux, macOS, other Unixes; sk_os_posix.c) and
 * Win32 (Windows with MSVC, clang-cl or mingw-w64; sk_os_win32.c). What is on
 * a hot path (atomics, locks, the pause instruction) is inline here, so the
 * layer costs no call where the code used to call pthreads or the compiler's
 * builtins directly. No other file calls pthreads, Win32 threads,
 * clock_gettime or an __atomic builtin.
 */
#ifndef SK_OS_H
#define SK_OS_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define SK_OS_WIN32 1
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX /* no min/max macros in the kernel's names */
#endif
#include <windows.h>
#else
#define SK_OS_WIN32 0
#include <pthread.h>
#endif

/* Atomics by compiler (clang-cl defines _MSC_VER too, and has the builtins). */
#if defined(__GNUC__) || defined(__clang__)
#define SK_ATOMIC_BUILTINS 1
#elif defined(_MSC_VER)
#define SK_ATOMIC_BUILTINS 0
#include <intrin.h>
#else
#error "arrayselect's kernel needs GCC, Clang or MSVC atomics"
#endif

/* The kernel's index type is npy_intp (Py_ssize_t): the same type as ptrdiff_t
 * on every platform Python supports, so one set of atomics serves both. */
typedef ptrdiff_t sk_os_intp;

/* A compile-time check that every C compiler takes (C89 to C23, MSVC). */
#define SK_STATIC_ASSERT(cond, name) typedef char sk_static_assert_##name[(cond) ? 1 : -1]

/* ------------------------------------------------------------------------ */
/* Atomics                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Settings that Python changes (under the GIL) while a parallel job reads them
 * (without it): relaxed loads and stores, so the accesses are defined and
 * never torn. SK_LOAD/SK_STORE take an lvalue of any scalar type of 4 or 8
 * bytes (int, long, npy_intp, size_t, a pointer).
 */
#if SK_ATOMIC_BUILTINS
#define SK_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define SK_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#else
/*
 * MSVC: what its own <atomic> does for a relaxed access, a volatile access of
 * the object's width (__iso_volatile_*: never torn, never elided or merged, no
 * barrier), converted back with __typeof__ (MSVC 17.9 or later in C).
 */
static inline unsigned __int64
sk_os_load_bits_(const volatile void *p, size_t size)
{
    return size == 8 ? (unsigned __int64)__iso_volatile_load64((const volatile __int64 *)p)
                     : (unsigned __int64)(unsigned __int32)__iso_volatile_load32(
                           (const volatile __int32 *)p);
}
static inline void
sk_os_store_bits_(volatile void *p, size_t size, unsigned __int64 v)
{
    if (size == 8) {
        __iso_volatile_store64((volatile __int64 *)p, (__int64)v);
    }
    else {
        __iso_volatile_store32((volatile __int32 *)p, (__int32)v);
    }
}
#define SK_LOAD(x) ((__typeof__(x))(uintptr_t)sk_os_load_bits_(&(x), sizeof(x)))
#define SK_STORE(x, v) sk_os_store_bits_(&(x), sizeof(x), (unsigned __int64)(uintptr_t)(v))
#endif

/* Typed atomics of the pool (counters and flags shared with the workers). */
static inline sk_os_intp
sk_atomic_fetch_add_intp(sk_os_intp *p, sk_os_intp v) /* relaxed; returns the old value */
{
#if SK_ATOMIC_BUILTINS
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#elif defined(_WIN64)
    return (sk_os_intp)_InterlockedExchangeAdd64((volatile __int64 *)p, (__int64)v);
#else
    return (sk_os_intp)_InterlockedExchangeAdd((volatile long *)p, (long)v);
#endif
}

static inline void
sk_atomic_store_intp(sk_os_intp *p, sk_os_intp v) /* relaxed */
{
#if SK_ATOMIC_BUILTINS
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#elif defined(_WIN64)
    __iso_volatile_store64((volatile __int64 *)p, (__int64)v);
#else
    __iso_volatile_store32((volatile __int32 *)p, (__int32)v);
#endif
}

/* Adds `v` and returns the new value; relaxed. */
static inline int
sk_atomic_add_int(int *p, int v)
{
#if SK_ATOMIC_BUILTINS
    return __atomic_add_fetch(p, v, __ATOMIC_RELAXED);
#else
    return (int)_InterlockedExchangeAdd((volatile long *)p, (long)v) + v;
#endif
}

/* Adds `v` and returns the new value; release: what this thread wrote before
 * is visible to a thread that sees the new value with an acquire load. */
static inline int
sk_atomic_add_int_release(int *p, int v)
{
#if SK_ATOMIC_BUILTINS
    return __atomic_add_fetch(p, v, __ATOMIC_RELEASE);
#else
    return (int)_InterlockedExchangeAdd((volatile long *)p, (long)v) + v; /* full barrier */
#endif
}

static inline int
sk_atomic_load_int(const int *p) /* relaxed */
{
#if SK_ATOMIC_BUILTINS
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#else
    return (int)__iso_volatile_load32((const volatile __int32 *)p);
#endif
}

/* MSVC: the fence that turns a relaxed load into an acquire load, as its <atomic>. */
#if !SK_ATOMIC_BUILTINS
#if defined(_M_ARM64) || defined(_M_ARM)
#define SK_OS_ACQUIRE_FENCE() __dmb(0xB) /* _ARM64_BARRIER_ISH */
#else
#define SK_OS_ACQUIRE_FENCE() _ReadWriteBarrier() /* x86: loads are acquire already */
#endif
#endif

static inline int
sk_atomic_load_int_acquire(const int *p)
{
#if SK_ATOMIC_BUILTINS
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
    const int v = (int)__iso_volatile_load32((const volatile __int32 *)p);
    SK_OS_ACQUIRE_FENCE();
    return v;
#endif
}

static inline sk_os_intp
sk_atomic_load_intp_acquire(const sk_os_intp *p)
{
#if SK_ATOMIC_BUILTINS
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
#if defined(_WIN64)
    const sk_os_intp v = (sk_os_intp)__iso_volatile_load64((const volatile __int64 *)p);
#else
    const sk_os_intp v = (sk_os_intp)__iso_volatile_load32((const volatile __int32 *)p);
#endif
    SK_OS_ACQUIRE_FENCE();
    return v;
#endif
}

/* Adds `v` and returns the new value; release. */
static inline sk_os_intp
sk_atomic_add_intp_release(sk_os_intp *p, sk_os_intp v)
{
#if SK_ATOMIC_BUILTINS
    return __atomic_add_fetch(p, v, __ATOMIC_RELEASE);
#else
    return sk_atomic_fetch_add_intp(p, v) + v; /* the Interlocked functions are full barriers */
#endif
}

/* Relaxed counter increment (statistics). */
static inline void
sk_atomic_inc_u64(unsigned long long *p)
{
#if SK_ATOMIC_BUILTINS
    __atomic_add_fetch(p, 1, __ATOMIC_RELAXED);
#else
    _InterlockedIncrement64((volatile __int64 *)p);
#endif
}

/* A spinning thread's hint to the core (x86 pause, Arm yield). */
static inline void
sk_cpu_relax(void)
{
#if defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_IX86))
    _mm_pause();
#elif defined(_MSC_VER) && !defined(__clang__) && (defined(_M_ARM64) || defined(_M_ARM))
    __yield();
#elif defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/* ------------------------------------------------------------------------ */
/* Threads, locks, condition variables                                      */
/* ------------------------------------------------------------------------ */

#if SK_OS_WIN32
/* Slim reader/writer locks and condition variables (Windows 7 and later). */
typedef HANDLE sk_thread;
typedef SRWLOCK sk_mutex;
typedef CONDITION_VARIABLE sk_cond;
#define SK_MUTEX_INIT SRWLOCK_INIT
#define SK_COND_INIT CONDITION_VARIABLE_INIT

static inline void sk_mutex_init(sk_mutex *m) { InitializeSRWLock(m); }
static inline void sk_mutex_lock(sk_mutex *m) { AcquireSRWLockExclusive(m); }
/* 1 if taken, 0 if another thread holds it. */
static inline int sk_mutex_trylock(sk_mutex *m) { return TryAcquireSRWLockExclusive(m) != 0; }
static inline void sk_mutex_unlock(sk_mutex *m) { ReleaseSRWLockExclusive(m); }
static inline void sk_cond_init(sk_cond *c) { InitializeConditionVariable(c); }
static inline void sk_cond_wait(sk_cond *c, sk_mutex *m)
{
    SleepConditionVariableSRW(c, m, INFINITE, 0);
}
static inline void sk_cond_signal(sk_cond *c) { WakeConditionVariable(c); }
static inline void sk_cond_broadcast(sk_cond *c) { WakeAllConditionVariable(c); }
#else
typedef pthread_t sk_thread;
typedef pthread_mutex_t sk_mutex;
typedef pthread_cond_t sk_cond;
#define SK_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define SK_COND_INIT PTHREAD_COND_INITIALIZER

static inline void sk_mutex_init(sk_mutex *m) { pthread_mutex_init(m, NULL); }
static inline void sk_mutex_lock(sk_mutex *m) { pthread_mutex_lock(m); }
/* 1 if taken, 0 if another thread holds it. */
static inline int sk_mutex_trylock(sk_mutex *m) { return pthread_mutex_trylock(m) == 0; }
static inline void sk_mutex_unlock(sk_mutex *m) { pthread_mutex_unlock(m); }
static inline void sk_cond_init(sk_cond *c) { pthread_cond_init(c, NULL); }
static inline void sk_cond_wait(sk_cond *c, sk_mutex *m) { pthread_cond_wait(c, m); }
static inline void sk_cond_signal(sk_cond *c) { pthread_cond_signal(c); }
static inline void sk_cond_broadcast(sk_cond *c) { pthread_cond_broadcast(c); }
#endif

/*
 * Start a joinable thread running fn(arg); 0 on success. On POSIX the new
 * thread blocks every signal a fault does not raise in the faulting thread:
 * asynchronous signals (SIGINT, SIGTERM, SIGCHLD, a SIGUSR1 some thread waits
 * for with sigwait, ...) then always reach a thread of the program, never a
 * worker, where Python's handler would only set a flag for the main thread,
 * or the default action would end the process. The mask is set before the
 * thread exists, so no signal can land in between.
 */
int sk_thread_start(sk_thread *t, void (*fn)(void *), void *arg);
void sk_thread_join(sk_thread t);

/* Call fn in the child after a fork (POSIX pthread_atfork); no-op on Windows. */
void sk_os_atfork_child(void (*fn)(void));

/* ------------------------------------------------------------------------ */
/* Clocks, machine load, CPU features                                       */
/* ------------------------------------------------------------------------ */

/* Monotonic wall-clock seconds (arbitrary origin). */
double sk_os_now(void);
/* CPU seconds this process has used, all its threads. */
double sk_os_cpu_seconds(void);
/*
 * The machine's busy CPU seconds since boot, summed over every CPU (all but
 * idle and I/O wait; steal counts as busy): 0, or -1 where this OS gives no
 * such count (then the kernel's room guard is off).
 */
int sk_os_busy_seconds(double *busy);
/* CPUs online (>= 1). */
int sk_os_ncpu(void);
/* Bytes of the largest (last-level) cache CPU 0 uses; 0 where this OS does not say. */
size_t sk_os_cache_bytes(void);

/* Bits of sk_os_cpu_features(). */
#define SK_CPU_AVX2 1
#define SK_CPU_AVX512 2 /* F, BW, VL, DQ and CD: x86-64-v4 */
/*
 * What this CPU has and the OS saves across context switches (the XSAVE state
 * of the AVX and AVX-512 registers), from cpuid and xgetbv (any compiler),
 * asked once. 0 off x86.
 */
int sk_os_cpu_features(void);
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#define SK_OS_X86 1
int sk_os_cpu_features_cpuid(void);
#else
#define SK_OS_X86 0
#endif

#endif /* SK_OS_H */
