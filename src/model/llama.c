/*
 * model/llama — the llama forward pass, batched.
 *
 * Per layer, for the n tokens of the batch at once:
 *   xn = RMSNorm(x) * attn_norm
 *   q, k, v = xn Wq^T, xn Wk^T, xn Wv^T          (one fused matmul dispatch)
 *   q, k, v += bq, bk, bv                        (when the layer has biases: qwen2)
 *   q, k = RMSNorm(q) * q_norm, RMSNorm(k) * k_norm per head  (when present: qwen3)
 *   RoPE(q, k) at the given positions (the row's pairing: NORM for llama,
 *     NEOX for qwen2/qwen3; frequencies scaled by the file's linear factor
 *     and divided by rope_freqs when present: Llama 3)
 *   append k, v to the cache; attention of q over the cache (causal or mask;
 *     a sliding-window layer reads the slots its cache holds under the
 *     intersection of the mask with its window band, model/band.h, built
 *     once per forward for all layers of one window; queries scaled by the
 *     row's rule, 1/sqrt(head_dim) but for gemma's 27B shapes)
 *   x += att Wo^T (+ bo when the layer has attn_output.bias: llama)
 *   xn = RMSNorm(x) * ffn_norm
 *   x += (silu(xn Wgate^T) * (xn Wup^T)) Wdown^T  (gate/up fused)
 * gemma adds: embeddings times sqrt(dim), norms of the attention and FFN
 * outputs before their residual adds, GELU-tanh in place of SiLU, RoPE at
 * the sliding layers' own theta, and final logit soft-capping.
 * then the final norm and the output projection for the wanted rows only.
 * Every kernel keeps a row's numerics independent of the batch around it,
 * so a token verified inside a tree gets the same bits as decoded alone.
 *
 * Threading: each matmul is told the weights of the next one, which its
 * threads start prefetching when they finish (decode streams every weight
 * once; the ops in between would otherwise leave DRAM idle). The row-wise
 * ops (residual add fused with the next norm, RoPE, SwiGLU) are split across
 * the pool by rows for big batches.
 */
#include "model/band.h"
#include "model/moe.h"
#include "model/internal.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

#include <math.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>

/* The row-wise ops between the matmuls, over the pool's threads when a batch
 * is big enough to pay for a dispatch (rows split; a row's bits do not
 * depend on the rows around it). */
enum { RW_NORM, RW_ADD_NORM, RW_ROPE, RW_SWIGLU, RW_GEGLU };

struct rowwise {
    int op, n, dim;
    float *x, *xn;             /* RW_NORM, RW_ADD_NORM: xn = norm(x (+= add)) */
    const float *add, *w;
    float eps;
    float *q, *k, *v;          /* RW_ROPE: biases, per-head norms, then the rotation */
    const float *cs;
    const float *bq, *bk, *bv; /* [qdim], [kvdim], [kvdim] or NULL */
    const float *qn, *kn;      /* [hd] or NULL */
    const float *vn;           /* [hd] ones: a weightless RMSNorm of v (gemma4), or NULL */
    bool no_kv;                /* only q (a layer reading another layer's cache) */
    int n_head, n_kv_head, hd, n_rot, mode;
    float *gate;               /* RW_SWIGLU: gate = silu(gate) * up, rows of dim */
    const float *up;
};

/* At least this many floats per row-wise op to split it across threads
 * (measured on the 1B shape: a 2048-float norm row is ~0.4 us, a dispatch
 * ~1 us). */
static _Atomic int64_t g_rowwise_min = 16384;

static _Atomic bool g_band_on = true;

bool sprig_band_set_enabled(bool on) { return atomic_exchange(&g_band_on, on); }

int64_t sprig_llama_rowwise_split_min(int64_t floats)
{
    return atomic_exchange(&g_rowwise_min, floats < 0 ? 16384 : floats);
}

