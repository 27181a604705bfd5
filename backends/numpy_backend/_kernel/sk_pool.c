/*
 * sk_pool.c: the thread pool, and when a select uses it.
 */
#include "sk_kernel.h"

#include <time.h>

/*
 * Work is split across threads only when the output has at least this many
 * elements. Measured on the 2-core x86-64 KVM guest (Xeon @ 2.5 GHz) with the
 * machine otherwise quiet (load average < 1): float32, random bool cond,
 * contiguous, one fresh process per point, median of 301 calls, threshold forced
 * to 1 thread vs 2 threads:
 *     32768 elements: 19.4 us vs 15.4 us      65536: 34.0 us vs 25.0 us
 *    131072:          82.0 us vs 48.7 us     262144: 171 us vs 99 us
 * and 10^5..4*10^6 elements: 2 threads 1.9-2.2x faster. So threads pay from
 * about 2^15 elements; the default is 2^16 for margin. Since idle workers spin
 * for SK_WORKER_SPIN_SECONDS before sleeping, back-to-back calls pay from 2^15
 * (asv_benchmarks/thread_threshold.py: 32768 elements 16.6 vs 11.2 us, 65536
 * 33.1 vs 18.8 us). Single calls after a 2 ms pause (--pause-ms 2) gain
 * nothing from a second thread below ~3*10^6 elements on that VM (0.74-1.0x:
 * after idling it serves even cached operands at a rate one thread saturates);
 * the back-off below catches that. On a busy machine (load
 * average 3.5-10, other jobs on both cores) asv_benchmarks/thread_threshold.py
 * found threads paying only from ~2^22 elements: the back-off below detects
 * that case at run time and falls back to one thread.
 */
/* Below this many elements the GIL is kept (releasing it costs more than it saves). */
#define SK_NOGIL_MIN 4096
/* Work is claimed in chunks of at least this many elements ... */
#define SK_MIN_CHUNK 16384
/* ... about this many per thread, so a late or preempted thread costs little. */
#define SK_CHUNKS_PER_THREAD 4
/* How long the caller busy-waits for the last workers before sleeping. */
#define SK_SPIN_SECONDS 200e-6
/* How long an idle worker busy-waits for the next job before sleeping. */
#ifndef SK_WORKER_SPIN_SECONDS
#define SK_WORKER_SPIN_SECONDS 200e-6
#endif

npy_intp sk_parallel_min = SK_DEFAULT_PARALLEL_MIN;
int sk_num_threads = 1;
unsigned long long sk_calls = 0, sk_threaded_calls = 0, sk_temp_calls = 0;
int sk_adaptive = 1;
unsigned long long sk_backoff_jobs = 0;
/* Diagnostics (pool owner only): seconds the caller worked, and the runs' wall time. */
double sk_worked_s = 0.0, sk_wall_s = 0.0;

#if SK_HAVE_THREADS

/*
 * One job at a time (the `busy` lock; a second concurrent caller runs its job
 * serially). The output is cut into chunks that the caller and the workers
 * claim with an atomic counter, so a worker the OS has not scheduled yet costs
 * nothing: the caller takes its chunks. When the caller runs out of chunks it
 * closes the job (late workers skip it) and waits only for the workers that
 * are inside it.
 */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    pthread_mutex_t busy;      /* held by the thread that owns the pool for one job */
    int nworkers;              /* worker threads started */
    unsigned long generation;  /* bumped for every job */
    const sk_job *job;         /* the open job, or NULL */
    int nparts;                /* workers with id < nparts may join it */
    npy_intp chunk;
    npy_intp next;             /* next flat index to claim (atomic) */
    int active;                /* workers inside the open job */
} sk_pool_t;

static sk_pool_t sk_pool = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, 0, 0, NULL, 0, 0, 0, 0,
};

typedef struct {
    int id;                    /* 1 .. nworkers (the caller is part 0) */
    unsigned long seen;        /* the generation when the worker was started */
} sk_worker_arg;

static inline void
sk_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double
sk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Claim and run chunks of a job until none is left; returns the elements it ran. */
static npy_intp
sk_drain(const sk_job *J, npy_intp chunk)
{
    npy_intp done = 0;
    for (;;) {
        const npy_intp start = __atomic_fetch_add(&sk_pool.next, chunk, __ATOMIC_RELAXED);
        if (start >= J->total) {
            return done;
        }
        const npy_intp end = J->total - start > chunk ? start + chunk : J->total;
        sk_run_range(J, start, end);
        done += end - start;
    }
}

