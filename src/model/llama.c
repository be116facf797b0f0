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
static void per_layer_inputs(sprig_ctx *c, const struct sprig_fwd *f, const int32_t *pos)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    const int n = f->n, P = hp->n_pl, W = P * hp->n_layer;
    (void)pos;
    const sprig_weight *w[1] = { &m->pl_model_proj };
    float *o[1] = { c->pl };
    sprig_matmul_rows(c->pool, c->x, n, hp->dim, c->act, c->act_bytes, 1, w, o);
    const float ps = 1.0f / sqrtf((float)hp->dim), es = sqrtf((float)P), is = 1.0f / sqrtf(2.0f);
    for (int i = 0; i < n; i++) {
        float *r = c->pl + (size_t)i * W;
        for (int j = 0; j < W; j++) r[j] *= ps;
        sprig_rmsnorm(r, r, m->pl_proj_norm, hp->n_layer, P, hp->eps);
        sprig_weight_row_f32(&m->pl_tok_embd, f->tokens[i], c->pl_row);
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
        const sprig_weight *wout[1] = { &m->output };
        float *lo[1] = { f->logits };
        sprig_matmul_rows(c->pool, c->hid + (size_t)(f->n_out - nl) * dim, nl, dim, c->act, c->act_bytes, 1, wout, lo);
        if (hp->final_softcap > 0) {   /* gemma: c * tanh(x / c), as llama.cpp's scale, tanh, scale */
            const float c_ = hp->final_softcap, inv = 1.0f / c_;
            for (int64_t i = 0; i < (int64_t)nl * hp->n_vocab; i++) f->logits[i] = tanhf(f->logits[i] * inv) * c_;
        }
    }
}

