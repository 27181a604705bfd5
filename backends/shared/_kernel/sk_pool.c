/*
 * sk_pool.c: the thread pool, and when a select uses it.
 *
 * When to split a job is decided from the job and from whether the machine
 * has room, never from how the last calls happened to time: on a shared
 * machine timings are noise, and reacting to them made the thread count flip
 * from call to call (and the timings with it).
 *
 *  1. Cost. A job's cost is the bytes its loops move (sk_job.bpe per element,
 *     from its layout; see sk_job_bytes in sk_plan.c). It is split when it
 *     moves at least as much as sk_parallel_min float32 elements with a bool
 *     cond (SK_REF_BPE bytes each), into at most one part per half of that, so
 *     every thread gets enough work to repay waking it. The same call always
 *     gets the same answer.
 *
 *  2. Room. The owner of the pool samples the machine's busy CPU time
 *     (sk_os_busy_seconds: /proc/stat on Linux, where steal time counts as
 *     busy; GetSystemTimes on Windows; host_statistics on macOS; elsewhere
 *     the guard is off) at most every SK_ROOM_PERIOD
 *     seconds, subtracts this process's own CPU time, and smooths the result
 *     (EWMA, weight SK_ROOM_ALPHA): the cores other processes keep busy. The
 *     threads allowed move with hysteresis around the free cores: one fewer
 *     when fewer than `allowed - 1 + SK_ROOM_HYST` cores are free, one more
 *     when at least `allowed + 1 - SK_ROOM_HYST` are (two cores: down when
 *     others use 0.7 of a core, up again below 0.3). A second thread on a core
 *     another process is using makes the job wait for a time slice; one noisy
 *     sample moves nothing, a competitor that stays for a few hundred ms does.
 *
 *  3. Loops. Waking a sleeping worker costs tens of microseconds (a wake-up
 *     across cores; on a VM, a virtual CPU to schedule), paid by the caller
 *     and again by the late start of the worker's chunk: a small job does not
 *     repay it. Workers spin for a while after each job, so the next call of
 *     a loop finds them awake. A job from the threshold on is split when the
 *     previous job of that size ended less than the spin bound ago (a loop:
 *     the first call of a loop runs on the caller, the second wakes the
 *     workers, the rest find them spinning) or when it moves SK_COLD_FACTOR
 *     times the threshold's bytes; an isolated smaller job runs on the
 *     caller. This depends on the program's call pattern, not on how long the
 *     last calls took.
 *
 * Only jobs big enough to split ever look at (2) and (3); a job run on fewer
 * threads because of them is counted (guarded_calls, cold_calls).
 *
 *  4. Another library's threads. PyTorch runs its CPU ops on an OpenMP
 *     runtime whose idle threads spin for a while after each op (GNU
 *     libgomp's default: until GOMP_SPINCOUNT spins). A select split on this
 *     pool right after a torch op shares a core with such a spinning thread,
 *     and a chunk whose thread loses its time slice holds the whole job up by
 *     milliseconds: on 2 cores a select at 10^6 elements between torch.where
 *     calls took 103-681 us on two threads (docs/torch.md), 178-335 on one. So a job
 *     marked on_openmp (the PyTorch backend's) is split on that runtime's own
 *     threads (its GOMP_parallel, set by sk_pool_set_openmp): the thread that
 *     spins is the one that takes the work. Such a job is split by cost (1)
 *     only: the runtime decides about waking its threads as it does for
 *     torch's own ops.
 */
#include "sk_kernel.h"

/* Bytes a float32 element with a bool cond moves (the unit of the threshold). */
#define SK_REF_BPE 13
/* Below this many elements the GIL is kept (releasing it costs more than it saves). */
#define SK_NOGIL_MIN 4096
/* Chunks claimed from the shared counter move between these many bytes ... */
#define SK_CHUNK_MIN_BYTES ((npy_intp)256 << 10)
#define SK_CHUNK_MAX_BYTES ((npy_intp)1 << 20)
/* ... and there are at least this many per thread: a preempted thread holds up little. */
#define SK_CHUNKS_PER_THREAD 8
/* Isolated jobs (not in a loop) must move this many times the threshold's bytes. */
#define SK_COLD_FACTOR 8
/* Sampling the room on the machine. */
#define SK_ROOM_PERIOD 0.05
#define SK_ROOM_ALPHA 0.3
#define SK_ROOM_HYST 0.3
/*
 * Busy-waiting. An idle worker spins this long for the next job before it
 * sleeps (only while other threads are allowed: on a busy machine its spin
 * would take a core from someone else), because waking a sleeping thread
 * costs more than a small job's share; the caller spins this long for the
 * last workers inside its job before it sleeps, because giving the core away
 * can cost a time slice to get back. Both are measured in docs/numpy_kernel.md.
 */
