/*
 * spec/batch — see batch.h.
 */
#include "spec/batch.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timer.h"
#include "spec/joint.h"
#include "spec/shape.h"
#include "spec/tree.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct request {
    sprig_ctx *ctx;
    const struct sprig_fwd *f;
    sprig_status st;
    sprig_error err;
    bool done;
};

_Static_assert(SPRIG_FORWARD_MAX_SEQS <= SPRIG_JOINT_MAX, "a step's offers fit the joint allocation");

enum { PLAN_NONE, PLAN_OFFERED, PLAN_GRANTED };   /* a member's joint plan in the step being prepared */

struct member {
    sprig_ctx *ctx;
    int rows;                        /* its last verify rows */
    double emit;                     /* its tokens emitted per round (moving average; 0: none yet) */
    bool prompt;                     /* its last request was a prompt chunk (no output rows) */
    bool planner;                    /* it offered a plan for its last step: a step's plan waits for its offer */
    uint8_t plan;                    /* PLAN_* for the step being prepared */
    sprig_joint_offer offer;         /* while offered; .m once granted */
    double draft_ms;                 /* its drafting time per round, as offered */
    double granted_emit;             /* the tokens its grant is expected to emit */
};

struct sprig_batch {
    const sprig_model *m;
    struct sprig_batch_config cfg;
    struct sprig_kv_pool *kv_pool;
    struct sprig_kv_pool *draft_pool;  /* the draft models' (sprig_batch_draft_pool), or NULL */
    sprig_ctx *host;                 /* scratch for the rows of every member (its own cache is never used) */
    float *logits;                   /* [n_seq * max_rows][n_vocab] the shared head's rows */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct member *mem;              /* [n_seq] sessions that verify through the batch */
    int n_member;
    int n_offered;                   /* members whose offer waits for the step's joint plan */
    struct timespec plan_first;      /* when the first of them offered */
    struct request **queue;          /* [n_seq] waiting to run */
    int n_queue;
    struct timespec first;           /* when the oldest queued request arrived */
    bool running;                    /* a forward is in progress */
    bool warned;                     /* a refused shared forward was reported */
    /* the leader's copy of a run (no allocation per round) */
    sprig_ctx **run_ctx;
    struct sprig_fwd *run_f;
    long long booked_blocks;
    long long held_max;              /* blocks the attached sessions' whole contexts would take together */
    uint64_t last_end_ns;            /* when the last forward ended (0: none yet) */
    double gap_ms;                   /* between one forward's end and the next one's start (moving average):
                                        the members' drafting, walks and emission, and the lockstep */
    sprig_costs costs;               /* shared verify forwards: ms per count of all sequences' rows (spec/costs.h) */
    bool seeded;                     /* ... with a lone session's profile as the prior */
    sprig_joint_rates rates;         /* the steps' realised tokens per ms per level (spec/joint.h) */
    uint64_t grant_ns;               /* when the last joint plan was granted (0: none) */
    int grant_level, grant_n;        /* its level and its planning sequences */
    double step_tokens;              /* tokens the members emitted since */
    int step_fwds;                   /* verify forwards run since */
    bool step_clean;                 /* ... every one quiet, no prompt chunk, no member joined or left */
    int busy;                        /* sessions generating (sprig_batch_busy), members or not */
    struct sprig_batch_counts counts;
};

