/*
 * base/pool — a persistent pthread pool for data-parallel kernels.
 *
 * One job at a time: sprig_pool_run(fn, ctx, nth) calls fn(ctx, ith, nth)
 * exactly once for every share ith in [0, nth) and returns when all of them
 * are done, so every run is a full barrier. Shares go to whichever thread
 * claims them first, the caller included: it runs the shares no worker has
 * taken, so a descheduled or sleeping worker never delays a run it has not
 * started (fn must not assume its shares run concurrently, nor which thread
 * runs which share; per-share scratch indexed by ith stays exclusive).
 * Workers spin briefly between jobs (a decode step issues hundreds of small
 * jobs; a wake-up per job would cost more than the job) and then sleep on a
 * futex; nobody spins with more threads than CPUs, or for a while after a
 * spinning thread was preempted. No allocation happens per run. Work is split
 * by the callee with ith/nth (rows, columns).
 */
#ifndef SPRIG_BASE_POOL_H
#define SPRIG_BASE_POOL_H

#include "base/err.h"

typedef struct sprig_pool sprig_pool;
typedef void (*sprig_task_fn)(void *ctx, int ith, int nth);

/* n_threads <= 0 means "number of online CPUs". */
sprig_pool *sprig_pool_create(int n_threads, sprig_error *err);
void        sprig_pool_free(sprig_pool *p);
int         sprig_pool_size(const sprig_pool *p);

/* Run fn on min(nth, size) threads; nth <= 0 means all. p may be NULL (= 1 thread). */
void sprig_pool_run(sprig_pool *p, sprig_task_fn fn, void *ctx, int nth);

/* Split [0, n) into nth nearly equal parts; part ith is [*lo, *hi). */
static inline void sprig_split(long n, int ith, int nth, long *lo, long *hi)
{
    long q = n / nth, r = n % nth;
    *lo = ith * q + (ith < r ? ith : r);
    *hi = *lo + q + (ith < r ? 1 : 0);
}

int sprig_cpu_count(void);

#endif