#define SK_WORKER_SPIN_NS 200000
#define SK_CALLER_SPIN_NS 200000

/* GOMP_parallel of the OpenMP runtime set by sk_pool_set_openmp (see (4) above),
 * or NULL. Set with the GIL held; each job reads it once. A forked child forgets it
 * (sk_pool_atfork_child): GNU libgomp's threads are gone there, and its next
 * parallel region waits for them forever, as torch's own ops in such a child do. */
typedef void (*sk_gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);
static sk_gomp_parallel_fn sk_gomp_parallel = NULL;

npy_intp sk_parallel_min = SK_DEFAULT_PARALLEL_MIN;
int sk_num_threads = 1;
unsigned long long sk_calls = 0, sk_threaded_calls = 0, sk_temp_calls = 0;
static unsigned long long sk_guarded_calls = 0, sk_cold_calls = 0, sk_openmp_calls = 0;
static npy_intp sk_worker_spin_ns = SK_WORKER_SPIN_NS, sk_caller_spin_ns = SK_CALLER_SPIN_NS;
static int sk_load_guard = 1;
/* Diagnostics (pool owner only): seconds the caller worked, and the runs' wall time. */
static double sk_worked_s = 0.0, sk_wall_s = 0.0;

/* Number of threads a job gets by its cost (before the room on the machine). */
int
sk_parts_for(const sk_job *J)
{
    int threads = SK_LOAD(sk_num_threads);
    if (J->max_threads > 0 && J->max_threads < threads) {
        threads = J->max_threads;
    }
    const double min_bytes = (double)SK_LOAD(sk_parallel_min) * SK_REF_BPE;
    const double bytes = (double)J->total * (double)J->bpe;
    if (threads < 2 || bytes < min_bytes || J->total < 2 * 64) {
        return 1;
    }
    if (min_bytes > 0 && bytes / (0.5 * min_bytes) < threads) {
        threads = (int)(bytes / (0.5 * min_bytes));
    }
    return threads < 1 ? 1 : threads;
}

/* Output elements per chunk of a job split `parts` ways: enough chunks for the
 * threads to even out, each between the bounds in bytes, whole cache lines of
 * output, whole panels of a tiled job, and at least one element even when one
 * element moves more than the largest chunk (a chunk of none would never end). */
npy_intp
sk_chunk_for(const sk_job *J, int parts)
{
    const npy_intp bpe = J->bpe > 0 ? J->bpe : 1;
    npy_intp chunk = J->total / ((npy_intp)parts * SK_CHUNKS_PER_THREAD);
    chunk = chunk * bpe > SK_CHUNK_MAX_BYTES ? SK_CHUNK_MAX_BYTES / bpe : chunk;
    chunk = chunk * bpe < SK_CHUNK_MIN_BYTES ? SK_CHUNK_MIN_BYTES / bpe : chunk;
    chunk = chunk < 1 ? 1 : chunk;
    chunk = (chunk + 63) & ~(npy_intp)63;
    if (J->tile_r > 1) {
        const npy_intp panel = J->tile_r * J->shape[J->nd - 1];
        chunk = (chunk + panel - 1) / panel * panel;
    }
    return chunk;
}

/* Claim chunks of a job from the shared counter `next` and run them until none is
 * left (every thread of a split job, on either pool, runs this). */
static void
sk_drain(const sk_job *J, npy_intp chunk, sk_os_intp *next)
{
    for (;;) {
        const npy_intp start = sk_atomic_fetch_add_intp(next, chunk);
        if (start >= J->total) {
            return;
        }
        sk_run_range(J, start, J->total - start > chunk ? start + chunk : J->total);
    }
}

#if SK_HAVE_THREADS

#include <stdlib.h>

static double sk_last_end = -1.0; /* when the last job of parallel size ended (pool owner) */