static void rowwise_task(void *ctx, int ith, int nth)
{
    const struct rowwise *t = ctx;
    long lo, hi;
    sprig_split(t->n, ith, nth, &lo, &hi);
    const int rows = (int)(hi - lo);
    if (rows <= 0) return;
    const size_t o = (size_t)lo * (size_t)t->dim;
    switch (t->op) {
    case RW_ADD_NORM:
        sprig_add_inplace(t->x + o, t->add + o, (int64_t)rows * t->dim);
        /* fall through */
    case RW_NORM:
        sprig_rmsnorm(t->xn + o, t->x + o, t->w, rows, t->dim, t->eps);
        break;
    case RW_ROPE: {
        const int nr = t->n_rot;
        const size_t qd = (size_t)t->n_head * t->hd, kd = (size_t)t->n_kv_head * t->hd;
        float *q = t->q + (size_t)lo * qd, *k = t->k + (size_t)lo * kd, *v = t->v + (size_t)lo * kd;
        for (int r = 0; r < rows; r++) {
            if (t->bq) sprig_add_inplace(q + r * qd, t->bq, (int64_t)qd);
            if (t->bk && !t->no_kv) sprig_add_inplace(k + r * kd, t->bk, (int64_t)kd);
            if (t->bv && !t->no_kv) sprig_add_inplace(v + r * kd, t->bv, (int64_t)kd);
        }
        if (t->qn) sprig_rmsnorm(q, q, t->qn, rows * t->n_head, t->hd, t->eps);
        sprig_rope_apply(t->q + (size_t)lo * t->n_head * t->hd, t->cs + (size_t)lo * nr, rows, t->n_head, t->hd, nr, t->mode);
        if (t->no_kv) break;
        if (t->kn) sprig_rmsnorm(k, k, t->kn, rows * t->n_kv_head, t->hd, t->eps);
        if (t->vn) sprig_rmsnorm(v, v, t->vn, rows * t->n_kv_head, t->hd, t->eps);
        sprig_rope_apply(t->k + (size_t)lo * t->n_kv_head * t->hd, t->cs + (size_t)lo * nr, rows, t->n_kv_head, t->hd, nr,
                         t->mode);
        break;
    }
    case RW_SWIGLU:
        sprig_swiglu(t->gate + o, t->gate + o, t->up + o, (int64_t)rows * t->dim);
        break;
    case RW_GEGLU:
        sprig_geglu(t->gate + o, t->gate + o, t->up + o, (int64_t)rows * t->dim);
        break;
    default: break;
    }
}

static void rowwise(sprig_pool *pool, const struct rowwise *t)
{
    int64_t floats = (int64_t)t->n * t->dim;
    int nth = floats >= atomic_load_explicit(&g_rowwise_min, memory_order_relaxed) ? sprig_pool_size(pool) : 1;
    sprig_pool_run(pool, rowwise_task, (void *)t, nth < t->n ? nth : t->n);
}

/* gemma4's per-layer inputs of the batch, c->pl[n][n_layer][n_pl]:
 * (RMSNorm(x Wproj / sqrt(dim)) * proj_norm + embd(token) * sqrt(n_pl)) / sqrt(2)
 * per layer chunk, x the scaled token embeddings (llama.cpp's
 * project_per_layer_inputs, its operations in its order). */
static void per_layer_inputs(sprig_ctx *c, const int32_t *tokens, int n_rows)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    const int n = n_rows, P = hp->n_pl, W = P * hp->n_layer;
    const sprig_weight *w[1] = { &m->pl_model_proj };
    float *o[1] = { c->pl };
    sprig_matmul_rows(c->pool, c->x, n, hp->dim, c->act, c->act_bytes, 1, w, o);
    const float ps = 1.0f / sqrtf((float)hp->dim), es = sqrtf((float)P), is = 1.0f / sqrtf(2.0f);
    for (int i = 0; i < n; i++) {
        float *r = c->pl + (size_t)i * W;
        for (int j = 0; j < W; j++) r[j] *= ps;
        sprig_rmsnorm(r, r, m->pl_proj_norm, hp->n_layer, P, hp->eps);
        sprig_weight_row_f32(&m->pl_tok_embd, tokens[i], c->pl_row);
        for (int j = 0; j < W; j++) r[j] = (r[j] + c->pl_row[j] * es) * is;
    }
}

/* gemma4's per-layer input block after layer l (x: the residual stream):
 * x += RMSNorm(gelu(x Wgate) * pl[l] Wproj) * post_norm. */
