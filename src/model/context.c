/*
 * model/context — a forward context: the KV cache and every scratch buffer a
 * forward of up to n_batch tokens needs, allocated once so the decode and
 * speculation loops never allocate. Also the generic forward entry points
 * (argument validation, chunked prefill) in front of the architecture's
 * forward function.
 */
#include "model/internal.h"
#include "model/moe.h"
#include "base/mem.h"
#include "tensor/attention.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sprig_ctx_free(sprig_ctx *c)
{
    if (!c) return;
    sprig_kv_free(c->kv);
    sprig_rec_free(c->rec);
    if (c->moe) sprig_moe_scratch_free(c->moe);
    free(c->moe);
    sprig_kv_pool_free(c->own_pool);
    float **bufs[] = { &c->x, &c->xn, &c->q, &c->k, &c->v, &c->att, &c->tmp, &c->gate, &c->up, &c->hid, &c->rope, &c->attn_scratch,
                       &c->rope_swa, &c->band, &c->pl, &c->pl_tmp, &c->pl_row, &c->ones };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) sprig_free_aligned(*bufs[i]);
    sprig_free_aligned(c->pos);
    sprig_free_aligned(c->qg);
    sprig_free_aligned(c->qgate);
    sprig_free_aligned(c->tok);
    sprig_free_aligned(c->act);
    free(c);
}

/* A sliding layer keeps a ring when its window binds: the ring (window - 1
 * + a batch) is smaller than the context. */
static bool ring_fits(int window, int n_batch, int n_ctx) { return (int64_t)window - 1 + n_batch < n_ctx; }

/* The speculative buffer of a ring of window w: compaction moves about w
 * slots every `slack` tokens, so slack ~ w keeps it at one move per token. */
static int spec_slack(int w, int n_batch) { return w > n_batch ? w : n_batch; }

static int count_sliding(const sprig_model *m)
{
    int n = 0;
    for (int l = 0; l < m->hp.n_layer; l++) n += m->layers[l].window > 0;
    return n;
}

sprig_status sprig_ctx_speculative(sprig_ctx *c, int rows, sprig_error *err)
{
    if (rows < 1 || rows > c->n_batch)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "speculation: blocks of %d rows outside [1, n_batch %d]", rows, c->n_batch);
    sprig_status st = c->rec && rows > 1 ? sprig_rec_keep(c, rows, err) : SPRIG_OK;   /* 1 row: plain decoding, nothing to undo */
    if (st || strcmp(sprig_kv_kind(c->kv), "ring")) return st;
    return sprig_kv_ring_set_buffer(c->kv, c->spec_slack, err);
}

sprig_status sprig_ctx_trim(sprig_ctx *c, int k, sprig_error *err)
{
    if (k < 0 || k > sprig_kv_len(c->kv))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "trim: %d is outside [0, %d cached]", k, sprig_kv_len(c->kv));
    sprig_status st = c->rec ? sprig_rec_keep_rows(c, NULL, c->rec->last_n - k, err) : SPRIG_OK;
    return st ? st : sprig_kv_trim(c->kv, k, err);
}

sprig_status sprig_ctx_keep_path(sprig_ctx *c, int tail, const int *path, int n_path, sprig_error *err)
{
    if (tail < 0 || tail > sprig_kv_len(c->kv) || n_path < 0 || n_path > tail)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "keep path: %d of a tail of %d rows (%d cached)", n_path, tail, sprig_kv_len(c->kv));
    if (c->rec) {
        if (tail != c->rec->last_n)
            return sprig_err(err, SPRIG_E_REFUSED, "%s: the recurrent layers can keep a path only of the last forward (%d rows), "
                             "not of %d", c->m->arch->name, c->rec->last_n, tail);
        sprig_status st = sprig_rec_keep_rows(c, path, n_path, err);
        if (st) return st;
    }
    return sprig_kv_gather_within_tail(c->kv, tail, path, n_path, err);
}

bool sprig_ctx_tree_ok(const sprig_ctx *c, char *reason, size_t cap)
{
    const struct sprig_hparams *hp = &c->m->hp;
    for (int l = 0; l < hp->n_layer && !(c->rec && c->rec->keep_rows > 1); l++)   /* rollback on: trees step node by node */
        if (c->m->layers[l].recurrent) {
            if (reason && cap)
                snprintf(reason, cap, "layer %d is one of %d recurrent (gated delta-net) layers and their rollback is off: "
                         "a tree batch needs each node stepped from its parent's state", l, hp->n_recurrent);
            return false;
        }
    return sprig_kv_can_gather(c->kv, reason, cap);
}

