/*
 * model/qwen35 — the Qwen 3.5 hybrid forward (llama.cpp's qwen35 graph):
 * gated delta-net layers (model/deltanet.h) interleaved with gated
 * attention layers, each followed by a SwiGLU FFN.
 *
 * Per layer, for the n tokens of the batch:
 *   xn = RMSNorm(x) * attn_norm
 *   recurrent layer:  qkv, z, alpha, beta = xn W_qkv, xn W_z, xn W_alpha, xn W_beta
 *                     o_t = deltanet step(qkv_t, alpha_t, beta_t) for t = 0..n-1 in order
 *                     o = RMSNorm(o per head) * ssm_norm * silu(z);  x += o W_ssm_out
 *   attention layer:  [q | gate] per head, k, v = xn W_q, xn W_k, xn W_v
 *                     q, k = RMSNorm per head * q_norm / k_norm; RoPE (NEOX on
 *                     the first n_rot dims: the file's interleaved multi-section
 *                     RoPE, whose t/h/w sections see the same position for text
 *                     and whose e section is not rotated)
 *                     a = attention over the cache; x += (a * sigmoid(gate)) W_o
 *   xn = RMSNorm(x) * post_attention_norm;  x += swiglu(xn W_gate, xn W_up) W_down
 * then the shared head (final norm, output rows). A token's recurrent step
 * is the same whether it runs alone or inside a batch, so a verify block
 * computes what decoding computes.
 *
 * Rollback (chains): with sprig_rec_keep on, a forward of a block steps
 * its first token out of place into a second buffer and its second token
 * into a third, keeping the block's delta-net inputs; sprig_ctx_trim of
 * the block's last k tokens makes the states before the block or after its
 * first token live when that is what is kept, else replays tokens 1 .. n-k-1
 * from the one-token states — the same function on the same inputs, so
 * the states are those plain decoding reaches, and no state is copied. A forward after any other trim, or with a
 * caller mask (a tree), is refused naming the recurrent layers.
 */
#include "model/deltanet.h"
#include "model/internal.h"
#include "model/moe.h"
#include "base/mem.h"
#include "base/timer.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sprig_rec_free(struct sprig_rec *r)
{
    if (!r) return;
    float **b[] = { &r->cbuf[0], &r->cbuf[1], &r->cbuf[2], &r->sbuf[0], &r->sbuf[1], &r->sbuf[2], &r->qkv, &r->z, &r->alpha,
                    &r->beta, &r->o, &r->in_qkv, &r->in_ab, &r->node_conv, &r->node_S };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) sprig_free_aligned(*b[i]);
    free(r->parent);   /* order, slot and main share its allocation */
    free(r);
}

