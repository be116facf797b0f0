/*
 * spec/draft_mtp — an MTP head as the drafter (see drafters.h). Three kinds
 * of head, one row each in `heads`, chosen by the file: sprig's assistant
 * head (model/mtp.h), Gemma 4's published assistant (model/assistant.h,
 * general.architecture gemma4-assistant), and a qwen35 target's own MTP
 * block (model/nextn.h: FILE is the target file itself). Each round: h =
 * the target's final-norm hidden state of the row that predicted the bonus
 * t (handed over by the target's finalize); k-1 head steps, each feeding
 * its h' and drafted token to the next. The assistants read the target's
 * cache at a frozen position and keep none. The qwen35 block keeps its own
 * cache, one entry per target position fed with the target's hidden rows:
 * `sync` feeds the positions the target added since the last round (their
 * rows are in the target state's kept_hidden), the steps append at the
 * following positions, and `unwind` drops the step entries that read the
 * block's own h' (the first step reads the target's: it stays).
 */
#include "spec/drafters.h"
#include "model/assistant.h"
#include "model/mtp.h"
#include "model/nextn.h"
#include "spec/dyntree.h"
#include "spec/shape.h"
#include "base/log.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct mtp_drafter mtp_drafter;

#define MTP_TREE_ROWS (4 * SPRIG_TREE_MAX)   /* expansion steps a dynamic tree may take */
_Static_assert(SPRIG_DYNTREE_MAX_WIDTH <= SPRIG_MTP_MAX_ROWS, "a dynamic tree depth must fit one step_rows call");

/* One kind of head: step(head, state, pool, target cache, h_in, token, h_out, logits);
 * sync and unwind only for a head with its own cache (NULL: none). */
struct head_ops {
    const char *name;
    sprig_status (*step)(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                         float *h_out, float *logits, sprig_error *err);
    /* optional: n (<= SPRIG_DYNTREE_MAX_WIDTH) independent steps in one pass over the weights
     * (h_in[n][dim], tokens[n], h_out[n][dim], logits[n][n_vocab]): a dynamic tree's depth */
    sprig_status (*step_rows)(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in,
                              const int32_t *tokens, int n, float *h_out, float *logits, sprig_error *err);
    sprig_status (*sync)(mtp_drafter *md, const sprig_draft_ctx *c, sprig_error *err);
    sprig_status (*unwind)(mtp_drafter *md, int n_past, int steps, sprig_error *err);
    sprig_status (*reset)(mtp_drafter *md, sprig_error *err);   /* a new sequence */
    void (*free_head)(void *head);
    void (*free_state)(void *state);
};

/* sprig's head: position p = n_past - 1 (model/mtp.h) */
static sprig_status mtp_step(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                             float *h_out, float *logits, sprig_error *err)
{
    return sprig_mtp_step(head, state, pool, kv, h_in, token, sprig_kv_len(kv) - 1, h_out, logits, err);
}
static sprig_status mtp_step_rows(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in,
                                  const int32_t *tokens, int n, float *h_out, float *logits, sprig_error *err)
{
    return sprig_mtp_step_rows(head, state, pool, kv, h_in, tokens, n, sprig_kv_len(kv) - 1, h_out, logits, err);
}
static void mtp_free_head(void *h) { sprig_mtp_free(h); }
static void mtp_free_state(void *s) { sprig_mtp_state_free(s); }

/* Gemma 4's assistant: position n_past (model/assistant.h) */
static sprig_status as_step(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                            float *h_out, float *logits, sprig_error *err)
{
    return sprig_assistant_step(head, state, pool, kv, h_in, token, h_out, logits, err);
}
static void as_free_head(void *h) { sprig_assistant_free(h); }
static void as_free_state(void *s) { sprig_assistant_state_free(s); }