double sprig_ctx_rollback_ms(const sprig_ctx *c) { return c->rec ? c->rec->rollback_ms : 0; }

void sprig_ctx_moe_counters(const sprig_ctx *c, struct sprig_moe_counters *out)
{
    if (c->moe) *out = c->moe->count_all;
    else memset(out, 0, sizeof *out);
}

const int16_t *sprig_ctx_moe_routes(const sprig_ctx *c, int *rows, int *layers, int *k)
{
    *rows = *layers = *k = 0;
    if (!c->moe) return NULL;
    *rows = c->moe->route_rows;
    *layers = c->moe->route_layers;
    *k = c->m->hp.n_expert_used;
    return c->moe->route;
}

sprig_status sprig_ctx_create(const sprig_model *m, sprig_pool *pool, const struct sprig_ctx_params *p,
                              sprig_ctx **out, sprig_error *err)
{
    *out = NULL;
    const struct sprig_hparams *hp = &m->hp;
    if (p && p->n_ctx < 0) return sprig_err(err, SPRIG_E_INVALID_ARG, "n_ctx: %d must be >= 0 (0 = default)", p->n_ctx);
    if (p && p->n_batch < 0) return sprig_err(err, SPRIG_E_INVALID_ARG, "n_batch: %d must be >= 0 (0 = default)", p->n_batch);
    int n_ctx = p && p->n_ctx > 0 ? p->n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    int n_batch = p && p->n_batch > 0 ? p->n_batch : 64;
    int kv_mode = p ? p->kv_mode : SPRIG_KV_MODE_F32;
    struct sprig_kv_pool *kv_pool = p ? p->kv_pool : NULL;
    const int block = p && !kv_pool ? p->kv_block_slots : 0;
    if (block < 0 || block > 4096 || (block & (block - 1)))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv_block_slots: %d must be 0 (dense) or a power of two <= 4096", block);
    if (kv_pool) kv_mode = sprig_kv_pool_params(kv_pool)->mode;
    if (n_ctx < 1 || n_ctx > (1 << 24))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "n_ctx: %d is out of range [1, %d]", n_ctx, 1 << 24);
    if (n_batch < 1 || n_batch > 4096)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "n_batch: %d is out of range [1, 4096]", n_batch);
    if (!sprig_kv_mode_name(kv_mode) || sprig_kv_mode_from_name(sprig_kv_mode_name(kv_mode)) != kv_mode)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv type: %d is not a KV cache mode (%s)", kv_mode, sprig_kv_mode_list());
    {   /* the mode must fit the head size */
        sprig_kv_codec kc, vc;
        sprig_status st = sprig_kv_mode_codecs(kv_mode, hp->head_dim, &kc, &vc, err);
        if (st) return st;
    }
    if (n_batch > n_ctx) n_batch = n_ctx;
    if ((int64_t)n_batch * n_ctx > INT32_MAX)   /* the attention's score indices are int32 */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "n_batch %d x n_ctx %d exceeds %d", n_batch, n_ctx, INT32_MAX);
    {   /* the cache and the attention scratch must fit the memory available, estimated before allocating
         * (an over-committed allocation would otherwise be killed when first touched) */
        double slots = 0, kvb = 0;   /* a sliding layer's ring holds its window, the buffer and a batch (kv_ring.c) */
        for (int l = 0; l < hp->n_layer; l++) {
            const struct sprig_layer *L = &m->layers[l];
            if (L->kv_layer != l) continue;   /* reads another layer's cache */
            const int w = L->window;
            const double sl = w && !block && kv_mode != SPRIG_KV_MODE_TURBO4_DELEGATED && ring_fits(w, n_batch, n_ctx)
                                  ? w - 1.0 + n_batch + spec_slack(w, n_batch) : n_ctx;
            slots += sl;
            kvb += sl * (double)sprig_kv_mode_slot_bytes(kv_mode, L->n_kv_head, L->head_dim);
        }
        const double kv = kv_pool ? 0 : kvb;
        const double scratch = 4.0 * (double)sprig_attn_scratch_floats(n_batch, hp->n_head, n_ctx, pool ? sprig_pool_size(pool) : 1);
        const double avail = sprig_mem_available();
        if (avail > 0 && kv + scratch > avail)
            return sprig_err(err, SPRIG_E_NOMEM,
                             "n_ctx: %d slots need %.2f GiB (a %s KV cache: %d layers x %lld bytes each on average = %.2f GiB; "
                             "attention scratch for batches of %d: %.2f GiB); %.2f GiB of memory is available",
                             n_ctx, (kv + scratch) / 1073741824.0, sprig_kv_mode_name(kv_mode), hp->n_layer,
                             (long long)(slots > 0 ? kvb / hp->n_layer : 0), kv / 1073741824.0,
                             n_batch, scratch / 1073741824.0, avail / 1073741824.0);
    }

    sprig_ctx *c = calloc(1, sizeof *c);
    if (!c) return sprig_err(err, SPRIG_E_NOMEM, "context: out of memory");
    c->m = m;
    c->pool = pool;
    c->n_batch = n_batch;
    c->n_ctx = n_ctx;
    int qdim = hp->max_qdim, kvdim = hp->max_kvdim;
    int layer_kvh[SPRIG_MAX_LAYERS], layer_hd[SPRIG_MAX_LAYERS];
    bool shaped = false;   /* layers of different shapes, or sharing caches: only the per-layer (ring) cache holds them */
    for (int l = 0; l < hp->n_layer; l++) {
        const struct sprig_layer *L = &m->layers[l];
        layer_kvh[l] = L->kv_layer == l ? L->n_kv_head : 0;
        layer_hd[l] = L->head_dim;
        shaped |= layer_kvh[l] != hp->n_kv_head || layer_hd[l] != hp->head_dim;
    }
    struct sprig_kv_params kp = { .n_layer = hp->n_layer, .n_ctx = n_ctx, .n_kv_head = hp->n_kv_head,
                                  .head_dim = hp->head_dim, .mode = kv_mode, .max_batch = n_batch, .n_head = hp->n_head,
                                  .layer_kv_head = shaped ? layer_kvh : NULL, .layer_hd = shaped ? layer_hd : NULL };
    sprig_status st = SPRIG_OK;
    if (shaped && (block || kv_pool || kv_mode == SPRIG_KV_MODE_TURBO4_DELEGATED)) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: this model's layers differ in kv heads or head size (or share caches); "
                       "only the dense per-layer cache holds them", block || kv_pool ? "kv_block_slots" : "kv type");
        goto fail;
    }
    if ((block || kv_pool) && kv_mode == SPRIG_KV_MODE_TURBO4_DELEGATED) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "kv_block_slots: the turbo4-delegated cache is not paged (its hot ring is per sequence)");
        goto fail;
    }
    if (block) {   /* a private pool exactly covering the context */
        struct sprig_kv_pool_params pp = { .n_layer = hp->n_layer, .n_kv_head = hp->n_kv_head, .head_dim = hp->head_dim,
                                           .mode = kv_mode, .block_slots = block, .n_blocks = (n_ctx + block - 1) / block };
        if (!(c->own_pool = sprig_kv_pool_create(&pp, err))) { st = err ? err->code : SPRIG_E_NOMEM; goto fail; }
        kv_pool = c->own_pool;
    }
    int windows[SPRIG_MAX_LAYERS], n_ring = 0, widest = 0;
    for (int l = 0; l < hp->n_layer; l++) {   /* sliding layers whose window binds keep a ring (dense caches only) */
        const int w = m->layers[l].window;
        windows[l] = !kv_pool && kv_mode != SPRIG_KV_MODE_TURBO4_DELEGATED && w && ring_fits(w, n_batch, n_ctx) ? w : 0;
        if (windows[l]) n_ring++;
        if (windows[l] > widest) widest = windows[l];
    }
    if (kv_pool) {
        const struct sprig_kv_pool_params *pp = sprig_kv_pool_params(kv_pool);
        if (pp->n_layer != hp->n_layer || pp->n_kv_head != hp->n_kv_head || pp->head_dim != hp->head_dim) {
            st = sprig_err(err, SPRIG_E_INVALID_ARG,
                           "kv_pool: its blocks hold %d layers x %d kv heads x head size %d; this model has %d x %d x %d",
                           pp->n_layer, pp->n_kv_head, pp->head_dim, hp->n_layer, hp->n_kv_head, hp->head_dim);
            goto fail;
        }
        c->kv = sprig_kv_create_paged(kv_pool, n_ctx, err);
    } else if (n_ring || shaped) {
        c->kv = sprig_kv_create_ring(&kp, windows, n_batch, err);
        c->spec_slack = spec_slack(widest, n_batch);
    } else {
        c->kv = sprig_kv_create(&kp, err);
    }
    if (!c->kv) { st = err ? err->code : SPRIG_E_NOMEM; goto fail; }
    size_t B = (size_t)n_batch;
    struct { float **p; size_t n; } fb[] = {
        { &c->x, B * hp->dim }, { &c->xn, B * hp->dim }, { &c->q, B * qdim }, { &c->k, B * kvdim },
        { &c->v, B * kvdim }, { &c->att, B * qdim }, { &c->tmp, B * hp->dim }, { &c->gate, B * hp->max_ff },
        { &c->up, B * hp->max_ff }, { &c->hid, B * hp->dim }, { &c->rope, B * hp->max_hd },
    };
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
        *fb[i].p = sprig_calloc_aligned(fb[i].n, sizeof(float));
        if (!*fb[i].p) { st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for scratch"); goto fail; }
    }
    bool sliding = false, own_rope = hp->rope_theta_swa != hp->rope_theta || hp->rope_freq_scale_swa != hp->rope_freq_scale ||
                                     hp->head_dim_swa != hp->head_dim || hp->n_rot_swa != hp->n_rot || m->rope_freqs;
    for (int l = 0; l < hp->n_layer; l++) sliding |= m->layers[l].window > 0;
    if (sliding) {   /* the band mask: as wide as the widest ring (buffer included), else the context */
        c->band_keys = n_ctx;
        if (n_ring && n_ring == count_sliding(m)) {
            int64_t most = 0;
            for (int l = 0; l < hp->n_layer; l++)
                if (windows[l] && windows[l] - 1 + n_batch + c->spec_slack > most) most = windows[l] - 1 + n_batch + c->spec_slack;
            if (most < c->band_keys) c->band_keys = most;
        }
        c->band = sprig_calloc_aligned(B * (size_t)c->band_keys, sizeof(float));
        c->rope_swa = own_rope ? sprig_calloc_aligned(B * hp->max_hd, sizeof(float)) : NULL;
        if (!c->band || (own_rope && !c->rope_swa)) {
            st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for the sliding layers' masks");
            goto fail;
        }
    }
    if (hp->n_pl) {   /* gemma4's per-layer inputs */
        c->pl = sprig_calloc_aligned(B * (size_t)hp->n_pl * hp->n_layer, sizeof(float));
        c->pl_tmp = sprig_calloc_aligned(B * (size_t)hp->n_pl, sizeof(float));
        c->pl_row = sprig_calloc_aligned((size_t)hp->n_pl * hp->n_layer, sizeof(float));
        if (!c->pl || !c->pl_tmp || !c->pl_row) { st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for per-layer inputs"); goto fail; }
    }
    c->ones = sprig_calloc_aligned((size_t)hp->max_hd, sizeof(float));
    if (!c->ones) { st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory"); goto fail; }
    for (int i = 0; i < hp->max_hd; i++) c->ones[i] = 1.0f;
    if (hp->n_recurrent && (st = sprig_rec_create(c, err))) goto fail;
    if (hp->n_expert) {   /* routed experts: routing, grouping and per-slot outputs for B rows */
        if (!(c->moe = calloc(1, sizeof *c->moe))) { st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory"); goto fail; }
        if ((st = sprig_moe_scratch_alloc(c->moe, hp, (int)B, err))) goto fail;
    }
    bool gated = false;
    for (int l = 0; l < hp->n_layer; l++) gated |= m->layers[l].attn_gate;
    if (gated) {   /* qwen35's gated attention: [q | gate] per head */
        c->qg = sprig_calloc_aligned(B * 2 * (size_t)qdim, sizeof(float));
        c->qgate = sprig_calloc_aligned(B * (size_t)qdim, sizeof(float));
        if (!c->qg || !c->qgate) { st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for the gated attention"); goto fail; }
    }
    c->pos = sprig_calloc_aligned(B, sizeof(int32_t));
    c->tok = sprig_calloc_aligned(B, sizeof(int32_t));
    int64_t kmax = hp->dim;
    if (hp->max_ff > kmax) kmax = hp->max_ff;
    if (qdim > kmax) kmax = qdim;
    if (hp->n_pl > kmax) kmax = hp->n_pl;
    if ((int64_t)hp->ssm_v_heads * hp->ssm_state > kmax) kmax = (int64_t)hp->ssm_v_heads * hp->ssm_state;
    c->act_bytes = sprig_act_scratch_bytes(n_batch, kmax);
    c->act = sprig_calloc_aligned(c->act_bytes, 1);
    c->attn_floats = sprig_attn_scratch_floats(n_batch, hp->n_head, n_ctx, sprig_pool_size(pool));
    c->attn_scratch = sprig_calloc_aligned(c->attn_floats, sizeof(float));
    if (!c->pos || !c->tok || !c->act || !c->attn_scratch) {
        st = sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for scratch (n_ctx %d, n_batch %d)", n_ctx, n_batch);
        goto fail;
    }
    *out = c;
    return SPRIG_OK;
fail:
    sprig_ctx_free(c);
    return st;
}

const sprig_model *sprig_ctx_model(const sprig_ctx *c) { return c->m; }
sprig_kv *sprig_ctx_kv(sprig_ctx *c) { return c->kv; }
sprig_pool *sprig_ctx_pool(sprig_ctx *c) { return c->pool; }
int sprig_ctx_n_batch(const sprig_ctx *c) { return c->n_batch; }
int sprig_ctx_n_ctx(const sprig_ctx *c) { return c->n_ctx; }

/* The arguments of one forward on c (what: "forward" or "sequence s"). */
static sprig_status check_fwd(const sprig_ctx *c, const struct sprig_fwd *f, const char *what, sprig_error *err)
{
    const struct sprig_hparams *hp = &c->m->hp;
    int len = sprig_kv_len(c->kv);
    if (!f->tokens) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: tokens is NULL", what);
    if (f->n < 1 || f->n > c->n_batch)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: batch of %d tokens is out of range [1, %d]", what, f->n, c->n_batch);
    if (len + f->n > c->n_ctx)
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "%s: %d cached + %d new tokens exceed the context of %d", what, len, f->n, c->n_ctx);
    if (f->n_out < 0 || f->n_out > f->n)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n_out %d is out of range [0, %d]", what, f->n_out, f->n);
    for (int i = 0; i < f->n; i++) {
        if (f->tokens[i] < 0 || f->tokens[i] >= hp->n_vocab)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: token %d at batch row %d is outside the vocabulary [0, %d)",
                             what, f->tokens[i], i, hp->n_vocab);
        if (f->pos && (f->pos[i] < 0 || f->pos[i] > (1 << 24)))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: position %d at batch row %d is out of range", what, f->pos[i], i);
    }
    if (f->n_logits < 0 || f->n_logits > f->n_out)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n_logits %d is out of range [0, %d]", what, f->n_logits, f->n_out);
    if (f->out_rows)
        for (int i = 0; i < f->n_out; i++)
            if (f->out_rows[i] < 0 || f->out_rows[i] >= f->n)
                return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: out_rows[%d] = %d is outside the batch of %d", what, i, f->out_rows[i], f->n);
    return SPRIG_OK;
}

sprig_status sprig_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err)
{
    sprig_status st = check_fwd(c, f, "forward", err);
    if (st) return st;
    if ((st = sprig_kv_reserve(c->kv, f->n, err))) return st;
    return c->m->arch->forward(c, f, err);
}