static void *
sk_worker(void *arg_)
{
    const int id = ((sk_worker_arg *)arg_)->id;
    /* Jobs posted after this worker was started (possibly before it runs) are its own. */
    unsigned long seen = ((sk_worker_arg *)arg_)->seen;
    free(arg_);
    pthread_mutex_lock(&sk_pool.mu);
    for (;;) {
        if (sk_pool.generation == seen && SK_WORKER_SPIN_SECONDS > 0) {
            /*
             * Busy-wait a little for the next job before sleeping: waking a
             * sleeping thread cost 5-20 us on the 2-core VM, a large part of
             * a 2^16-element job (~17 us per thread), and selects often come
             * in runs (a loop, a model's layers).
             */
            pthread_mutex_unlock(&sk_pool.mu);
            const double until = sk_now() + SK_WORKER_SPIN_SECONDS;
            for (unsigned spin = 1;
                 __atomic_load_n(&sk_pool.generation, __ATOMIC_ACQUIRE) == seen; spin++) {
                sk_cpu_relax();
                if ((spin & 255) == 0 && sk_now() > until) {
                    break;
                }
            }
            pthread_mutex_lock(&sk_pool.mu);
        }
        while (sk_pool.generation == seen) {
            pthread_cond_wait(&sk_pool.work_cv, &sk_pool.mu);
        }
        seen = sk_pool.generation;
        if (sk_pool.job == NULL || id >= sk_pool.nparts) {
            continue; /* closed already, or not needed */
        }
        const sk_job *job = sk_pool.job;
        const npy_intp chunk = sk_pool.chunk;
        __atomic_add_fetch(&sk_pool.active, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&sk_pool.mu);

        sk_drain(job, chunk);

        pthread_mutex_lock(&sk_pool.mu);
        if (__atomic_sub_fetch(&sk_pool.active, 1, __ATOMIC_RELEASE) == 0) {
            pthread_cond_signal(&sk_pool.done_cv);
        }
    }
    return NULL;
}

/* Start workers until there are `want`; returns how many exist. Called with mu held. */
static int
sk_pool_grow(int want)
{
    while (sk_pool.nworkers < want) {
        pthread_t tid;
        pthread_attr_t attr;
        sk_worker_arg *arg = (sk_worker_arg *)malloc(sizeof(sk_worker_arg));
        if (arg == NULL) {
            break;
        }
        arg->id = sk_pool.nworkers + 1;
        arg->seen = sk_pool.generation;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, sk_worker, arg);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            free(arg);
            break;
        }
        sk_pool.nworkers++;
    }
    return sk_pool.nworkers;
}

/* In a forked child the workers do not exist: start from an empty pool. */
void
sk_pool_atfork_child(void)
{
    pthread_mutex_init(&sk_pool.mu, NULL);
    pthread_mutex_init(&sk_pool.busy, NULL);
    pthread_cond_init(&sk_pool.work_cv, NULL);
    pthread_cond_init(&sk_pool.done_cv, NULL);
    sk_pool.nworkers = 0;
    sk_pool.job = NULL;
    sk_pool.nparts = 0;
    sk_pool.active = 0;
}

/*
 * Back-off when threads do not pay. On an oversubscribed machine the woken
 * worker can preempt the caller on its own core, or be preempted inside its
 * chunk while the caller waits: the parallel run then takes longer than the
 * caller alone would have. After each parallel run the caller compares its
 * wall time with a serial estimate (its own elements per second over the whole
 * job); when threads did not win by 10%, the next `sk_backoff` parallel-sized
 * jobs run on the calling thread alone (1, 2, 4, ... up to SK_BACKOFF_MAX while
 * it keeps happening); a run that pays resets the back-off. Only the pool owner
 * (holding `busy`) updates it.
 */
#define SK_BACKOFF_MAX 64
static int sk_backoff = 0, sk_backoff_next = 1;

static void
sk_adapt(const sk_job *J, npy_intp mine, double worked, double wall)
{
    sk_worked_s += worked;
    sk_wall_s += wall;
    /* The caller's rate, scaled to the whole job; no work of its own: it did not run. */
    const int pays = mine > 0 && wall < 0.9 * worked * ((double)J->total / (double)mine);
    if (sk_adaptive && !pays) {
        __atomic_store_n(&sk_backoff, sk_backoff_next, __ATOMIC_RELAXED);
        sk_backoff_next = sk_backoff_next < SK_BACKOFF_MAX ? 2 * sk_backoff_next
                                                           : SK_BACKOFF_MAX;
    }
    else {
        sk_backoff_next = 1;
    }
}

