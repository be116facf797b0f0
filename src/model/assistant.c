/*
 * model/assistant — see assistant.h. Keys, tensor names and shapes are
 * llama.cpp's gemma4-assistant (GGUF ne = [in, out]); a tensor the table
 * does not name is refused, as llama.cpp refuses it, except the two optional
 * masked-embedding tensors llama.cpp loads (one element each) and never uses
 * (accepted and ignored the same way). Where llama.cpp would silently read
 * the target's cache through a different shape (an assistant head_count_kv
 * other than the target layer's) sprig refuses instead. One step is built from the target forward's
 * kernels, so its numerics follow the same rules.
 */
#include "model/assistant.h"
#include "model/arch.h"
#include "base/mem.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_MAX_LAYERS 16
#define AS_ARCH "gemma4-assistant"

struct as_layer {
    int window, n_head, hd, n_rot, ff;   /* window > 0: a sliding layer */
    int kv_layer;              /* the target layer whose cache it reads */
    float *attn_norm;          /* [dim] */
    sprig_weight wq;           /* dim -> n_head*hd */
    float *q_norm;             /* [hd] */
    sprig_weight wo;           /* n_head*hd -> dim */
    float *attn_post_norm;     /* [dim] */
    float *ffn_norm;           /* [dim] */
    sprig_weight w_gate, w_up; /* dim -> ff */
    sprig_weight w_down;       /* ff -> dim */
    float *ffn_post_norm;      /* [dim] */
    float *out_scale;          /* [1] */
};

struct sprig_assistant {
    const sprig_model *target;
    sprig_gguf *g;
    int dim, dim_out, n_layer, n_vocab, max_qdim, max_ff, max_rot;
    float eps, theta, theta_swa;
    sprig_weight tok_embd;     /* [n_vocab][dim]: the output head (tied) */
    float *out_norm;           /* [dim] */
    float *rope_freqs;         /* [global hd / 2] or NULL */
    sprig_weight pre;          /* 2*dim_out -> dim */
    sprig_weight post;         /* dim -> dim_out */
    struct as_layer L[AS_MAX_LAYERS];
};

struct sprig_assistant_state {
    int max_keys;
    float *x;      /* [2*dim_out] */
    float *z, *z2, *a, *t, *hn;   /* [dim] */
    float *q, *att;              /* [max_qdim] */
    float *g, *u;                /* [max_ff] */
    float *cs;                   /* [max_rot] RoPE cos/sin */
    float *mask;                 /* [max_keys] a sliding layer's band */
    void *act;
    size_t act_bytes;
    float *attn_scratch;
    size_t attn_floats;
};

/* ---------------------------------------------------------------- load */

enum { AD_DIM, AD_DIM_IN, AD_DIM_OUT, AD_QDIM, AD_HD, AD_FF, AD_VOCAB, AD_ROT_HALF, AD_ONE };

struct as_tensor {
    const char *name;
    bool per_layer, norm, required;
    int ne0, ne1;      /* AD_ONE as ne1: a vector */
    size_t offset;     /* into sprig_assistant or struct as_layer */
};

#define GT(nm, nrm, req, a, b, f) { nm, false, nrm, req, a, b, offsetof(struct sprig_assistant, f) }
#define LT(nm, nrm, a, b, f) { nm, true, nrm, true, a, b, offsetof(struct as_layer, f) }
static const struct as_tensor as_tensors[] = {
    GT("token_embd.weight",            false, true,  AD_DIM,    AD_VOCAB,   tok_embd),
    GT("output_norm.weight",           true,  true,  AD_DIM,    AD_ONE,     out_norm),
    GT("nextn.pre_projection.weight",  false, true,  AD_DIM_IN, AD_DIM,     pre),
    GT("nextn.post_projection.weight", false, true,  AD_DIM,    AD_DIM_OUT, post),
    GT("rope_freqs.weight",            true,  false, AD_ROT_HALF, AD_ONE,   rope_freqs),
    LT("blk.%d.attn_norm.weight",      true,  AD_DIM,  AD_ONE, attn_norm),
    LT("blk.%d.attn_q.weight",         false, AD_DIM,  AD_QDIM, wq),
    LT("blk.%d.attn_q_norm.weight",    true,  AD_HD,   AD_ONE, q_norm),
    LT("blk.%d.attn_output.weight",    false, AD_QDIM, AD_DIM, wo),
    LT("blk.%d.post_attention_norm.weight", true, AD_DIM, AD_ONE, attn_post_norm),
    LT("blk.%d.ffn_norm.weight",       true,  AD_DIM,  AD_ONE, ffn_norm),
    LT("blk.%d.ffn_gate.weight",       false, AD_DIM,  AD_FF,  w_gate),
    LT("blk.%d.ffn_up.weight",         false, AD_DIM,  AD_FF,  w_up),
    LT("blk.%d.ffn_down.weight",       false, AD_FF,   AD_DIM, w_down),
    LT("blk.%d.post_ffw_norm.weight",  true,  AD_DIM,  AD_ONE, ffn_post_norm),
    LT("blk.%d.layer_output_scale.weight", true, AD_ONE, AD_ONE, out_scale),
};
#undef GT
#undef LT
/* loaded and never used by llama.cpp (a faster output head's tables) */
static const char *const ignored_tensors[] = { "masked_embd_centroids.weight", "masked_embd_ordering" };

