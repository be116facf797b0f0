/*
 * spec/target_llama — see target_llama.h.
 */
#include "spec/target_llama.h"
#include "spec/batch.h"
#include "base/mem.h"
#include "base/timer.h"
#include "model/moe.h"
#include "spec/routes.h"
#include "tensor/ops.h"
#include "grammar/match.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct model_target {
    sprig_target base;
    sprig_ctx *ctx;
    const sprig_model *m;
    sprig_batch *batch;     /* verify forwards shared with other sessions (spec/batch.h), or NULL */
    int max_rows;
    int prof_rows;          /* the most rows time_rows measures (>= max_rows: a batch's shared forward) */
    float *logits;          /* [prof_rows][n_vocab] */
    float *hidden;          /* [max_rows][dim] captured final-norm rows */
    float *state_hidden;    /* [dim] hidden at n_past - 1 */
    float *kept;            /* [max_rows][dim] a tree path's rows, gathered */
    float *prompt_hidden;   /* [prompt_cap][dim] every prompt row's (all_hidden), grown by prefill */
    int prompt_cap;
    float *mask;            /* [max_rows][n_ctx] tree mask with history */
    int32_t pos[SPRIG_TREE_MAX];
    int depths[SPRIG_TREE_MAX];
    int64_t seen_experts;   /* the context's expert counter before the last forward */
    double last_experts;    /* distinct experts the last forward read (summed over layers) */
    sprig_routes routes;    /* a mixture of experts: each token's last routing (tag NULL: dense) */
    sprig_expert_load experts;   /* its shape and bytes (layers 0: dense) */
} model_target;

/* Before a forward: the context's expert counter (a drafter's forwards on the
 * same context, an MTP block's, count there too). */
static void mark_experts(model_target *mt)
{
    struct sprig_moe_counters c;
    sprig_ctx_moe_counters(mt->ctx, &c);
    mt->seen_experts = c.experts;
}

/* After it, for tokens[n] (NULL: ids not known here): what it read from the
 * experts and where its rows routed. */
static void note_experts(model_target *mt, const int32_t *tokens, int n)
{
    struct sprig_moe_counters c;
    sprig_ctx_moe_counters(mt->ctx, &c);
    mt->last_experts = (double)(c.experts - mt->seen_experts);
    int rows, layers, k;
    const int16_t *r = sprig_ctx_moe_routes(mt->ctx, &rows, &layers, &k);
    if (r && tokens && rows == n)   /* alone (a shared forward's rows are everyone's) */
        sprig_routes_note(&mt->routes, tokens, n, r, SPRIG_MOE_ROUTE_LAYERS, layers);
}

/* row i's choice: under a grammar, greedy takes the argmax when the grammar allows it (the masked argmax is
 * then the same token) and masks the row otherwise; sampling and top_logprobs always see the masked row */
static sprig_status fill_rows(model_target *mt, int n, sprig_rows *rows, sprig_error *err)
{
    int V = mt->m->hp.n_vocab;
    for (int i = 0; i < n; i++) {
        float *lg = mt->logits + (size_t)i * V;
        const int32_t gs = rows->grammar ? rows->gstate[i] : -1;
        int32_t best = rows->sampling ? -1 : sprig_argmax(lg, V);
        if (gs >= 0 && (best < 0 || rows->top_n || sprig_gmatch_advance(rows->grammar, gs, best) == SPRIG_GSTATE_DEAD)) {
            if (!sprig_gmatch_apply(rows->grammar, gs, lg, err)) return err ? err->code : SPRIG_E_NOMEM;
            rows->masked++;
            if (!rows->sampling) best = sprig_argmax(lg, V);
            if (i == 0 && lg[best >= 0 ? best : sprig_argmax(lg, V)] == -INFINITY)   /* row 0 is always on the path: it must continue */
                return sprig_err(err, SPRIG_E_INVALID_ARG, "grammar: no token of the vocabulary continues the grammar here");
        }
        if (rows->sampling) sprig_sampler_probs(rows->sampler, lg, rows->probs + (size_t)i * V);
        else rows->argmax[i] = best;
        if (rows->top_n) sprig_top_logprobs(lg, V, rows->top_n, rows->top + (size_t)i * rows->top_n);
    }
    return SPRIG_OK;
}

