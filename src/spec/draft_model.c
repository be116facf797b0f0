/*
 * spec/draft_model — a separate small model as the drafter (see drafters.h).
 *
 * The draft cache holds `fed[0..n_fed)`. Each round the sequence to continue
 * is the session history (everything the target accepted, in cache order)
 * plus the bonus; the drafter keeps the longest prefix of its cache that
 * matches, trims the rest, feeds what is missing as one batch, then drafts
 * k-1 tokens greedily, one forward per token. Because re-syncing is by
 * prefix, it needs no accept hook and is right after chain and tree rounds
 * alike (a path through a sibling leaf just shortens the shared prefix).
 *
 * Dynamic trees (draft ctx tree_width > 0, spec/dyntree.h): from the
 * bonus's logits, each depth's best frontier nodes are fed as ONE batch
 * under the drafter's own tree mask (history open, each row its expanded
 * ancestors and itself, at position bonus + depth), and their logits give
 * the next candidates. Those rows stay in the draft cache after the linear
 * part; the next round keeps the ones on the path the target accepted
 * (gather_within_tail, as the target does) and drops the rest, then
 * re-syncs by prefix as above.
 *
 * On a batch the draft cache is a paged sequence on the batch's draft pool:
 * a long feed (a new prompt) attaches the blocks other sessions' draft models
 * computed for the same tokens and publishes its own (model.h's
 * sprig_prefill_shared), so a system prompt every request sends is fed to
 * the draft model once.
 */
#include "spec/drafters.h"
#include "spec/dyntree.h"
#include "spec/batch.h"
#include "spec/shape.h"
#include "base/log.h"
#include "base/mem.h"
#include "grammar/match.h"

#include <stdlib.h>
#include <string.h>

typedef struct model_drafter {
    sprig_drafter base;
    sprig_model *dm;           /* owned */
    sprig_ctx *ctx;            /* owned */
    int32_t *fed;              /* [n_ctx] tokens in the draft cache */
    int n_fed;
    float *logits;             /* [n_vocab] */
    int n_common;              /* ids both models have (a padded vocabulary may be longer) */
    /* dynamic trees */
    sprig_dyntree dt;          /* the last tree's candidates (slot: row in the tail) */
    int tail;                  /* rows of the last expansion still in the cache after fed[0..n_fed) */
    float *rows_logits;        /* [SPRIG_DYNTREE_MAX_WIDTH][n_vocab] */
    float *mask;               /* [SPRIG_DYNTREE_MAX_WIDTH][n_ctx] */
    int n_ctx;
} model_drafter;

/* Keep the last expansion's rows on the accepted path (history after the
 * old bonus), drop the others: the cache is then fed[0..n_fed) again */
static sprig_status keep_tree_path(model_drafter *md, const sprig_draft_ctx *c, sprig_error *err)
{
    if (!md->tail) return SPRIG_OK;
    sprig_kv *kv = sprig_ctx_kv(md->ctx);
    int kept[SPRIG_TREE_MAX], n = 0, v = 0;
    /* fed[n_fed - 1] is the old root; its descendants on the path are history[n_fed ..] (never the new
     * bonus: its logits are what the next draft reads, so it is fed again) */
    for (int t = md->n_fed; t < c->n_history && n < SPRIG_TREE_MAX; t++) {
        int next = -1;
        for (int i = 1; i < md->dt.n && next < 0; i++)
            if (md->dt.parent[i] == v && md->dt.slot[i] >= 0 && md->dt.token[i] == c->history[t]) next = i;
        if (next < 0) break;
        kept[n++] = md->dt.slot[next];
        v = next;
    }
    sprig_status st = sprig_kv_gather_within_tail(kv, md->tail, kept, n, err);
    if (st) return st;
    for (int i = 0; i < n; i++) md->fed[md->n_fed + i] = c->history[md->n_fed + i];
    md->n_fed += n;
    md->tail = 0;
    return SPRIG_OK;
}

/* The cache holds history + bonus; md->logits are the bonus's. Returns false
 * (nothing to draft) when the context has no room for k more tokens. */