static int64_t adim(const struct sprig_assistant *a, const struct as_layer *L, int d)
{
    int global_hd = 0;
    for (int l = 0; l < a->n_layer; l++)
        if (!a->L[l].window) global_hd = a->L[l].hd;
    const int64_t v[] = { [AD_DIM] = a->dim, [AD_DIM_IN] = 2 * (int64_t)a->dim_out, [AD_DIM_OUT] = a->dim_out,
                          [AD_QDIM] = L ? (int64_t)L->n_head * L->hd : 0, [AD_HD] = L ? L->hd : 0, [AD_FF] = L ? L->ff : 0,
                          [AD_VOCAB] = a->n_vocab, [AD_ROT_HALF] = global_hd / 2, [AD_ONE] = 1 };
    return v[d];
}

void sprig_assistant_free(sprig_assistant *a)
{
    if (!a) return;
    sprig_weight_free(&a->tok_embd);
    sprig_weight_free(&a->pre);
    sprig_weight_free(&a->post);
    free(a->out_norm);
    free(a->rope_freqs);
    for (int l = 0; l < AS_MAX_LAYERS; l++) {
        struct as_layer *L = &a->L[l];
        float *norms[] = { L->attn_norm, L->q_norm, L->attn_post_norm, L->ffn_norm, L->ffn_post_norm, L->out_scale };
        for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) free(norms[i]);
        sprig_weight *ws[] = { &L->wq, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) sprig_weight_free(ws[i]);
    }
    sprig_gguf_close(a->g);
    free(a);
}

bool sprig_assistant_file_is(const char *path)
{
    sprig_gguf *g = sprig_gguf_open(path, NULL);
    if (!g) return false;
    const char *arch;
    size_t len;
    const bool is = sprig_gguf_get_str(g, "general.architecture", &arch, &len, true, NULL) == SPRIG_OK &&
                    len == strlen(AS_ARCH) && !memcmp(arch, AS_ARCH, len);
    sprig_gguf_close(g);
    return is;
}

/* An integer key in [lo, hi]; absent: *out keeps its default unless required. */
static sprig_status key_int(const sprig_gguf *g, const char *sfx, bool required, int lo, int hi, int *out, sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, AS_ARCH ".%s", sfx);
    if (sprig_gguf_find_kv(g, key) < 0 && !required) return SPRIG_OK;
    int64_t v = 0;
    sprig_status st = sprig_gguf_get_i64(g, key, &v, true, err);
    if (st) return st;
    if (v < lo || v > hi)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [%d, %d]", sprig_gguf_path(g), key, (long long)v, lo, hi);
    *out = (int)v;
    return SPRIG_OK;
}

