/*
 * widen — see widen.h. The source is loaded and validated by the model
 * loader (shapes, keys, tokenizer); each output tensor is described by a
 * row map and a column map (target index -> source index or -1) plus a
 * scale, and produced row by row through the GGUF writer's fill callback:
 * the source tensor is dequantized once, each target row is assembled in
 * f32 and quantized by the reference quantizer of the chosen type.
 */
#include "widen.h"
#include "gguf.h"
#include "model/model.h"
#include "tensor/types.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAP_NONE, MAP_HIDDEN, MAP_Q, MAP_KV, MAP_FFN, MAP_VOCAB, MAP_COUNT };

struct widen {
    const sprig_gguf *src;
    int32_t *map[MAP_COUNT];   /* map[k][target index] = source index or -1 */
    int64_t len[MAP_COUNT];    /* target length of each map */
};

struct wtensor {
    const struct widen *w;
    const sprig_gguf_tensor *src;   /* NULL: every value is `fill` */
    int rows_map, cols_map;         /* MAP_*; rows_map NONE = a 1-D tensor */
    float scale;                    /* applied to every source value */
    float fill;                     /* value where no source maps (norms in identity layers) */
    int type;
    int64_t ne0, rows;
    size_t row_bytes;
};

static sprig_status fill_widened(void *user, void *dst, size_t nbytes, sprig_error *err)
{
    const struct wtensor *t = user;
    const struct widen *w = t->w;
    SPRIG_ASSERT(nbytes == t->row_bytes * (size_t)t->rows);
    sprig_from_f32_fn from = sprig_type_traits(t->type)->from_f32;
    float *x = malloc((size_t)t->ne0 * sizeof *x);                   /* [ne0] one target row */
    uint8_t *zero = malloc(t->row_bytes);                              /* a quantized row of `fill` */
    float *s = NULL;                                                   /* [src rows][src ne0] */
    int64_t s_ne0 = 0;
    sprig_status st = SPRIG_OK;
    if (!x || !zero) { st = sprig_err(err, SPRIG_E_NOMEM, "widen: out of memory"); goto done; }
    if (t->src) {
        const sprig_gguf_tensor *g = t->src;
        s_ne0 = g->ne[0];
        int64_t s_rows = g->ne[1] * g->ne[2] * g->ne[3];
        size_t s_row_bytes;
        if (!sprig_row_bytes(g->type, s_ne0, &s_row_bytes) || (uint64_t)s_rows > SIZE_MAX / sizeof(float) / (uint64_t)s_ne0) {
            st = sprig_err(err, SPRIG_E_FORMAT, "widen: %s: bad shape", g->name);
            goto done;
        }
        s = malloc((size_t)s_rows * (size_t)s_ne0 * sizeof *s);
        if (!s) { st = sprig_err(err, SPRIG_E_NOMEM, "widen: %s: out of memory", g->name); goto done; }
        sprig_to_f32_fn to = sprig_type_traits(g->type)->to_f32;
        for (int64_t r = 0; r < s_rows; r++)
            to((const uint8_t *)g->data + (size_t)r * s_row_bytes, s + (size_t)r * (size_t)s_ne0, s_ne0);
    }
    for (int64_t i = 0; i < t->ne0; i++) x[i] = t->fill;
    from(x, zero, t->ne0);
    const int32_t *cm = w->map[t->cols_map], *rm = t->rows_map == MAP_NONE ? NULL : w->map[t->rows_map];
    for (int64_t r = 0; r < t->rows; r++) {
        uint8_t *d = (uint8_t *)dst + (size_t)r * t->row_bytes;
        int32_t sr = rm ? rm[r] : 0;
        if (!s || sr < 0) {
            memcpy(d, zero, t->row_bytes);
            continue;
        }
        const float *srow = s + (size_t)sr * (size_t)s_ne0;
        for (int64_t c = 0; c < t->ne0; c++) x[c] = cm[c] < 0 ? t->fill : srow[cm[c]] * t->scale;
        from(x, d, t->ne0);
    }
done:
    free(x);
    free(zero);
    free(s);
    return st;
}

/* The maps of widen.h: hidden and FFN units keep their index; q and kv
 * heads move (q head h of group g -> g*G_t + h%G_s) and keep dims 0..hd_s-1. */
