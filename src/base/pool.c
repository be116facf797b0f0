/*
 * base/pool — see pool.h.
 *
 * Protocol. A job is published as one word, job = gen:32 | nth:16 | next:16,
 * after fn/ctx are stored (release). Shares are claimed by CAS on `next` —
 * by the workers AND by the caller, which runs every share nobody has taken
 * yet — so a worker that is descheduled, slow to wake or asleep never holds
 * up a run it has not started: the caller does its share, and the late worker
 * finds nothing left. Only shares in progress are waited for. `done` counts
 * finished shares; the caller returns when it reaches nth, so fn/ctx are
 * stable while any share runs and no worker touches a job after it ends.
 *
 * Waiting. Idle workers spin on the job word for a while (decode issues a
 * job every few microseconds; a futex wake-up per job would cost more than
 * the job), then sleep on the futex `seq`, bumped at every publish; the
 * caller issues the wake syscall only when someone sleeps. The caller
 * waiting for shares in progress spins briefly and then sleeps on `done`
 * (the worker finishing the last share wakes it): a worker preempted in the
 * middle of a share then gets a free CPU instead of one held by spinning.
 * With more threads than CPUs nobody spins, nor for CALM_NS after a pool
 * thread was preempted repeatedly by other tasks of the system. The sleeper
 * counts are read after the words they guard are changed (seq_cst on both
 * sides, and the kernel re-checks the futex word), so a wake-up cannot be
 * lost.
 */
#include "base/pool.h"
#include "base/timer.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define IDLE_SPIN_NS 200000   /* a worker spins this long for the next job, then sleeps */
#define WAIT_SPIN_NS 30000    /* the caller spins this long for shares in progress, then sleeps */
#define WIN_NS       20000000 /* a spinning thread looks this often how often it was preempted */
#define WIN_SWITCHES 4        /* preemptions in a window that mean another task wants the CPUs */
#define CALM_NS      100000000 /* then nobody spins for this long */

struct worker {
    struct sprig_pool *pool;
    pthread_t th;
};

struct sprig_pool {
    int n;
    bool oversub;                        /* more threads than CPUs: never spin */
    struct worker *w;
    _Alignas(64) _Atomic uint64_t job;   /* gen:32 | nth:16 | next:16 */
    _Alignas(64) _Atomic uint32_t seq;   /* futex: bumped at each publish and at stop */
    _Atomic int sleepers;                /* workers in (or entering) the seq wait */
    _Alignas(64) _Atomic uint32_t done;  /* futex: shares of the current job finished */
    _Atomic int caller_waits;            /* the caller is in (or entering) the done wait */
    sprig_task_fn fn;
    void *ctx;
    uint32_t gen;
    _Atomic bool stop;
    _Atomic uint64_t calm_until;         /* no spinning before this time (another process wants the CPUs) */
};

#define JOB_NTH(v)  ((int)(((v) >> 16) & 0xffff))
#define JOB_NEXT(v) ((int)((v) & 0xffff))

int sprig_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* ---------------------------------------------------------------- futex */

static void word_wait(_Atomic uint32_t *w, uint32_t seen)
{
#if defined(__linux__)
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    if (atomic_load(w) == seen) sched_yield();
#endif
}

static void word_wake(_Atomic uint32_t *w, int count)
{
#if defined(__linux__)
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
#else
    (void)w;
    (void)count;
#endif
}

/* ---------------------------------------------------------------- shares */

/* Claim the next share of the published job; false when none is left. */
static bool claim(struct sprig_pool *p, int *share, int *nth)
{
    uint64_t v = atomic_load_explicit(&p->job, memory_order_acquire);
    while (JOB_NEXT(v) < JOB_NTH(v)) {
        if (atomic_compare_exchange_weak_explicit(&p->job, &v, v + 1, memory_order_acquire, memory_order_acquire)) {
            *share = JOB_NEXT(v);
            *nth = JOB_NTH(v);
            return true;
        }
    }
    return false;
}

/* Run every share this thread can claim. */
static void run_shares(struct sprig_pool *p)
{
    int share, nth;
    while (claim(p, &share, &nth)) {
        p->fn(p->ctx, share, nth);
        uint32_t d = atomic_fetch_add(&p->done, 1) + 1;   /* seq_cst: pairs with caller_waits */
        if ((int)d == nth && atomic_load(&p->caller_waits)) word_wake(&p->done, 1);
    }
}

static bool work_left(struct sprig_pool *p)
{
    uint64_t v = atomic_load_explicit(&p->job, memory_order_acquire);
    return JOB_NEXT(v) < JOB_NTH(v);
}

/* Involuntary context switches of the calling thread so far. Host-level
 * preemption of a virtual CPU does not count: only another task of this
 * system competing for the CPU does. */
static uint64_t nivcsw(void)
{
#if defined(RUSAGE_THREAD)
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) return (uint64_t)ru.ru_nivcsw;
#endif
    return 0;
}

/* The thread's current window: its start and the count then. */
static _Thread_local uint64_t tl_win_t0, tl_win_n0;

/* At most once per window: true when the thread was preempted at least
 * WIN_SWITCHES times in the window that ends (a kernel thread now and then
 * does not count; another busy task takes the CPU every few milliseconds). */