/* Entry l of a key that is a scalar or a per-layer array of n entries. */
static sprig_status key_layer(const sprig_gguf *g, const char *sfx, int l, int n, int lo, int hi, int *out, sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, AS_ARCH ".%s", sfx);
    const int64_t kv = sprig_gguf_find_kv(g, key);
    if (kv < 0) return sprig_err(err, SPRIG_E_FORMAT, "%s: missing key '%s'", sprig_gguf_path(g), key);
    if (sprig_gguf_kv_type(g, kv) != SPRIG_GGUF_ARR) return key_int(g, sfx, true, lo, hi, out, err);
    int et;
    uint64_t len;
    sprig_status st = sprig_gguf_get_arr(g, key, &et, &len, true, err);
    if (st) return st;
    if (len != (uint64_t)n || et == SPRIG_GGUF_STR || et == SPRIG_GGUF_ARR)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must hold %d integers (one per layer)", sprig_gguf_path(g), key, n);
    const int64_t v = sprig_gguf_arr_int(g, kv, (uint64_t)l);
    if (v < lo || v > hi)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] = %lld is out of range [%d, %d]", sprig_gguf_path(g), key, l,
                         (long long)v, lo, hi);
    *out = (int)v;
    return SPRIG_OK;
}

static sprig_status key_f32(const sprig_gguf *g, const char *sfx, float lo, float hi, float *out, sprig_error *err)
{
    char key[128];
    snprintf(key, sizeof key, AS_ARCH ".%s", sfx);
    sprig_status st = sprig_gguf_get_f32(g, key, out, false, err);
    if (st) return st;
    if (!(*out > lo && *out < hi))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g is out of range (%g, %g)", sprig_gguf_path(g), key, (double)*out,
                         (double)lo, (double)hi);
    return SPRIG_OK;
}

/* The layers: sizes, sliding flags, and the target layer each reads. */
static sprig_status read_layers(sprig_assistant *a, sprig_error *err)
{
    const sprig_gguf *g = a->g;
    const char *path = sprig_gguf_path(g);
    const sprig_model *t = a->target;
    int n_all = a->n_layer, window = 0, hd = 0, hd_swa = 0, rot = 0, rot_swa = 0;
    sprig_status st;
    if ((st = key_int(g, "block_count", true, 1, 1024, &n_all, err))) return st;
    /* llama.cpp creates layers only from nextn_predict_layers (without it: none, and the file fails) */
    if ((st = key_int(g, "nextn_predict_layers", true, 1, n_all, &a->n_layer, err))) return st;
    if (a->n_layer > AS_MAX_LAYERS)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: %d assistant layers; sprig takes at most %d", path, a->n_layer, AS_MAX_LAYERS);
    if ((st = key_int(g, "attention.sliding_window", true, 1, 1 << 24, &window, err))) return st;
    if ((st = key_int(g, "attention.key_length", true, 2, SPRIG_ATTN_MAX_HD, &hd, err))) return st;
    if ((st = key_int(g, "attention.key_length_swa", true, 2, SPRIG_ATTN_MAX_HD, &hd_swa, err))) return st;
    int vl = 0, vl_swa = 0;   /* llama.cpp: value heads as large as key heads */
    if ((st = key_int(g, "attention.value_length", true, 2, SPRIG_ATTN_MAX_HD, &vl, err))) return st;
    if ((st = key_int(g, "attention.value_length_swa", true, 2, SPRIG_ATTN_MAX_HD, &vl_swa, err))) return st;
    if (vl != hd || vl_swa != hd_swa)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: value heads %d / %d (%s.attention.value_length, _swa) differ from key heads %d / %d",
                         path, vl, vl_swa, AS_ARCH, hd, hd_swa);
    rot = hd;
    if ((st = key_int(g, "rope.dimension_count", false, 2, hd, &rot, err))) return st;
    rot_swa = rot;   /* llama.cpp's default: the global rotated dims (then it must fit the sliding head) */
    if ((st = key_int(g, "rope.dimension_count_swa", false, 2, SPRIG_ATTN_MAX_HD, &rot_swa, err))) return st;
    if (rot_swa > hd_swa)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: %s.rope.dimension_count_swa (or its default, rope.dimension_count) = %d exceeds "
                         "the sliding head size %d", path, AS_ARCH, rot_swa, hd_swa);
    char key[128];
    snprintf(key, sizeof key, AS_ARCH ".attention.sliding_window_pattern");
    const int64_t pk = sprig_gguf_find_kv(g, key);
    int et = 0;
    uint64_t np = 0;
    if (pk < 0 || sprig_gguf_kv_type(g, pk) != SPRIG_GGUF_ARR || sprig_gguf_get_arr(g, key, &et, &np, true, NULL) ||
        np != (uint64_t)n_all || et == SPRIG_GGUF_STR || et == SPRIG_GGUF_ARR)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must be an array of %d booleans (one per layer)", path, key, n_all);
    const int tn = t->hp.n_layer;
    for (int l = 0; l < a->n_layer; l++) {
        struct as_layer *L = &a->L[l];
        const int64_t f = sprig_gguf_arr_int(g, pk, (uint64_t)l);
        if (f != 0 && f != 1) return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] = %lld is not 0 or 1", path, key, l, (long long)f);
        L->window = f ? window : 0;
        L->hd = f ? hd_swa : hd;
        L->n_rot = f ? rot_swa : rot;
        if ((st = key_layer(g, "attention.head_count", l, n_all, 1, 1024, &L->n_head, err))) return st;
        int n_kv = L->n_head;   /* llama.cpp views the target's cache with the assistant's kv heads (absent: its query heads) */
        snprintf(key, sizeof key, AS_ARCH ".attention.head_count_kv");
        if (sprig_gguf_find_kv(g, key) >= 0 && (st = key_layer(g, "attention.head_count_kv", l, n_all, 1, 1024, &n_kv, err))) return st;
        if ((st = key_layer(g, "feed_forward_length", l, n_all, 1, 1 << 20, &L->ff, err))) return st;
        if (L->hd % 2 || L->n_rot % 2)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: layer %d: head size %d / rotated dims %d must be even", path, l, L->hd, L->n_rot);
        /* the target layer it reads: llama.cpp's n_layer - 2 (sliding) / n_layer - 1 (global), through its sharing */
        const int want = tn - (f ? 2 : 1);
        if (want < 0)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: the target has %d layers; the assistant reads layer %d", path, tn, want);
        const struct sprig_layer *T = &t->layers[want];
        L->kv_layer = T->kv_layer;
        if ((T->window > 0) != (f != 0) || (f && T->window != window))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: assistant layer %d is %s (window %d) but the target's layer %d it reads is %s "
                             "(window %d)", path, l, f ? "sliding" : "global", L->window, want, T->window ? "sliding" : "global", T->window);
        if (T->head_dim != L->hd)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: assistant layer %d has head size %d (%s.attention.key_length%s); the target "
                             "layer %d it reads has %d", path, l, L->hd, AS_ARCH, f ? "_swa" : "", want, T->head_dim);
        if (n_kv != T->n_kv_head)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: assistant layer %d: %s.attention.head_count_kv = %d but the target layer "
                             "%d it reads has %d kv heads", path, l, AS_ARCH, n_kv, want, T->n_kv_head);
        if (L->n_head % T->n_kv_head)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: assistant layer %d's %d query heads are not a multiple of the target layer "
                             "%d's %d kv heads", path, l, L->n_head, want, T->n_kv_head);
        if (L->n_head * L->hd > a->max_qdim) a->max_qdim = L->n_head * L->hd;
        if (L->ff > a->max_ff) a->max_ff = L->ff;
        if (L->n_rot > a->max_rot) a->max_rot = L->n_rot;
    }
    return SPRIG_OK;
}

