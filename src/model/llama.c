/*
 * model/llama — the llama forward pass, batched.
 *
 * Per layer, for the n tokens of the batch at once:
 *   xn = RMSNorm(x) * attn_norm
 *   q, k, v = xn Wq^T, xn Wk^T, xn Wv^T          (one fused matmul dispatch)
 *   RoPE(q, k) at the given positions (NORM pairing for llama GGUF files)
 *   append k, v to the cache; attention of q over the cache (causal or mask)
 *   x += att Wo^T
 *   xn = RMSNorm(x) * ffn_norm
 *   x += (silu(xn Wgate^T) * (xn Wup^T)) Wdown^T  (gate/up fused)
 * then the final norm and the output projection for the wanted rows only.
 * Every kernel keeps a row's numerics independent of the batch around it,
 * so a token verified inside a tree gets the same bits as decoded alone.
 */
#include "model/internal.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

#include <math.h>
#include <string.h>

sprig_status sprig_llama_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    const int n = f->n, dim = hp->dim, hd = hp->head_dim;
    const int qdim = hp->n_head * hd, kvdim = hp->n_kv_head * hd;
    const int len = sprig_kv_len(c->kv);
    sprig_pool *pool = c->pool;

    const int32_t *pos = f->pos;
    if (!pos) {
        for (int i = 0; i < n; i++) c->pos[i] = len + i;
        pos = c->pos;
    }

    /* cos/sin of the batch positions, once for the q and k of every layer */
    sprig_rope_table(c->rope, pos, n, hd, hp->n_rot, hp->rope_theta);

    /* x[n][dim] = token embeddings */
    for (int i = 0; i < n; i++) sprig_weight_row_f32(&m->tok_embd, f->tokens[i], c->x + (size_t)i * dim);

    sprig_act act;
    for (int l = 0; l < hp->n_layer; l++) {
        const struct sprig_layer *L = &m->layers[l];

        sprig_rmsnorm(c->xn, c->x, L->attn_norm, n, dim, hp->eps);
        sprig_act_init(&act, c->xn, n, dim, c->act, c->act_bytes);
        const sprig_weight *qkv[3] = { &L->wq, &L->wk, &L->wv };
        float *qkv_out[3] = { c->q, c->k, c->v };
        sprig_matmul(pool, &act, 3, qkv, qkv_out);

        sprig_rope_apply(c->q, c->rope, n, hp->n_head, hd, hp->n_rot, hp->rope_mode);
        sprig_rope_apply(c->k, c->rope, n, hp->n_kv_head, hd, hp->n_rot, hp->rope_mode);
        sprig_kv_write(c->kv, l, n, c->k, c->v);

        sprig_kv_view kv = sprig_kv_view_layer(c->kv, l);
        sprig_attn_args aa = {
            .q = c->q, .n = n, .n_head = hp->n_head, .n_kv_head = hp->n_kv_head, .hd = hd,
            .k = kv.k, .v = kv.v, .kv_type = kv.type, .kv_stride = kv.stride,
            .n_keys = len + n, .mask = f->mask, .scale = 1.0f / sqrtf((float)hd),
            .out = c->att, .scratch = c->attn_scratch, .scratch_floats = c->attn_floats,
        };
        sprig_attention(pool, &aa);

        sprig_act_init(&act, c->att, n, qdim, c->act, c->act_bytes);
        const sprig_weight *wo[1] = { &L->wo };
        float *wo_out[1] = { c->tmp };
        sprig_matmul(pool, &act, 1, wo, wo_out);
        sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);

        sprig_rmsnorm(c->xn, c->x, L->ffn_norm, n, dim, hp->eps);
        sprig_act_init(&act, c->xn, n, dim, c->act, c->act_bytes);
        const sprig_weight *gu[2] = { &L->w_gate, &L->w_up };
        float *gu_out[2] = { c->gate, c->up };
        sprig_matmul(pool, &act, 2, gu, gu_out);
        sprig_swiglu(c->gate, c->gate, c->up, (int64_t)n * hp->n_ff);

        sprig_act_init(&act, c->gate, n, hp->n_ff, c->act, c->act_bytes);
        const sprig_weight *wd[1] = { &L->w_down };
        float *wd_out[1] = { c->tmp };
        sprig_matmul(pool, &act, 1, wd, wd_out);
        sprig_add_inplace(c->x, c->tmp, (int64_t)n * dim);
    }
    (void)kvdim;
    sprig_kv_commit(c->kv, n);

    if (f->n_out == 0 || (!f->logits && !f->hidden)) return SPRIG_OK;
    /* gather the wanted rows, final norm, output projection */
    for (int i = 0; i < f->n_out; i++) {
        int r = f->out_rows ? f->out_rows[i] : n - f->n_out + i;
        memcpy(c->hid + (size_t)i * dim, c->x + (size_t)r * dim, (size_t)dim * sizeof(float));
    }
    sprig_rmsnorm(c->hid, c->hid, m->out_norm, f->n_out, dim, hp->eps);
    if (f->hidden) memcpy(f->hidden, c->hid, (size_t)f->n_out * dim * sizeof(float));
    if (f->logits) {
        sprig_act_init(&act, c->hid, f->n_out, dim, c->act, c->act_bytes);
        const sprig_weight *wout[1] = { &m->output };
        float *lo[1] = { f->logits };
        sprig_matmul(pool, &act, 1, wout, lo);
    }
    (void)err;
    return SPRIG_OK;
}