/*
 * One job at a time (the `busy` lock; a second concurrent caller runs its job
 * on its own thread). The output is cut into chunks that the caller and the
 * workers claim with an atomic counter, so a worker the OS has not scheduled
 * yet costs nothing: the caller takes its chunks. When the caller runs out of
 * chunks it closes the job (late workers skip it) and waits only for the
 * workers inside it.
 */
typedef struct {
    sk_mutex mu;
    sk_cond work_cv;
    sk_cond done_cv;
    sk_mutex busy;             /* held by the thread that owns the pool for one job */
    int nworkers;              /* worker threads started */
    npy_intp generation;       /* bumped for every job (and to stop the workers) */
    const sk_job *job;         /* the open job, or NULL */
    int nparts;                /* workers with id < nparts may join it */
    npy_intp chunk;
    npy_intp next;             /* next flat index to claim (atomic) */
    int active;                /* workers inside the open job */
    int quit;                  /* set by sk_pool_shutdown: workers exit */
    int spinning;              /* workers busy-waiting for the next job (atomic) */
    sk_thread tids[SK_MAX_THREADS];
} sk_pool_t;

static sk_pool_t sk_pool = {
    SK_MUTEX_INIT, SK_COND_INIT, SK_COND_INIT, SK_MUTEX_INIT, 0, 0, NULL, 0, 0, 0, 0, 0, 0, {0},
};

typedef struct {
    int id;                    /* 1 .. nworkers (the caller is part 0) */
    npy_intp seen;             /* the generation when the worker was started */
} sk_worker_arg;

/* The room on the machine (pool owner only, but for the relaxed reads of `allowed`). */
static struct {
    int ok;                    /* -1: not tried yet, 0: cannot sample here, 1: sampling */
    double t;                  /* wall time of the last sample */
    double busy, self;         /* machine busy and own CPU seconds at the last sample */
    double others;             /* EWMA of the cores busy with other processes */
    int allowed;               /* threads allowed now (the hysteresis state) */
    int ncpu;                  /* CPUs online */
    unsigned long long samples, changes;
} sk_room = {-1, 0, 0, 0, 0, SK_MAX_THREADS, 1, 0, 0};

static inline double
sk_now(void)
{
    return sk_os_now();
}


static void
sk_worker(void *arg_)
{
    const int id = ((sk_worker_arg *)arg_)->id;
    /* Jobs posted after this worker was started (possibly before it runs) are its own. */
    npy_intp seen = ((sk_worker_arg *)arg_)->seen;
    free(arg_);
    sk_mutex_lock(&sk_pool.mu);
    for (;;) {
        const double spin = 1e-9 * (double)SK_LOAD(sk_worker_spin_ns);
        if (sk_pool.generation == seen && spin > 0 && SK_LOAD(sk_room.allowed) > 1) {
            sk_mutex_unlock(&sk_pool.mu);
            sk_atomic_add_int(&sk_pool.spinning, 1);
            const double until = sk_now() + spin;
            for (unsigned i = 1; sk_atomic_load_intp_acquire(&sk_pool.generation) == seen;
                 i++) {
                sk_cpu_relax();
                if ((i & 255) == 0 && sk_now() > until) {
                    break;
                }
            }
            sk_atomic_add_int(&sk_pool.spinning, -1);
            sk_mutex_lock(&sk_pool.mu);
        }
        while (sk_pool.generation == seen) {
            sk_cond_wait(&sk_pool.work_cv, &sk_pool.mu);
        }
        seen = sk_pool.generation;
        if (sk_pool.quit) {
            sk_mutex_unlock(&sk_pool.mu);
            return;
        }
        if (sk_pool.job == NULL || id >= sk_pool.nparts) {
            continue; /* closed already, or not needed */
        }
        const sk_job *job = sk_pool.job;
        const npy_intp chunk = sk_pool.chunk;
        sk_atomic_add_int(&sk_pool.active, 1);
        sk_mutex_unlock(&sk_pool.mu);

        sk_drain(job, chunk, &sk_pool.next);

        sk_mutex_lock(&sk_pool.mu);
        if (sk_atomic_add_int_release(&sk_pool.active, -1) == 0) {
            sk_cond_signal(&sk_pool.done_cv);
        }
    }
}