static sprig_status build_maps(struct widen *w, const struct sprig_hparams *s, const struct sprig_mkmodel_params *p,
                               sprig_error *err)
{
    const int hd = p->dim / p->n_heads, G = p->n_heads / p->n_kv_heads, Gs = s->n_head / s->n_kv_head;
    w->len[MAP_NONE] = 1;
    w->len[MAP_HIDDEN] = p->dim;
    w->len[MAP_Q] = (int64_t)p->n_heads * hd;
    w->len[MAP_KV] = (int64_t)p->n_kv_heads * hd;
    w->len[MAP_FFN] = p->ffn;
    w->len[MAP_VOCAB] = s->n_vocab;
    for (int k = 0; k < MAP_COUNT; k++) {
        w->map[k] = malloc((size_t)w->len[k] * sizeof(int32_t));
        if (!w->map[k]) return sprig_err(err, SPRIG_E_NOMEM, "widen: out of memory");
        for (int64_t i = 0; i < w->len[k]; i++) w->map[k][i] = -1;
    }
    w->map[MAP_NONE][0] = 0;
    for (int i = 0; i < s->dim; i++) w->map[MAP_HIDDEN][i] = i;
    for (int i = 0; i < s->n_ff; i++) w->map[MAP_FFN][i] = i;
    for (int v = 0; v < s->n_vocab; v++) w->map[MAP_VOCAB][v] = v;
    for (int h = 0; h < s->n_head; h++)
        for (int e = 0; e < s->head_dim; e++)
            w->map[MAP_Q][(int64_t)((h / Gs) * G + h % Gs) * hd + e] = h * s->head_dim + e;
    for (int g = 0; g < s->n_kv_head; g++)
        for (int e = 0; e < s->head_dim; e++) w->map[MAP_KV][(int64_t)g * hd + e] = g * s->head_dim + e;
    return SPRIG_OK;
}

static sprig_status check_fit(const struct sprig_hparams *s, const struct sprig_mkmodel_params *p, sprig_error *err)
{
    const int hd = p->dim / p->n_heads, G = p->n_heads / p->n_kv_heads, Gs = s->n_head / s->n_kv_head;
    const struct { const char *name; int t, s; } r[] = {
        { "dim", p->dim, s->dim }, { "layers", p->n_layers, s->n_layer }, { "kv-heads", p->n_kv_heads, s->n_kv_head },
        { "head size (dim / heads)", hd, s->head_dim }, { "query heads per kv head", G, Gs }, { "ffn", p->ffn, s->n_ff },
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (r[i].t < r[i].s)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s %d is smaller than the source model's %d", r[i].name,
                             r[i].t, r[i].s);
    return SPRIG_OK;
}

#define TRY(x) do { if ((st = (x)) != SPRIG_OK) goto done; } while (0)

