/*
 * base/pool — see pool.h.
 *
 * Protocol: the caller publishes (fn, ctx, nth), bumps `gen` and, if any
 * worker may be asleep, broadcasts under the mutex. A worker that sees a new
 * generation runs its share (if ith < nth) and increments `done`. The caller
 * runs share 0 and spins until done == size - 1. `sleeping` is incremented by
 * a worker before it re-checks `gen` under the mutex, and the caller reads it
 * after bumping `gen` (both seq_cst), so a wake-up cannot be lost.
 */
#include "base/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define SPIN_ITERS  100000  /* then sleep on the condvar */
#define YIELD_AFTER 2000    /* pause-spins before yielding the core each turn (oversubscribed hosts) */

struct worker {
    struct sprig_pool *pool;
    int ith;
    pthread_t th;
};

struct sprig_pool {
    int n;
    struct worker *w;
    _Alignas(64) atomic_ulong gen;
    _Alignas(64) atomic_int done;
    _Alignas(64) atomic_int sleeping;
    sprig_task_fn fn;
    void *ctx;
    int nth;
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

int sprig_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct sprig_pool *p = w->pool;
    unsigned long last = 0;
    for (;;) {
        unsigned long g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == last) {
            if (++spins < SPIN_ITERS) {
                if (spins > YIELD_AFTER) sched_yield(); else cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleeping, 1);
            while (atomic_load(&p->gen) == last && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleeping, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        last = g;
        if (atomic_load(&p->stop)) return NULL;
        if (w->ith < p->nth) p->fn(p->ctx, w->ith, p->nth);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

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
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleeping, 0);
    atomic_init(&p->stop, false);
    if (n_threads > 1) {
        p->w = calloc((size_t)n_threads, sizeof *p->w);
        if (!p->w) { free(p); sprig_err(err, SPRIG_E_NOMEM, "thread pool: out of memory"); return NULL; }
        for (int i = 1; i < n_threads; i++) {
            p->w[i].pool = p;
            p->w[i].ith = i;
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
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, true);
        atomic_fetch_add(&p->gen, 1);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i < p->n; i++) pthread_join(p->w[i].th, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
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
    p->nth = nth;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1);   /* seq_cst: publishes fn/ctx/nth */
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, nth);
    for (int spins = 0; atomic_load_explicit(&p->done, memory_order_acquire) != n - 1; spins++) {
        if (spins > YIELD_AFTER) sched_yield(); else cpu_relax();
    }
}