static void per_layer_block(sprig_ctx *c, const struct sprig_layer *L, int l, int n)
{
    const struct sprig_hparams *hp = &c->m->hp;
    const int P = hp->n_pl, dim = hp->dim;
    const sprig_weight *g[1] = { &L->pl_gate };
    float *go[1] = { c->pl_tmp };
    sprig_matmul_rows(c->pool, c->x, n, dim, c->act, c->act_bytes, 1, g, go);
    for (int i = 0; i < n; i++) {
        float *t = c->pl_tmp + (size_t)i * P;
        sprig_geglu(t, t, c->pl + ((size_t)i * hp->n_layer + l) * P, P);
    }
    const sprig_weight *pw[1] = { &L->pl_proj };
    float *po[1] = { c->tmp };
    sprig_matmul_rows(c->pool, c->pl_tmp, n, P, c->act, c->act_bytes, 1, pw, po);
    sprig_rmsnorm(c->tmp, c->tmp, L->pl_post_norm, n, dim, hp->eps);
    sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);
}

/* logits[n][n_vocab] = the output projection of the final-norm rows hid[n]
 * (soft-capped where the model says: gemma's c * tanh(x / c), as llama.cpp's
 * scale, tanh, scale) */
static void output_head(sprig_ctx *c, const float *hid, int n, float *logits)
{
    const sprig_model *m = c->m;
    const sprig_weight *wout[1] = { &m->output };
    float *lo[1] = { logits };
    sprig_matmul_rows(c->pool, hid, n, m->hp.dim, c->act, c->act_bytes, 1, wout, lo);
    if (m->hp.final_softcap > 0) {
        const float c_ = m->hp.final_softcap, inv = 1.0f / c_;
        for (int64_t i = 0; i < (int64_t)n * m->hp.n_vocab; i++) logits[i] = tanhf(logits[i] * inv) * c_;
    }
}

void sprig_forward_head(sprig_ctx *c, const struct sprig_fwd *f)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    const int n = f->n, dim = hp->dim;
    if (f->n_out == 0 || (!f->logits && !f->hidden)) return;
    /* gather the wanted rows, final norm, output projection */
    for (int i = 0; i < f->n_out; i++) {
        int r = f->out_rows ? f->out_rows[i] : n - f->n_out + i;
        memcpy(c->hid + (size_t)i * dim, c->x + (size_t)r * dim, (size_t)dim * sizeof(float));
    }
    sprig_rmsnorm(c->hid, c->hid, m->out_norm, f->n_out, dim, hp->eps);
    if (f->hidden) memcpy(f->hidden, c->hid, (size_t)f->n_out * dim * sizeof(float));
    if (f->logits) {
        const int nl = f->n_logits > 0 && f->n_logits < f->n_out ? f->n_logits : f->n_out;
        output_head(c, c->hid + (size_t)(f->n_out - nl) * dim, nl, f->logits);
    }
}

/* One sequence's rows in a forward: rows [off, off + f->n) of the host's
 * scratch, its own cache (len slots before the forward), mask and
 * attention scratch. A plain forward is one segment whose context is the
 * host; a multi-sequence forward (sprig_forward_multi) has one per sequence
 * and shares everything row-wise (embeddings, norms, every matmul, RoPE,
 * the FFN, the head), so each weight is read once for all sequences. */
struct seg {
    sprig_ctx *c;
    const struct sprig_fwd *f;
    int off, len;
    const int32_t *pos;        /* [f->n] this sequence's positions */
    int band_w, band_first;    /* the window and first slot c->band was built for, in this forward */
};

/* Attention of one segment's rows on layer l: its cache, its mask (with the
 * window band on a sliding layer, model/band.h), its scratch. */
