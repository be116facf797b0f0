/*
 * model/mtp — see mtp.h. Loading and validating an assistant head against
 * its target, and one draft step built from the same kernels as the target
 * forward (matmul, RMSNorm, RoPE, attention), so its numerics follow the
 * same rules.
 */
#include "model/mtp.h"
#include "model/arch.h"
#include "base/mem.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MTP_MAX_LAYERS 16

struct mtp_layer {
    float *attn_norm;          /* [dim] */
    sprig_weight wq;           /* dim -> n_head*hd */
    sprig_weight wo;           /* n_head*hd -> dim */
    float *ffn_norm;           /* [dim] */
    sprig_weight w_gate, w_up; /* dim -> ff */
    sprig_weight w_down;       /* ff -> dim */
};

struct sprig_mtp {
    const sprig_model *target;
    sprig_gguf *g;
    int dim, n_layer, n_head, n_kv_head, hd, ff, kv_layer;
    float eps, theta;
    sprig_weight pre;          /* 2*dim -> dim */
    struct mtp_layer L[MTP_MAX_LAYERS];
    float *final_norm;         /* [dim] */
    sprig_weight post;         /* dim -> dim */
};

struct sprig_mtp_state {   /* every buffer holds SPRIG_MTP_MAX_ROWS rows */
    int max_keys;
    float *x;      /* [rows][2*dim] */
    float *z;      /* [rows][dim] */
    float *a;      /* [rows][dim] normed */
    float *q;      /* [rows][n_head*hd] */
    float *att;    /* [rows][n_head*hd] */
    float *t;      /* [rows][dim] */
    float *g, *u;  /* [rows][ff] */
    float *hn;     /* [rows][dim] */
    void *act;
    size_t act_bytes;
    float *attn_scratch;
    size_t attn_floats;
};

/* ---------------------------------------------------------------- load */

enum { MD_DIM, MD_DIM2, MD_QDIM, MD_FF, MD_ONE };

struct mtp_tensor {
    const char *name;
    bool per_layer, norm;
    int ne0, ne1;
    size_t offset;     /* into sprig_mtp or struct mtp_layer */
};

#define GT(nm, nrm, a, b, f) { nm, false, nrm, a, b, offsetof(struct sprig_mtp, f) }
#define LT(nm, nrm, a, b, f) { nm, true, nrm, a, b, offsetof(struct mtp_layer, f) }
static const struct mtp_tensor mtp_tensors[] = {
    GT("mtp.pre_proj.weight",       false, MD_DIM2, MD_DIM, pre),
    LT("blk.%d.attn_norm.weight",   true,  MD_DIM,  MD_ONE, attn_norm),
    LT("blk.%d.attn_q.weight",      false, MD_DIM,  MD_QDIM, wq),
    LT("blk.%d.attn_output.weight", false, MD_QDIM, MD_DIM, wo),
    LT("blk.%d.ffn_norm.weight",    true,  MD_DIM,  MD_ONE, ffn_norm),
    LT("blk.%d.ffn_gate.weight",    false, MD_DIM,  MD_FF,  w_gate),
    LT("blk.%d.ffn_up.weight",      false, MD_DIM,  MD_FF,  w_up),
    LT("blk.%d.ffn_down.weight",    false, MD_FF,   MD_DIM, w_down),
    GT("mtp.final_norm.weight",     true,  MD_DIM,  MD_ONE, final_norm),
    GT("mtp.post_proj.weight",      false, MD_DIM,  MD_DIM, post),
};
#undef GT
#undef LT

static int64_t mdim(const struct sprig_mtp *h, int d)
{
    const int64_t v[] = { [MD_DIM] = h->dim, [MD_DIM2] = 2 * (int64_t)h->dim, [MD_QDIM] = (int64_t)h->n_head * h->hd,
                          [MD_FF] = h->ff, [MD_ONE] = 1 };
    return v[d];
}

void sprig_mtp_free(sprig_mtp *h)
{
    if (!h) return;
    sprig_weight_free(&h->pre);
    sprig_weight_free(&h->post);
    free(h->final_norm);
    for (int l = 0; l < MTP_MAX_LAYERS; l++) {
        struct mtp_layer *L = &h->L[l];
        free(L->attn_norm);
        free(L->ffn_norm);
        sprig_weight_free(&L->wq);
        sprig_weight_free(&L->wo);
        sprig_weight_free(&L->w_gate);
        sprig_weight_free(&L->w_up);
        sprig_weight_free(&L->w_down);
    }
    sprig_gguf_close(h->g);
    free(h);
}

