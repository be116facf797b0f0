/*
 * tests/test-base.c — base utilities: thread pool splits, barriers and runs
 * under contention (oversubscribed, sleeping workers, a busy CPU), rng
 * reproducibility, error formatting, checked allocation.
 */
#include "test.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/pool.h"
#include "base/rng.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

struct sum_ctx { const int *v; long n; long long part[64]; atomic_int calls; };

static void sum_task(void *p, int ith, int nth)
{
    struct sum_ctx *c = p;
    long lo, hi;
    sprig_split(c->n, ith, nth, &lo, &hi);
    long long s = 0;
    for (long i = lo; i < hi; i++) s += c->v[i];
    c->part[ith] = s;
    atomic_fetch_add(&c->calls, 1);
}

static void test_pool_runs_every_share_once(void)
{
    sprig_error err;
    sprig_pool *p = sprig_pool_create(4, &err);
    CHECK(p != NULL);
    static int v[10007];
    long long want = 0;
    for (int i = 0; i < 10007; i++) { v[i] = i * 3 - 7; want += v[i]; }
    for (int rep = 0; rep < 2000; rep++) {
        struct sum_ctx c = { .v = v, .n = 10007 };
        atomic_init(&c.calls, 0);
        int nth = 1 + rep % 4;
        sprig_pool_run(p, sum_task, &c, nth);
        long long s = 0;
        for (int i = 0; i < nth; i++) s += c.part[i];
        if (s != want || atomic_load(&c.calls) != nth) { CHECK(s == want); CHECK(atomic_load(&c.calls) == nth); break; }
    }
    CHECK_EQ_INT(sprig_pool_size(p), 4);
    sprig_pool_free(p);
    /* NULL pool runs inline */
    struct sum_ctx c = { .v = v, .n = 10007 };
    sprig_pool_run(NULL, sum_task, &c, 8);
    CHECK_EQ_INT(c.part[0], want);
}

/* Shares are claimed by whichever thread comes first (the caller runs those
 * nobody took), so every share must still run exactly once with more threads
 * than CPUs, with workers asleep between runs, and while another thread of
 * the process keeps a CPU busy. */
struct spin_ctx { atomic_bool stop; };

static void *spin_main(void *arg)
{
    struct spin_ctx *s = arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) x++;
    return NULL;
}

static void check_pool_runs(sprig_pool *p, int runs, int max_nth, bool pause)
{
    static int v[4099];
    long long want = 0;
    for (int i = 0; i < 4099; i++) { v[i] = i * 5 - 3; want += v[i]; }
    int bad = 0;
    for (int rep = 0; rep < runs; rep++) {
        struct sum_ctx c = { .v = v, .n = 4099 };
        atomic_init(&c.calls, 0);
        int nth = 1 + rep % max_nth;
        if (pause && rep % 16 == 0) {   /* long enough for idle workers to go to sleep */
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
        }
        sprig_pool_run(p, sum_task, &c, nth);
        long long s = 0;
        for (int i = 0; i < nth; i++) s += c.part[i];
        if (s != want || atomic_load(&c.calls) != nth) bad++;
    }
    CHECKF(bad == 0, "%d of %d pool runs lost or repeated a share", bad, runs);
}

static void test_pool_under_contention(void)
{
    int cpus = sprig_cpu_count(), over = 2 * cpus + 1 < 64 ? 2 * cpus + 1 : 64;
    int runs = test_quick() ? 300 : 3000;
    sprig_pool *p = sprig_pool_create(over, NULL);   /* oversubscribed: nobody spins */
    CHECK(p != NULL);
    if (p) check_pool_runs(p, runs, over, true);
    sprig_pool_free(p);
    p = sprig_pool_create(cpus < 2 ? 2 : cpus, NULL);
    CHECK(p != NULL);
    struct spin_ctx s;
    atomic_init(&s.stop, false);
    pthread_t th;
    bool started = pthread_create(&th, NULL, spin_main, &s) == 0;
    if (p) check_pool_runs(p, runs, sprig_pool_size(p), true);
    atomic_store(&s.stop, true);
    if (started) pthread_join(th, NULL);
    sprig_pool_free(p);
}

static void test_split_covers_range(void)
{
    for (int nth = 1; nth < 9; nth++) {
        long prev = 0;
        for (int i = 0; i < nth; i++) {
            long lo, hi;
            sprig_split(37, i, nth, &lo, &hi);
            CHECK_EQ_INT(lo, prev);
            CHECK(hi >= lo);
            prev = hi;
        }
        CHECK_EQ_INT(prev, 37);
    }
}

static void test_rng_is_reproducible(void)
{
    sprig_rng a, b;
    sprig_rng_seed(&a, 42);
    sprig_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) CHECK(sprig_rng_u64(&a) == sprig_rng_u64(&b));
    double m = 0;
    for (int i = 0; i < 10000; i++) { double u = sprig_rng_uniform(&a); CHECK(u >= 0 && u < 1); m += u; }
    CHECK_NEAR(m / 10000, 0.5, 0.02);
}

static void test_errors_and_alloc(void)
{
    sprig_error e;
    CHECK_EQ_INT(sprig_err(&e, SPRIG_E_FORMAT, "field %s bad", "x"), SPRIG_E_FORMAT);
    CHECK_STR(e.msg, "field x bad");
    sprig_err_prefix(&e, "file %d", 3);
    CHECK_STR(e.msg, "file 3: field x bad");
    CHECK_STR(sprig_status_str(SPRIG_E_REFUSED), "refused");
    CHECK(sprig_err(NULL, SPRIG_E_IO, "ignored") == SPRIG_E_IO);
    CHECK(sprig_calloc_aligned((size_t)-1, 16) == NULL);
    void *p = sprig_calloc_aligned(3, 5);
    CHECK(p && ((uintptr_t)p & 63) == 0);
    sprig_free_aligned(p);
}

int main(void)
{
    RUN(test_pool_runs_every_share_once);
    RUN(test_pool_under_contention);
    RUN(test_split_covers_range);
    RUN(test_rng_is_reproducible);
    RUN(test_errors_and_alloc);
    return test_summary("test-base");
}