sprig_status sprig_widen_write(const char *src, const struct sprig_mkmodel_params *pin, const char *out, sprig_error *err)
{
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(src, &m, err);
    if (st != SPRIG_OK) return st;
    struct widen w = { .src = m->gguf };
    sprig_gguf_writer *wr = NULL;
    struct wtensor *td = NULL;
    const struct sprig_hparams *s = &m->hp;
    struct sprig_mkmodel_params p = *pin;
    p.vocab = s->n_vocab;
    p.ctx = s->n_ctx_train;
    p.rope_freq_base = s->rope_theta;
    p.rms_eps = s->eps * (float)s->dim / (float)p.dim;
    const char *arch = NULL;
    size_t arch_len = 0;
    TRY(sprig_gguf_get_str(m->gguf, "general.architecture", &arch, &arch_len, true, err));
    if (arch_len != 5 || memcmp(arch, "llama", 5)) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s: architecture '%.*s' is not llama", src, (int)arch_len, arch);
        goto done;
    }
    if (m->rope_freqs || s->rope_freq_scale != 1.0f || m->layers[0].bq || m->layers[0].bk || m->layers[0].bv ||
        s->head_dim * s->n_head != s->dim) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s: RoPE scaling, q/k/v biases or a key_length head size are not widened", src);
        goto done;
    }
    TRY(sprig_mkmodel_validate(&p, err));
    const int64_t blk = sprig_type_traits(p.type)->blck;   /* one type for every matrix: no per-tensor fallback */
    if (p.dim % blk || p.ffn % blk) {
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s needs dim (%d) and ffn (%d) to be multiples of %lld", sprig_type_name(p.type),
                       p.dim, p.ffn, (long long)blk);
        goto done;
    }
    TRY(check_fit(s, &p, err));
    TRY(build_maps(&w, s, &p, err));

    const int L = p.n_layers, off = p.n_layers - s->n_layer;   /* target layer off + l holds source layer l */
    const int64_t D = p.dim, F = p.ffn, V = s->n_vocab, HD = (int64_t)p.n_heads * (p.dim / p.n_heads);
    const int64_t KV = (int64_t)p.n_kv_heads * (p.dim / p.n_heads);
    const float norm_scale = sqrtf((float)s->dim / (float)p.dim);
    const float q_scale = sqrtf((float)(p.dim / p.n_heads) / (float)s->head_dim);
    uint32_t ftype = 0;
    sprig_mkmodel_file_type(p.type, &ftype);   /* validated above */

    td = calloc(3 + 9 * (size_t)L, sizeof *td);
    wr = sprig_gguf_writer_create(err);
    if (!td) { st = sprig_err(err, SPRIG_E_NOMEM, "widen: out of memory"); goto done; }
    if (!wr) { st = SPRIG_E_NOMEM; goto done; }

    char name[192];
    if (p.name) snprintf(name, sizeof name, "%s", p.name);
    else snprintf(name, sizeof name, "%.120s widened", m->name[0] ? m->name : "model");
    TRY(sprig_gguf_w_str(wr, "general.architecture", "llama", 5, err));
    TRY(sprig_gguf_w_str(wr, "general.name", name, strlen(name), err));
    TRY(sprig_gguf_w_u32(wr, "general.file_type", ftype, err));
    TRY(sprig_gguf_w_u32(wr, "general.quantization_version", 2, err));
    TRY(sprig_gguf_w_u32(wr, "llama.vocab_size", (uint32_t)V, err));
    TRY(sprig_gguf_w_u32(wr, "llama.context_length", (uint32_t)p.ctx, err));
    TRY(sprig_gguf_w_u32(wr, "llama.embedding_length", (uint32_t)D, err));
    TRY(sprig_gguf_w_u32(wr, "llama.block_count", (uint32_t)L, err));
    TRY(sprig_gguf_w_u32(wr, "llama.feed_forward_length", (uint32_t)F, err));
    /* every dim of a head rotates (llama.cpp's llama requires it); rope_freqs gives the source's
     * pairs their frequencies back (base^(-2i/n_rot_s) = base^(-2i/hd_t) / factor_i); the pairs past
     * them hold only zeros, which any rotation leaves zero */
    const int hd_t = p.dim / p.n_heads;
    TRY(sprig_gguf_w_u32(wr, "llama.rope.dimension_count", (uint32_t)hd_t, err));
    TRY(sprig_gguf_w_u32(wr, "llama.attention.head_count", (uint32_t)p.n_heads, err));
    TRY(sprig_gguf_w_u32(wr, "llama.attention.head_count_kv", (uint32_t)p.n_kv_heads, err));
    TRY(sprig_gguf_w_f32(wr, "llama.attention.layer_norm_rms_epsilon", p.rms_eps, err));
    TRY(sprig_gguf_w_f32(wr, "llama.rope.freq_base", p.rope_freq_base, err));
    for (int64_t i = 0; i < sprig_gguf_n_kv(m->gguf); i++)
        if (!strncmp(sprig_gguf_kv_key(m->gguf, i), "tokenizer.", 10)) TRY(sprig_gguf_w_copy_kv(wr, m->gguf, i, err));

    size_t k = 0;
    /* ADD(target name, source name or NULL, ne0, rows, rows map, cols map, scale, fill) */