void sprig_batch_delete(sprig_batch *b)
{
    if (!b) return;
    sprig_ctx_free(b->host);
    sprig_kv_pool_free(b->kv_pool);
    sprig_kv_pool_free(b->draft_pool);
    sprig_free_aligned(b->logits);
    free(b->mem);
    free(b->queue);
    free(b->run_ctx);
    free(b->run_f);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

sprig_batch *sprig_batch_new(const sprig_model *m, const struct sprig_batch_config *cfg, sprig_error *err)
{
    struct sprig_batch_config c = *cfg;
    if (c.n_seq < 1 || c.n_seq > SPRIG_FORWARD_MAX_SEQS) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "batch: n_seq %d is out of range [1, %d]", c.n_seq, SPRIG_FORWARD_MAX_SEQS);
        return NULL;
    }
    if (c.max_rows < 1 || c.max_rows > SPRIG_TREE_MAX) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "batch: max_rows %d is out of range [1, %d]", c.max_rows, SPRIG_TREE_MAX);
        return NULL;
    }
    if (c.n_ctx < 1 || c.n_ctx > (1 << 24)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "batch: n_ctx %d is out of range [1, %d]", c.n_ctx, 1 << 24);
        return NULL;
    }
    if (c.block_slots == 0) c.block_slots = 32;
    if (c.prefill_rows == 0) c.prefill_rows = SPRIG_BATCH_PREFILL_ROWS;
    if (c.prefill_rows < -1 || c.prefill_rows > 4096) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "batch: prefill_rows %d is out of range [-1, 4096]", c.prefill_rows);
        return NULL;
    }
    if (c.wait_us <= 0) c.wait_us = 200000;
    if (c.n_blocks < 0) { sprig_err(err, SPRIG_E_INVALID_ARG, "batch: n_blocks %d is negative", c.n_blocks); return NULL; }
    if (c.block_slots > 0 && c.n_blocks == 0) {   /* every member's whole context, a block spare each */
        const long long per = ((long long)c.n_ctx + c.block_slots - 1) / c.block_slots + 1;
        const long long want = per * c.n_seq;
        c.n_blocks = want > (1 << 24) ? (1 << 24) : (int)want;
    }
    sprig_batch *b = calloc(1, sizeof *b);
    if (!b) { sprig_err(err, SPRIG_E_NOMEM, "batch: out of memory"); return NULL; }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->m = m;
    b->cfg = c;
    sprig_costs_init(&b->costs, SPRIG_COSTS_MAX);
    const struct sprig_hparams *hp = &m->hp;
    struct sprig_kv_pool_params pp = { .n_layer = hp->n_layer, .n_kv_head = hp->n_kv_head, .head_dim = hp->head_dim,
                                       .mode = c.kv_mode, .block_slots = c.block_slots, .n_blocks = c.n_blocks };
    if (!(b->kv_pool = sprig_kv_pool_create(&pp, err))) goto fail;
    const int rows = c.n_seq * c.max_rows;   /* verify rows: every member's largest block (the logits' rows) */
    const int all = c.n_seq * (c.max_rows + (c.prefill_rows > 0 ? 64 > c.prefill_rows ? 64 : c.prefill_rows : 0));   /* and a
                                                        prompt chunk each (alone: up to 64 rows), which has no logits */
    struct sprig_ctx_params hpar = { .n_ctx = all, .n_batch = all, .kv_mode = 0 };
    if (sprig_ctx_create(m, NULL, &hpar, &b->host, err)) goto fail;
    b->logits = sprig_calloc_aligned((size_t)rows * (size_t)hp->n_vocab, sizeof(float));
    b->mem = calloc((size_t)c.n_seq, sizeof *b->mem);
    b->queue = calloc((size_t)c.n_seq, sizeof *b->queue);
    b->run_ctx = calloc((size_t)c.n_seq, sizeof *b->run_ctx);
    b->run_f = calloc((size_t)c.n_seq, sizeof *b->run_f);
    if (!b->logits || !b->mem || !b->queue || !b->run_ctx || !b->run_f) {
        sprig_err(err, SPRIG_E_NOMEM, "batch: out of memory for %d sequences of %d rows", c.n_seq, c.max_rows);
        goto fail;
    }
    return b;
fail:
    sprig_batch_delete(b);
    return NULL;
}

static int find(const sprig_batch *b, const sprig_ctx *ctx);

struct sprig_kv_pool *sprig_batch_kv_pool(sprig_batch *b) { return b->kv_pool; }
int sprig_batch_max_rows(const sprig_batch *b) { return b->cfg.max_rows; }
int sprig_batch_n_seq(const sprig_batch *b) { return b->cfg.n_seq; }
int sprig_batch_prefill_rows(const sprig_batch *b) { return b->cfg.prefill_rows > 0 ? b->cfg.prefill_rows : 0; }