static sprig_status get_int(const sprig_gguf *g, const char *key, int lo, int hi, int *out, sprig_error *err)
{
    int64_t v = 0;
    sprig_status st = sprig_gguf_get_i64(g, key, &v, true, err);
    if (st) return st;
    if (v < lo || v > hi)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [%d, %d]", sprig_gguf_path(g), key, (long long)v, lo, hi);
    *out = (int)v;
    return SPRIG_OK;
}

static sprig_status check_fit(const char *path, const char *what, long have, long want, sprig_error *err)
{
    if (have == want) return SPRIG_OK;
    return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: MTP head %s is %ld but the target's is %ld", path, what, have, want);
}

sprig_status sprig_mtp_load(const char *path, const sprig_model *target, sprig_mtp **out, sprig_error *err)
{
    *out = NULL;
    sprig_mtp *h = calloc(1, sizeof *h);
    if (!h) return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
    h->target = target;
    sprig_status st = SPRIG_OK;
    h->g = sprig_gguf_open(path, err);
    if (!h->g) { st = err ? err->code : SPRIG_E_FORMAT; goto fail; }
    const sprig_gguf *g = h->g;
    const char *kind;
    size_t kind_len;
    if ((st = sprig_gguf_get_str(g, "mtp.kind", &kind, &kind_len, true, err))) {
        sprig_err_prefix(err, "not an MTP head");
        goto fail;
    }
    if (kind_len != 9 || memcmp(kind, "assistant", 9)) {
        st = sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: mtp.kind '%.*s' is not supported (assistant)", path, (int)(kind_len > 32 ? 32 : kind_len), kind);
        goto fail;
    }
    const char *arch;
    size_t arch_len;
    if ((st = sprig_gguf_get_str(g, "general.architecture", &arch, &arch_len, true, err))) goto fail;
    char key[96], a[33];
    snprintf(a, sizeof a, "%.*s", (int)(arch_len > 32 ? 32 : arch_len), arch);
#define KEY(s) (snprintf(key, sizeof key, "%s." s, a), key)
    if ((st = get_int(g, KEY("embedding_length"), 1, 65536, &h->dim, err))) goto fail;
    if ((st = get_int(g, KEY("block_count"), 1, MTP_MAX_LAYERS, &h->n_layer, err))) goto fail;
    if ((st = get_int(g, KEY("attention.head_count"), 1, 1024, &h->n_head, err))) goto fail;
    if ((st = get_int(g, KEY("attention.head_count_kv"), 1, 1024, &h->n_kv_head, err))) goto fail;
    if ((st = get_int(g, KEY("feed_forward_length"), 1, 1 << 20, &h->ff, err))) goto fail;
    h->eps = 1e-5f;
    h->theta = 10000.0f;
    if ((st = sprig_gguf_get_f32(g, KEY("attention.layer_norm_rms_epsilon"), &h->eps, false, err))) goto fail;
    if ((st = sprig_gguf_get_f32(g, KEY("rope.freq_base"), &h->theta, false, err))) goto fail;
#undef KEY
    if ((st = get_int(g, "mtp.target_kv_layer", 0, SPRIG_MAX_LAYERS, &h->kv_layer, err))) goto fail;
    if (h->n_head % h->n_kv_head || h->dim % h->n_head) {
        st = sprig_err(err, SPRIG_E_FORMAT, "%s: head counts %d/%d do not divide embedding %d", path, h->n_head, h->n_kv_head, h->dim);
        goto fail;
    }
    h->hd = h->dim / h->n_head;
    if (!(h->eps > 0 && h->eps < 1) || !(h->theta > 1)) {
        st = sprig_err(err, SPRIG_E_FORMAT, "%s: bad layer_norm_rms_epsilon or rope.freq_base", path);
        goto fail;
    }
    /* Does it fit the target? */
    const struct sprig_hparams *tp = &target->hp;
    if ((st = check_fit(path, "embedding_length", h->dim, tp->dim, err))) goto fail;
    if ((st = check_fit(path, "head dimension", h->hd, tp->head_dim, err))) goto fail;
    if ((st = check_fit(path, "head_count_kv", h->n_kv_head, tp->n_kv_head, err))) goto fail;
    /* q rotates as the target rotated the keys it reads: the target's mode, dims, scaling and rope_freqs */
    if (h->theta != tp->rope_theta) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: MTP head rope.freq_base %g but the target's is %g", path, (double)h->theta,
                       (double)tp->rope_theta);
        goto fail;
    }
    if (h->hd > SPRIG_ATTN_MAX_HD) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: head dimension %d exceeds %d", path, h->hd, SPRIG_ATTN_MAX_HD);
        goto fail;
    }
    if (h->kv_layer >= tp->n_layer) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: mtp.target_kv_layer %d does not exist in a target of %d layers", path, h->kv_layer, tp->n_layer);
        goto fail;
    }
    sprig_tokenizer *tok = sprig_tokenizer_from_gguf(g, err);
    if (!tok) { st = err ? err->code : SPRIG_E_FORMAT; goto fail; }
    int nv = sprig_tokenizer_n_vocab(tok);
    sprig_tokenizer_free(tok);
    if ((st = check_fit(path, "vocabulary size", nv, tp->n_vocab, err))) goto fail;

    for (size_t i = 0; i < sizeof mtp_tensors / sizeof mtp_tensors[0]; i++) {
        const struct mtp_tensor *s = &mtp_tensors[i];
        for (int l = 0; l < (s->per_layer ? h->n_layer : 1); l++) {
            char name[96];
            if (s->per_layer) snprintf(name, sizeof name, s->name, l);
            else snprintf(name, sizeof name, "%s", s->name);
            const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, name);
            if (!t) { st = sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor '%s'", path, name); goto fail; }
            int64_t e0 = mdim(h, s->ne0), e1 = mdim(h, s->ne1);
            if (t->ne[0] != e0 || t->ne[1] != e1 || t->ne[2] != 1 || t->ne[3] != 1) {
                st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: tensor '%s' has shape [%lld, %lld], expected [%lld, %lld] for this target",
                               path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)e0, (long long)e1);
                goto fail;
            }
            const struct sprig_type_traits *tt = sprig_type_traits(t->type);
            if (!tt || !tt->can_compute) {
                st = sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which sprig cannot compute", path, name, sprig_type_name(t->type));
                goto fail;
            }
            char *base = s->per_layer ? (char *)&h->L[l] : (char *)h;
            if (s->norm) {
                float *v = malloc((size_t)e0 * sizeof(float));
                if (!v) { st = sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); goto fail; }
                tt->to_f32(t->data, v, e0);
                *(float **)(base + s->offset) = v;
            } else if ((st = sprig_weight_init((sprig_weight *)(base + s->offset), name, t->type, t->data, e0, e1, err))) {
                goto fail;
            }
        }
    }
    *out = h;
    return SPRIG_OK;