void sprig_ctx_set_pool(sprig_ctx *c, sprig_pool *pool) { c->pool = pool; }

sprig_status sprig_forward_multi(sprig_ctx *host, int n_seq, sprig_ctx *const *ctx, const struct sprig_fwd *f, float *logits,
                                 sprig_error *err)
{
    if (!host || !ctx || !f) return sprig_err(err, SPRIG_E_INVALID_ARG, "forward: host, ctx or f is NULL");
    const sprig_model *m = host->m;
    if (!m->arch->forward_multi)
        return sprig_err(err, SPRIG_E_REFUSED, "forward: architecture %s runs one sequence per forward (its recurrent layers' "
                         "states are per sequence)", m->arch->name);
    if (n_seq < 1 || n_seq > SPRIG_FORWARD_MAX_SEQS)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "forward: %d sequences is out of range [1, %d]", n_seq, SPRIG_FORWARD_MAX_SEQS);
    int64_t rows = 0, outs = 0;
    bool want_logits = false;
    for (int s = 0; s < n_seq; s++) {
        char what[32];
        snprintf(what, sizeof what, "sequence %d", s);
        if (!ctx[s] || ctx[s]->m != m) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: not a context of the host's model", what);
        for (int t = 0; t < s; t++)
            if (ctx[t] == ctx[s]) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: the same context as sequence %d", what, t);
        sprig_status st = check_fwd(ctx[s], &f[s], what, err);
        if (st) return st;
        rows += f[s].n;
        outs += f[s].n_out;
        want_logits |= f[s].n_out > 0 && f[s].logits;
    }
    if (rows > host->n_batch)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "forward: %lld rows of %d sequences exceed the host's batch of %d", (long long)rows,
                         n_seq, host->n_batch);
    if (want_logits && outs > 0 && !logits) return sprig_err(err, SPRIG_E_INVALID_ARG, "forward: no scratch for the logits");
    for (int s = 0; s < n_seq; s++) {   /* room first: a full pool refuses before any cache is written */
        sprig_status st = sprig_kv_reserve(ctx[s]->kv, f[s].n, err);
        if (st) return st;
    }
    return m->arch->forward_multi(host, n_seq, ctx, f, logits, err);
}