/* kept[n_kept][dim]: the rows the call added, the last one at n_past - 1 */
static void fill_state(model_target *mt, const float *kept, int n_kept, sprig_target_state *st)
{
    int dim = mt->m->hp.dim;
    memcpy(mt->state_hidden, kept + (size_t)(n_kept - 1) * dim, (size_t)dim * sizeof(float));
    st->n_past = sprig_kv_len(sprig_ctx_kv(mt->ctx));
    st->hidden = mt->state_hidden;
    st->n_embd = dim;
    st->kept_hidden = kept;
    st->n_kept = n_kept;
    st->kv = sprig_ctx_kv(mt->ctx);
}

static sprig_status t_prefill(sprig_target *t, const int32_t *tokens, int n, sprig_rows *rows,
                              sprig_target_state *st, sprig_error *err)
{
    model_target *mt = (model_target *)t;
    if (!t->all_hidden) {
        mark_experts(mt);
        sprig_status s = sprig_prefill(mt->ctx, tokens, n, mt->logits, mt->hidden, err);
        note_experts(mt, NULL, 0);
        if (s) return s;
        if ((s = fill_rows(mt, 1, rows, err))) return s;
        fill_state(mt, mt->hidden, 1, st);
        return SPRIG_OK;
    }
    if (n > mt->prompt_cap) {   /* prefill, not the round loop: it may allocate */
        float *p = sprig_calloc_aligned((size_t)n * mt->m->hp.dim, sizeof(float));
        if (!p) return sprig_err(err, SPRIG_E_NOMEM, "target: out of memory for the hidden rows of %d prompt tokens", n);
        sprig_free_aligned(mt->prompt_hidden);
        mt->prompt_hidden = p;
        mt->prompt_cap = n;
    }
    mark_experts(mt);
    sprig_status s = sprig_prefill_rows(mt->ctx, tokens, n, mt->logits, mt->prompt_hidden, err);
    note_experts(mt, NULL, 0);
    if (s || (s = fill_rows(mt, 1, rows, err))) return s;
    fill_state(mt, mt->prompt_hidden, n, st);
    return SPRIG_OK;
}

static sprig_status check_rows(model_target *mt, int n, sprig_error *err)
{
    if (n < 1 || n > mt->max_rows || n > sprig_ctx_n_batch(mt->ctx))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target: block of %d rows is outside [1, %d]", n,
                         mt->max_rows < sprig_ctx_n_batch(mt->ctx) ? mt->max_rows : sprig_ctx_n_batch(mt->ctx));
    return SPRIG_OK;
}

/* A verify forward: alone, or with the batch's other members */
static sprig_status verify_fwd(model_target *mt, const struct sprig_fwd *f, sprig_error *err)
{
    mark_experts(mt);
    const sprig_status st = mt->batch ? sprig_batch_forward(mt->batch, mt->ctx, f, err) : sprig_forward(mt->ctx, f, err);
    note_experts(mt, f->tokens, f->n);
    return st;
}

static sprig_status t_verify_forward(sprig_target *t, const int32_t *block, int n, sprig_rows *rows,
                                     sprig_capture *cap, sprig_error *err)
{
    model_target *mt = (model_target *)t;
    sprig_status s = check_rows(mt, n, err);
    if (s) return s;
    struct sprig_fwd f = { .n = n, .tokens = block, .n_out = n, .logits = mt->logits, .hidden = mt->hidden };
    if ((s = verify_fwd(mt, &f, err)) || (s = fill_rows(mt, n, rows, err))) return s;
    cap->block = n;
    cap->tree = false;
    cap->hidden = mt->hidden;
    cap->priv = NULL;
    return SPRIG_OK;
}