static sprig_status bind(sprig_assistant *a, const struct as_tensor *s, int l, bool *used, sprig_error *err)
{
    const sprig_gguf *g = a->g;
    const char *path = sprig_gguf_path(g);
    char name[96];
    if (s->per_layer) snprintf(name, sizeof name, s->name, l);
    else snprintf(name, sizeof name, "%s", s->name);
    const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, name);
    const struct as_layer *L = s->per_layer ? &a->L[l] : NULL;
    if (!t) {
        bool needed = s->required;
        if (s->offset == offsetof(struct sprig_assistant, rope_freqs))   /* needed once a layer is global */
            for (int i = 0; i < a->n_layer; i++) needed |= !a->L[i].window;
        return needed ? sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor '%s'", path, name) : SPRIG_OK;
    }
    used[t - sprig_gguf_tensor_at(g, 0)] = true;
    const int64_t e0 = adim(a, L, s->ne0), e1 = adim(a, L, s->ne1);
    if (t->ne[0] != e0 || t->ne[1] != e1 || t->ne[2] != 1 || t->ne[3] != 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld] for this "
                         "target", path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                         (long long)e0, (long long)e1);
    const struct sprig_type_traits *tt = sprig_type_traits(t->type);
    if (!tt || !tt->can_compute)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which sprig cannot compute", path, name,
                         sprig_type_name(t->type));
    char *base = s->per_layer ? (char *)&a->L[l] : (char *)a;
    if (s->norm) {
        float *v = malloc((size_t)e0 * sizeof(float));
        if (!v) return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
        tt->to_f32(t->data, v, e0);
        *(float **)(base + s->offset) = v;
        return SPRIG_OK;
    }
    sprig_status st = sprig_weight_init((sprig_weight *)(base + s->offset), name, t->type, t->data, e0, e1, err);
    if (st) sprig_err_prefix(err, "%s", path);
    return st;
}