struct sprig_kv_pool *sprig_batch_draft_pool(sprig_batch *b, const struct sprig_hparams *hp, int n_ctx)
{
    pthread_mutex_lock(&b->mu);
    if (!b->draft_pool) {
        const long long per = ((long long)n_ctx + b->cfg.block_slots - 1) / b->cfg.block_slots + 1;
        const long long want = per * b->cfg.n_seq;
        struct sprig_kv_pool_params pp = { .n_layer = hp->n_layer, .n_kv_head = hp->n_kv_head, .head_dim = hp->head_dim,
                                           .mode = 0, .block_slots = b->cfg.block_slots,
                                           .n_blocks = want > (1 << 24) ? (1 << 24) : (int)want };
        b->draft_pool = sprig_kv_pool_create(&pp, NULL);
    }
    struct sprig_kv_pool *p = b->draft_pool;
    if (p) {
        const struct sprig_kv_pool_params *pp = sprig_kv_pool_params(p);
        if (pp->n_layer != hp->n_layer || pp->n_kv_head != hp->n_kv_head || pp->head_dim != hp->head_dim ||
            (long long)pp->n_blocks * pp->block_slots < n_ctx)
            p = NULL;
    }
    pthread_mutex_unlock(&b->mu);
    return p;
}

struct sprig_kv_pool *sprig_batch_draft_pool_now(sprig_batch *b)
{
    pthread_mutex_lock(&b->mu);
    struct sprig_kv_pool *p = b->draft_pool;
    pthread_mutex_unlock(&b->mu);
    return p;
}

int sprig_batch_others_generating(sprig_batch *b, const sprig_ctx *ctx)
{
    int n = 0;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < b->n_member; i++) n += b->mem[i].ctx != ctx && !b->mem[i].prompt;
    pthread_mutex_unlock(&b->mu);
    return n;
}