static sprig_status t_verify_finalize(sprig_target *t, int accepted, int n, sprig_capture *cap,
                                      sprig_target_state *st, sprig_error *err)
{
    model_target *mt = (model_target *)t;
    sprig_status s = sprig_ctx_trim(mt->ctx, n - accepted - 1, err);
    if (s) return s;
    if (mt->batch) sprig_batch_observe(mt->batch, mt->ctx, accepted + 1);
    fill_state(mt, cap->hidden, accepted + 1, st);
    return SPRIG_OK;
}

static bool t_tree_available(sprig_target *t, char *reason, size_t cap)
{
    model_target *mt = (model_target *)t;
    return sprig_ctx_tree_ok(mt->ctx, reason, cap);
}

static sprig_status t_verify_forward_tree(sprig_target *t, const sprig_tree *tree, sprig_rows *rows,
                                          sprig_capture *cap, sprig_error *err)
{
    model_target *mt = (model_target *)t;
    int n = tree->n;
    sprig_status s = check_rows(mt, n, err);
    if (s) return s;
    int off = sprig_kv_len(sprig_ctx_kv(mt->ctx));
    if (off + n > sprig_ctx_n_ctx(mt->ctx))
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "target: tree of %d nodes does not fit after %d cached tokens (context %d)",
                         n, off, sprig_ctx_n_ctx(mt->ctx));
    if ((s = sprig_tree_mask_with_history(tree, off, -1e9f, mt->mask, err))) return s;
    sprig_tree_depths(tree, mt->depths);
    for (int i = 0; i < n; i++) mt->pos[i] = off + mt->depths[i];
    struct sprig_fwd f = { .n = n, .tokens = tree->tokens, .pos = mt->pos, .mask = mt->mask, .parents = tree->parents,
                           .n_out = n, .logits = mt->logits, .hidden = mt->hidden };
    if ((s = verify_fwd(mt, &f, err)) || (s = fill_rows(mt, n, rows, err))) return s;
    cap->block = n;
    cap->tree = true;
    cap->hidden = mt->hidden;
    cap->priv = NULL;
    return SPRIG_OK;
}

static sprig_status t_verify_finalize_tree(sprig_target *t, const int *path, int n_path, int n,
                                           sprig_capture *cap, sprig_target_state *st, sprig_error *err)
{
    model_target *mt = (model_target *)t;
    sprig_status s = sprig_ctx_keep_path(mt->ctx, n, path, n_path, err);
    if (s) return s;
    if (mt->batch) sprig_batch_observe(mt->batch, mt->ctx, n_path);
    const size_t dim = (size_t)mt->m->hp.dim;
    for (int i = 0; i < n_path; i++) memcpy(mt->kept + i * dim, cap->hidden + (size_t)path[i] * dim, dim * sizeof(float));
    fill_state(mt, mt->kept, n_path, st);
    return SPRIG_OK;
}

static double t_time_rows(sprig_target *t, int n)
{
    model_target *mt = (model_target *)t;
    sprig_error err = { 0 };
    if (n < 1 || n > mt->prof_rows || sprig_kv_len(sprig_ctx_kv(mt->ctx)) + n > sprig_ctx_n_ctx(mt->ctx)) return -1;
    /* distinct pseudo-random ids: a dense target's time does not depend on them, a mixture of experts'
     * does (equal ids route alike and read few experts; random ones route as unrelated rows do) */
    int32_t toks[SPRIG_TREE_MAX];
    uint32_t x = 0x9e3779b9u ^ (uint32_t)n;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        toks[i] = (int32_t)((x >> 8) % (uint32_t)mt->m->hp.n_vocab);
    }
    struct sprig_fwd f = { .n = n, .tokens = toks, .n_out = n, .logits = mt->logits, .hidden = mt->hidden };
    mark_experts(mt);
    const uint64_t t0 = sprig_time_ns();
    const sprig_status st = sprig_forward(mt->ctx, &f, &err);
    note_experts(mt, NULL, 0);   /* pseudo-random ids: not a routing to remember */
    if (st) return -1;
    const double ms = (double)(sprig_time_ns() - t0) * 1e-6;
    return sprig_ctx_trim(mt->ctx, n, &err) ? -1 : ms;
}