/*
 * Start workers until there are `want`; returns how many exist. Called with mu
 * held. (sk_thread_start keeps asynchronous signals away from the workers.)
 */
static int
sk_pool_grow(int want)
{
    while (sk_pool.nworkers < want) {
        sk_worker_arg *arg = (sk_worker_arg *)malloc(sizeof(sk_worker_arg));
        if (arg == NULL) {
            break;
        }
        arg->id = sk_pool.nworkers + 1;
        arg->seen = sk_pool.generation;
        /* joinable: shutdown joins */
        if (sk_thread_start(&sk_pool.tids[sk_pool.nworkers], sk_worker, arg) != 0) {
            free(arg);
            break;
        }
        sk_pool.nworkers++;
    }
    return sk_pool.nworkers;
}

/* Threads the machine has room for now, at most `want` (pool owner only). */
static int
sk_room_for(int want)
{
    double busy;
    if (!SK_LOAD(sk_load_guard)) {
        return want;
    }
    const double now = sk_now();
    if (sk_room.ok < 0) {
        sk_room.ok = sk_os_busy_seconds(&busy) == 0;
        if (sk_room.ok) {
            sk_room.ncpu = sk_os_ncpu();
            sk_room.t = now;
            sk_room.busy = busy;
            sk_room.self = sk_os_cpu_seconds();
        }
    }
    if (sk_room.ok && now - sk_room.t >= SK_ROOM_PERIOD && sk_os_busy_seconds(&busy) == 0) {
        const double self = sk_os_cpu_seconds();
        double others = ((busy - sk_room.busy) - (self - sk_room.self)) / (now - sk_room.t);
        others = others < 0 ? 0 : others;
        sk_room.others = sk_room.samples == 0 ? others
                                              : (1 - SK_ROOM_ALPHA) * sk_room.others +
                                                    SK_ROOM_ALPHA * others;
        sk_room.t = now;
        sk_room.busy = busy;
        sk_room.self = self;
        sk_room.samples++;
        const double free_cores = (double)sk_room.ncpu - sk_room.others;
        int allowed = sk_room.allowed > sk_room.ncpu ? sk_room.ncpu : sk_room.allowed;
        if (allowed > 1 && free_cores < (double)allowed - 1.0 + SK_ROOM_HYST) {
            allowed = (int)(free_cores + 1.0 - SK_ROOM_HYST);
        }
        else if (free_cores >= (double)allowed + 1.0 - SK_ROOM_HYST) {
            allowed = (int)(free_cores + SK_ROOM_HYST);
        }
        allowed = allowed < 1 ? 1 : allowed;
        if (allowed != sk_room.allowed) {
            sk_room.changes += sk_room.samples > 1; /* not the first settling */
            SK_STORE(sk_room.allowed, allowed);
        }
    }
    return want < sk_room.allowed ? want : sk_room.allowed;
}