struct mtp_drafter {
    sprig_drafter base;
    const struct head_ops *ops;
    void *head;                /* owned */
    void *state;               /* owned */
    sprig_pool *pool;          /* borrowed */
    int n_vocab, dim;
    float *h;                  /* [dim] */
    float *logits;             /* [n_vocab] */
    /* a head with its own cache (qwen35's block) */
    float *rows;               /* [n_batch][dim] the hidden inputs of one sync batch */
    float *h_last;             /* [dim] the target's hidden row of position h_last_pos */
    int h_last_pos;            /* -1: none */
    /* dynamic trees (assistant heads) */
    sprig_dyntree dt;
    float *tree_h;             /* [MTP_TREE_ROWS][dim] the h' of each expansion step */
    float *batch_h;            /* [SPRIG_DYNTREE_MAX_WIDTH][dim] a depth's inputs (step_rows) */
    float *batch_logits;       /* [SPRIG_DYNTREE_MAX_WIDTH][n_vocab] */
};

/* qwen35's block: the step appends at the next position of its own cache */
static sprig_status nx_step(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                            float *h_out, float *logits, sprig_error *err)
{
    (void)state; (void)pool; (void)kv;
    return sprig_nextn_feed((sprig_nextn_ctx *)head, &token, h_in, 1, h_out, logits, err);
}

/* The target's hidden row of position p (zeros before the sequence), or NULL when gone */
static const float *target_row(mtp_drafter *md, const sprig_target_state *st, int p)
{
    const int first = st->n_past - st->n_kept;
    if (p < 0) {
        memset(md->h_last, 0, (size_t)md->dim * sizeof(float));   /* only before anything was fed */
        return md->h_last;
    }
    if (st->kept_hidden && p >= first && p < st->n_past) return st->kept_hidden + (size_t)(p - first) * md->dim;
    return p == md->h_last_pos ? md->h_last : NULL;
}

/* Feed the pairs (x_p, h_{p-1}) for the positions the block lacks */
static sprig_status nx_sync(mtp_drafter *md, const sprig_draft_ctx *c, sprig_error *err)
{
    sprig_nextn_ctx *x = md->head;
    const sprig_target_state *st = c->target;
    const int n_past = st->n_past, B = sprig_nextn_n_batch(x);
    if (c->n_history != n_past)
        return sprig_err(err, SPRIG_E_INTERNAL, "MTP block: %d history tokens for %d cached", c->n_history, n_past);
    sprig_status s;
    if (sprig_nextn_len(x) > n_past && (s = sprig_nextn_trim(x, 0, err))) return s;   /* a new sequence */
    for (int p = sprig_nextn_len(x); p < n_past;) {
        const int n = n_past - p < B ? n_past - p : B;
        for (int i = 0; i < n; i++) {
            const float *h = target_row(md, st, p + i - 1);
            if (!h)
                return sprig_err(err, SPRIG_E_INTERNAL, "MTP block: the target's hidden row of position %d is gone "
                                 "(the block holds %d positions, the target %d)", p + i - 1, sprig_nextn_len(x), n_past);
            memcpy(md->rows + (size_t)i * md->dim, h, (size_t)md->dim * sizeof(float));
        }
        if ((s = sprig_nextn_feed(x, c->history + p, md->rows, n, NULL, NULL, err))) return s;
        p += n;
    }
    memcpy(md->h_last, st->hidden, (size_t)md->dim * sizeof(float));
    md->h_last_pos = n_past - 1;
    return SPRIG_OK;
}

/* Keep the first step's entry (the bonus with the target's hidden row), drop the rest */
static sprig_status nx_unwind(mtp_drafter *md, int n_past, int steps, sprig_error *err)
{
    return steps > 1 ? sprig_nextn_trim(md->head, n_past + 1, err) : SPRIG_OK;
}
static sprig_status nx_reset(mtp_drafter *md, sprig_error *err)
{
    md->h_last_pos = -1;
    return sprig_nextn_trim(md->head, 0, err);
}
static void nx_free_head(void *h) { sprig_nextn_free(h); }
static void nx_free_state(void *s) { (void)s; }