static void seg_attend(sprig_ctx *h, struct seg *g, const struct sprig_layer *L, int l)
{
    const sprig_model *m = h->m;
    const struct sprig_hparams *hp = &m->hp;
    sprig_ctx *c = g->c;
    const struct sprig_fwd *f = g->f;
    const int n = f->n, len = g->len, qdim = L->n_head * L->head_dim, kvdim = L->n_kv_head * L->head_dim;
    if (L->kv_layer == l)
        sprig_kv_write(c->kv, l, n, h->k + (size_t)g->off * kvdim, h->v + (size_t)g->off * kvdim);
    float *q = h->q + (size_t)g->off * qdim;
    sprig_attn_args aa = {
        .q = q, .n = n, .n_head = L->n_head, .n_kv_head = L->n_kv_head, .hd = L->head_dim,
        .n_keys = len + n, .mask = f->mask, .scale = hp->attn_scale, .softcap = hp->attn_softcap,
        .out = h->att + (size_t)g->off * qdim, .scratch = c->attn_scratch, .scratch_floats = c->attn_floats,
    };
    if (L->window) {   /* a sliding layer: the slots it holds, under its band (model/band.h) */
        const int first = sprig_kv_view_layer(c->kv, L->kv_layer).first;
        aa.n_keys = len - first + n;
        if (first > 0 || sprig_band_needed(L->window, first, len, g->pos, n)) {
            /* the test hook removes the band from caller-masked forwards only */
            const int w = f->mask && !atomic_load_explicit(&g_band_on, memory_order_relaxed) ? INT32_MAX / 2 : L->window;
            SPRIG_ASSERT((int64_t)aa.n_keys <= c->band_keys);
            if (w != g->band_w || first != g->band_first) {
                sprig_band_mask(c->band, f->mask, w, first, len, g->pos, n);
                g->band_w = w;
                g->band_first = first;
            }
            aa.mask = c->band;
        }
    }
    sprig_kv_attend(h->pool, c->kv, L->kv_layer, q, g->pos, &aa);
}

/* The layers over the n rows of the host's scratch (tokens[n] at pos[n]),
 * the segments' caches appended and committed; the final rows are in h->x. */