static bool after(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* first + us */
static struct timespec deadline(const struct timespec *first, int us)
{
    struct timespec t = *first;
    t.tv_nsec += (long)us * 1000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

/* Run queue[0..n) (copied out by the leader, whose request is among them; the lock released). */
static void run(sprig_batch *b, struct request **q, int n, sprig_ctx *leader)
{
    if (n == 1) {   /* alone: the plain forward, on the member's own context */
        q[0]->st = sprig_forward(q[0]->ctx, q[0]->f, &q[0]->err);
        return;
    }
    int rows = 0;
    for (int i = 0; i < n; i++) {
        b->run_ctx[i] = q[i]->ctx;
        b->run_f[i] = *q[i]->f;
        rows += q[i]->f->n;
    }
    sprig_ctx_set_pool(b->host, sprig_ctx_pool(leader));   /* the leader's threads */
    sprig_error e = { 0 };
    sprig_status st = sprig_forward_multi(b->host, n, b->run_ctx, b->run_f, b->logits, &e);
    if (st == SPRIG_OK) {
        for (int i = 0; i < n; i++) q[i]->st = SPRIG_OK;
        return;
    }
    /* a request failed the checks (or the pool is short, or the architecture runs one sequence per
     * forward): each alone, each with its own answer; said once (only the leader is here) */
    if (!b->warned) {
        SPRIG_LOGW("batch: a shared forward of %d sequences (%d rows) was refused (%s); its requests ran one at a time",
                   n, rows, e.msg);
        b->warned = true;
    }
    for (int i = 0; i < n; i++) q[i]->st = sprig_forward(q[i]->ctx, q[i]->f, &q[i]->err);
}

static int find(const sprig_batch *b, const sprig_ctx *ctx)
{
    for (int i = 0; i < b->n_member; i++)
        if (b->mem[i].ctx == ctx) return i;
    return -1;
}

sprig_status sprig_batch_forward(sprig_batch *b, sprig_ctx *ctx, const struct sprig_fwd *f, sprig_error *err)
{
    struct request r = { .ctx = ctx, .f = f };
    pthread_mutex_lock(&b->mu);
    int me = find(b, ctx);
    if (me < 0) {
        if (b->n_member == b->cfg.n_seq) {
            pthread_mutex_unlock(&b->mu);
            return sprig_err(err, SPRIG_E_INVALID_ARG, "batch: already %d members (n_seq)", b->cfg.n_seq);
        }
        me = b->n_member++;
        b->mem[me] = (struct member){ .ctx = ctx };
        b->step_clean = false;
    }
    struct member *p = &b->mem[me];
    p->rows = f->n;
    p->prompt = f->n_out == 0;
    if (p->plan == PLAN_NONE) p->planner = false;   /* this step ran without a joint plan: the next plans do not wait */
    if (b->n_queue == 0) clock_gettime(CLOCK_REALTIME, &b->first);
    b->queue[b->n_queue++] = &r;
    pthread_cond_broadcast(&b->cv);   /* a waiter may now see everyone ready */
    while (!r.done) {
        struct timespec now, limit = deadline(&b->first, b->cfg.wait_us);
        clock_gettime(CLOCK_REALTIME, &now);
        const bool all = b->n_queue >= b->n_member, late = b->n_queue > 0 && after(&now, &limit);
        if (!b->running && b->n_queue > 0 && (all || late)) {   /* lead this step */
            struct request *q[SPRIG_FORWARD_MAX_SEQS];
            const int n = b->n_queue;
            int rows = 0;
            bool chunk = false;
            for (int i = 0; i < n; i++) {
                q[i] = b->queue[i];
                rows += q[i]->f->n;
                if (q[i]->f->n_out == 0) {   /* a prompt chunk (chunked prefill) */
                    chunk = true;
                    b->counts.prompt_chunks++;
                    b->counts.prompt_chunks_shared += n > 1;
                    b->counts.prompt_rows += q[i]->f->n;
                }
            }
            b->n_queue = 0;
            b->running = true;
            b->counts.forwards++;
            b->counts.shared += n > 1;
            b->counts.seqs += n;
            b->counts.rows += rows;
            b->counts.timeouts += !all;
            if (n > b->counts.max_seqs) b->counts.max_seqs = n;
            const bool quiet = b->busy <= n;   /* no session works beside this forward */
            const uint64_t t0 = sprig_time_ns();
            const double gap = b->last_end_ns ? (double)(t0 - b->last_end_ns) * 1e-6 : -1;
            if (n > 1 && gap >= 0 && gap < 1000) {   /* not across an idle spell */
                b->gap_ms = b->gap_ms > 0 ? 0.875 * b->gap_ms + 0.125 * gap : gap;
            }
            pthread_mutex_unlock(&b->mu);
            run(b, q, n, ctx);
            pthread_mutex_lock(&b->mu);
            b->last_end_ns = sprig_time_ns();
            const double fwd_ms = (double)(b->last_end_ns - t0) * 1e-6;
            if (n > 1 && !chunk && quiet) sprig_costs_add(&b->costs, rows, fwd_ms);   /* a prompt chunk's rows have no head */
            b->counts.unpriced += n > 1 && !chunk && !quiet;
            b->step_fwds++;
            if (chunk || !quiet) b->step_clean = false;
            SPRIG_LOGD("batch: %d sequences, %d rows in %.2f ms (gap %.2f ms)", n, rows, fwd_ms, b->gap_ms);
            for (int i = 0; i < n; i++) {
                q[i]->done = true;
                const int k = find(b, q[i]->ctx);
                if (k >= 0) b->mem[k].plan = PLAN_NONE;   /* its next step plans afresh */
            }
            b->running = false;
            pthread_cond_broadcast(&b->cv);
            continue;
        }
        if (b->running || all) pthread_cond_wait(&b->cv, &b->mu);
        else pthread_cond_timedwait(&b->cv, &b->mu, &limit);
    }
    pthread_mutex_unlock(&b->mu);
    if (r.st && err) *err = r.err;
    return r.st;
}

void sprig_batch_busy(sprig_batch *b, int sign)
{
    pthread_mutex_lock(&b->mu);
    b->busy += sign;
    if (b->busy < 0) b->busy = 0;
    pthread_mutex_unlock(&b->mu);
}

static bool queued(const sprig_batch *b, const sprig_ctx *ctx)
{
    for (int i = 0; i < b->n_queue; i++)
        if (b->queue[i]->ctx == ctx) return true;
    return false;
}

/* The step's joint plan (spec/joint.h) over the members that offered; the others' rows as they stand: a grant
 * already made this step, else their last request's. */
static void grant(sprig_batch *b, bool late)
{
    sprig_joint_offer o[SPRIG_FORWARD_MAX_SEQS];
    int who[SPRIG_FORWARD_MAX_SEQS], n = 0, fixed = 0, most = 0;
    double emit = 0, step = b->gap_ms;
    for (int i = 0; i < b->n_member; i++) {
        const struct member *p = &b->mem[i];
        if (p->plan == PLAN_OFFERED) {
            who[n] = i;
            o[n++] = p->offer;
            most += p->offer.n;
            if (p->draft_ms > step) step = p->draft_ms;
        } else if (p->plan == PLAN_GRANTED) {
            fixed += p->offer.m;
            emit += p->granted_emit;
        } else {
            fixed += p->rows;
            emit += p->prompt ? 0 : p->emit > 0 ? p->emit : 1;
        }
    }
    int rows = sprig_joint_allocate(o, n, fixed, emit, &b->costs, step, fixed + most);
    int predicted = 0, deepest = 0;   /* the cost model's level, and the most drafts any offer holds */
    for (int j = 0; j < n; j++) {
        if (o[j].m - 1 > predicted) predicted = o[j].m - 1;
        if (o[j].n - 1 > deepest) deepest = o[j].n - 1;
    }
    const uint64_t now = sprig_time_ns();
    if (b->grant_ns && b->step_clean && b->step_fwds == 1 && !late && fixed == 0)   /* the last step, as it ran */
        sprig_joint_rates_add(&b->rates, b->grant_n, b->grant_level, b->step_tokens / ((double)(now - b->grant_ns) * 1e-6));
    /* every member planning: the level the measured steps favour (the cost model's to start); else the model's */
    double model[SPRIG_JOINT_LEVELS + 1];
    if (deepest > SPRIG_JOINT_LEVELS) deepest = SPRIG_JOINT_LEVELS;
    if (fixed == 0) sprig_joint_level_rates(o, n, &b->costs, step, deepest, model);
    const int level = fixed == 0 ? sprig_joint_rates_choose(&b->rates, n, predicted, deepest, model) : predicted;
    if (fixed == 0) rows = sprig_joint_grant_level(o, n, level);
    b->grant_ns = now;
    b->grant_level = level;
    b->grant_n = n;
    b->step_tokens = 0;
    b->step_fwds = 0;
    b->step_clean = !late && fixed == 0;
    SPRIG_LOGD("batch: joint plan of %d offers (%d rows fixed): level %d (model %d), %d rows; rates per level %.3f %.3f %.3f %.3f%s",
               n, fixed, level, predicted, rows, sprig_joint_rates_median(&b->rates, n, 0, NULL), sprig_joint_rates_median(&b->rates, n, 1, NULL),
               sprig_joint_rates_median(&b->rates, n, 2, NULL), sprig_joint_rates_median(&b->rates, n, 3, NULL), late ? " (late)" : "");
    for (int j = 0; j < n; j++) {
        struct member *p = &b->mem[who[j]];
        p->offer.m = o[j].m;
        p->granted_emit = 0;
        for (int k = 0; k < o[j].m; k++) p->granted_emit += o[j].gain[k];
        p->plan = PLAN_GRANTED;
    }
    b->n_offered = 0;
    b->counts.joint_plans++;
    b->counts.joint_offers += n;
    b->counts.joint_late += late;
}

int sprig_batch_plan(sprig_batch *b, sprig_ctx *ctx, const double *gain, int n, double draft_ms, const sprig_costs *lone)
{
    if (!gain || n < 1) return 0;
    pthread_mutex_lock(&b->mu);
    if (lone && !b->seeded) {   /* a lone forward's times stand for the shared ones until those are measured */
        for (int k = 1; k <= lone->cap && k <= b->costs.cap; k++)
            if (sprig_costs_samples(lone, k) > 0) sprig_costs_prior(&b->costs, k, sprig_costs_median(lone, k));
        b->seeded = true;
    }
    int me = find(b, ctx);
    if (me < 0 || b->n_member < 2 || (!b->seeded && b->costs.tick < 4)) {   /* alone, or no cost known yet */
        b->step_clean = false;
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    struct member *p = &b->mem[me];
    p->planner = true;
    p->plan = PLAN_OFFERED;
    p->offer = (sprig_joint_offer){ .gain = gain, .n = n, .m = 1 };
    p->draft_ms = draft_ms;
    if (!b->n_offered++) clock_gettime(CLOCK_REALTIME, &b->plan_first);
    pthread_cond_broadcast(&b->cv);
    while ((me = find(b, ctx)) >= 0 && b->mem[me].plan == PLAN_OFFERED) {
        int waiting = 0;   /* planners that will offer this step: generating, not offered or granted yet, not queued */
        for (int i = 0; i < b->n_member; i++) {
            const struct member *q = &b->mem[i];
            waiting += q->planner && !q->prompt && q->plan == PLAN_NONE && !queued(b, q->ctx);
        }
        struct timespec now, limit = deadline(&b->plan_first, b->cfg.wait_us);
        clock_gettime(CLOCK_REALTIME, &now);
        const bool late = after(&now, &limit);
        if (!waiting || late) {
            grant(b, waiting > 0);
            pthread_cond_broadcast(&b->cv);
            break;
        }
        pthread_cond_timedwait(&b->cv, &b->mu, &limit);
    }
    const int m = me >= 0 ? b->mem[me].offer.m : 0;
    pthread_mutex_unlock(&b->mu);
    return m;
}

void sprig_batch_leave(sprig_batch *b, sprig_ctx *ctx)
{
    pthread_mutex_lock(&b->mu);
    const int i = find(b, ctx);
    if (i >= 0) {
        if (b->mem[i].plan == PLAN_OFFERED) b->n_offered--;   /* (a member leaves from its own thread: never while offered) */
        b->mem[i] = b->mem[--b->n_member];
        b->step_clean = false;
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void sprig_batch_observe(sprig_batch *b, sprig_ctx *ctx, int emitted)
{
    pthread_mutex_lock(&b->mu);
    const int i = find(b, ctx);
    if (i >= 0) b->mem[i].emit = b->mem[i].emit > 0 ? 0.75 * b->mem[i].emit + 0.25 * emitted : emitted;
    b->step_tokens += emitted;
    pthread_mutex_unlock(&b->mu);
}

void sprig_batch_others(sprig_batch *b, const sprig_ctx *ctx, double *rows, double *emitted, sprig_shared_cost *cost)
{
    double e = 0;
    pthread_mutex_lock(&b->mu);
    cost->gap_ms = b->gap_ms;
    int others = 0;
    for (int i = 0; i < b->n_member; i++)
        if (b->mem[i].ctx != ctx) {
            others += b->mem[i].rows;
            e += b->mem[i].emit > 0 ? b->mem[i].emit : 1;
        }
    cost->known = b->costs.tick >= 4;   /* a few shared forwards timed */
    for (int m = 1; m <= SPRIG_TREE_MAX && cost->known; m++) cost->t_ms[m] = sprig_costs_t(&b->costs, others + m);
    pthread_mutex_unlock(&b->mu);
    *rows = others;
    *emitted = e;
}

static long long blocks_for(const sprig_batch *b, int slots)
{
    return ((long long)slots + b->cfg.block_slots - 1) / b->cfg.block_slots;
}

bool sprig_batch_admit(sprig_batch *b, int slots)
{
    if (slots < 0) return false;
    pthread_mutex_lock(&b->mu);
    const long long need = blocks_for(b, slots);
    const bool ok = b->booked_blocks + need <= b->cfg.n_blocks;
    if (ok) b->booked_blocks += need;
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void sprig_batch_attach(sprig_batch *b, int n_ctx, int sign)
{
    pthread_mutex_lock(&b->mu);
    b->held_max += sign * blocks_for(b, n_ctx);
    pthread_mutex_unlock(&b->mu);
}

bool sprig_batch_room_for_all(sprig_batch *b)
{
    pthread_mutex_lock(&b->mu);
    const bool ok = b->held_max <= b->cfg.n_blocks;
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void sprig_batch_release(sprig_batch *b, int slots)
{
    if (slots < 0) return;
    pthread_mutex_lock(&b->mu);
    b->booked_blocks -= blocks_for(b, slots);
    if (b->booked_blocks < 0) b->booked_blocks = 0;
    pthread_mutex_unlock(&b->mu);
}

void sprig_batch_slots(sprig_batch *b, long long *total, long long *booked)
{
    pthread_mutex_lock(&b->mu);
    if (total) *total = (long long)b->cfg.n_blocks * b->cfg.block_slots;
    if (booked) *booked = b->booked_blocks * b->cfg.block_slots;
    pthread_mutex_unlock(&b->mu);
}

void sprig_batch_get_counts(sprig_batch *b, struct sprig_batch_counts *out)
{
    pthread_mutex_lock(&b->mu);
    *out = b->counts;
    pthread_mutex_unlock(&b->mu);
}