static void t_shared_load(sprig_target *t, double *rows, double *emitted, sprig_shared_cost *cost)
{
    model_target *mt = (model_target *)t;
    if (mt->batch) sprig_batch_others(mt->batch, mt->ctx, rows, emitted, cost);
}

static int t_shared_plan(sprig_target *t, const double *gain, int n, double draft_ms, const struct sprig_costs *lone)
{
    model_target *mt = (model_target *)t;
    return mt->batch ? sprig_batch_plan(mt->batch, mt->ctx, gain, n, draft_ms, lone) : 0;
}

static bool t_expert_load(sprig_target *t, sprig_expert_load *out)
{
    model_target *mt = (model_target *)t;
    *out = mt->experts;
    out->last = mt->experts.layers ? mt->last_experts : -1;
    return mt->experts.layers > 0;
}

/* A mixture of experts' shape and bytes, once (layers 0: a dense model). */
static void experts_of(const sprig_model *m, sprig_expert_load *out)
{
    memset(out, 0, sizeof *out);
    out->last = -1;
    double eb = 0;
    for (int l = 0; m->hp.n_expert && l < m->hp.n_layer; l++)
        if (m->layers[l].exp_gate) {
            out->layers++;
            eb += (double)sprig_moe_expert_bytes(&m->layers[l], 0);
        }
    if (!out->layers) return;
    out->n_expert = m->hp.n_expert;
    out->n_used = m->hp.n_expert_used;
    out->expert_bytes = eb / out->layers;
    out->dense_bytes = (double)m->weight_bytes - (double)out->layers * m->hp.n_expert_used * out->expert_bytes;
    if (out->dense_bytes < 0) out->dense_bytes = 0;
}

static sprig_routes *t_routes(sprig_target *t)
{
    model_target *mt = (model_target *)t;
    return mt->routes.tag ? &mt->routes : NULL;
}

static const struct sprig_target_vt model_target_vt = {
    .name = "model",
    .prefill = t_prefill,
    .verify_forward = t_verify_forward,
    .verify_finalize = t_verify_finalize,
    .tree_round_is_available = t_tree_available,
    .verify_forward_tree = t_verify_forward_tree,
    .verify_finalize_tree = t_verify_finalize_tree,
    .time_rows = t_time_rows,
    .shared_load = t_shared_load,
    .shared_plan = t_shared_plan,
    .expert_load = t_expert_load,
    .routes = t_routes,
};

sprig_status sprig_model_target_set_batch(sprig_target *t, sprig_batch *b, sprig_error *err)
{
    model_target *mt = (model_target *)t;
    mt->batch = b;
    if (!b) return SPRIG_OK;
    const long long all = (long long)sprig_batch_n_seq(b) * sprig_batch_max_rows(b);
    int rows = all < SPRIG_TREE_MAX ? (int)all : SPRIG_TREE_MAX;
    if (rows > sprig_ctx_n_batch(mt->ctx)) rows = sprig_ctx_n_batch(mt->ctx);
    if (rows <= mt->prof_rows) return SPRIG_OK;
    const size_t V = (size_t)mt->m->hp.n_vocab, D = (size_t)mt->m->hp.dim;
    float *lg = sprig_calloc_aligned((size_t)rows * V, sizeof(float)), *hd = sprig_calloc_aligned((size_t)rows * D, sizeof(float));
    if (!lg || !hd) {
        sprig_free_aligned(lg);
        sprig_free_aligned(hd);
        return sprig_err(err, SPRIG_E_NOMEM, "target: out of memory for a profile of %d rows", rows);
    }
    sprig_free_aligned(mt->logits);
    sprig_free_aligned(mt->hidden);
    mt->logits = lg;
    mt->hidden = hd;
    mt->prof_rows = rows;
    return SPRIG_OK;
}