sprig_status sprig_rec_create(sprig_ctx *c, sprig_error *err)
{
    const struct sprig_hparams *hp = &c->m->hp;
    struct sprig_rec *r = calloc(1, sizeof *r);
    if (!r) return sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for the recurrent states");
    const struct sprig_deltanet d = { hp->ssm_conv, hp->ssm_state, hp->ssm_k_heads, hp->ssm_v_heads, hp->eps };
    const size_t B = (size_t)c->n_batch, C = (size_t)sprig_deltanet_conv_dim(&d), V = (size_t)hp->ssm_v_heads * hp->ssm_state;
    r->conv_stride = (int64_t)(hp->ssm_conv - 1) * (int64_t)C;
    r->S_stride = (int64_t)hp->ssm_v_heads * hp->ssm_state * hp->ssm_state;
    const size_t L = (size_t)hp->n_layer;
    struct { float **p; size_t n; } b[] = {
        { &r->cbuf[0], L * (size_t)r->conv_stride + 1 }, { &r->sbuf[0], L * (size_t)r->S_stride }, { &r->qkv, B * C }, { &r->z, B * V },
        { &r->alpha, B * (size_t)hp->ssm_v_heads }, { &r->beta, B * (size_t)hp->ssm_v_heads }, { &r->o, B * V },
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (!(*b[i].p = sprig_calloc_aligned(b[i].n, sizeof(float)))) {
            sprig_rec_free(r);
            return sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for the recurrent states (%d layers)", hp->n_recurrent);
        }
    r->conv = r->cbuf[0];
    r->S = r->sbuf[0];
    c->rec = r;
    return SPRIG_OK;
}

static void set_live(struct sprig_rec *r, int i)
{
    r->live = i;
    r->conv = r->cbuf[i];
    r->S = r->sbuf[i];
}

/* value heads of one token's state update, split over the pool's threads */
struct heads_task {
    const struct sprig_deltanet *d;
    const struct sprig_layer *L;
    const float *S_in;
    float *S, *o;
    const float *qkv, *alpha, *beta;
};

static void heads_task_run(void *ctx, int ith, int nth)
{
    const struct heads_task *t = ctx;
    long h0, h1;
    sprig_split(t->d->v_heads, ith, nth, &h0, &h1);
    if (h1 > h0)
        sprig_deltanet_heads(t->d, (int)h0, (int)h1, t->L->dt_bias, t->L->ssm_a, t->S_in, t->S, t->qkv, t->alpha, t->beta, t->o);
}

sprig_status sprig_rec_keep(sprig_ctx *c, int rows, sprig_error *err)
{
    struct sprig_rec *r = c->rec;
    const struct sprig_hparams *hp = &c->m->hp;
    if (!r || rows <= r->keep_rows) return SPRIG_OK;
    const struct sprig_deltanet d = { hp->ssm_conv, hp->ssm_state, hp->ssm_k_heads, hp->ssm_v_heads, hp->eps };
    const size_t L = (size_t)hp->n_layer, C = (size_t)sprig_deltanet_conv_dim(&d);
    for (int i = 1; i < 3; i++) {
        if (!r->cbuf[i]) r->cbuf[i] = sprig_calloc_aligned(L * (size_t)r->conv_stride + 1, sizeof(float));
        if (!r->sbuf[i]) r->sbuf[i] = sprig_calloc_aligned(L * (size_t)r->S_stride, sizeof(float));
    }
    float *iq = sprig_calloc_aligned(L * (size_t)rows * C, sizeof(float));
    float *ia = sprig_calloc_aligned(L * (size_t)rows * 2 * (size_t)hp->ssm_v_heads, sizeof(float));
    float *nc = sprig_calloc_aligned((size_t)rows * (size_t)r->conv_stride + 1, sizeof(float));
    float *ns = sprig_calloc_aligned((size_t)rows * (size_t)r->S_stride, sizeof(float));
    int32_t *par = calloc(4 * (size_t)rows, sizeof(int32_t));   /* parent, order, slot, main */
    if (!r->cbuf[1] || !r->cbuf[2] || !r->sbuf[1] || !r->sbuf[2] || !iq || !ia || !nc || !ns || !par) {
        sprig_free_aligned(iq);
        sprig_free_aligned(ia);
        sprig_free_aligned(nc);
        sprig_free_aligned(ns);
        free(par);
        return sprig_err(err, SPRIG_E_NOMEM, "context: out of memory for the recurrent rollback (%d rows)", rows);
    }
    sprig_free_aligned(r->in_qkv);
    sprig_free_aligned(r->in_ab);
    sprig_free_aligned(r->node_conv);
    sprig_free_aligned(r->node_S);
    free(r->parent);
    r->in_qkv = iq;
    r->in_ab = ia;
    r->node_conv = nc;
    r->node_S = ns;
    r->parent = par;
    r->order = par + rows;
    r->slot = par + 2 * (size_t)rows;
    r->main = par + 3 * (size_t)rows;
    r->keep_rows = rows;
    r->last_n = 0;
    return SPRIG_OK;
}

#define ROW(i) (rows ? rows[i] : (i))   /* NULL rows: 0, 1, ... (a chain) */
sprig_status sprig_rec_keep_rows(sprig_ctx *c, const int *rows, int keep, sprig_error *err)
{
    struct sprig_rec *r = c->rec;
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    if (!r) return SPRIG_OK;
    const int k = r->last_n - keep;   /* rows dropped */
    if (k == 0 && !r->tree) return SPRIG_OK;
    if (keep < 0 || k < 0 || (!r->last_n && keep))
        return sprig_err(err, SPRIG_E_REFUSED, "%s: the recurrent layers can drop only tokens of the last forward (%d), not %d",
                         m->arch->name, r->last_n, r->last_n ? k : -keep);
    for (int i = 0; i < keep; i++) {   /* a path from the root, each row stepped from the one before */
        const int ri = ROW(i);
        if (ri < 0 || ri >= r->last_n || (i == 0 ? ri != 0 : r->parent[ri] != ROW(i - 1)))
            return sprig_err(err, SPRIG_E_REFUSED, "%s: the recurrent layers cannot keep row %d after row %d: it was not stepped "
                             "from that row's state", m->arch->name, ri, i ? ROW(i - 1) : -1);
    }
    const double t0 = sprig_time_ms();
    const struct sprig_deltanet d = { hp->ssm_conv, hp->ssm_state, hp->ssm_k_heads, hp->ssm_v_heads, hp->eps };
    const int C = sprig_deltanet_conv_dim(&d), H = hp->ssm_v_heads;
    bool whole_main = keep == r->n_main;   /* a tree's main chain, all of it: its state is the third buffer's */
    for (int i = 0; whole_main && i < keep; i++) whole_main = ROW(i) == r->main[i];
    if (keep <= 1) {   /* the states before the block, or after its first token, are kept whole */
        set_live(r, keep ? r->s1 : r->pre);
    } else if (whole_main) {
        set_live(r, 3 - r->pre - r->s1);
    } else {   /* replay rows 1 .. keep-1 from the one-token states into the third buffer */
        const int to = 3 - r->pre - r->s1;
        for (int l = 0; l < hp->n_layer; l++) {
            const struct sprig_layer *L = &m->layers[l];
            if (!L->recurrent) continue;
            const float *conv1 = r->cbuf[r->s1] + (size_t)l * r->conv_stride, *S1 = r->sbuf[r->s1] + (size_t)l * r->S_stride;
            float *conv = r->cbuf[to] + (size_t)l * r->conv_stride, *S = r->sbuf[to] + (size_t)l * r->S_stride;
            for (int i = 1; i < keep; i++) {   /* the same steps the forward ran, on the same inputs: the same bits */
                float *qkv = r->qkv;   /* scratch: the step clobbers its input */
                memcpy(qkv, r->in_qkv + ((size_t)l * r->keep_rows + ROW(i)) * C, sizeof(float) * (size_t)C);
                const float *ab = r->in_ab + ((size_t)l * r->keep_rows + ROW(i)) * 2 * H;
                sprig_deltanet_conv(&d, L->conv_w, i > 1 ? conv : conv1, conv, qkv);
                struct heads_task t = { &d, L, i > 1 ? S : S1, S, r->o, qkv, ab, ab + H };
                const int nth = (int64_t)H * hp->ssm_state * hp->ssm_state >= 16384 ? sprig_pool_size(c->pool) : 1;
                sprig_pool_run(c->pool, heads_task_run, &t, nth < H ? nth : H);
            }
        }
        set_live(r, to);
    }
    r->len -= k;
    bool in_order = true;   /* rows 0..keep-1: the kept prefix can still be dropped (pre and s1 are untouched) */
    for (int i = 0; i < keep; i++) in_order &= ROW(i) == i;
    r->last_n = in_order ? keep : 0;
    r->tree = false;
    r->rollback_ms += sprig_time_ms() - t0;
    return SPRIG_OK;
}
#undef ROW

static void mm(sprig_ctx *c, const float *x, int n, int k, int n_w, const sprig_weight *const *w, float **y)
{
    sprig_matmul_rows(c->pool, x, n, k, c->act, c->act_bytes, n_w, w, y);
}

/* The stepping plan of a block that may be rolled back (struct sprig_rec):
 * parents (NULL: a chain), the main chain, each row's slot and the order */
static void plan_steps(struct sprig_rec *r, int n, const int32_t *parents)
{
    for (int i = 0; i < n; i++) {
        r->parent[i] = i == 0 ? -1 : parents ? parents[i] : i - 1;
        r->slot[i] = i;   /* a side node's own scratch slot, unless on the main chain */
    }
    r->n_main = 0;
    for (int v = 0; v >= 0;) {   /* the root, then each main node's first child */
        r->slot[v] = r->n_main ? -2 : -1;
        r->main[r->n_main++] = v;
        int next = -1;
        for (int i = v + 1; i < n && next < 0; i++)
            if (r->parent[i] == v) next = i;
        v = next;
    }
    int k = 0;
    for (int t = 0; t < r->n_main; t++) {   /* each main node, then the side nodes hanging below it, in row order */
        const int v = r->main[t];
        r->order[k++] = v;
        for (int i = 0; i < n; i++) {
            if (r->slot[i] < 0) continue;
            int u = r->parent[i];
            while (r->slot[u] >= 0) u = r->parent[u];   /* the main node it hangs below */
            if (u == v) r->order[k++] = i;
        }
    }
}

/* x += the gated delta-net layer of the batch (rows in order through the states) */
static void recurrent_layer(sprig_ctx *c, const struct sprig_layer *L, int l, int n)
{
    const struct sprig_hparams *hp = &c->m->hp;
    struct sprig_rec *r = c->rec;
    const struct sprig_deltanet d = { hp->ssm_conv, hp->ssm_state, hp->ssm_k_heads, hp->ssm_v_heads, hp->eps };
    const int C = sprig_deltanet_conv_dim(&d), H = hp->ssm_v_heads, N = hp->ssm_state, V = H * N, dim = hp->dim;
    const sprig_weight *w[4] = { &L->w_qkv, &L->w_z, &L->w_alpha, &L->w_beta };
    float *y[4] = { r->qkv, r->z, r->alpha, r->beta };
    mm(c, c->xn, n, dim, 4, w, y);
    /* a block that may be rolled back: token 0 from the live buffer into buffer a, token 1 from a
     * into b, the rest in place in b (sprig_qwen35_forward then makes b, or a, live); else all
     * in place in the live buffer */
    const size_t co = (size_t)l * r->conv_stride, so = (size_t)l * r->S_stride;
    const int a = r->last_n ? (r->live + 1) % 3 : r->live, b = r->last_n ? (r->live + 2) % 3 : r->live;
    if (r->last_n) {   /* rollback kept: the inputs of this block, before the steps clobber them */
        for (int i = 0; i < n; i++) {
            memcpy(r->in_qkv + ((size_t)l * r->keep_rows + i) * C, r->qkv + (size_t)i * C, sizeof(float) * (size_t)C);
            float *ab = r->in_ab + ((size_t)l * r->keep_rows + i) * 2 * H;
            memcpy(ab, r->alpha + (size_t)i * H, sizeof(float) * (size_t)H);
            memcpy(ab + H, r->beta + (size_t)i * H, sizeof(float) * (size_t)H);
        }
    }
    for (int j = 0; j < n; j++) {
        const int i = r->last_n ? r->order[j] : j;
        float *o = r->o + (size_t)i * V;
        float *qkv = r->qkv + (size_t)i * C;
        /* where row i's state comes from and goes (see struct sprig_rec): -3 the live buffer,
         * -1 buffer a, -2 buffer b, else a scratch slot */
        const int from = !r->last_n || i == 0 ? -3 : r->slot[r->parent[i]], to = r->last_n ? r->slot[i] : -3;
        const int bf = from == -3 ? r->live : from == -1 ? a : b, bt = to == -3 ? r->live : to == -1 ? a : b;
        const float *cin = from >= 0 ? r->node_conv + (size_t)from * r->conv_stride : r->cbuf[bf] + co;
        const float *Sin = from >= 0 ? r->node_S + (size_t)from * r->S_stride : r->sbuf[bf] + so;
        float *cout = to >= 0 ? r->node_conv + (size_t)to * r->conv_stride : r->cbuf[bt] + co;
        float *Sout = to >= 0 ? r->node_S + (size_t)to * r->S_stride : r->sbuf[bt] + so;
        sprig_deltanet_conv(&d, L->conv_w, cin, cout, qkv);
        struct heads_task t = { &d, L, Sin, Sout, o, qkv, r->alpha + (size_t)i * H, r->beta + (size_t)i * H };
        const int nth = (int64_t)H * N * N >= 16384 ? sprig_pool_size(c->pool) : 1;   /* a head's state is N x N */
        sprig_pool_run(c->pool, heads_task_run, &t, nth < H ? nth : H);
        /* gated norm: RMSNorm per head * ssm_norm * silu(z) */
        sprig_rmsnorm(o, o, L->ssm_norm, H, N, hp->eps);
        const float *z = r->z + (size_t)i * V;
        for (int e = 0; e < V; e++) o[e] *= z[e] / (1.0f + expf(-z[e]));
    }
    const sprig_weight *wo[1] = { &L->w_ssm_out };
    float *to[1] = { c->tmp };
    mm(c, r->o, n, V, 1, wo, to);
}

/* x += the gated attention layer of the batch */
static void attention_layer(sprig_ctx *c, const struct sprig_layer *L, int l, int n, int len, const int32_t *pos, const float *mask)
{
    const struct sprig_hparams *hp = &c->m->hp;
    const int hd = L->head_dim, nh = L->n_head, qdim = nh * hd, dim = hp->dim;
    const sprig_weight *w[3] = { &L->wq, &L->wk, &L->wv };
    float *y[3] = { c->qg, c->k, c->v };
    mm(c, c->xn, n, dim, 3, w, y);
    for (int i = 0; i < n; i++)   /* [q | gate] per head -> q, gate */
        for (int h = 0; h < nh; h++) {
            const float *src = c->qg + (size_t)i * 2 * qdim + (size_t)h * 2 * hd;
            memcpy(c->q + (size_t)i * qdim + (size_t)h * hd, src, sizeof(float) * (size_t)hd);
            memcpy(c->qgate + (size_t)i * qdim + (size_t)h * hd, src + hd, sizeof(float) * (size_t)hd);
        }
    sprig_rmsnorm(c->q, c->q, L->q_norm, n * nh, hd, hp->eps);
    sprig_rmsnorm(c->k, c->k, L->k_norm, n * L->n_kv_head, hd, hp->eps);
    sprig_rope_apply(c->q, c->rope, n, nh, hd, L->n_rot, SPRIG_ROPE_NEOX);
    sprig_rope_apply(c->k, c->rope, n, L->n_kv_head, hd, L->n_rot, SPRIG_ROPE_NEOX);
    sprig_kv_write(c->kv, l, n, c->k, c->v);
    sprig_attn_args aa = {
        .q = c->q, .n = n, .n_head = nh, .n_kv_head = L->n_kv_head, .hd = hd, .n_keys = len + n, .mask = mask,
        .scale = 1.0f / sqrtf((float)hd), .out = c->att, .scratch = c->attn_scratch, .scratch_floats = c->attn_floats,
    };
    sprig_kv_attend(c->pool, c->kv, l, c->q, pos, &aa);
    for (int64_t i = 0; i < (int64_t)n * qdim; i++) c->att[i] *= 1.0f / (1.0f + expf(-c->qgate[i]));
    const sprig_weight *wo[1] = { &L->wo };
    float *to[1] = { c->tmp };
    mm(c, c->att, n, qdim, 1, wo, to);
}

void sprig_qwen35_rope(sprig_ctx *c, const int32_t *pos, int n)
{
    const struct sprig_hparams *hp = &c->m->hp;
    sprig_rope_table_scaled(c->rope, pos, n, hp->head_dim, hp->n_rot, hp->rope_theta, hp->rope_freq_scale, NULL);
    {   /* interleaved multi-section RoPE: pair i takes sector i % sum(sections); sectors 3k+s (s = 0, 1, 2:
         * t, h, w) below 3 * sections[s] rotate by the token's position (text: the same for all three),
         * the others (the e section) by position 0, i.e. not at all (ggml's imrope) */
        const int *sec = hp->rope_sections, total = sec[0] + sec[1] + sec[2] + sec[3], half = hp->n_rot / 2;
        for (int p = 0; p < half; p++) {
            const int sector = p % total, k = sector % 3;
            if (sector < 3 * sec[k]) continue;
            for (int i = 0; i < n; i++) {
                c->rope[((size_t)i * half + p) * 2] = 1.0f;
                c->rope[((size_t)i * half + p) * 2 + 1] = 0.0f;
            }
        }
    }
}

void sprig_qwen35_block(sprig_ctx *c, const struct sprig_layer *L, int l, int n, int len, const int32_t *pos, const float *mask)
{
    const struct sprig_hparams *hp = &c->m->hp;
    const int dim = hp->dim;
    sprig_rmsnorm(c->xn, c->x, L->attn_norm, n, dim, hp->eps);
    if (L->recurrent) recurrent_layer(c, L, l, n);
    else attention_layer(c, L, l, n, len, pos, mask);
    sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);
    sprig_rmsnorm(c->xn, c->x, L->ffn_norm, n, dim, hp->eps);
    if (L->exp_down) {   /* qwen35moe: routed experts and the gated shared expert (model/moe.h) */
        sprig_moe_ffn(c->pool, hp, L, n, c->xn, NULL, false, c->tmp, c->gate, c->up, c->act, c->act_bytes, c->moe);
    } else {
        const sprig_weight *gu[2] = { &L->w_gate, &L->w_up };
        float *gu_out[2] = { c->gate, c->up };
        mm(c, c->xn, n, dim, 2, gu, gu_out);
        sprig_swiglu(c->gate, c->gate, c->up, (int64_t)n * L->n_ff);
        const sprig_weight *wd[1] = { &L->w_down };
        float *to[1] = { c->tmp };
        mm(c, c->gate, n, L->n_ff, 1, wd, to);
    }
    sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);
}