static void forward_layers(sprig_ctx *h, struct seg *sg, int n_seg, int n, const int32_t *tokens, const int32_t *pos,
                           bool want_logits)
{
    const sprig_model *m = h->m;
    const struct sprig_hparams *hp = &m->hp;
    const int dim = hp->dim;
    sprig_pool *pool = h->pool;

    /* cos/sin of the batch positions, once for the q and k of every layer
     * (and once more at the sliding layers' theta when theirs differs) */
    sprig_rope_table_scaled(h->rope, pos, n, hp->head_dim, hp->n_rot, hp->rope_theta, hp->rope_freq_scale, m->rope_freqs);
    if (h->rope_swa)   /* the sliding layers: their theta and head size, never the global layers' factors */
        sprig_rope_table_scaled(h->rope_swa, pos, n, hp->head_dim_swa, hp->n_rot_swa, hp->rope_theta_swa, hp->rope_freq_scale_swa,
                                NULL);

    /* x[n][dim] = token embeddings */
    for (int i = 0; i < n; i++) sprig_weight_row_f32(&m->tok_embd, tokens[i], h->x + (size_t)i * dim);
    if (m->arch->embed_scale) {   /* gemma: embeddings times sqrt(dim), rounded to f32 as llama.cpp's ggml_scale */
        const float s = sqrtf((float)dim);
        for (int64_t i = 0; i < (int64_t)n * dim; i++) h->x[i] *= s;
    }

    sprig_act act;
    if (hp->n_pl) per_layer_inputs(h, tokens, n);
    sprig_moe_begin(h->moe);
    for (int l = 0; l < hp->n_layer; l++) {
        const struct sprig_layer *L = &m->layers[l];
        const int hd = L->head_dim, qdim = L->n_head * hd, kvdim = L->n_kv_head * hd;
        const bool own_kv = L->kv_layer == l;

        if (l == 0) {   /* later layers: fused with the previous layer's residual add */
            struct rowwise t = { .op = RW_NORM, .n = n, .dim = dim, .x = h->x, .xn = h->xn, .w = L->attn_norm, .eps = hp->eps };
            rowwise(pool, &t);
        }
        sprig_act_init(&act, h->xn, n, dim, h->act, h->act_bytes);
        const sprig_weight *qkv[3] = { &L->wq, &L->wk, &L->wv };
        float *qkv_out[3] = { h->q, h->k, h->v };
        const sprig_weight *wo[1] = { &L->wo };
        /* q, k, v; q alone on a layer reading another's cache; q, k on one whose V is K's projection */
        sprig_matmul_then(pool, &act, !own_kv ? 1 : L->v_is_k ? 2 : 3, qkv, qkv_out, 1, wo);
        if (own_kv && L->v_is_k) memcpy(h->v, h->k, sizeof(float) * (size_t)n * (size_t)kvdim);

        struct rowwise rt = { .op = RW_ROPE, .n = n, .dim = qdim + kvdim, .q = h->q, .k = h->k, .v = h->v,
                              .cs = L->window && h->rope_swa ? h->rope_swa : h->rope,
                              .bq = L->bq, .bk = L->bk, .bv = L->bv, .qn = L->q_norm, .kn = L->k_norm, .eps = hp->eps,
                              .vn = m->arch->layer_shapes ? h->ones : NULL, .no_kv = !own_kv,
                              .n_head = L->n_head, .n_kv_head = L->n_kv_head, .hd = hd, .n_rot = L->n_rot,
                              .mode = hp->rope_mode };
        rowwise(pool, &rt);
        for (int s = 0; s < n_seg; s++) seg_attend(h, &sg[s], L, l);

        sprig_act_init(&act, h->att, n, qdim, h->act, h->act_bytes);
        float *wo_out[1] = { h->tmp };
        /* routed experts (model/moe.h): the router comes next; gemma4 runs its dense MLP beside them */
        const bool moe = L->exp_gate != NULL && !L->ffn_pre_norm2;
        const sprig_weight *gu[2] = { moe ? &L->router : &L->w_gate, &L->w_up };
        sprig_matmul_then(pool, &act, 1, wo, wo_out, moe ? 1 : 2, gu);
        if (L->bo)   /* tmp[n][dim] += bo[dim], before the residual add (llama's optional attn_output.bias) */
            for (int i = 0; i < n; i++) sprig_add_inplace(h->tmp + (size_t)i * dim, L->bo, dim);
        if (L->attn_post_norm) sprig_rmsnorm(h->tmp, h->tmp, L->attn_post_norm, n, dim, hp->eps);   /* gemma */
        struct rowwise an = { .op = RW_ADD_NORM, .n = n, .dim = dim, .x = h->x, .xn = h->xn, .add = h->tmp,
                              .w = L->ffn_norm, .eps = hp->eps };
        rowwise(pool, &an);
        if (moe) {   /* tmp[n][dim] = the experts the rows chose, each read once for the batch */
            sprig_moe_ffn(pool, hp, L, n, h->xn, NULL, m->arch->ffn_act == SPRIG_FFN_GELU, h->tmp, h->gate, h->up, h->act,
                          h->act_bytes, h->moe);
        } else {
            sprig_act_init(&act, h->xn, n, dim, h->act, h->act_bytes);
            float *gu_out[2] = { h->gate, h->up };
            const sprig_weight *wd[1] = { &L->w_down };
            sprig_matmul_then(pool, &act, 2, gu, gu_out, 1, wd);
            struct rowwise sw = { .op = m->arch->ffn_act == SPRIG_FFN_GELU ? RW_GEGLU : RW_SWIGLU, .n = n, .dim = L->n_ff,
                                  .gate = h->gate, .up = h->up };
            rowwise(pool, &sw);

            sprig_act_init(&act, h->gate, n, L->n_ff, h->act, h->act_bytes);
            float *wd_out[1] = { h->tmp };
            /* next: the next layer's q, k, v (or the output projection) */
            const sprig_weight *nq[3] = { NULL, NULL, NULL };
            int mq = 0;
            if (l + 1 < hp->n_layer) {
                const struct sprig_layer *N = &m->layers[l + 1];
                nq[0] = &N->wq; nq[1] = &N->wk; nq[2] = &N->wv; mq = 3;
            } else if (want_logits) {
                nq[0] = &m->output; mq = 1;
            }
            sprig_matmul_then(pool, &act, 1, wd, wd_out, mq, nq);
            if (L->ffn_pre_norm2)   /* gemma4: the experts beside the dense MLP, on the attention's residual x */
                sprig_moe_gemma4(pool, hp, L, n, h->x, h->tmp, h->gate, h->up, h->act, h->act_bytes, h->moe);
        }
        if (L->ffn_post_norm) sprig_rmsnorm(h->tmp, h->tmp, L->ffn_post_norm, n, dim, hp->eps);   /* gemma */
        if (L->pl_gate.raw || L->out_scale) {   /* gemma4: the residual add, then the per-layer input and scale */
            sprig_add_inplace(h->x, h->tmp, (int64_t)n * dim);
            if (L->pl_gate.raw) per_layer_block(h, L, l, n);
            if (L->out_scale)
                for (int64_t i = 0; i < (int64_t)n * dim; i++) h->x[i] *= L->out_scale[0];
            if (l + 1 < hp->n_layer) {
                struct rowwise t = { .op = RW_NORM, .n = n, .dim = dim, .x = h->x, .xn = h->xn, .w = m->layers[l + 1].attn_norm,
                                     .eps = hp->eps };
                rowwise(pool, &t);
            }
        } else if (l + 1 < hp->n_layer) {   /* the residual add and the next layer's attention norm */
            struct rowwise t = { .op = RW_ADD_NORM, .n = n, .dim = dim, .x = h->x, .xn = h->xn, .add = h->tmp,
                                 .w = m->layers[l + 1].attn_norm, .eps = hp->eps };
            rowwise(pool, &t);
        } else {
            sprig_add_inplace(h->x, h->tmp, (int64_t)n * dim);
        }
    }
    for (int s = 0; s < n_seg; s++) sprig_kv_commit(sg[s].c->kv, sg[s].f->n);
    sprig_moe_end(h->moe, n);
}