sprig_status sprig_llama_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    const int n = f->n, dim = hp->dim;
    const int len = sprig_kv_len(c->kv);
    sprig_pool *pool = c->pool;

    const int32_t *pos = f->pos;
    if (!pos) {
        for (int i = 0; i < n; i++) c->pos[i] = len + i;
        pos = c->pos;
    }

    /* cos/sin of the batch positions, once for the q and k of every layer
     * (and once more at the sliding layers' theta when theirs differs) */
    sprig_rope_table_scaled(c->rope, pos, n, hp->head_dim, hp->n_rot, hp->rope_theta, hp->rope_freq_scale, m->rope_freqs);
    if (c->rope_swa)   /* the sliding layers: their theta and head size, never the global layers' factors */
        sprig_rope_table_scaled(c->rope_swa, pos, n, hp->head_dim_swa, hp->n_rot_swa, hp->rope_theta_swa, hp->rope_freq_scale_swa,
                                NULL);
    int band_w = -1, band_first = -1;   /* the window and first slot c->band was built for, in this forward */

    /* x[n][dim] = token embeddings */
    for (int i = 0; i < n; i++) sprig_weight_row_f32(&m->tok_embd, f->tokens[i], c->x + (size_t)i * dim);
    if (m->arch->embed_scale) {   /* gemma: embeddings times sqrt(dim), rounded to f32 as llama.cpp's ggml_scale */
        const float s = sqrtf((float)dim);
        for (int64_t i = 0; i < (int64_t)n * dim; i++) c->x[i] *= s;
    }

    sprig_act act;
    if (hp->n_pl) per_layer_inputs(c, f, pos);
    for (int l = 0; l < hp->n_layer; l++) {
        const struct sprig_layer *L = &m->layers[l];
        const int hd = L->head_dim, qdim = L->n_head * hd, kvdim = L->n_kv_head * hd;
        const bool own_kv = L->kv_layer == l;

        if (l == 0) {   /* later layers: fused with the previous layer's residual add */
            struct rowwise t = { .op = RW_NORM, .n = n, .dim = dim, .x = c->x, .xn = c->xn, .w = L->attn_norm, .eps = hp->eps };
            rowwise(pool, &t);
        }
        sprig_act_init(&act, c->xn, n, dim, c->act, c->act_bytes);
        const sprig_weight *qkv[3] = { &L->wq, &L->wk, &L->wv };
        float *qkv_out[3] = { c->q, c->k, c->v };
        const sprig_weight *wo[1] = { &L->wo };
        /* q, k, v; q alone on a layer reading another's cache; q, k on one whose V is K's projection */
        sprig_matmul_then(pool, &act, !own_kv ? 1 : L->v_is_k ? 2 : 3, qkv, qkv_out, 1, wo);
        if (own_kv && L->v_is_k) memcpy(c->v, c->k, sizeof(float) * (size_t)n * (size_t)kvdim);

        struct rowwise rt = { .op = RW_ROPE, .n = n, .dim = qdim + kvdim, .q = c->q, .k = c->k, .v = c->v,
                              .cs = L->window && c->rope_swa ? c->rope_swa : c->rope,
                              .bq = L->bq, .bk = L->bk, .bv = L->bv, .qn = L->q_norm, .kn = L->k_norm, .eps = hp->eps,
                              .vn = m->arch->layer_shapes ? c->ones : NULL, .no_kv = !own_kv,
                              .n_head = L->n_head, .n_kv_head = L->n_kv_head, .hd = hd, .n_rot = L->n_rot,
                              .mode = hp->rope_mode };
        rowwise(pool, &rt);
        if (own_kv) sprig_kv_write(c->kv, l, n, c->k, c->v);

        sprig_attn_args aa = {
            .q = c->q, .n = n, .n_head = L->n_head, .n_kv_head = L->n_kv_head, .hd = hd,
            .n_keys = len + n, .mask = f->mask, .scale = hp->attn_scale, .softcap = hp->attn_softcap,
            .out = c->att, .scratch = c->attn_scratch, .scratch_floats = c->attn_floats,
        };
        if (L->window) {   /* a sliding layer: the slots it holds, under its band (model/band.h) */
            const int first = sprig_kv_view_layer(c->kv, L->kv_layer).first;
            aa.n_keys = len - first + n;
            if (first > 0 || sprig_band_needed(L->window, first, len, pos, n)) {
                /* the test hook removes the band from caller-masked forwards only */
                const int w = f->mask && !atomic_load_explicit(&g_band_on, memory_order_relaxed) ? INT32_MAX / 2 : L->window;
                SPRIG_ASSERT((int64_t)aa.n_keys <= c->band_keys);
                if (w != band_w || first != band_first) {
                    sprig_band_mask(c->band, f->mask, w, first, len, pos, n);
                    band_w = w;
                    band_first = first;
                }
                aa.mask = c->band;
            }
        }
        sprig_kv_attend(pool, c->kv, L->kv_layer, c->q, pos, &aa);

        sprig_act_init(&act, c->att, n, qdim, c->act, c->act_bytes);
        float *wo_out[1] = { c->tmp };
        const sprig_weight *gu[2] = { &L->w_gate, &L->w_up };
        sprig_matmul_then(pool, &act, 1, wo, wo_out, 2, gu);
        if (L->bo)   /* tmp[n][dim] += bo[dim], before the residual add (llama's optional attn_output.bias) */
            for (int i = 0; i < n; i++) sprig_add_inplace(c->tmp + (size_t)i * dim, L->bo, dim);
        if (L->attn_post_norm) sprig_rmsnorm(c->tmp, c->tmp, L->attn_post_norm, n, dim, hp->eps);   /* gemma */
        struct rowwise an = { .op = RW_ADD_NORM, .n = n, .dim = dim, .x = c->x, .xn = c->xn, .add = c->tmp,
                              .w = L->ffn_norm, .eps = hp->eps };
        rowwise(pool, &an);
        sprig_act_init(&act, c->xn, n, dim, c->act, c->act_bytes);
        float *gu_out[2] = { c->gate, c->up };
        const sprig_weight *wd[1] = { &L->w_down };
        sprig_matmul_then(pool, &act, 2, gu, gu_out, 1, wd);
        struct rowwise sw = { .op = m->arch->ffn_act == SPRIG_FFN_GELU ? RW_GEGLU : RW_SWIGLU, .n = n, .dim = L->n_ff,
                              .gate = c->gate, .up = c->up };
        rowwise(pool, &sw);

        sprig_act_init(&act, c->gate, n, L->n_ff, c->act, c->act_bytes);
        float *wd_out[1] = { c->tmp };
        /* next: the next layer's q, k, v (or the output projection) */
        const sprig_weight *nq[3] = { NULL, NULL, NULL };
        int mq = 0;
        if (l + 1 < hp->n_layer) {
            const struct sprig_layer *N = &m->layers[l + 1];
            nq[0] = &N->wq; nq[1] = &N->wk; nq[2] = &N->wv; mq = 3;
        } else if (f->n_out > 0 && f->logits) {
            nq[0] = &m->output; mq = 1;
        }
        sprig_matmul_then(pool, &act, 1, wd, wd_out, mq, nq);
        if (L->ffn_post_norm) sprig_rmsnorm(c->tmp, c->tmp, L->ffn_post_norm, n, dim, hp->eps);   /* gemma */
        if (L->pl_gate.raw || L->out_scale) {   /* gemma4: the residual add, then the per-layer input and scale */
            sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);
            if (L->pl_gate.raw) per_layer_block(c, L, l, n);
            if (L->out_scale)
                for (int64_t i = 0; i < (int64_t)n * dim; i++) c->x[i] *= L->out_scale[0];
            if (l + 1 < hp->n_layer) {
                struct rowwise t = { .op = RW_NORM, .n = n, .dim = dim, .x = c->x, .xn = c->xn, .w = m->layers[l + 1].attn_norm,
                                     .eps = hp->eps };
                rowwise(pool, &t);
            }
        } else if (l + 1 < hp->n_layer) {   /* the residual add and the next layer's attention norm */
            struct rowwise t = { .op = RW_ADD_NORM, .n = n, .dim = dim, .x = c->x, .xn = c->xn, .add = c->tmp,
                                 .w = m->layers[l + 1].attn_norm, .eps = hp->eps };
            rowwise(pool, &t);
        } else {
            sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);
        }
    }
    sprig_kv_commit(c->kv, n);

    sprig_forward_head(c, f);
    (void)err;
    return SPRIG_OK;
}