sprig_status sprig_assistant_load(const char *path, const sprig_model *target, sprig_assistant **out, sprig_error *err)
{
    *out = NULL;
    if (!target->arch->layer_shapes)   /* a gemma4 target: per-layer shapes, shared caches */
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: a %s assistant drafts for a gemma4 target, not '%s'", path, AS_ARCH,
                         target->arch->name);
    sprig_assistant *a = calloc(1, sizeof *a);
    if (!a) return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
    a->target = target;
    bool *used = NULL;
    sprig_status st = SPRIG_OK;
    if (!(a->g = sprig_gguf_open(path, err))) { st = err ? err->code : SPRIG_E_FORMAT; goto fail; }
    {
        const char *arch;
        size_t len;
        if (sprig_gguf_get_str(a->g, "general.architecture", &arch, &len, true, NULL) || len != strlen(AS_ARCH) ||
            memcmp(arch, AS_ARCH, len)) {
            st = sprig_err(err, SPRIG_E_FORMAT, "%s: general.architecture is not '%s'", path, AS_ARCH);
            goto fail;
        }
    }
    const struct sprig_hparams *tp = &target->hp;
    a->eps = 1e-6f;
    a->theta = 10000.0f;
    a->theta_swa = 10000.0f;
    if ((st = key_int(a->g, "embedding_length", true, 1, 65536, &a->dim, err))) goto fail;
    if ((st = key_int(a->g, "embedding_length_out", true, 1, 65536, &a->dim_out, err))) goto fail;
    if (a->dim == a->dim_out) {   /* llama.cpp: embedding_length_out must carry the target's (different) size */
        st = sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s.embedding_length_out' = %d equals its embedding_length", path, AS_ARCH, a->dim_out);
        goto fail;
    }
    if (a->dim_out != tp->dim) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: key '%s.embedding_length_out' = %d but the target's hidden size "
                       "(%s.embedding_length) is %d", path, AS_ARCH, a->dim_out, target->arch->name, tp->dim);
        goto fail;
    }
    if (sprig_gguf_find_kv(a->g, AS_ARCH ".attention.layer_norm_rms_epsilon") < 0) {
        st = sprig_err(err, SPRIG_E_FORMAT, "%s: missing key '%s.attention.layer_norm_rms_epsilon'", path, AS_ARCH);
        goto fail;
    }
    if ((st = key_f32(a->g, "attention.layer_norm_rms_epsilon", 0.0f, 1.0f, &a->eps, err))) goto fail;
    if ((st = key_f32(a->g, "rope.freq_base", 1.0f, 1e12f, &a->theta, err))) goto fail;
    if ((st = key_f32(a->g, "rope.freq_base_swa", 1.0f, 1e12f, &a->theta_swa, err))) goto fail;
    if ((st = read_layers(a, err))) goto fail;
    const sprig_gguf_tensor *te = sprig_gguf_find_tensor(a->g, "token_embd.weight");
    a->n_vocab = te ? (int)te->ne[1] : 0;
    if (te && te->ne[1] != tp->n_vocab) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "%s: tensor 'token_embd.weight' covers %lld tokens; the target's vocabulary has %d", path,
                       (long long)te->ne[1], tp->n_vocab);
        goto fail;
    }
    used = calloc((size_t)sprig_gguf_n_tensors(a->g) + 1, sizeof *used);
    if (!used) { st = sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); goto fail; }
    for (size_t i = 0; i < sizeof as_tensors / sizeof as_tensors[0]; i++)
        for (int l = 0; l < (as_tensors[i].per_layer ? a->n_layer : 1); l++)
            if ((st = bind(a, &as_tensors[i], l, used, err))) goto fail;
    for (int64_t i = 0; i < sprig_gguf_n_tensors(a->g); i++) {
        const char *nm = sprig_gguf_tensor_at(a->g, i)->name;
        bool ignored = false;
        const sprig_gguf_tensor *ti = sprig_gguf_tensor_at(a->g, i);
        for (size_t j = 0; j < sizeof ignored_tensors / sizeof ignored_tensors[0]; j++)   /* one element, as llama.cpp takes them */
            ignored |= !strcmp(nm, ignored_tensors[j]) && ti->ne[0] * ti->ne[1] * ti->ne[2] * ti->ne[3] == 1;
        if (!used[i] && !ignored) {
            st = sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: tensor '%s' is not one a %s of %d layers uses; sprig refuses it rather than "
                           "ignore it", path, nm, AS_ARCH, a->n_layer);
            goto fail;
        }
    }
    if (a->rope_freqs)
        for (int i = 0; i < (int)adim(a, NULL, AD_ROT_HALF); i++)
            if (!(a->rope_freqs[i] > 0 && a->rope_freqs[i] <= 3.4e38f)) {
                st = sprig_err(err, SPRIG_E_FORMAT, "%s: tensor 'rope_freqs.weight' element %d = %g is not a positive finite factor",
                               path, i, (double)a->rope_freqs[i]);
                goto fail;
            }
    free(used);
    *out = a;
    return SPRIG_OK;
