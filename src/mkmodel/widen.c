/*
 * widen — see widen.h. The source is loaded and validated by the model
 * loader (shapes, keys, tokenizer); each output tensor is described by a
 * row map and a column map (target index -> source index or -1) plus a
 * scale, and produced row by row through the GGUF writer's fill callback:
 * the source tensor is dequantized once, each target row is assembled in
 * f32 and quantized by the reference quantizer of the chosen type.
 */
#include "mkmodel/widen.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/mtp.h"
#include "tensor/types.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MAP_HIDDEN2: an MTP head's [E[t] ; h] input (two hidden vectors); MAP_HFFN: its own FFN units */
enum { MAP_NONE, MAP_HIDDEN, MAP_Q, MAP_KV, MAP_FFN, MAP_VOCAB, MAP_HIDDEN2, MAP_HFFN, MAP_COUNT };

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
                               int head_ff, sprig_error *err)
{
    const int hd = p->dim / p->n_heads, G = p->n_heads / p->n_kv_heads, Gs = s->n_head / s->n_kv_head;
    w->len[MAP_NONE] = 1;
    w->len[MAP_HIDDEN] = p->dim;
    w->len[MAP_Q] = (int64_t)p->n_heads * hd;
    w->len[MAP_KV] = (int64_t)p->n_kv_heads * hd;
    w->len[MAP_FFN] = p->ffn;
    w->len[MAP_VOCAB] = s->n_vocab;
    w->len[MAP_HIDDEN2] = 2 * (int64_t)p->dim;
    w->len[MAP_HFFN] = head_ff > 0 ? head_ff : 1;
    for (int k = 0; k < MAP_COUNT; k++) {
        w->map[k] = malloc((size_t)w->len[k] * sizeof(int32_t));
        if (!w->map[k]) return sprig_err(err, SPRIG_E_NOMEM, "widen: out of memory");
        for (int64_t i = 0; i < w->len[k]; i++) w->map[k][i] = -1;
    }
    w->map[MAP_NONE][0] = 0;
    for (int i = 0; i < s->dim; i++) w->map[MAP_HIDDEN][i] = i;
    for (int i = 0; i < s->n_ff; i++) w->map[MAP_FFN][i] = i;
    for (int v = 0; v < s->n_vocab; v++) w->map[MAP_VOCAB][v] = v;
    for (int i = 0; i < s->dim; i++) {
        w->map[MAP_HIDDEN2][i] = i;
        w->map[MAP_HIDDEN2][p->dim + i] = s->dim + i;
    }
    for (int i = 0; i < head_ff; i++) w->map[MAP_HFFN][i] = i;
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

/* One output file being written: its tensors' descriptions live in td[] until the write */
struct wout {
    sprig_gguf_writer *wr;
    struct widen *w;
    struct wtensor *td;
    size_t k, cap;
    int type;                 /* every matrix's; 1-D tensors are f32 */
    const char *src_path;
};

/* The writer and room for cap tensor descriptions */
static sprig_status wout_open(struct wout *o, size_t cap, int type, sprig_error *err)
{
    o->cap = cap;
    o->type = type;
    o->td = calloc(cap, sizeof *o->td);
    if (!o->td) return sprig_err(err, SPRIG_E_NOMEM, "widen: out of memory");
    o->wr = sprig_gguf_writer_create(err);
    return o->wr ? SPRIG_OK : SPRIG_E_NOMEM;
}

static void wout_close(struct wout *o)
{
    sprig_gguf_writer_free(o->wr);
    free(o->td);
}

/* Target tensor nm [rows][ne0] from source tensor snm of g (NULL: all `fill`) through the maps */
static sprig_status add_tensor(struct wout *o, const char *nm, const sprig_gguf *g, const char *snm, int64_t ne0, int64_t rows,
                               int rmap, int cmap, float scale, float fill, sprig_error *err)
{
    SPRIG_ASSERT(o->k < o->cap);
    struct wtensor *t = &o->td[o->k++];
    *t = (struct wtensor){ .w = o->w, .rows_map = rmap, .cols_map = cmap, .scale = scale, .fill = fill, .ne0 = ne0, .rows = rows };
    t->type = rmap == MAP_NONE ? SPRIG_TYPE_F32 : o->type;
    if (snm && !(t->src = sprig_gguf_find_tensor(g, snm)))
        return sprig_err(err, SPRIG_E_FORMAT, "widen: %s: tensor %s is missing", o->src_path, snm);
    if (t->src) {   /* the maps index the source's rows and columns: it must have them */
        const int32_t *cm = o->w->map[cmap], *rm = rmap == MAP_NONE ? NULL : o->w->map[rmap];
        int64_t need0 = 0, need1 = 1;
        for (int64_t i = 0; i < ne0; i++) if (cm[i] >= need0) need0 = cm[i] + 1;
        for (int64_t r = 0; rm && r < rows; r++) if (rm[r] >= need1) need1 = rm[r] + 1;
        if (t->src->ne[0] < need0 || t->src->ne[1] * t->src->ne[2] * t->src->ne[3] < need1)
            return sprig_err(err, SPRIG_E_FORMAT, "widen: %s: tensor %s is [%lld, %lld], smaller than its model's shape", o->src_path,
                             snm, (long long)t->src->ne[0], (long long)t->src->ne[1]);
    }
    SPRIG_ASSERT(sprig_row_bytes(t->type, t->ne0, &t->row_bytes));
    int64_t ne[2] = { t->ne0, t->rows };
    return sprig_gguf_w_tensor_fill(o->wr, nm, t->type, rmap == MAP_NONE ? 1 : 2, ne, fill_widened, t, err);
}

/* The output shape from pin and the source: vocabulary, context, RoPE and eps follow the source
 * (eps x D_s/D_t: the mean runs over D_t dims); refusals name what does not fit */
static sprig_status widen_params(const sprig_model *m, const char *src, const struct sprig_mkmodel_params *pin,
                                 struct sprig_mkmodel_params *p, sprig_error *err)
{
    const struct sprig_hparams *s = &m->hp;
    *p = *pin;
    p->vocab = s->n_vocab;
    p->ctx = s->n_ctx_train;
    p->rope_freq_base = s->rope_theta;
    p->rms_eps = s->eps * (float)s->dim / (float)p->dim;
    const char *arch = NULL;
    size_t arch_len = 0;
    sprig_status st = sprig_gguf_get_str(m->gguf, "general.architecture", &arch, &arch_len, true, err);
    if (st) return st;
    if (arch_len != 5 || memcmp(arch, "llama", 5))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s: architecture '%.*s' is not llama", src, (int)arch_len, arch);
    if (m->rope_freqs || s->rope_freq_scale != 1.0f || m->layers[0].bq || m->layers[0].bk || m->layers[0].bv ||
        s->head_dim * s->n_head != s->dim)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s: RoPE scaling, q/k/v biases or a key_length head size are not widened", src);
    if ((st = sprig_mkmodel_validate(p, err))) return st;
    const int64_t blk = sprig_type_traits(p->type)->blck;   /* one type for every matrix: no per-tensor fallback */
    if (p->dim % blk || p->ffn % blk)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s needs dim (%d) and ffn (%d) to be multiples of %lld",
                         sprig_type_name(p->type), p->dim, p->ffn, (long long)blk);
    return check_fit(s, p, err);
}