/* Run a job on up to `parts` threads (the caller included). Returns 0 if it could not. */
static int
sk_run_parallel(const sk_job *J, int parts)
{
    if (!sk_mutex_trylock(&sk_pool.busy)) {
        return 0; /* another thread owns the pool: run this job on the calling thread */
    }
    const int room = sk_room_for(parts);
    if (room < parts) {
        sk_atomic_inc_u64(&sk_guarded_calls);
        parts = room;
    }
    const double t_call = sk_now();
    const int in_loop = sk_atomic_load_int(&sk_pool.spinning) > 0 ||
                        (sk_last_end >= 0 &&
                         t_call - sk_last_end < 1e-9 * (double)SK_LOAD(sk_worker_spin_ns));
    if (parts >= 2 && !in_loop &&
        (double)J->total * (double)J->bpe <
            (double)SK_LOAD(sk_parallel_min) * SK_REF_BPE * SK_COLD_FACTOR) {
        sk_atomic_inc_u64(&sk_cold_calls);
        parts = 1;
    }
    if (parts < 2) {
        sk_mutex_unlock(&sk_pool.busy);
        return 0; /* the caller runs it, then sk_pool_job_done() */
    }
    sk_mutex_lock(&sk_pool.mu);
    const int have = sk_pool_grow(parts - 1);
    parts = have + 1 < parts ? have + 1 : parts;
    if (parts < 2) {
        sk_mutex_unlock(&sk_pool.mu);
        sk_mutex_unlock(&sk_pool.busy);
        return 0;
    }
    const npy_intp chunk = sk_chunk_for(J, parts);
    sk_pool.job = J;
    sk_pool.nparts = parts;
    sk_pool.chunk = chunk;
    sk_atomic_store_intp(&sk_pool.next, 0);
    sk_pool.active = 0;
    const double t_start = sk_now();
    sk_atomic_add_intp_release(&sk_pool.generation, 1); /* read by spinning workers */
    sk_cond_broadcast(&sk_pool.work_cv);
    sk_mutex_unlock(&sk_pool.mu);

    const double t0 = sk_now();
    sk_drain(J, chunk, &sk_pool.next);
    const double t1 = sk_now();

    sk_mutex_lock(&sk_pool.mu);
    sk_pool.job = NULL; /* closed: workers that wake up now skip it */
    if (sk_pool.active > 0) {
        sk_mutex_unlock(&sk_pool.mu);
        const double until = t1 + 1e-9 * (double)SK_LOAD(sk_caller_spin_ns);
        for (unsigned i = 1; sk_atomic_load_int_acquire(&sk_pool.active) > 0; i++) {
            sk_cpu_relax();
            if ((i & 255) == 0 && sk_now() > until) {
                break;
            }
        }
        sk_mutex_lock(&sk_pool.mu);
        while (sk_pool.active > 0) {
            sk_cond_wait(&sk_pool.done_cv, &sk_pool.mu);
        }
    }
    sk_mutex_unlock(&sk_pool.mu);
    sk_last_end = sk_now();
    sk_worked_s += t1 - t0;
    sk_wall_s += sk_last_end - t_start;
    sk_mutex_unlock(&sk_pool.busy);
    return 1;
}

/* A job of parallel size ran on the calling thread: a loop may be starting. */
static void
sk_pool_job_done(void)
{
    if (sk_mutex_trylock(&sk_pool.busy)) {
        sk_last_end = sk_now();
        sk_mutex_unlock(&sk_pool.busy);
    }
}

/*
 * Stop and join every worker; the next parallel job starts them again. Waits
 * for a job in flight. Called without the GIL (kernel.py calls it before
 * os.fork, so that a forking program is single-threaded as far as the kernel
 * is concerned).
 */
void
sk_pool_shutdown(void)
{
    sk_mutex_lock(&sk_pool.busy);
    sk_mutex_lock(&sk_pool.mu);
    const int n = sk_pool.nworkers;
    sk_pool.quit = 1;
    sk_pool.job = NULL;
    sk_atomic_add_intp_release(&sk_pool.generation, 1);
    sk_cond_broadcast(&sk_pool.work_cv);
    sk_mutex_unlock(&sk_pool.mu);
    for (int i = 0; i < n; i++) {
        sk_thread_join(sk_pool.tids[i]);
    }
    sk_mutex_lock(&sk_pool.mu);
    sk_pool.nworkers = 0;
    sk_pool.quit = 0;
    sk_mutex_unlock(&sk_pool.mu);
    sk_mutex_unlock(&sk_pool.busy);
}

/*
 * In a forked child only the forking thread exists: the workers are gone and
 * the locks may have been held by threads that no longer exist. Start again
 * from an empty pool (the first parallel job starts new workers) and a fresh
 * sample of the room (this process's CPU time starts at 0).
 */
void
sk_pool_atfork_child(void)
{
    sk_mutex_init(&sk_pool.mu);
    sk_mutex_init(&sk_pool.busy);
    sk_cond_init(&sk_pool.work_cv);
    sk_cond_init(&sk_pool.done_cv);
    sk_pool.nworkers = 0;
    sk_pool.job = NULL;
    sk_pool.nparts = 0;
    sk_pool.active = 0;
    sk_pool.quit = 0;
    sk_pool.spinning = 0;
    sk_room.ok = -1;
    sk_room.samples = 0;
    sk_last_end = -1.0;
    sk_gomp_parallel = NULL; /* the kernel's own pool from now on */
}

int
sk_pool_workers(void)
{
    return SK_LOAD(sk_pool.nworkers);
}

#else /* no threads */

void
sk_pool_shutdown(void)
{
}

int
sk_pool_workers(void)
{
    return 0;
}