#define ADD(nm, snm, ne0_, rows_, rmap, cmap, scale_, fill_) do { \
        struct wtensor *t_ = &td[k++]; \
        *t_ = (struct wtensor){ .w = &w, .rows_map = (rmap), .cols_map = (cmap), .scale = (scale_), .fill = (fill_), \
                                .ne0 = (ne0_), .rows = (rows_) }; \
        t_->type = (rmap) == MAP_NONE ? SPRIG_TYPE_F32 : p.type; \
        if ((snm) && !(t_->src = sprig_gguf_find_tensor(m->gguf, (snm)))) { \
            st = sprig_err(err, SPRIG_E_FORMAT, "widen: %s: tensor %s is missing", src, (const char *)(snm)); \
            goto done; \
        } \
        SPRIG_ASSERT(sprig_row_bytes(t_->type, t_->ne0, &t_->row_bytes)); \
        int64_t ne_[2] = { t_->ne0, t_->rows }; \
        TRY(sprig_gguf_w_tensor_fill(wr, nm, t_->type, (rmap) == MAP_NONE ? 1 : 2, ne_, fill_widened, t_, err)); \
    } while (0)
    ADD("token_embd.weight", "token_embd.weight", D, V, MAP_VOCAB, MAP_HIDDEN, 1.0f, 0.0f);
    ADD("output_norm.weight", "output_norm.weight", D, 1, MAP_NONE, MAP_HIDDEN, norm_scale, 0.0f);
    if (hd_t != s->n_rot) {
        float factors[512];
        SPRIG_ASSERT(hd_t / 2 <= 512);
        for (int i = 0; i < hd_t / 2; i++)
            factors[i] = i < s->n_rot / 2 ? (float)pow((double)s->rope_theta, 2.0 * i / s->n_rot - 2.0 * i / hd_t) : 1.0f;
        int64_t ne_f[1] = { hd_t / 2 };
        TRY(sprig_gguf_w_tensor(wr, "rope_freqs.weight", SPRIG_TYPE_F32, 1, ne_f, factors, err));
    }
    if (!m->tied_output) ADD("output.weight", "output.weight", D, V, MAP_VOCAB, MAP_HIDDEN, 1.0f, 0.0f);
    for (int l = 0; l < L; l++) {
        char nm[64], sn[9][64];
        const bool real = l >= off;
        static const char *const parts[9] = { "attn_q", "attn_k", "attn_v", "attn_output", "attn_norm",
                                              "ffn_gate", "ffn_down", "ffn_up", "ffn_norm" };
        for (int i = 0; i < 9; i++) snprintf(sn[i], sizeof sn[i], "blk.%d.%s.weight", l - off, parts[i]);
#define SRC(i) (real ? sn[i] : NULL)
#define TNAME(i) (snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, parts[i]), nm)
        ADD(TNAME(0), SRC(0), D, HD, MAP_Q, MAP_HIDDEN, q_scale, 0.0f);
        ADD(TNAME(1), SRC(1), D, KV, MAP_KV, MAP_HIDDEN, 1.0f, 0.0f);
        ADD(TNAME(2), SRC(2), D, KV, MAP_KV, MAP_HIDDEN, 1.0f, 0.0f);
        ADD(TNAME(3), SRC(3), HD, D, MAP_HIDDEN, MAP_Q, 1.0f, 0.0f);
        ADD(TNAME(4), SRC(4), D, 1, MAP_NONE, MAP_HIDDEN, norm_scale, real ? 0.0f : 1.0f);
        ADD(TNAME(5), SRC(5), D, F, MAP_FFN, MAP_HIDDEN, 1.0f, 0.0f);
        ADD(TNAME(6), SRC(6), F, D, MAP_HIDDEN, MAP_FFN, 1.0f, 0.0f);
        ADD(TNAME(7), SRC(7), D, F, MAP_FFN, MAP_HIDDEN, 1.0f, 0.0f);
        ADD(TNAME(8), SRC(8), D, 1, MAP_NONE, MAP_HIDDEN, norm_scale, real ? 0.0f : 1.0f);
#undef SRC
#undef TNAME
    }
#undef ADD
    TRY(sprig_gguf_writer_write(wr, out, err));
done:
    sprig_gguf_writer_free(wr);
    free(td);
    for (int i = 0; i < MAP_COUNT; i++) free(w.map[i]);
    sprig_model_free(m);
    return st;
}