int sprig_model_target_profile_rows(const sprig_target *t) { return ((const model_target *)t)->prof_rows; }

void sprig_model_target_free(sprig_target *t)
{
    model_target *mt = (model_target *)t;
    if (!mt) return;
    sprig_free_aligned(mt->logits);
    sprig_free_aligned(mt->hidden);
    sprig_free_aligned(mt->state_hidden);
    sprig_free_aligned(mt->kept);
    sprig_free_aligned(mt->prompt_hidden);
    sprig_free_aligned(mt->mask);
    sprig_routes_free(&mt->routes);
    free(mt);
}

sprig_target *sprig_model_target_create(sprig_ctx *ctx, int max_rows, sprig_error *err)
{
    const sprig_model *m = sprig_ctx_model(ctx);
    if (max_rows < 1 || max_rows > SPRIG_TREE_MAX) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "target: max_rows %d is outside [1, %d]", max_rows, SPRIG_TREE_MAX);
        return NULL;
    }
    if (max_rows > sprig_ctx_n_batch(ctx)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "target: blocks of %d rows need a batch size of at least %d (have %d)",
                  max_rows, max_rows, sprig_ctx_n_batch(ctx));
        return NULL;
    }
    model_target *mt = calloc(1, sizeof *mt);
    if (!mt) { sprig_err(err, SPRIG_E_NOMEM, "target: out of memory"); return NULL; }
    mt->base.vt = &model_target_vt;
    mt->base.n_vocab = m->hp.n_vocab;
    mt->base.n_ctx = sprig_ctx_n_ctx(ctx);
    /* every end-of-generation id of the vocabulary (EOS, <|eot_id|>,
     * <|im_end|>, <end_of_turn>, ...) ends the round loop */
    const int32_t *eog;
    int n_eog = sprig_tokenizer_eog_ids(m->tok, &eog);
    int eos = sprig_tokenizer_eos(m->tok);
    mt->base.n_eos = 0;
    if (eos >= 0) mt->base.eos[mt->base.n_eos++] = eos;
    for (int i = 0; i < n_eog && mt->base.n_eos < SPRIG_TARGET_MAX_EOS; i++)
        if (eog[i] != eos) mt->base.eos[mt->base.n_eos++] = eog[i];
    mt->ctx = ctx;
    mt->m = m;
    mt->max_rows = max_rows;
    mt->prof_rows = max_rows;
    size_t V = (size_t)m->hp.n_vocab, D = (size_t)m->hp.dim, C = (size_t)sprig_ctx_n_ctx(ctx);
    mt->logits = sprig_calloc_aligned((size_t)max_rows * V, sizeof(float));
    mt->hidden = sprig_calloc_aligned((size_t)max_rows * D, sizeof(float));
    mt->state_hidden = sprig_calloc_aligned(D, sizeof(float));
    mt->kept = sprig_calloc_aligned((size_t)max_rows * D, sizeof(float));
    mt->mask = sprig_calloc_aligned((size_t)max_rows * C, sizeof(float));
    if (!mt->logits || !mt->hidden || !mt->state_hidden || !mt->kept || !mt->mask) {
        sprig_model_target_free(&mt->base);
        sprig_err(err, SPRIG_E_NOMEM, "target: out of memory for %d rows", max_rows);
        return NULL;
    }
    experts_of(m, &mt->experts);
    if (mt->experts.layers) {   /* a mixture of experts: remember where tokens route */
        if (sprig_routes_init(&mt->routes, mt->experts.layers, m->hp.n_expert, m->hp.n_expert_used, err)) {
            sprig_model_target_free(&mt->base);
            return NULL;
        }
    }
    if (sprig_ctx_speculative(ctx, max_rows, err)) {   /* sliding layers keep verify tails gatherable; recurrent ones their rollback */
        sprig_model_target_free(&mt->base);
        return NULL;
    }
    return &mt->base;
}