#endif /* SK_HAVE_THREADS */

void
sk_pool_set_openmp(sk_gomp_parallel_fn gomp_parallel)
{
    SK_STORE(sk_gomp_parallel, gomp_parallel);
}

/* A job split on the OpenMP runtime: every thread of the team claims chunks. */
typedef struct {
    const sk_job *J;
    npy_intp chunk;
    sk_os_intp next; /* next flat index to claim (atomic) */
} sk_openmp_work;

static void
sk_openmp_body(void *arg)
{
    sk_openmp_work *w = (sk_openmp_work *)arg;
    sk_drain(w->J, w->chunk, &w->next);
}

/* Run a job on up to `parts` threads of the OpenMP runtime. Returns 0 if none is set. */
static int
sk_run_openmp(const sk_job *J, int parts)
{
    const sk_gomp_parallel_fn gomp_parallel = SK_LOAD(sk_gomp_parallel);
    if (gomp_parallel == NULL) {
        return 0;
    }
    sk_openmp_work work = {J, sk_chunk_for(J, parts), 0};
    gomp_parallel(sk_openmp_body, &work, (unsigned)parts, 0); /* returns when the team is done */
    return 1;
}

void
sk_execute(const sk_job *J)
{
    const int parts = sk_parts_for(J);
    int threaded = 0;
    sk_atomic_inc_u64(&sk_calls); /* atomic: callers need not hold a GIL (free-threaded builds) */
    if (J->total < SK_NOGIL_MIN) {
        sk_run_range(J, 0, J->total);
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    if (parts > 1 && J->on_openmp && sk_run_openmp(J, parts)) {
        threaded = 2;
    }
#if SK_HAVE_THREADS
    if (parts > 1 && !threaded) {
        threaded = sk_run_parallel(J, parts);
    }
#endif
    if (!threaded) {
        sk_run_range(J, 0, J->total);
#if SK_HAVE_THREADS
        if (parts > 1) {
            sk_pool_job_done();
        }
#endif
    }
    Py_END_ALLOW_THREADS
    if (threaded) {
        sk_atomic_inc_u64(&sk_threaded_calls);
        if (threaded == 2) {
            sk_atomic_inc_u64(&sk_openmp_calls);
        }
    }
}

void
sk_pool_configure(int load_guard, double worker_spin, double caller_spin)
{
    if (load_guard >= 0) {
        SK_STORE(sk_load_guard, load_guard);
    }
#if SK_HAVE_THREADS
    if (worker_spin >= 0) {
        SK_STORE(sk_worker_spin_ns, (long)(worker_spin * 1e9));
    }
    if (caller_spin >= 0) {
        SK_STORE(sk_caller_spin_ns, (long)(caller_spin * 1e9));
    }
#else
    (void)worker_spin, (void)caller_spin;
#endif
}

#ifndef SK_STANDALONE
PyObject *
sk_pool_stats(void)
{
#if SK_HAVE_THREADS
    const double others = sk_room.others;
    const int allowed = sk_room.ok != 1                 ? SK_LOAD(sk_num_threads)
                        : sk_room.allowed > sk_room.ncpu ? sk_room.ncpu
                                                         : sk_room.allowed;
    const unsigned long long samples = sk_room.samples, changes = sk_room.changes;
    const int guard = SK_LOAD(sk_load_guard) && sk_room.ok != 0;
#else
    const double others = 0.0;
    const int allowed = 1, guard = 0;
    const unsigned long long samples = 0, changes = 0;
#endif
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:d,s:i,s:d,s:i,s:K,s:K,s:d,s:d}",
                         "calls", sk_calls, "threaded_calls", sk_threaded_calls,
                         "openmp_calls", sk_openmp_calls, "temporary_calls",
                         sk_temp_calls, "guarded_calls", sk_guarded_calls, "cold_calls",
                         sk_cold_calls, "caller_work_s",
                         sk_worked_s, "threaded_wall_s", sk_wall_s, "load_guard", guard,
                         "others_busy_cores", others, "threads_allowed", allowed,
                         "room_samples", samples, "room_changes", changes, "worker_spin_s",
                         1e-9 * (double)sk_worker_spin_ns, "caller_spin_s",
                         1e-9 * (double)sk_caller_spin_ns);
}
#endif /* !SK_STANDALONE */