fail:
    free(used);
    sprig_assistant_free(a);
    return st;
}

/* ---------------------------------------------------------------- step */

void sprig_assistant_state_free(sprig_assistant_state *s)
{
    if (!s) return;
    float **b[] = { &s->x, &s->z, &s->z2, &s->a, &s->t, &s->hn, &s->q, &s->att, &s->g, &s->u, &s->cs, &s->mask, &s->attn_scratch };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) sprig_free_aligned(*b[i]);
    sprig_free_aligned(s->act);
    free(s);
}

sprig_assistant_state *sprig_assistant_state_create(const sprig_assistant *a, int max_keys, sprig_error *err)
{
    sprig_assistant_state *s = calloc(1, sizeof *s);
    if (!s) { sprig_err(err, SPRIG_E_NOMEM, "assistant state: out of memory"); return NULL; }
    s->max_keys = max_keys;
    int max_head = 1;
    for (int l = 0; l < a->n_layer; l++)
        if (a->L[l].n_head > max_head) max_head = a->L[l].n_head;
    const size_t D = (size_t)a->dim;
    struct { float **p; size_t n; } b[] = {
        { &s->x, 2 * (size_t)a->dim_out }, { &s->z, D }, { &s->z2, D }, { &s->a, D }, { &s->t, D }, { &s->hn, D },
        { &s->q, (size_t)a->max_qdim }, { &s->att, (size_t)a->max_qdim }, { &s->g, (size_t)a->max_ff }, { &s->u, (size_t)a->max_ff },
        { &s->cs, (size_t)a->max_rot }, { &s->mask, (size_t)max_keys + 1 },
        { &s->attn_scratch, s->attn_floats = sprig_attn_scratch_floats(1, max_head, max_keys + 1, 256) },
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (!(*b[i].p = sprig_calloc_aligned(b[i].n ? b[i].n : 1, sizeof(float)))) goto oom;
    int64_t kmax = 2 * (int64_t)a->dim_out;
    if (a->max_ff > kmax) kmax = a->max_ff;
    if (a->max_qdim > kmax) kmax = a->max_qdim;
    if (a->dim > kmax) kmax = a->dim;
    s->act_bytes = sprig_act_scratch_bytes(1, kmax);
    if (!(s->act = sprig_calloc_aligned(s->act_bytes, 1))) goto oom;
    return s;
oom:
    sprig_assistant_state_free(s);
    sprig_err(err, SPRIG_E_NOMEM, "assistant state: out of memory");
    return NULL;
}

static void mm(sprig_pool *pool, sprig_assistant_state *s, int n_w, const sprig_weight *const *w, const float *x, float **y)
{
    sprig_matmul_rows(pool, x, 1, w[0]->n_in, s->act, s->act_bytes, n_w, w, y);
}

sprig_status sprig_assistant_step(const sprig_assistant *a, sprig_assistant_state *s, sprig_pool *pool, const sprig_kv *kv,
                                  const float *h_in, int32_t token, float *h_out, float *logits, sprig_error *err)
{
    const sprig_model *t = a->target;
    const int n_past = sprig_kv_len(kv), dim = a->dim, D = a->dim_out;
    if (token < 0 || token >= t->hp.n_vocab)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "assistant step: token %d outside the vocabulary", token);
    if (n_past < 1 || n_past > s->max_keys)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "assistant step: %d cached target tokens outside [1, %d]", n_past, s->max_keys);
    /* x = [E_target[t] * sqrt(D) ; h] (the scale rounded to f32 as llama.cpp's ggml_scale) */
    sprig_weight_row_f32(&t->tok_embd, token, s->x);
    const float es = sqrtf((float)D);
    for (int i = 0; i < D; i++) s->x[i] *= es;
    memcpy(s->x + D, h_in, (size_t)D * sizeof(float));
    float *zo[1] = { s->z };
    const sprig_weight *pre[1] = { &a->pre };
    mm(pool, s, 1, pre, s->x, zo);
    const int32_t pos = n_past;
    for (int l = 0; l < a->n_layer; l++) {
        const struct as_layer *L = &a->L[l];
        sprig_rmsnorm(s->a, s->z, L->attn_norm, 1, dim, a->eps);
        float *qo[1] = { s->q };
        const sprig_weight *wq[1] = { &L->wq };
        mm(pool, s, 1, wq, s->a, qo);
        sprig_rmsnorm(s->q, s->q, L->q_norm, L->n_head, L->hd, a->eps);
        sprig_rope_table_scaled(s->cs, &pos, 1, L->hd, L->n_rot, L->window ? a->theta_swa : a->theta, 1.0f,
                                L->window ? NULL : a->rope_freqs);
        sprig_rope_apply(s->q, s->cs, 1, L->n_head, L->hd, L->n_rot, SPRIG_ROPE_NEOX);
        /* the target layer's cache: every held slot, banded for a sliding layer */
        const sprig_kv_view vw = sprig_kv_view_layer(kv, L->kv_layer);
        const int n_keys = n_past - vw.first;
        const float *mask = NULL;
        if (L->window && vw.first <= pos - L->window) {
            for (int j = 0; j < n_keys; j++) s->mask[j] = vw.first + j > pos - L->window ? 0.0f : -1e9f;
            mask = s->mask;
        }
        const struct sprig_layer *T = &t->layers[L->kv_layer];
        sprig_attn_args aa = {
            .n = 1, .n_head = L->n_head, .n_kv_head = T->n_kv_head, .hd = L->hd, .n_keys = n_keys, .mask = mask,
            .scale = 1.0f, .out = s->att, .scratch = s->attn_scratch, .scratch_floats = s->attn_floats,
        };
        sprig_kv_attend(pool, kv, L->kv_layer, s->q, &pos, &aa);
        float *to[1] = { s->t };
        const sprig_weight *wo[1] = { &L->wo };
        mm(pool, s, 1, wo, s->att, to);
        sprig_rmsnorm(s->t, s->t, L->attn_post_norm, 1, dim, a->eps);
        for (int i = 0; i < dim; i++) s->z2[i] = s->t[i] + s->z[i];   /* attn_out */
        sprig_rmsnorm(s->a, s->z2, L->ffn_norm, 1, dim, a->eps);
        float *gu_out[2] = { s->g, s->u };
        const sprig_weight *gu[2] = { &L->w_gate, &L->w_up };
        mm(pool, s, 2, gu, s->a, gu_out);
        sprig_geglu(s->g, s->g, s->u, L->ff);
        const sprig_weight *wd[1] = { &L->w_down };
        mm(pool, s, 1, wd, s->g, to);
        sprig_rmsnorm(s->t, s->t, L->ffn_post_norm, 1, dim, a->eps);
        for (int i = 0; i < dim; i++) s->z[i] = (s->t[i] + s->z2[i]) * L->out_scale[0];
    }
    sprig_rmsnorm(s->hn, s->z, a->out_norm, 1, dim, a->eps);
    float *ho[1] = { h_out };
    const sprig_weight *post[1] = { &a->post };
    mm(pool, s, 1, post, s->hn, ho);
    if (logits) {
        float *lo[1] = { logits };
        const sprig_weight *out[1] = { &a->tok_embd };
        mm(pool, s, 1, out, s->hn, lo);
    }
    return SPRIG_OK;
}