static sprig_status copy_tokenizer(sprig_gguf_writer *wr, const sprig_gguf *g, sprig_error *err)
{
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++)
        if (!strncmp(sprig_gguf_kv_key(g, i), "tokenizer.", 10)) {
            sprig_status st = sprig_gguf_w_copy_kv(wr, g, i, err);
            if (st) return st;
        }
    return SPRIG_OK;
}

sprig_status sprig_widen_write(const char *src, const struct sprig_mkmodel_params *pin, const char *out, sprig_error *err)
{
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(src, &m, err);
    if (st != SPRIG_OK) return st;
    struct widen w = { .src = m->gguf };
    struct wout o = { .w = &w, .src_path = src };
    const struct sprig_hparams *s = &m->hp;
    struct sprig_mkmodel_params p;
    TRY(widen_params(m, src, pin, &p, err));
    TRY(build_maps(&w, s, &p, 0, err));

    const int L = p.n_layers, off = p.n_layers - s->n_layer;   /* target layer off + l holds source layer l */
    const int64_t D = p.dim, F = p.ffn, V = s->n_vocab, HD = (int64_t)p.n_heads * (p.dim / p.n_heads);
    const int64_t KV = (int64_t)p.n_kv_heads * (p.dim / p.n_heads);
    const float norm_scale = sqrtf((float)s->dim / (float)p.dim);
    const float q_scale = sqrtf((float)(p.dim / p.n_heads) / (float)s->head_dim);
    uint32_t ftype = 0;
    sprig_mkmodel_file_type(p.type, &ftype);   /* validated above */

    TRY(wout_open(&o, 3 + 9 * (size_t)L, p.type, err));
    sprig_gguf_writer *wr = o.wr;

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
    TRY(copy_tokenizer(wr, m->gguf, err));

    const sprig_gguf *g = m->gguf;
    TRY(add_tensor(&o, "token_embd.weight", g, "token_embd.weight", D, V, MAP_VOCAB, MAP_HIDDEN, 1.0f, 0.0f, err));
    TRY(add_tensor(&o, "output_norm.weight", g, "output_norm.weight", D, 1, MAP_NONE, MAP_HIDDEN, norm_scale, 0.0f, err));
    if (hd_t != s->n_rot) {
        float factors[512];
        SPRIG_ASSERT(hd_t / 2 <= 512);
        for (int i = 0; i < hd_t / 2; i++)
            factors[i] = i < s->n_rot / 2 ? (float)pow((double)s->rope_theta, 2.0 * i / s->n_rot - 2.0 * i / hd_t) : 1.0f;
        int64_t ne_f[1] = { hd_t / 2 };
        TRY(sprig_gguf_w_tensor(wr, "rope_freqs.weight", SPRIG_TYPE_F32, 1, ne_f, factors, err));
    }
    if (!m->tied_output) TRY(add_tensor(&o, "output.weight", g, "output.weight", D, V, MAP_VOCAB, MAP_HIDDEN, 1.0f, 0.0f, err));
    for (int l = 0; l < L; l++) {
        char nm[64], sn[9][64];
        const bool real = l >= off;
        static const char *const parts[9] = { "attn_q", "attn_k", "attn_v", "attn_output", "attn_norm",
                                              "ffn_gate", "ffn_down", "ffn_up", "ffn_norm" };
        /* rows map, cols map, rows, ne0, scale; norms: fill 1 in identity layers */
        const struct { int rmap, cmap; int64_t rows, ne0; float scale; } shp[9] = {
            { MAP_Q, MAP_HIDDEN, HD, D, q_scale },       { MAP_KV, MAP_HIDDEN, KV, D, 1.0f },
            { MAP_KV, MAP_HIDDEN, KV, D, 1.0f },         { MAP_HIDDEN, MAP_Q, D, HD, 1.0f },
            { MAP_NONE, MAP_HIDDEN, 1, D, norm_scale },  { MAP_FFN, MAP_HIDDEN, F, D, 1.0f },
            { MAP_HIDDEN, MAP_FFN, D, F, 1.0f },         { MAP_FFN, MAP_HIDDEN, F, D, 1.0f },
            { MAP_NONE, MAP_HIDDEN, 1, D, norm_scale },
        };
        for (int i = 0; i < 9; i++) {
            snprintf(sn[i], sizeof sn[i], "blk.%d.%s.weight", l - off, parts[i]);
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, parts[i]);
            const float fill = shp[i].rmap == MAP_NONE && !real ? 1.0f : 0.0f;
            TRY(add_tensor(&o, nm, g, real ? sn[i] : NULL, shp[i].ne0, shp[i].rows, shp[i].rmap, shp[i].cmap, shp[i].scale, fill, err));
        }
    }
    TRY(sprig_gguf_writer_write(wr, out, err));