static sprig_status sync(model_drafter *md, const sprig_draft_ctx *c, int k, bool *room_ok, sprig_error *err)
{
    sprig_kv *kv = sprig_ctx_kv(md->ctx);
    sprig_status st = keep_tree_path(md, c, err);
    if (st) return st;
    int n_seq = c->n_history + 1;
    int room = sprig_ctx_n_ctx(md->ctx);
    /* longest common prefix of the cache and history + bonus, leaving at
     * least the last token to feed (its logits are what we draft from) */
    int common = 0;
    while (common < md->n_fed && common < n_seq - 1 &&
           md->fed[common] == (common < c->n_history ? c->history[common] : c->bonus))
        common++;
    *room_ok = n_seq + k <= room;
    if (!*room_ok) {   /* not enough room to draft: propose nothing */
        st = sprig_kv_trim(kv, md->n_fed - common, err);
        md->n_fed = common;
        return st;
    }
    for (int i = common; i < n_seq; i++) md->fed[i] = i < c->n_history ? c->history[i] : c->bonus;
    /* on a shared pool: what the other sessions' draft models computed of this history is attached, not fed again
     * (the pool may hold more of it than this cache does: start from there) */
    const bool pooled = sprig_kv_paged_pool(kv) != NULL;
    if (pooled && n_seq - 1 - common >= 64 && sprig_kv_paged_lookup(kv, md->fed, n_seq - 1) > common) common = 0;
    if ((st = sprig_kv_trim(kv, md->n_fed - common, err))) return st;
    md->n_fed = common;
    if (pooled && n_seq - 1 - common >= 64) {   /* a long feed (a new prompt): shared; a round's few tokens: not */
        const struct sprig_shared_prefill o = { .chunk = 256, .share = true };
        int held = common, attached = 0;
        st = sprig_prefill_shared(md->ctx, md->fed, common, n_seq - 1, &o, &held, &attached, err);
        md->n_fed = held;
        if (st) return st;
        common = held;
    }
    if ((st = sprig_prefill(md->ctx, md->fed + common, n_seq - common, md->logits, NULL, err))) return st;
    md->n_fed = n_seq;
    return SPRIG_OK;
}

static sprig_status md_draft_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    model_drafter *md = (model_drafter *)d;
    bool room_ok;
    sprig_status st = sync(md, c, k, &room_ok, err);
    if (st || !room_ok) return st;
    int V = md->n_common;   /* never propose an id the target does not have */
    int32_t gs = c->grammar ? c->gstate : -1;   /* one-hot drafts under a grammar: only tokens it allows */
    for (int j = 0; j < k - 1; j++) {
        int32_t best, second;
        float margin;
        if (c->q) {   /* sampled: the first two draws from q */
            if (sprig_draft_q_draw_step(c->q, j, md->logits, V, &best, &second, &margin) < 1) break;
        } else {
            const bool constrained = gs >= 0;
            sprig_drafter_step(c->grammar, &gs, md->logits, V, &best, &second, &margin);
            if (constrained && gs < 0) break;   /* refused, or the grammar's end: nothing after */
        }
        out->tokens[j] = best;
        out->runner_up[j] = second;
        out->margin[j] = margin;
        out->n = j + 1;
        if (j == k - 2) break;
        struct sprig_fwd f = { .n = 1, .tokens = &best, .n_out = 1, .logits = md->logits };
        if ((st = sprig_forward(md->ctx, &f, err))) return st;
        md->fed[md->n_fed++] = best;
    }
    return SPRIG_OK;
}