static const struct head_ops heads[] = {
    { "mtp", mtp_step, mtp_step_rows, NULL, NULL, NULL, mtp_free_head, mtp_free_state },
    { "gemma4-assistant", as_step, NULL, NULL, NULL, NULL, as_free_head, as_free_state },
    { "qwen35-mtp", nx_step, NULL, nx_sync, nx_unwind, nx_reset, nx_free_head, nx_free_state },
};

static sprig_status mtp_draft_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    mtp_drafter *md = (mtp_drafter *)d;
    const sprig_target_state *st = c->target;
    if (!st || !st->hidden || !st->kv || st->n_embd != md->dim || st->n_past < 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP drafter: the target does not expose its hidden state and KV cache");
    sprig_status s;
    if (md->ops->sync && (s = md->ops->sync(md, c, err))) return s;
    memcpy(md->h, st->hidden, (size_t)md->dim * sizeof(float));
    int32_t tok = c->bonus, gs = c->grammar ? c->gstate : -1;   /* one-hot under a grammar: only tokens it allows */
    for (int j = 0; j < k - 1; j++) {
        if ((s = md->ops->step(md->head, md->state, md->pool, st->kv, md->h, tok, md->h, md->logits, err))) return s;
        int32_t best, second;
        float margin;
        if (c->q) {   /* sampled: the first two draws from q */
            if (sprig_draft_q_draw_step(c->q, j, md->logits, md->n_vocab, &best, &second, &margin) < 1) break;
        } else {
            const bool constrained = gs >= 0;
            sprig_drafter_step(c->grammar, &gs, md->logits, md->n_vocab, &best, &second, &margin);
            if (constrained && gs < 0) break;
        }
        SPRIG_LOGD("%s draft: step %d after %d cached: %d (runner-up %d, margin %.4f)", md->ops->name, j, st->n_past, best, second,
                   (double)margin);
        out->tokens[j] = best;
        out->runner_up[j] = second;
        out->margin[j] = margin;
        out->n = j + 1;
        tok = best;
    }
    return md->ops->unwind ? md->ops->unwind(md, st->n_past, k - 1, err) : SPRIG_OK;
}

/* A dynamic tree (spec/dyntree.h) from an assistant head: expanding node v
 * is one head step from the h' of the step that proposed v (the root: the
 * target's hidden row) with v's token; the step's logits give v's children
 * and its h' is kept for them. The heads keep no cache, so nothing is fed or
 * rolled back. qwen35's block (its own cache) and tree_width 0 draft the
 * runner-up tree. */