done:
    wout_close(&o);
    for (int i = 0; i < MAP_COUNT; i++) free(w.map[i]);
    sprig_model_free(m);
    return st;
}

sprig_status sprig_widen_mtp_write(const char *src, const char *head, const struct sprig_mkmodel_params *pin, const char *out,
                                   sprig_error *err)
{
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(src, &m, err);
    if (st != SPRIG_OK) return st;
    sprig_mtp *h = NULL;
    struct widen w = { .src = m->gguf };
    struct wout o = { .w = &w, .src_path = head };
    const struct sprig_hparams *s = &m->hp;
    struct sprig_mkmodel_params p;
    TRY(widen_params(m, src, pin, &p, err));
    TRY(sprig_mtp_load(head, m, &h, err));   /* a head of this source: every shape checked */
    const sprig_gguf *g = sprig_mtp_gguf(h);
    int64_t hl = 0, hff = 0, hnh = 0;
    char a[33];
    {
        const char *arch;
        size_t al;
        TRY(sprig_gguf_get_str(g, "general.architecture", &arch, &al, true, err));
        snprintf(a, sizeof a, "%.*s", (int)(al > 32 ? 32 : al), arch);
    }
    char key[96];
    uint32_t u = 0;
#define KEY(k_) (snprintf(key, sizeof key, "%s." k_, a), key)
    TRY(sprig_gguf_get_u32(g, KEY("block_count"), &u, true, err)); hl = u;
    TRY(sprig_gguf_get_u32(g, KEY("feed_forward_length"), &u, true, err)); hff = u;
    TRY(sprig_gguf_get_u32(g, KEY("attention.head_count"), &u, true, err)); hnh = u;
    float heps = 1e-5f;
    TRY(sprig_gguf_get_f32(g, KEY("attention.layer_norm_rms_epsilon"), &heps, false, err));
#undef KEY
    if (hnh != s->n_head) {   /* its q heads move as the target's do */
        st = sprig_err(err, SPRIG_E_INVALID_ARG, "widen: %s: an MTP head with %lld query heads (its target has %d) is not widened", head,
                       (long long)hnh, s->n_head);
        goto done;
    }
    TRY(build_maps(&w, s, &p, (int)hff, err));
    const int off = p.n_layers - s->n_layer, kv_layer = sprig_mtp_kv_layer(h) + off;
    const int64_t D = p.dim, HD = (int64_t)p.n_heads * (p.dim / p.n_heads);
    const float norm_scale = sqrtf((float)s->dim / (float)p.dim);
    const float q_scale = sqrtf((float)(p.dim / p.n_heads) / (float)s->head_dim);
    TRY(wout_open(&o, 3 + 7 * (size_t)hl, p.type, err));
    sprig_gguf_writer *wr = o.wr;
    char name[192];
    snprintf(name, sizeof name, "%.120s widened", p.name ? p.name : "MTP head");
    TRY(sprig_gguf_w_str(wr, "general.architecture", "llama", 5, err));
    TRY(sprig_gguf_w_str(wr, "general.name", name, strlen(name), err));
    TRY(sprig_gguf_w_str(wr, "mtp.kind", "assistant", 9, err));
    TRY(sprig_gguf_w_str(wr, "mtp.target_name", "llama", 5, err));
    TRY(sprig_gguf_w_u32(wr, "mtp.target_kv_layer", (uint32_t)kv_layer, err));
    TRY(sprig_gguf_w_u32(wr, "llama.context_length", (uint32_t)p.ctx, err));
    TRY(sprig_gguf_w_u32(wr, "llama.embedding_length", (uint32_t)D, err));
    TRY(sprig_gguf_w_u32(wr, "llama.feed_forward_length", (uint32_t)hff, err));
    TRY(sprig_gguf_w_u32(wr, "llama.attention.head_count", (uint32_t)p.n_heads, err));
    TRY(sprig_gguf_w_u32(wr, "llama.attention.head_count_kv", (uint32_t)p.n_kv_heads, err));
    TRY(sprig_gguf_w_u32(wr, "llama.block_count", (uint32_t)hl, err));
    TRY(sprig_gguf_w_u32(wr, "llama.rope.dimension_count", (uint32_t)(p.dim / p.n_heads), err));
    TRY(sprig_gguf_w_f32(wr, "llama.attention.layer_norm_rms_epsilon", heps * (float)s->dim / (float)p.dim, err));
    TRY(sprig_gguf_w_f32(wr, "llama.rope.freq_base", p.rope_freq_base, err));
    TRY(copy_tokenizer(wr, g, err));
    TRY(add_tensor(&o, "mtp.pre_proj.weight", g, "mtp.pre_proj.weight", 2 * D, D, MAP_HIDDEN, MAP_HIDDEN2, 1.0f, 0.0f, err));
    for (int l = 0; l < hl; l++) {
        char nm[64], sn[64];
        static const char *const parts[7] = { "attn_norm", "attn_q", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
        const struct { int rmap, cmap; int64_t rows, ne0; float scale; } shp[7] = {
            { MAP_NONE, MAP_HIDDEN, 1, D, norm_scale }, { MAP_Q, MAP_HIDDEN, HD, D, q_scale },
            { MAP_HIDDEN, MAP_Q, D, HD, 1.0f },         { MAP_NONE, MAP_HIDDEN, 1, D, norm_scale },
            { MAP_HFFN, MAP_HIDDEN, hff, D, 1.0f },     { MAP_HFFN, MAP_HIDDEN, hff, D, 1.0f },
            { MAP_HIDDEN, MAP_HFFN, D, hff, 1.0f },
        };
        for (int i = 0; i < 7; i++) {
            snprintf(sn, sizeof sn, "blk.%d.%s.weight", l, parts[i]);
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, parts[i]);
            TRY(add_tensor(&o, nm, g, sn, shp[i].ne0, shp[i].rows, shp[i].rmap, shp[i].cmap, shp[i].scale, 0.0f, err));
        }
    }
    TRY(add_tensor(&o, "mtp.final_norm.weight", g, "mtp.final_norm.weight", D, 1, MAP_NONE, MAP_HIDDEN, norm_scale, 0.0f, err));
    TRY(add_tensor(&o, "mtp.post_proj.weight", g, "mtp.post_proj.weight", D, D, MAP_HIDDEN, MAP_HIDDEN, 1.0f, 0.0f, err));
    TRY(sprig_gguf_writer_write(wr, out, err));
done:
    wout_close(&o);
    for (int i = 0; i < MAP_COUNT; i++) free(w.map[i]);
    sprig_mtp_free(h);
    sprig_model_free(m);
    return st;
}