/* A dynamic tree of at most max_nodes nodes and depth k - 1 (see top) */
static sprig_status md_draft_tree(sprig_drafter *d, const sprig_draft_ctx *c, int k, int max_nodes, sprig_tree *out,
                                  sprig_error *err)
{
    model_drafter *md = (model_drafter *)d;
    if (c->tree_width < 1) return sprig_drafter_runner_up_tree(d, c, k, max_nodes, out, err);
    bool room_ok;
    sprig_status st = sync(md, c, k, &room_ok, err);
    sprig_tree_root(out, c->bonus);
    if (st || !room_ok || k < 2) return st;
    const int w = c->tree_width < SPRIG_DYNTREE_MAX_WIDTH ? c->tree_width : SPRIG_DYNTREE_MAX_WIDTH, V = md->n_common;
    const int base = md->n_fed, root_pos = md->n_fed - 1, Vd = md->dm->hp.n_vocab;
    sprig_dyntree *t = &md->dt;
    sprig_dyntree_init(t, c->bonus);
    int32_t gs[SPRIG_DYNTREE_CAP];   /* one-hot under a grammar: each candidate's state (its children are ones it allows) */
    gs[0] = c->grammar && !c->q ? c->gstate : -1;
    if (c->q) {   /* sampled: a depth's children drawn from q, every one kept (dyntree.h) */
        const int root = 0, r0 = sprig_draft_q_add(c->q, md->logits, V);
        sprig_dyntree_grow_sampled(t, &root, &r0, 1, c->q, w, SPRIG_MIN(w, max_nodes - t->n));
    } else {
        sprig_drafter_expand(t, 0, md->logits, V, w, c->grammar, gs);
    }
    int rows = 0, batch[SPRIG_DYNTREE_MAX_WIDTH], qrows[SPRIG_DYNTREE_MAX_WIDTH];
    int32_t toks[SPRIG_DYNTREE_MAX_WIDTH], pos[SPRIG_DYNTREE_MAX_WIDTH];
    const int depth_cap = c->shape && !c->q ? sprig_shape_expand_depth(c->shape, k - 1) : k - 1;
    for (int depth = 1; depth < depth_cap; depth++) {   /* feed this depth's best, read their children */
        int nf = sprig_dyntree_frontier(t, depth, w, batch);
        if (nf == 0 || base + rows + nf > md->n_ctx || t->n + nf * w > SPRIG_DYNTREE_CAP) break;
        if (c->shape && !c->q && !sprig_shape_draft_deeper(c->shape, t, batch, nf, max_nodes, k - 1)) break;
        if (c->q && t->n >= max_nodes) break;   /* every node drawn is verified: the budget is spent */
        const int cols = base + rows + nf;
        for (int j = 0; j < nf; j++) {
            const int v = batch[j];
            float *mrow = md->mask + (size_t)j * cols;
            for (int x = 0; x < base; x++) mrow[x] = 0.0f;
            for (int x = base; x < cols; x++) mrow[x] = -1e9f;   /* blocked, as the target's tree mask */
            for (int a = t->parent[v]; a > 0; a = t->parent[a]) mrow[base + t->slot[a]] = 0.0f;   /* expanded ancestors */
            mrow[base + rows + j] = 0.0f;
            toks[j] = t->token[v];
            pos[j] = root_pos + depth;
        }
        struct sprig_fwd f = { .n = nf, .tokens = toks, .pos = pos, .mask = md->mask, .n_out = nf, .logits = md->rows_logits };
        if ((st = sprig_forward(md->ctx, &f, err))) return st;
        for (int j = 0; j < nf; j++) {
            t->slot[batch[j]] = (int16_t)(rows + j);
            if (c->q) qrows[j] = sprig_draft_q_add(c->q, md->rows_logits + (size_t)j * Vd, V);
            else sprig_drafter_expand(t, batch[j], md->rows_logits + (size_t)j * Vd, V, w, c->grammar, gs);
        }
        if (c->q) sprig_dyntree_grow_sampled(t, batch, qrows, nf, c->q, w, SPRIG_MIN(w, max_nodes - t->n));
        rows += nf;
        md->tail = rows;
    }
    sprig_drafter_dyntree_out(t, c, max_nodes, k - 1, out);
    return SPRIG_OK;
}

/* A new generation. When the target reused cached rows of the prompt (c->reuse), the draft cache keeps what it
 * holds but the last expansion's rows (a dense or paged cache: a sliding-window ring may refuse to cut back far): the first sync keeps its longest common prefix with the new history, so a
 * conversation's next turn feeds the drafter only what is new. Else it starts empty. */
static sprig_status md_begin(sprig_drafter *d, const sprig_draft_ctx *c, sprig_error *err)
{
    (void)err;
    model_drafter *md = (model_drafter *)d;
    sprig_kv *kv = sprig_ctx_kv(md->ctx);
    const bool cut = !strcmp(sprig_kv_kind(kv), "dense") || !strcmp(sprig_kv_kind(kv), "paged");   /* a ring may not trim */
    if (!c->reuse || !cut || (md->tail && sprig_kv_trim(kv, md->tail, NULL) != SPRIG_OK) || sprig_kv_len(kv) != md->n_fed) {
        sprig_kv_clear(kv);
        md->n_fed = 0;
    }
    md->tail = 0;
    return SPRIG_OK;
}

static bool md_own_cache(sprig_drafter *d, struct sprig_draft_cache *out)
{
    model_drafter *md = (model_drafter *)d;
    sprig_kv *kv = sprig_ctx_kv(md->ctx);
    if ((md->tail && sprig_kv_trim(kv, md->tail, NULL) != SPRIG_OK) || sprig_kv_len(kv) != md->n_fed) {
        sprig_kv_clear(kv);
        md->n_fed = 0;
    }
    md->tail = 0;
    *out = (struct sprig_draft_cache){ .kv = kv, .fed = md->fed, .n_fed = &md->n_fed, .cap = md->n_ctx, .model = md->dm };
    return true;
}