/* n tokens in n_batch chunks; the last row's logits; hidden: the last row's
 * (all_rows false) or every row's [n][dim] */
static sprig_status prefill(sprig_ctx *c, const int32_t *tokens, int n, float *logits, float *hidden, bool all_rows,
                            sprig_error *err)
{
    if (n < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "prefill: no tokens");
    if ((int64_t)sprig_kv_len(c->kv) + n > c->n_ctx)
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "prefill: %d cached + %d new tokens exceed the context of %d",
                         sprig_kv_len(c->kv), n, c->n_ctx);
    for (int done = 0; done < n;) {
        int chunk = n - done < c->n_batch ? n - done : c->n_batch;
        bool last = done + chunk == n;
        struct sprig_fwd f = {
            .n = chunk, .tokens = tokens + done, .n_out = last && (logits || hidden) ? 1 : 0,
            .logits = last ? logits : NULL, .hidden = last ? hidden : NULL,
        };
        if (all_rows) {   /* every row's hidden state; logits of the last row only */
            f.n_out = chunk;
            f.n_logits = last && logits ? 1 : 0;
            f.hidden = hidden + (size_t)done * c->m->hp.dim;
        }
        sprig_status st = sprig_forward(c, &f, err);
        if (st) return st;
        done += chunk;
    }
    return SPRIG_OK;
}