static sprig_status mtp_draft_tree(sprig_drafter *d, const sprig_draft_ctx *c, int k, int max_nodes, sprig_tree *out,
                                   sprig_error *err)
{
    mtp_drafter *md = (mtp_drafter *)d;
    const sprig_target_state *st = c->target;
    if (c->tree_width < 1 || md->ops->sync) return sprig_drafter_runner_up_tree(d, c, k, max_nodes, out, err);
    if (!st || !st->hidden || !st->kv || st->n_embd != md->dim || st->n_past < 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP drafter: the target does not expose its hidden state and KV cache");
    sprig_tree_root(out, c->bonus);
    if (k < 2) return SPRIG_OK;
    const int w = c->tree_width < SPRIG_DYNTREE_MAX_WIDTH ? c->tree_width : SPRIG_DYNTREE_MAX_WIDTH;
    sprig_dyntree *t = &md->dt;
    static _Thread_local int16_t hs[SPRIG_DYNTREE_CAP];   /* candidate -> row of md->tree_h holding the h' of its step */
    sprig_dyntree_init(t, c->bonus);
    sprig_status s = md->ops->step(md->head, md->state, md->pool, st->kv, st->hidden, c->bonus, md->tree_h, md->logits, err);
    if (s) return s;
    hs[0] = 0;
    int rows = 1;
    static _Thread_local int32_t gs[SPRIG_DYNTREE_CAP];   /* one-hot under a grammar: each candidate's state */
    gs[0] = c->grammar && !c->q ? c->gstate : -1;
    if (c->q) {   /* sampled: a depth's children drawn from q, every one kept (dyntree.h) */
        const int root = 0, r0 = sprig_draft_q_add(c->q, md->logits, md->n_vocab);
        sprig_dyntree_grow_sampled(t, &root, &r0, 1, c->q, w, SPRIG_MIN(w, max_nodes - t->n));
    } else {
        sprig_drafter_expand(t, 0, md->logits, md->n_vocab, w, c->grammar, gs);
    }
    const int depth_cap = c->shape && !c->q ? sprig_shape_expand_depth(c->shape, k - 1) : k - 1;
    for (int depth = 1; depth < depth_cap && rows + w <= MTP_TREE_ROWS; depth++) {
        int batch[SPRIG_DYNTREE_MAX_WIDTH], qrows[SPRIG_DYNTREE_MAX_WIDTH];
        const int nf = sprig_dyntree_frontier(t, depth, w, batch);
        if (nf == 0 || t->n + nf * w > SPRIG_DYNTREE_CAP) break;
        if (c->shape && !c->q && !sprig_shape_draft_deeper(c->shape, t, batch, nf, max_nodes, k - 1)) break;
        if (c->q && t->n >= max_nodes) break;   /* every node drawn is verified: the budget is spent */
        if (md->ops->step_rows && md->batch_h) {   /* the depth in one pass over the head's weights */
            int32_t toks[SPRIG_DYNTREE_MAX_WIDTH];
            for (int j = 0; j < nf; j++) {
                memcpy(md->batch_h + (size_t)j * md->dim, md->tree_h + (size_t)hs[t->parent[batch[j]]] * md->dim,
                       (size_t)md->dim * sizeof(float));
                toks[j] = t->token[batch[j]];
            }
            if ((s = md->ops->step_rows(md->head, md->state, md->pool, st->kv, md->batch_h, toks, nf,
                                        md->tree_h + (size_t)rows * md->dim, md->batch_logits, err)))
                return s;
            for (int j = 0; j < nf; j++) {
                const int v = batch[j];
                float *lg = md->batch_logits + (size_t)j * md->n_vocab;
                hs[v] = (int16_t)rows++;
                t->slot[v] = 0;   /* expanded */
                if (c->q) qrows[j] = sprig_draft_q_add(c->q, lg, md->n_vocab);
                else sprig_drafter_expand(t, v, lg, md->n_vocab, w, c->grammar, gs);
            }
            if (c->q) sprig_dyntree_grow_sampled(t, batch, qrows, nf, c->q, w, SPRIG_MIN(w, max_nodes - t->n));
            continue;
        }
        for (int j = 0; j < nf; j++) {
            const int v = batch[j];
            float *h_out = md->tree_h + (size_t)rows * md->dim;
            if ((s = md->ops->step(md->head, md->state, md->pool, st->kv, md->tree_h + (size_t)hs[t->parent[v]] * md->dim,
                                   t->token[v], h_out, md->logits, err)))
                return s;
            hs[v] = (int16_t)rows++;
            t->slot[v] = 0;   /* expanded */
            if (c->q) qrows[j] = sprig_draft_q_add(c->q, md->logits, md->n_vocab);
            else sprig_drafter_expand(t, v, md->logits, md->n_vocab, w, c->grammar, gs);
        }
        if (c->q) sprig_dyntree_grow_sampled(t, batch, qrows, nf, c->q, w, SPRIG_MIN(w, max_nodes - t->n));
    }
    sprig_drafter_dyntree_out(t, c, max_nodes, k - 1, out);
    return SPRIG_OK;
}

static sprig_status mtp_begin(sprig_drafter *d, const sprig_draft_ctx *c, sprig_error *err)
{
    mtp_drafter *md = (mtp_drafter *)d;
    (void)c;
    return md->ops->reset ? md->ops->reset(md, err) : SPRIG_OK;
}

static void mtp_destroy(sprig_drafter *d)
{
    mtp_drafter *md = (mtp_drafter *)d;
    if (!md) return;
    if (md->ops) {
        md->ops->free_state(md->state);
        md->ops->free_head(md->head);
    }
    sprig_free_aligned(md->h);
    sprig_free_aligned(md->logits);
    sprig_free_aligned(md->rows);
    sprig_free_aligned(md->h_last);
    sprig_free_aligned(md->tree_h);
    sprig_free_aligned(md->batch_h);
    sprig_free_aligned(md->batch_logits);
    free(md);
}

static const struct sprig_drafter_vt mtp_drafter_vt = {
    .name = "mtp",
    .draft_block = mtp_draft_block,
    .draft_tree = mtp_draft_tree,
    .begin = mtp_begin,
    .destroy = mtp_destroy,
};

/* Whether two paths name one file (the target file given as --mtp) */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

sprig_drafter *sprig_draft_mtp_create(const char *path, const sprig_model *target, sprig_pool *pool,
                                      int n_ctx, sprig_error *err)
{
    mtp_drafter *md = calloc(1, sizeof *md);
    if (!md) { sprig_err(err, SPRIG_E_NOMEM, "MTP drafter: out of memory"); return NULL; }
    md->base.vt = &mtp_drafter_vt;
    md->pool = pool;
    md->n_vocab = target->hp.n_vocab;
    md->dim = target->hp.dim;
    md->h_last_pos = -1;
    if (same_file(path, sprig_gguf_path(target->gguf))) {   /* the target's own MTP block (qwen35) */
        sprig_nextn_ctx *x = NULL;
        if (sprig_nextn_create(target, pool, n_ctx + SPRIG_TREE_MAX, 64, &x, err)) { free(md); return NULL; }
        md->ops = &heads[2];
        md->head = x;
        md->state = x;   /* no separate scratch */
        md->base.reads_all_hidden = true;
        md->rows = sprig_calloc_aligned((size_t)sprig_nextn_n_batch(x) * md->dim, sizeof(float));
        md->h_last = sprig_calloc_aligned((size_t)md->dim, sizeof(float));
        if (!md->rows || !md->h_last) md->state = NULL;
    } else if (sprig_assistant_file_is(path)) {
        sprig_assistant *a = NULL;
        if (sprig_assistant_load(path, target, &a, err)) { free(md); return NULL; }
        md->ops = &heads[1];
        md->head = a;
        md->state = sprig_assistant_state_create(a, n_ctx, err);
    } else {
        sprig_mtp *h = NULL;
        if (sprig_mtp_load(path, target, &h, err)) { free(md); return NULL; }
        md->ops = &heads[0];
        md->head = h;
        md->state = sprig_mtp_state_create(h, n_ctx, err);
    }
    md->h = sprig_calloc_aligned((size_t)md->dim, sizeof(float));
    md->logits = sprig_calloc_aligned((size_t)md->n_vocab, sizeof(float));
    md->tree_h = sprig_calloc_aligned((size_t)MTP_TREE_ROWS * md->dim, sizeof(float));
    bool batch_ok = true;
    if (md->ops->step_rows) {
        md->batch_h = sprig_calloc_aligned((size_t)SPRIG_DYNTREE_MAX_WIDTH * md->dim, sizeof(float));
        md->batch_logits = sprig_calloc_aligned((size_t)SPRIG_DYNTREE_MAX_WIDTH * md->n_vocab, sizeof(float));
        batch_ok = md->batch_h && md->batch_logits;
    }
    if (!md->state || !md->h || !md->logits || !md->tree_h || !batch_ok) {
        mtp_destroy(&md->base);
        sprig_err(err, SPRIG_E_NOMEM, "MTP drafter: out of memory");
        return NULL;
    }
    return &md->base;
}