fail:
    sprig_mtp_free(h);
    return st;
}

int sprig_mtp_kv_layer(const sprig_mtp *h) { return h->kv_layer; }
const sprig_gguf *sprig_mtp_gguf(const sprig_mtp *h) { return h->g; }

/* ---------------------------------------------------------------- step */

void sprig_mtp_state_free(sprig_mtp_state *s)
{
    if (!s) return;
    float **b[] = { &s->x, &s->z, &s->a, &s->q, &s->att, &s->t, &s->g, &s->u, &s->hn, &s->attn_scratch };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) sprig_free_aligned(*b[i]);
    sprig_free_aligned(s->act);
    free(s);
}

sprig_mtp_state *sprig_mtp_state_create(const sprig_mtp *h, int max_keys, sprig_error *err)
{
    sprig_mtp_state *s = calloc(1, sizeof *s);
    if (!s) { sprig_err(err, SPRIG_E_NOMEM, "MTP state: out of memory"); return NULL; }
    s->max_keys = max_keys;
    int qd = h->n_head * h->hd;
    const size_t R = SPRIG_MTP_MAX_ROWS;
    struct { float **p; size_t n; } b[] = {
        { &s->x, R * 2 * (size_t)h->dim }, { &s->z, R * (size_t)h->dim }, { &s->a, R * (size_t)h->dim }, { &s->q, R * (size_t)qd },
        { &s->att, R * (size_t)qd }, { &s->t, R * (size_t)h->dim }, { &s->g, R * (size_t)h->ff }, { &s->u, R * (size_t)h->ff },
        { &s->hn, R * (size_t)h->dim },
        { &s->attn_scratch, s->attn_floats = sprig_attn_scratch_floats(1, h->n_head, max_keys, 256) },
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (!(*b[i].p = sprig_calloc_aligned(b[i].n, sizeof(float)))) goto oom;
    int64_t kmax = 2 * (int64_t)h->dim;
    if (h->ff > kmax) kmax = h->ff;
    if (qd > kmax) kmax = qd;
    s->act_bytes = sprig_act_scratch_bytes(SPRIG_MTP_MAX_ROWS, kmax);
    if (!(s->act = sprig_calloc_aligned(s->act_bytes, 1))) goto oom;
    return s;
oom:
    sprig_mtp_state_free(s);
    sprig_err(err, SPRIG_E_NOMEM, "MTP state: out of memory");
    return NULL;
}

/* y[n][out] = x[n][in] W^T */
static void mmn(sprig_pool *pool, sprig_mtp_state *s, const sprig_weight *w, const float *x, int n, float *y)
{
    sprig_matmul_rows(pool, x, n, w->n_in, s->act, s->act_bytes, 1, &w, &y);
}

sprig_status sprig_mtp_step(const sprig_mtp *h, sprig_mtp_state *s, sprig_pool *pool, const sprig_kv *kv,
                            const float *h_in, int32_t token, int p, float *h_out, float *logits, sprig_error *err)
{
    return sprig_mtp_step_rows(h, s, pool, kv, h_in, &token, 1, p, h_out, logits, err);
}

sprig_status sprig_mtp_step_rows(const sprig_mtp *h, sprig_mtp_state *s, sprig_pool *pool, const sprig_kv *kv,
                                 const float *h_in, const int32_t *tokens, int n, int p, float *h_out, float *logits,
                                 sprig_error *err)
{
    const sprig_model *t = h->target;
    if (n < 1 || n > SPRIG_MTP_MAX_ROWS)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP step: %d rows is outside [1, %d]", n, SPRIG_MTP_MAX_ROWS);
    for (int r = 0; r < n; r++)
        if (tokens[r] < 0 || tokens[r] >= t->hp.n_vocab)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP step: token %d outside the vocabulary", tokens[r]);
    if (p < 0 || p >= sprig_kv_len(kv) || p + 1 > s->max_keys)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP step: position %d outside the target cache of %d", p, sprig_kv_len(kv));
    const int dim = h->dim, qd = h->n_head * h->hd;
    for (int r = 0; r < n; r++) {   /* x[r] = [E[t_r] ; h_r] */
        sprig_weight_row_f32(&t->tok_embd, tokens[r], s->x + (size_t)r * 2 * dim);
        memcpy(s->x + (size_t)r * 2 * dim + dim, h_in + (size_t)r * dim, (size_t)dim * sizeof(float));
    }
    mmn(pool, s, &h->pre, s->x, n, s->z);
    int32_t pos = p;
    /* RoPE cos/sin at p, once for every layer and row (sprig_rope's bits) */
    float rope_cs[SPRIG_ATTN_MAX_HD];   /* hd <= SPRIG_ATTN_MAX_HD (load) */
    const struct sprig_hparams *tp = &t->hp;
    sprig_rope_table_scaled(rope_cs, &pos, 1, h->hd, tp->n_rot, tp->rope_theta, tp->rope_freq_scale, t->rope_freqs);
    for (int l = 0; l < h->n_layer; l++) {
        const struct mtp_layer *L = &h->L[l];
        sprig_rmsnorm(s->a, s->z, L->attn_norm, n, dim, h->eps);
        mmn(pool, s, &L->wq, s->a, n, s->q);
        for (int r = 0; r < n; r++) {   /* every row attends the same frozen keys 0..p */
            float *q = s->q + (size_t)r * qd;
            sprig_rope_apply(q, rope_cs, 1, h->n_head, h->hd, tp->n_rot, tp->rope_mode);
            sprig_attn_args aa = {
                .q = q, .n = 1, .n_head = h->n_head, .n_kv_head = h->n_kv_head, .hd = h->hd,
                .n_keys = p + 1, .mask = NULL,
                .scale = 1.0f / sqrtf((float)h->hd), .out = s->att + (size_t)r * qd, .scratch = s->attn_scratch,
                .scratch_floats = s->attn_floats,
            };
            sprig_kv_attend(pool, kv, h->kv_layer, q, &pos, &aa);
        }
        mmn(pool, s, &L->wo, s->att, n, s->t);
        sprig_add_inplace(s->z, s->t, (size_t)n * dim);
        sprig_rmsnorm(s->a, s->z, L->ffn_norm, n, dim, h->eps);
        sprig_act a;
        sprig_act_init(&a, s->a, n, dim, s->act, s->act_bytes);
        const sprig_weight *gu[2] = { &L->w_gate, &L->w_up };
        float *gu_out[2] = { s->g, s->u };
        sprig_matmul(pool, &a, 2, gu, gu_out);
        sprig_swiglu(s->g, s->g, s->u, (size_t)n * h->ff);
        mmn(pool, s, &L->w_down, s->g, n, s->t);
        sprig_add_inplace(s->z, s->t, (size_t)n * dim);
    }
    sprig_rmsnorm(s->a, s->z, h->final_norm, n, dim, h->eps);
    mmn(pool, s, &h->post, s->a, n, h_out);
    if (logits) {
        sprig_rmsnorm(s->hn, h_out, t->out_norm, n, dim, t->hp.eps);
        mmn(pool, s, &t->output, s->hn, n, logits);
    }
    return SPRIG_OK;
}
