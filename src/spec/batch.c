/*
 * spec/batch — see batch.h.
 */
#include "spec/batch.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timer.h"
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

struct sprig_batch {
    const sprig_model *m;
    struct sprig_batch_config cfg;
    struct sprig_kv_pool *kv_pool;
    struct sprig_kv_pool *draft_pool;  /* the draft models' (sprig_batch_draft_pool), or NULL */
    sprig_ctx *host;                 /* scratch for the rows of every member (its own cache is never used) */
    float *logits;                   /* [n_seq * max_rows][n_vocab] the shared head's rows */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sprig_ctx **member;              /* [n_seq] sessions that verify through the batch */
    int *m_rows;                     /* [n_seq] a member's last verify rows */
    double *m_emit;                  /* [n_seq] its tokens emitted per round (moving average; 0: none yet) */
    bool *m_prompt;                  /* [n_seq] its last request was a prompt chunk (no output rows) */
    int n_member;
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
    struct sprig_batch_counts counts;
};

void sprig_batch_delete(sprig_batch *b)
{
    if (!b) return;
    sprig_ctx_free(b->host);
    sprig_kv_pool_free(b->kv_pool);
    sprig_kv_pool_free(b->draft_pool);
    sprig_free_aligned(b->logits);
    free(b->member);
    free(b->m_rows);
    free(b->m_emit);
    free(b->m_prompt);
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
    b->member = calloc((size_t)c.n_seq, sizeof *b->member);
    b->m_rows = calloc((size_t)c.n_seq, sizeof *b->m_rows);
    b->m_emit = calloc((size_t)c.n_seq, sizeof *b->m_emit);
    b->m_prompt = calloc((size_t)c.n_seq, sizeof *b->m_prompt);
    b->queue = calloc((size_t)c.n_seq, sizeof *b->queue);
    b->run_ctx = calloc((size_t)c.n_seq, sizeof *b->run_ctx);
    b->run_f = calloc((size_t)c.n_seq, sizeof *b->run_f);
    if (!b->logits || !b->member || !b->m_rows || !b->m_emit || !b->m_prompt || !b->queue || !b->run_ctx || !b->run_f) {
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
    for (int i = 0; i < b->n_member; i++) n += b->member[i] != ctx && !b->m_prompt[i];
    pthread_mutex_unlock(&b->mu);
    return n;
}

static bool after(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
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
        if (b->member[i] == ctx) return i;
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
        b->member[me] = ctx;
        b->m_emit[me] = 0;
    }
    b->m_rows[me] = f->n;
    b->m_prompt[me] = f->n_out == 0;
    if (b->n_queue == 0) clock_gettime(CLOCK_REALTIME, &b->first);
    b->queue[b->n_queue++] = &r;
    pthread_cond_broadcast(&b->cv);   /* a waiter may now see everyone ready */
    while (!r.done) {
        struct timespec now, limit = b->first;
        clock_gettime(CLOCK_REALTIME, &now);
        limit.tv_nsec += (long)b->cfg.wait_us * 1000L;
        limit.tv_sec += limit.tv_nsec / 1000000000L;
        limit.tv_nsec %= 1000000000L;
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
            if (n > 1 && !chunk) sprig_costs_add(&b->costs, rows, fwd_ms);   /* a prompt chunk's rows have no head */
            SPRIG_LOGD("batch: %d sequences, %d rows in %.2f ms (gap %.2f ms)", n, rows, fwd_ms, b->gap_ms);
            for (int i = 0; i < n; i++) q[i]->done = true;
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

void sprig_batch_leave(sprig_batch *b, sprig_ctx *ctx)
{
    pthread_mutex_lock(&b->mu);
    const int i = find(b, ctx);
    if (i >= 0) {
        const int last = --b->n_member;
        b->member[i] = b->member[last];
        b->m_rows[i] = b->m_rows[last];
        b->m_emit[i] = b->m_emit[last];
        b->m_prompt[i] = b->m_prompt[last];
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void sprig_batch_observe(sprig_batch *b, sprig_ctx *ctx, int emitted)
{
    pthread_mutex_lock(&b->mu);
    const int i = find(b, ctx);
    if (i >= 0) b->m_emit[i] = b->m_emit[i] > 0 ? 0.75 * b->m_emit[i] + 0.25 * emitted : emitted;
    pthread_mutex_unlock(&b->mu);
}

void sprig_batch_others(sprig_batch *b, const sprig_ctx *ctx, double *rows, double *emitted, sprig_shared_cost *cost)
{
    double e = 0;
    pthread_mutex_lock(&b->mu);
    cost->gap_ms = b->gap_ms;
    int others = 0;
    for (int i = 0; i < b->n_member; i++)
        if (b->member[i] != ctx) {
            others += b->m_rows[i];
            e += b->m_emit[i] > 0 ? b->m_emit[i] : 1;
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