static bool contended(uint64_t now)
{
    if (now - tl_win_t0 < WIN_NS) return false;
    uint64_t v = nivcsw();
    bool c = tl_win_t0 && v - tl_win_n0 >= WIN_SWITCHES;
    tl_win_t0 = now;
    tl_win_n0 = v;
    return c;
}

/* Spin until done(p, arg) or `budget` ns pass; false on timeout. When a
 * spinning thread finds it was preempted repeatedly (while spinning or
 * working), spinning only takes CPU time from whatever else runs: nobody
 * spins for CALM_NS. */
static bool spin_until(struct sprig_pool *p, bool (*done)(struct sprig_pool *, int), int arg, uint64_t budget)
{
    if (p->oversub) return done(p, arg);
    uint64_t t0 = sprig_time_ns();
    if (t0 < atomic_load_explicit(&p->calm_until, memory_order_relaxed)) return done(p, arg);
    for (unsigned i = 1;; i++) {
        if (done(p, arg)) return true;
        cpu_relax();
        if (i & 63) continue;
        uint64_t t = sprig_time_ns();
        if (contended(t)) {
            atomic_store_explicit(&p->calm_until, t + CALM_NS, memory_order_relaxed);
            return done(p, arg);
        }
        if (t - t0 > budget) return done(p, arg);
    }
}

static bool job_or_stop(struct sprig_pool *p, int unused)
{
    (void)unused;
    return work_left(p) || atomic_load_explicit(&p->stop, memory_order_relaxed);
}

static bool all_done(struct sprig_pool *p, int nth)
{
    return (int)atomic_load_explicit(&p->done, memory_order_acquire) == nth;
}

static void *worker_main(void *arg)
{
    struct sprig_pool *p = ((struct worker *)arg)->pool;
    for (;;) {
        run_shares(p);
        /* spin for the next job, then sleep */
        spin_until(p, job_or_stop, 0, IDLE_SPIN_NS);
        uint32_t s = atomic_load(&p->seq);
        if (!work_left(p) && !atomic_load(&p->stop)) {
            atomic_fetch_add(&p->sleepers, 1);
            if (!work_left(p) && !atomic_load(&p->stop)) word_wait(&p->seq, s);
            atomic_fetch_sub(&p->sleepers, 1);
        }
        if (atomic_load(&p->stop)) return NULL;
    }
}

/* ---------------------------------------------------------------- pool */

sprig_pool *sprig_pool_create(int n_threads, sprig_error *err)
{
    if (n_threads <= 0) n_threads = sprig_cpu_count();
    if (n_threads > 256) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "threads: %d is more than the maximum of 256", n_threads);
        return NULL;
    }
    struct sprig_pool *p = calloc(1, sizeof *p);
    if (!p) { sprig_err(err, SPRIG_E_NOMEM, "thread pool: out of memory"); return NULL; }
    p->n = n_threads;
    p->oversub = n_threads > sprig_cpu_count();
    atomic_init(&p->job, 0);
    atomic_init(&p->seq, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->caller_waits, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->calm_until, 0);
    if (n_threads > 1) {
        p->w = calloc((size_t)n_threads, sizeof *p->w);
        if (!p->w) { free(p); sprig_err(err, SPRIG_E_NOMEM, "thread pool: out of memory"); return NULL; }
        for (int i = 1; i < n_threads; i++) {
            p->w[i].pool = p;
            if (pthread_create(&p->w[i].th, NULL, worker_main, &p->w[i]) != 0) {
                p->n = i;   /* free() joins the ones that started */
                sprig_pool_free(p);
                sprig_err(err, SPRIG_E_NOMEM, "thread pool: could not start thread %d of %d", i, n_threads);
                return NULL;
            }
        }
    }
    return p;
}

void sprig_pool_free(sprig_pool *p)
{
    if (!p) return;
    if (p->n > 1) {
        atomic_store(&p->stop, true);
        atomic_fetch_add(&p->seq, 1);
        word_wake(&p->seq, INT_MAX);
        for (int i = 1; i < p->n; i++) pthread_join(p->w[i].th, NULL);
    }
    free(p->w);
    free(p);
}

int sprig_pool_size(const sprig_pool *p) { return p ? p->n : 1; }

void sprig_pool_run(sprig_pool *p, sprig_task_fn fn, void *ctx, int nth)
{
    int n = p ? p->n : 1;
    if (nth <= 0 || nth > n) nth = n;
    if (nth == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    p->gen++;
    atomic_store_explicit(&p->job, (uint64_t)p->gen << 32 | (uint64_t)nth << 16, memory_order_release);
    atomic_fetch_add(&p->seq, 1);                       /* seq_cst: before reading sleepers */
    if (atomic_load(&p->sleepers) > 0) word_wake(&p->seq, nth - 1);

    run_shares(p);

    /* shares other threads are still running: spin, then sleep until the last one ends */
    if (spin_until(p, all_done, nth, WAIT_SPIN_NS)) return;
    atomic_store(&p->caller_waits, 1);                  /* seq_cst: before re-reading done */
    for (uint32_t d; (int)(d = atomic_load(&p->done)) != nth;) word_wait(&p->done, d);
    atomic_store(&p->caller_waits, 0);
}