sprig_status sprig_prefill(sprig_ctx *c, const int32_t *tokens, int n, float *logits, float *hidden, sprig_error *err)
{
    return prefill(c, tokens, n, logits, hidden, false, err);
}

sprig_status sprig_prefill_rows(sprig_ctx *c, const int32_t *tokens, int n, float *logits, float *hidden, sprig_error *err)
{
    if (!hidden) return sprig_err(err, SPRIG_E_INVALID_ARG, "prefill: no buffer for the hidden rows");
    return prefill(c, tokens, n, logits, hidden, true, err);
}

sprig_status sprig_prefill_shared(sprig_ctx *c, const int32_t *tokens, int have, int to, const struct sprig_shared_prefill *o,
                                  int *held, int *attached, sprig_error *err)
{
    sprig_kv *kv = c->kv;
    struct sprig_kv_pool *pool = sprig_kv_paged_pool(kv);
    const bool share = o->share && pool;
    const int bs = pool ? sprig_kv_pool_params(pool)->block_slots : 1;
    int chunk = o->chunk > 0 ? o->chunk : 256;
    if (share && chunk < bs) chunk = bs;   /* claims and keys are per block */
    int len = have;
    sprig_status st = SPRIG_OK;
    while (len < to && !(o->stop && o->stop(o->user))) {
        if (share) {
            const int got = sprig_kv_paged_share(kv, tokens, to);
            *attached += got - len;
            len = got;
            if (len >= to) break;
            const int cl = sprig_kv_paged_claim(kv, tokens, to);
            if (cl == SPRIG_KV_CLAIM_CACHED) continue;
            if (cl == SPRIG_KV_CLAIM_WAIT) {
                if (o->waiting) o->waiting(o->user);
                sprig_kv_pool_wait(pool, 50);
                continue;
            }
        }
        int end = (len + chunk) / bs * bs;
        if (end <= len) end = len + chunk;
        if (end > to) end = to;
        st = o->run ? o->run(o->user, c, tokens + len, end - len, err) : sprig_prefill(c, tokens + len, end - len, NULL, NULL, err);
        if (!st && share) sprig_kv_paged_publish(kv, tokens, end);
        if (share) sprig_kv_paged_unclaim(kv);
        if (st) break;
        len = end;
    }
    *held = len;
    return st;
}