/* Whether a parallel-sized job should run serially now (and count it). */
static int
sk_backing_off(void)
{
    int left = __atomic_load_n(&sk_backoff, __ATOMIC_RELAXED);
    while (left > 0) {
        if (__atomic_compare_exchange_n(&sk_backoff, &left, left - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&sk_backoff_jobs, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

/* Run a job on up to `parts` threads (the caller included). Returns 0 if it could not. */
static int
sk_run_parallel(const sk_job *J, int parts)
{
    if (pthread_mutex_trylock(&sk_pool.busy) != 0) {
        return 0; /* another thread owns the pool: run this job serially */
    }
    pthread_mutex_lock(&sk_pool.mu);
    int have = sk_pool_grow(parts - 1);
    if (have + 1 < parts) {
        parts = have + 1;
    }
    if (parts < 2) {
        pthread_mutex_unlock(&sk_pool.mu);
        pthread_mutex_unlock(&sk_pool.busy);
        return 0;
    }
    /* About SK_CHUNKS_PER_THREAD chunks per thread, whole cache lines of output. */
    npy_intp chunk = (J->total + (npy_intp)parts * SK_CHUNKS_PER_THREAD - 1) /
                     ((npy_intp)parts * SK_CHUNKS_PER_THREAD);
    if (chunk < SK_MIN_CHUNK) {
        chunk = SK_MIN_CHUNK;
    }
    chunk = (chunk + 63) & ~(npy_intp)63;
    if (J->tile_r > 1) { /* whole panels of tile_r rows */
        const npy_intp panel = J->tile_r * J->shape[J->nd - 1];
        chunk = (chunk + panel - 1) / panel * panel;
    }
    sk_pool.job = J;
    sk_pool.nparts = parts;
    sk_pool.chunk = chunk;
    __atomic_store_n(&sk_pool.next, 0, __ATOMIC_RELAXED);
    sk_pool.active = 0;
    const double t_start = sk_now();
    __atomic_add_fetch(&sk_pool.generation, 1, __ATOMIC_RELEASE); /* read by spinning workers */
    pthread_cond_broadcast(&sk_pool.work_cv);
    pthread_mutex_unlock(&sk_pool.mu);

    const double t0 = sk_now();
    const npy_intp mine = sk_drain(J, chunk);
    const double t1 = sk_now();

    pthread_mutex_lock(&sk_pool.mu);
    sk_pool.job = NULL; /* closed: workers that wake up now skip it */
    if (sk_pool.active > 0) {
        /*
         * Wait for the workers still inside. Busy-wait a little first: sleeping
         * on the condition variable (or sched_yield) gives the core away, and on
         * a busy machine getting it back costs a scheduler time slice
         * (milliseconds), far more than the rest of a chunk.
         */
        pthread_mutex_unlock(&sk_pool.mu);
        const double spin_until = t1 + SK_SPIN_SECONDS;
        for (unsigned spin = 1; __atomic_load_n(&sk_pool.active, __ATOMIC_ACQUIRE) > 0; spin++) {
            sk_cpu_relax();
            if ((spin & 255) == 0 && sk_now() > spin_until) {
                break;
            }
        }
        pthread_mutex_lock(&sk_pool.mu);
        while (sk_pool.active > 0) {
            pthread_cond_wait(&sk_pool.done_cv, &sk_pool.mu);
        }
    }
    pthread_mutex_unlock(&sk_pool.mu);
    sk_adapt(J, mine, t1 - t0, sk_now() - t_start);
    pthread_mutex_unlock(&sk_pool.busy);
    return 1;
}

#endif /* SK_HAVE_THREADS */

/* Number of threads a job of `total` elements gets. */
int
sk_parts_for(npy_intp total, int max_threads)
{
    int threads = sk_num_threads;
    if (max_threads > 0 && max_threads < threads) {
        threads = max_threads;
    }
    if (threads < 2 || total < sk_parallel_min) {
        return 1;
    }
    npy_intp by_size = total / SK_MIN_CHUNK;
    if (by_size < threads) {
        threads = (int)(by_size < 1 ? 1 : by_size);
    }
    return threads;
}

void
sk_execute(const sk_job *J)
{
    int parts = sk_parts_for(J->total, J->max_threads);
    int threaded = 0;
    sk_calls++;
    if (J->total < SK_NOGIL_MIN) {
        sk_run_range(J, 0, J->total);
        return;
    }
    Py_BEGIN_ALLOW_THREADS
#if SK_HAVE_THREADS
    if (parts > 1 && !sk_backing_off()) {
        threaded = sk_run_parallel(J, parts);
    }
#endif
    if (!threaded) {
        sk_run_range(J, 0, J->total);
    }
    Py_END_ALLOW_THREADS
    if (threaded) {
        sk_threaded_calls++;
    }
}

/* Turn the back-off on or off (and forget its state). */
void
sk_set_adaptive_mode(int on)
{
#if SK_HAVE_THREADS
    sk_adaptive = on;
    __atomic_store_n(&sk_backoff, 0, __ATOMIC_RELAXED);
    sk_backoff_next = 1;
#else
    (void)on;
#endif
}