static void md_free(model_drafter *md)
{
    sprig_ctx_free(md->ctx);
    sprig_model_free(md->dm);
    sprig_free_aligned(md->fed);
    sprig_free_aligned(md->logits);
    sprig_free_aligned(md->rows_logits);
    sprig_free_aligned(md->mask);
    free(md);
}

static void md_destroy(sprig_drafter *d) { md_free((model_drafter *)d); }

static const struct sprig_drafter_vt model_drafter_vt = {
    .name = "draft-model",
    .draft_block = md_draft_block,
    .draft_tree = md_draft_tree,
    .begin = md_begin,
    .own_cache = md_own_cache,
    .destroy = md_destroy,
};

sprig_drafter *sprig_draft_model_create(const char *path, const sprig_model *target, sprig_pool *pool,
                                        int n_ctx, struct sprig_batch *batch, sprig_error *err)
{
    model_drafter *md = calloc(1, sizeof *md);
    if (!md) { sprig_err(err, SPRIG_E_NOMEM, "draft model: out of memory"); return NULL; }
    md->base.vt = &model_drafter_vt;
    if (sprig_model_load(path, &md->dm, err)) {
        sprig_err_prefix(err, "draft model");
        free(md);
        return NULL;
    }
    if (md->dm->hp.n_recurrent) {   /* its trims would need the recurrent states rolled back */
        sprig_err(err, SPRIG_E_REFUSED, "%s: a draft model with recurrent layers (%d) cannot roll back its drafts yet", path,
                  md->dm->hp.n_recurrent);
        md_free(md);
        return NULL;
    }
    int diff = sprig_tokenizer_first_difference(target->tok, md->dm->tok);
    if (diff >= 0) {
        size_t la = 0, lb = 0;
        const char *pa = sprig_tokenizer_piece(target->tok, diff, &la);
        const char *pb = sprig_tokenizer_piece(md->dm->tok, diff, &lb);
        sprig_err(err, SPRIG_E_INVALID_ARG, "%s: the draft model's vocabulary differs from the target's at token id %d ('%.*s' vs '%.*s')",
                  path, diff, (int)(lb > 40 ? 40 : lb), pb, (int)(la > 40 ? 40 : la), pa);
        md_free(md);
        return NULL;
    }
    md->n_common = md->dm->hp.n_vocab < target->hp.n_vocab ? md->dm->hp.n_vocab : target->hp.n_vocab;
    int nt = sprig_tokenizer_n_vocab(target->tok), nd = sprig_tokenizer_n_vocab(md->dm->tok);
    if (nt != nd)
        SPRIG_LOGI("draft model: %d tokens against the target's %d; the first %d agree (padding ignored)", nd, nt, nt < nd ? nt : nd);
    /* room past the context for a dynamic tree's expanded rows; on a batch, a paged sequence on its draft pool (a
     * model whose layers differ in shape keeps a cache of its own) */
    struct sprig_ctx_params cp = { .n_ctx = n_ctx + 4 * SPRIG_TREE_MAX, .n_batch = 64 };
    cp.kv_pool = batch ? sprig_batch_draft_pool(batch, &md->dm->hp, cp.n_ctx) : NULL;
    if (cp.kv_pool && sprig_ctx_create(md->dm, pool, &cp, &md->ctx, NULL)) cp.kv_pool = NULL;
    if ((!md->ctx && sprig_ctx_create(md->dm, pool, &cp, &md->ctx, err)) || sprig_ctx_speculative(md->ctx, 64, err)) {
        sprig_err_prefix(err, "draft model");
        md_free(md);
        return NULL;
    }
    md->n_ctx = sprig_ctx_n_ctx(md->ctx);
    md->fed = sprig_calloc_aligned((size_t)md->n_ctx, sizeof(int32_t));
    md->logits = sprig_calloc_aligned((size_t)md->dm->hp.n_vocab, sizeof(float));
    md->rows_logits = sprig_calloc_aligned((size_t)SPRIG_DYNTREE_MAX_WIDTH * md->dm->hp.n_vocab, sizeof(float));
    md->mask = sprig_calloc_aligned((size_t)SPRIG_DYNTREE_MAX_WIDTH * md->n_ctx, sizeof(float));
    if (!md->fed || !md->logits || !md->rows_logits || !md->mask) {
        md_free(md);
        sprig_err(err, SPRIG_E_NOMEM, "draft model: out of memory");
        return NULL;
    }
    return &md->base;
}