sprig_status sprig_llama_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err)
{
    const int n = f->n, len = sprig_kv_len(c->kv);
    const int32_t *pos = f->pos;
    if (!pos) {
        for (int i = 0; i < n; i++) c->pos[i] = len + i;
        pos = c->pos;
    }
    struct seg g = { .c = c, .f = f, .off = 0, .len = len, .pos = pos, .band_w = -1, .band_first = -1 };
    forward_layers(c, &g, 1, n, f->tokens, pos, f->n_out > 0 && f->logits);
    sprig_forward_head(c, f);
    (void)err;
    return SPRIG_OK;
}

sprig_status sprig_llama_forward_multi(sprig_ctx *h, int n_seq, sprig_ctx *const *ctx, const struct sprig_fwd *f,
                                       float *logits, sprig_error *err)
{
    const sprig_model *m = h->m;
    const int dim = m->hp.dim;
    const size_t V = (size_t)m->hp.n_vocab;
    struct seg sg[SPRIG_FORWARD_MAX_SEQS];
    int n = 0;
    bool want_logits = false;
    for (int s = 0; s < n_seq; s++) {   /* the rows side by side; each sequence's positions from its own cache */
        const int len = sprig_kv_len(ctx[s]->kv);
        sg[s] = (struct seg){ .c = ctx[s], .f = &f[s], .off = n, .len = len, .pos = h->pos + n, .band_w = -1, .band_first = -1 };
        for (int i = 0; i < f[s].n; i++) {
            h->tok[n + i] = f[s].tokens[i];
            h->pos[n + i] = f[s].pos ? f[s].pos[i] : len + i;
        }
        n += f[s].n;
        want_logits |= f[s].n_out > 0 && f[s].logits;
    }
    forward_layers(h, sg, n_seq, n, h->tok, h->pos, want_logits);

    /* the head: every sequence's wanted rows through the final norm and ONE output projection */
    int o = 0;
    for (int s = 0; s < n_seq; s++)
        for (int i = 0; i < f[s].n_out; i++, o++) {
            const int r = sg[s].off + (f[s].out_rows ? f[s].out_rows[i] : f[s].n - f[s].n_out + i);
            memcpy(h->hid + (size_t)o * dim, h->x + (size_t)r * dim, (size_t)dim * sizeof(float));
        }
    if (o == 0) return SPRIG_OK;
    sprig_rmsnorm(h->hid, h->hid, m->out_norm, o, dim, m->hp.eps);
    if (want_logits) output_head(h, h->hid, o, logits);
    o = 0;
    for (int s = 0; s < n_seq; o += f[s].n_out, s++) {
        if (f[s].hidden) memcpy(f[s].hidden, h->hid + (size_t)o * dim, (size_t)f[s].n_out * dim * sizeof(float));
        if (f[s].logits && f[s].n_out > 0) {
            const int nl = f[s].n_logits > 0 && f[s].n_logits < f[s].n_out ? f[s].n_logits : f[s].n_out;
            memcpy(f[s].logits, logits + (size_t)(o + f[s].n_out - nl) * V, (size_t)nl * V * sizeof(float));
        }
    }
    (void)err;
    return SPRIG_OK;
}