sprig_status sprig_qwen35_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    struct sprig_rec *r = c->rec;
    const int n = f->n, dim = hp->dim, len = sprig_kv_len(c->kv);
    if (len == 0) {   /* a new sequence: empty states */
        memset(r->conv, 0, sizeof(float) * (size_t)hp->n_layer * (size_t)r->conv_stride);
        memset(r->S, 0, sizeof(float) * (size_t)hp->n_layer * (size_t)r->S_stride);
        r->len = 0;
    }
    int first_rec = 0;
    while (first_rec < hp->n_layer && !m->layers[first_rec].recurrent) first_rec++;
    if (r->len != len)
        return sprig_err(err, SPRIG_E_REFUSED, "%s: the recurrent layers (first: layer %d) hold %d tokens but the cache %d: they "
                         "cannot roll back yet", m->arch->name, first_rec, r->len, len);
    if (f->mask && !f->parents)
        return sprig_err(err, SPRIG_E_REFUSED, "%s: the recurrent layers (first: layer %d) take tokens in sequence; a masked batch "
                         "needs its tree (parents) to step each node from its parent's state", m->arch->name, first_rec);
    if (f->parents && (!r->keep_rows || n > r->keep_rows))
        return sprig_err(err, SPRIG_E_REFUSED, "%s: a tree of %d nodes needs the recurrent layers' rollback for that many rows "
                         "(on: %d; sprig_ctx_speculative)", m->arch->name, n, r->keep_rows);
    for (int i = 0; f->parents && i < n; i++)
        if (i ? f->parents[i] < 0 || f->parents[i] >= i : f->parents[0] != 0)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "forward: parents[%d] = %d (the root's is 0, every other node's an earlier row)",
                             i, f->parents[i]);
    /* the recurrent layers take the rows in batch order; positions only rotate the attention layers'
     * q and k (a caller may give its own, as for any model) */
    for (int i = 0; i < n; i++) c->pos[i] = f->pos ? f->pos[i] : len + i;
    const int32_t *pos = c->pos;
    r->last_n = r->keep_rows && n <= r->keep_rows ? n : 0;   /* a block that may be rolled back (see recurrent_layer) */
    r->tree = f->parents != NULL;
    if (r->last_n) plan_steps(r, n, f->parents);
    sprig_qwen35_rope(c, pos, n);
    for (int i = 0; i < n; i++) sprig_weight_row_f32(&m->tok_embd, f->tokens[i], c->x + (size_t)i * dim);
    sprig_moe_begin(c->moe);
    for (int l = 0; l < hp->n_layer; l++) sprig_qwen35_block(c, &m->layers[l], l, n, len, pos, f->mask);
    sprig_moe_end(c->moe, n);
    sprig_kv_commit(c->kv, n);
    if (r->last_n) {   /* the block's states are live (a chain's); before it and after its first token wait */
        r->pre = r->live;
        r->s1 = (r->live + 1) % 3;
        if (!r->tree) set_live(r, n > 1 ? (r->live + 2) % 3 : r->s1);   /* a tree's wait for the path (sprig_ctx_keep_path) */
    }
    r->len = len + n;
    sprig_forward_head(c, f);
    return SPRIG_OK;
}
