/*
 * tests/test-arch.c — the llama (with Llama 3 and linear RoPE scaling),
 * qwen2 and qwen3 rows of the architecture table.
 *
 * 1. Tiny F32 models of each layout written by mkmodel run through sprig's
 *    batched forward and through a plain scalar forward written here from
 *    llama.cpp's definition (tensors looked up by llama.cpp's names, keys
 *    read by their own names): logits of every row, at positions far apart
 *    so RoPE scaling shows.
 * 2. Each optional piece changes the output (the path ran): qwen2 biases
 *    zeroed, qwen3 q/k norms set to one, rope_freqs dropped, linear scaling
 *    added — each differs from the original, and the reference follows.
 *    llama's optional attn_output.bias is added and checked the same way.
 * 3. Broken variants are refused naming the tensor or key: a rope_freqs of
 *    the wrong length or with a zero factor, a missing q/k norm (qwen3) or
 *    bias (qwen2), a wrong-shaped bias or norm, YaRN scaling, a value head
 *    size unlike the key head size, a tensor the architecture does not load
 *    (an unknown name, a layer past block_count, attn_output.bias in qwen2),
 *    a wrong-shaped attn_output.bias. With SPRIG_FUZZ_CORPUS set, the broken
 *    files are also copied there (seeds for fuzz/fuzz-gguf.c).
 */
#include "test.h"
#include "gguf/gguf.h"
#include "mkmodel/mkmodel.h"
#include "gguf/quant_mix.h"
#include "model/model.h"
#include "model/arch.h"
#include "tensor/ops.h"
#include "tensor/types.h"

/* ---------------------------------------------------------------- the reference forward */

struct ref {
    const sprig_gguf *g;
    char arch[16];
    int dim, nl, nh, nkv, hd, ff, nv, nrot;
    float eps, theta, fscale;
    bool neox;
};

static const float *tensor_f32(const sprig_gguf *g, const char *name, int64_t want)
{
    const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, name);
    if (!t || t->type != SPRIG_TYPE_F32 || t->ne[0] * t->ne[1] != want) return NULL;
    return (const float *)t->data;
}

static const float *layer_f32(const sprig_gguf *g, const char *fmt, int l, int64_t want)
{
    char nm[96];
    snprintf(nm, sizeof nm, fmt, l);
    return tensor_f32(g, nm, want);
}

static uint32_t key_u32(const sprig_gguf *g, const char *arch, const char *sfx, uint32_t dflt)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, sfx);
    uint32_t v = dflt;
    if (sprig_gguf_find_kv(g, k) >= 0) CHECK(sprig_gguf_get_u32(g, k, &v, true, NULL) == SPRIG_OK);
    return v;
}

static float key_f32(const sprig_gguf *g, const char *arch, const char *sfx, float dflt)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, sfx);
    float v = dflt;
    if (sprig_gguf_find_kv(g, k) >= 0) CHECK(sprig_gguf_get_f32(g, k, &v, true, NULL) == SPRIG_OK);
    return v;
}

static bool ref_init(struct ref *r, const sprig_gguf *g)
{
    memset(r, 0, sizeof *r);
    r->g = g;
    const char *a;
    size_t al;
    if (sprig_gguf_get_str(g, "general.architecture", &a, &al, true, NULL) || al >= sizeof r->arch) return false;
    memcpy(r->arch, a, al);
    r->dim = (int)key_u32(g, r->arch, "embedding_length", 0);
    r->nl = (int)key_u32(g, r->arch, "block_count", 0);
    r->nh = (int)key_u32(g, r->arch, "attention.head_count", 0);
    r->nkv = (int)key_u32(g, r->arch, "attention.head_count_kv", (uint32_t)r->nh);
    r->hd = (int)key_u32(g, r->arch, "attention.key_length", (uint32_t)(r->dim / r->nh));
    r->nrot = (int)key_u32(g, r->arch, "rope.dimension_count", (uint32_t)r->hd);
    r->ff = (int)key_u32(g, r->arch, "feed_forward_length", 0);
    r->eps = key_f32(g, r->arch, "attention.layer_norm_rms_epsilon", 1e-5f);
    r->theta = key_f32(g, r->arch, "rope.freq_base", 10000.0f);
    float factor = key_f32(g, r->arch, "rope.scaling.factor", 0.0f);
    r->fscale = factor > 0 ? 1.0f / factor : 1.0f;
    r->neox = strcmp(r->arch, "llama") != 0;
    int et;
    uint64_t n;
    if (sprig_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, true, NULL)) return false;
    r->nv = (int)n;
    return r->dim > 0 && r->nl > 0 && r->nh > 0;
}

/* y[rows] = W[rows][cols] x */
static void mv(double *y, const float *w, const double *x, int rows, int cols)
{
    for (int j = 0; j < rows; j++) {
        double s = 0;
        for (int k = 0; k < cols; k++) s += (double)w[(size_t)j * cols + k] * x[k];
        y[j] = s;
    }
}

static void rmsnorm(double *x, const float *w, int n, float eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double sc = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) x[i] = x[i] * sc * w[i];
}

static void rope(const struct ref *r, double *h, int pos, const float *ff)
{
    int half = r->nrot / 2;
    for (int i = 0; i < half; i++) {
        double ang = pos * pow(r->theta, -2.0 * i / r->nrot) * r->fscale / (ff ? ff[i] : 1.0);
        int a = r->neox ? i : 2 * i, b = r->neox ? i + half : 2 * i + 1;
        double x0 = h[a], x1 = h[b];
        h[a] = x0 * cos(ang) - x1 * sin(ang);
        h[b] = x0 * sin(ang) + x1 * cos(ang);
    }
}

/* logits[n][nv] of tokens at positions pos, causal in order; false if a tensor is missing */
static bool ref_forward(const struct ref *r, const int32_t *tok, const int32_t *pos, int n, float *logits)
{
    const sprig_gguf *g = r->g;
    const int D = r->dim, Q = r->nh * r->hd, KV = r->nkv * r->hd, F = r->ff, V = r->nv;
    double *x = calloc((size_t)n * D, sizeof(double)), *q = calloc((size_t)n * Q, sizeof(double));
    double *k = calloc((size_t)n * KV, sizeof(double)), *v = calloc((size_t)n * KV, sizeof(double));
    double *xn = calloc((size_t)D + Q + 2 * (size_t)F + (size_t)n + (size_t)V, sizeof(double));
    double *att = calloc((size_t)Q, sizeof(double)), *t = calloc((size_t)(D > F ? D : F), sizeof(double));
    bool ok = x && q && k && v && xn && att && t;
    const float *emb = tensor_f32(g, "token_embd.weight", (int64_t)D * V);
    const float *ff = tensor_f32(g, "rope_freqs.weight", r->nrot / 2);
    ok = ok && emb;
    for (int i = 0; ok && i < n; i++)
        for (int e = 0; e < D; e++) x[(size_t)i * D + e] = emb[(size_t)tok[i] * D + e];
    for (int l = 0; ok && l < r->nl; l++) {
        const float *an = layer_f32(g, "blk.%d.attn_norm.weight", l, D), *wq = layer_f32(g, "blk.%d.attn_q.weight", l, (int64_t)D * Q);
        const float *wk = layer_f32(g, "blk.%d.attn_k.weight", l, (int64_t)D * KV), *wv = layer_f32(g, "blk.%d.attn_v.weight", l, (int64_t)D * KV);
        const float *wo = layer_f32(g, "blk.%d.attn_output.weight", l, (int64_t)Q * D), *fn = layer_f32(g, "blk.%d.ffn_norm.weight", l, D);
        const float *wg = layer_f32(g, "blk.%d.ffn_gate.weight", l, (int64_t)D * F), *wu = layer_f32(g, "blk.%d.ffn_up.weight", l, (int64_t)D * F);
        const float *wd = layer_f32(g, "blk.%d.ffn_down.weight", l, (int64_t)F * D);
        const float *bq = layer_f32(g, "blk.%d.attn_q.bias", l, Q), *bk = layer_f32(g, "blk.%d.attn_k.bias", l, KV);
        const float *bv = layer_f32(g, "blk.%d.attn_v.bias", l, KV), *bo = layer_f32(g, "blk.%d.attn_output.bias", l, D);
        const float *qn = layer_f32(g, "blk.%d.attn_q_norm.weight", l, r->hd), *kn = layer_f32(g, "blk.%d.attn_k_norm.weight", l, r->hd);
        if (!an || !wq || !wk || !wv || !wo || !fn || !wg || !wu || !wd) { ok = false; break; }
        for (int i = 0; i < n; i++) {   /* q, k, v of every row */
            memcpy(xn, x + (size_t)i * D, (size_t)D * sizeof(double));
            rmsnorm(xn, an, D, r->eps);
            double *qi = q + (size_t)i * Q, *ki = k + (size_t)i * KV, *vi = v + (size_t)i * KV;
            mv(qi, wq, xn, Q, D);
            mv(ki, wk, xn, KV, D);
            mv(vi, wv, xn, KV, D);
            for (int e = 0; bq && e < Q; e++) qi[e] += bq[e];
            for (int e = 0; bk && e < KV; e++) ki[e] += bk[e];
            for (int e = 0; bv && e < KV; e++) vi[e] += bv[e];
            for (int h = 0; h < r->nh; h++) {
                if (qn) rmsnorm(qi + h * r->hd, qn, r->hd, r->eps);
                rope(r, qi + h * r->hd, pos[i], ff);
            }
            for (int h = 0; h < r->nkv; h++) {
                if (kn) rmsnorm(ki + h * r->hd, kn, r->hd, r->eps);
                rope(r, ki + h * r->hd, pos[i], ff);
            }
        }
        for (int i = 0; i < n; i++) {   /* attention (causal, GQA), then the FFN */
            for (int h = 0; h < r->nh; h++) {
                int kh = h / (r->nh / r->nkv);
                double *sc = xn + D + Q + 2 * (size_t)F, mx = -1e300, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int e = 0; e < r->hd; e++) s += q[(size_t)i * Q + h * r->hd + e] * k[(size_t)j * KV + kh * r->hd + e];
                    sc[j] = s / sqrt((double)r->hd);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j <= i; j++) sum += (sc[j] = exp(sc[j] - mx));
                for (int e = 0; e < r->hd; e++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += sc[j] / sum * v[(size_t)j * KV + kh * r->hd + e];
                    att[h * r->hd + e] = o;
                }
            }
            double *xi = x + (size_t)i * D;
            mv(t, wo, att, D, Q);
            for (int e = 0; bo && e < D; e++) t[e] += bo[e];
            for (int e = 0; e < D; e++) xi[e] += t[e];
            memcpy(xn, xi, (size_t)D * sizeof(double));
            rmsnorm(xn, fn, D, r->eps);
            double *gt = xn + D + Q, *up = gt + F;
            mv(gt, wg, xn, F, D);
            mv(up, wu, xn, F, D);
            for (int e = 0; e < F; e++) gt[e] = gt[e] / (1 + exp(-gt[e])) * up[e];
            mv(t, wd, gt, D, F);
            for (int e = 0; e < D; e++) xi[e] += t[e];
        }
    }
    const float *on = tensor_f32(g, "output_norm.weight", D), *out = tensor_f32(g, "output.weight", (int64_t)D * V);
    if (!out) out = emb;
    ok = ok && on;
    double *lg = xn + D + Q + 2 * (size_t)F + (size_t)n;
    for (int i = 0; ok && i < n; i++) {
        memcpy(xn, x + (size_t)i * D, (size_t)D * sizeof(double));
        rmsnorm(xn, on, D, r->eps);
        mv(lg, out, xn, V, D);
        for (int e = 0; e < V; e++) logits[(size_t)i * V + e] = (float)lg[e];
    }
    free(x); free(q); free(k); free(v); free(xn); free(att); free(t);
    return ok;
}

/* ---------------------------------------------------------------- sprig's side */

#define NTOK 5
static const int32_t toks[NTOK] = { 1, 299, 17, 280, 42 };
static const int32_t poss[NTOK] = { 0, 1, 7, 900, 3000 };

/* sprig's logits [NTOK][nv] of path (one batched forward); false when it does not load */
static bool sprig_logits(const char *path, float *logits, int *nv, char *msg, size_t cap)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    if (sprig_model_load(path, &m, &err)) {
        snprintf(msg, cap, "%s", err.msg);
        return false;
    }
    *nv = m->hp.n_vocab;
    sprig_ctx *c = NULL;
    bool ok = sprig_ctx_create(m, NULL, &(struct sprig_ctx_params){ .n_ctx = 64 }, &c, &err) == SPRIG_OK;
    struct sprig_fwd f = { .n = NTOK, .tokens = toks, .pos = poss, .n_out = NTOK, .logits = logits };
    ok = ok && sprig_forward(c, &f, &err) == SPRIG_OK;
    if (!ok) snprintf(msg, cap, "%s", err.msg);
    sprig_ctx_free(c);
    sprig_model_free(m);
    return ok;
}

static double max_abs_diff(const float *a, const float *b, size_t n, double *scale)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs((double)a[i] - b[i]) > d || a[i] != a[i] || b[i] != b[i]) d = fabs((double)a[i] - b[i]);
        if (fabs((double)b[i]) > s) s = fabs((double)b[i]);
    }
    if (scale) *scale = s;
    return d != d ? 1e30 : d;
}

/* sprig equals the scalar reference on path; the logits go to out (NTOK x 300) */
static void check_against_reference(const char *label, const char *path, float *out)
{
    static float ref[NTOK * 300];
    int nv = 0;
    char msg[512];
    bool ok = sprig_logits(path, out, &nv, msg, sizeof msg);
    CHECKF(ok, "%s: %s", label, msg);
    if (!ok) return;
    CHECK_EQ_INT(nv, 300);
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(path, &err);
    CHECK(g);
    if (!g) return;
    struct ref r;
    CHECK(ref_init(&r, g));
    CHECKF(ref_forward(&r, toks, poss, NTOK, ref), "%s: the reference found every tensor", label);
    double scale, d = max_abs_diff(out, ref, (size_t)NTOK * 300, &scale);
    CHECKF(d <= 2e-4 * (scale > 1 ? scale : 1), "%s: max |sprig - reference| = %g (logits up to %g)", label, d, scale);
    CHECKF(scale > 0.5, "%s: the logits are not degenerate (max %g)", label, scale);
    fprintf(stderr, "  %s: max |sprig - reference| %.3g over logits up to %.3g\n", label, d, scale);
    sprig_gguf_close(g);
}

/* ---------------------------------------------------------------- files */

static struct sprig_mkmodel_params shape(const char *arch)
{
    struct sprig_mkmodel_params p;
    CHECK(sprig_mkmodel_preset("tiny", &p, NULL) == SPRIG_OK);
    p.arch = arch;
    p.dim = 64;
    p.n_heads = 4;
    p.n_kv_heads = 2;
    p.ffn = 96;
    p.vocab = 300;
    p.n_layers = 2;
    p.std = 0.3f;
    p.seed = 11;
    p.n_threads = 1;
    return p;
}

static const char *write_model(const char *name, const struct sprig_mkmodel_params *p)
{
    sprig_error err = { 0 };
    const char *path = test_tmpfile(name);
    CHECKF(sprig_mkmodel_write(p, path, &err) == SPRIG_OK, "%s: %s", name, err.msg);
    return path;
}

/* What to change while copying a file: tensors whose name contains a
 * pattern are dropped, zeroed, set to one or written with another length;
 * keys dropped or (re)written. */
struct edit {
    const char *drop_tensor, *zero_tensor, *ones_tensor, *resize_tensor;
    int64_t resize_ne0;
    const char *add_tensor;   /* an F32 vector of add_ne0 values 0.05 * ((j % 7) - 3) */
    int64_t add_ne0;
    const char *drop_kv;
    const char *set_kv, *set_str;
    float set_f32;
    uint32_t set_u32;
    bool set_is_u32;
};

static void copy_to_corpus(const char *path, const char *name)
{
    const char *dir = getenv("SPRIG_FUZZ_CORPUS");
    if (!dir || !*dir) return;
    char dst[1024];
    snprintf(dst, sizeof dst, "%s/arch-%s", dir, name);
    FILE *in = fopen(path, "rb"), *out = fopen(dst, "wb");
    char buf[65536];
    size_t k;
    while (in && out && (k = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, k, out);
    if (in) fclose(in);
    if (out) fclose(out);
}

static const char *write_variant(const char *src, const char *name, const struct edit *e)
{
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(src, &err);
    CHECKF(g, "%s", err.msg);
    if (!g) return NULL;
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) {
        const char *k = sprig_gguf_kv_key(g, i);
        if ((e->drop_kv && !strcmp(k, e->drop_kv)) || (e->set_kv && !strcmp(k, e->set_kv))) continue;
        CHECK(sprig_gguf_w_copy_kv(w, g, i, &err) == SPRIG_OK);
    }
    if (e->set_kv && e->set_str) CHECK(sprig_gguf_w_str(w, e->set_kv, e->set_str, strlen(e->set_str), &err) == SPRIG_OK);
    else if (e->set_kv && e->set_is_u32) CHECK(sprig_gguf_w_u32(w, e->set_kv, e->set_u32, &err) == SPRIG_OK);
    else if (e->set_kv) CHECK(sprig_gguf_w_f32(w, e->set_kv, e->set_f32, &err) == SPRIG_OK);
    static float fill[1 << 16];
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        if (e->drop_tensor && strstr(t->name, e->drop_tensor)) continue;
        bool zero = e->zero_tensor && strstr(t->name, e->zero_tensor), ones = e->ones_tensor && strstr(t->name, e->ones_tensor);
        bool resize = e->resize_tensor && strstr(t->name, e->resize_tensor);
        if (zero || ones || resize) {
            int64_t ne[1] = { resize ? e->resize_ne0 : t->ne[0] };
            CHECK(t->type == SPRIG_TYPE_F32 && t->n_dims == 1 && ne[0] <= (int64_t)(sizeof fill / sizeof fill[0]));
            for (int64_t j = 0; j < ne[0]; j++) fill[j] = ones ? 1.0f : zero ? 0.0f : 1.0f + 0.1f * (float)j;
            CHECK(sprig_gguf_w_tensor(w, t->name, SPRIG_TYPE_F32, 1, ne, fill, &err) == SPRIG_OK);
            continue;
        }
        CHECK(sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) == SPRIG_OK);
    }
    if (e->add_tensor) {
        int64_t ne[1] = { e->add_ne0 };
        for (int64_t j = 0; j < ne[0] && j < (int64_t)(sizeof fill / sizeof fill[0]); j++) fill[j] = 0.05f * (float)(j % 7 - 3);
        CHECK(sprig_gguf_w_tensor(w, e->add_tensor, SPRIG_TYPE_F32, 1, ne, fill, &err) == SPRIG_OK);
    }
    const char *path = test_tmpfile(name);
    CHECKF(sprig_gguf_writer_write(w, path, &err) == SPRIG_OK, "%s", err.msg);
    sprig_gguf_writer_free(w);
    sprig_gguf_close(g);
    return path;
}

/* ---------------------------------------------------------------- tests */

static float base_l[NTOK * 300], var_l[NTOK * 300];

static void expect_changed(const char *what)
{
    double d = max_abs_diff(base_l, var_l, (size_t)NTOK * 300, NULL);
    CHECKF(d > 1e-2, "%s changes the logits (max difference %g)", what, d);
    fprintf(stderr, "  %s changes the logits by up to %.3g\n", what, d);
}

static void test_llama3_rope_freqs(void)
{
    struct sprig_mkmodel_params p = shape("llama");
    p.rope_scaling = SPRIG_MKMODEL_ROPE_LLAMA3;
    const char *path = write_model("llama3.gguf", &p);
    sprig_model *m = NULL;
    CHECK(sprig_model_load(path, &m, NULL) == SPRIG_OK);
    if (m) {   /* the converter's factors for head size 16, theta 10000: 1 1 1 1 1 1 ~2.9 8 */
        CHECK(m->rope_freqs && m->hp.rope_mode == SPRIG_ROPE_NORM && !m->tied_output);
        if (m->rope_freqs) {
            CHECK(m->rope_freqs[0] == 1.0f && m->rope_freqs[7] == 8.0f);
            CHECK(m->rope_freqs[6] > 1.5f && m->rope_freqs[6] < 8.0f);
        }
        sprig_model_free(m);
    }
    check_against_reference("llama + rope_freqs", path, base_l);
    const char *plain = write_variant(path, "llama3-nofreqs.gguf", &(struct edit){ .drop_tensor = "rope_freqs" });
    check_against_reference("llama without rope_freqs", plain, var_l);
    expect_changed("rope_freqs");
    /* linear scaling: freq_scale = 1 / factor */
    const char *lin = write_variant(plain, "llama-lin0.gguf", &(struct edit){ .set_kv = "llama.rope.scaling.type", .set_str = "linear" });
    lin = write_variant(lin, "llama-linear.gguf", &(struct edit){ .set_kv = "llama.rope.scaling.factor", .set_f32 = 4.0f });
    check_against_reference("llama + linear scaling x4", lin, base_l);
    expect_changed("linear scaling");
    /* "none" ignores the factor, as llama.cpp does */
    const char *none = write_variant(lin, "llama-none.gguf", &(struct edit){ .set_kv = "llama.rope.scaling.type", .set_str = "none" });
    char msg[512];
    int nv;
    CHECK(sprig_logits(none, base_l, &nv, msg, sizeof msg));
    CHECK(max_abs_diff(base_l, var_l, (size_t)NTOK * 300, NULL) == 0);
}

static void test_qwen2_biases(void)
{
    struct sprig_mkmodel_params p = shape("qwen2");
    const char *path = write_model("qwen2.gguf", &p);
    sprig_model *m = NULL;
    CHECK(sprig_model_load(path, &m, NULL) == SPRIG_OK);
    if (m) {
        CHECK(m->layers[1].bq && m->layers[1].bk && m->layers[1].bv && !m->layers[0].q_norm && m->hp.rope_mode == SPRIG_ROPE_NEOX);
        sprig_model_free(m);
    }
    check_against_reference("qwen2", path, base_l);
    const char *zb = write_variant(path, "qwen2-zero-bias.gguf", &(struct edit){ .zero_tensor = ".bias" });
    check_against_reference("qwen2 with zero biases", zb, var_l);
    expect_changed("qwen2's q/k/v biases");
    p.output = SPRIG_MKMODEL_OUTPUT_TIED;
    check_against_reference("qwen2 tied", write_model("qwen2-tied.gguf", &p), var_l);
}

static void test_qwen3_norms(void)
{
    struct sprig_mkmodel_params p = shape("qwen3");
    p.head_dim = 32;   /* 4 heads x 32 = 128 != dim 64, as Qwen3 0.6B's 16 x 128 != 1024 */
    const char *path = write_model("qwen3.gguf", &p);
    sprig_model *m = NULL;
    CHECK(sprig_model_load(path, &m, NULL) == SPRIG_OK);
    if (m) {
        CHECK(m->hp.head_dim == 32 && m->hp.n_rot == 32 && m->tied_output && m->layers[0].q_norm && m->layers[1].k_norm);
        CHECK(!m->layers[0].bq && m->hp.rope_mode == SPRIG_ROPE_NEOX);
        sprig_model_free(m);
    }
    check_against_reference("qwen3 (head size 32)", path, base_l);
    const char *ones = write_variant(path, "qwen3-ones.gguf", &(struct edit){ .ones_tensor = "_norm.weight" });
    check_against_reference("qwen3 with unit q/k norms", ones, var_l);
    expect_changed("qwen3's q/k norms");
    p.output = SPRIG_MKMODEL_OUTPUT_UNTIED;
    p.head_dim = 0;
    check_against_reference("qwen3 untied, head size 16", write_model("qwen3-untied.gguf", &p), var_l);
}

/* llama's optional attn_output.bias [dim]: added to the output projection
 * before the residual add, as llama.cpp does */
static void test_llama_output_bias(void)
{
    struct sprig_mkmodel_params p = shape("llama");
    const char *path = write_model("llama-nobo.gguf", &p);
    check_against_reference("llama", path, base_l);
    const char *bo = write_variant(path, "llama-bo.gguf", &(struct edit){ .add_tensor = "blk.1.attn_output.bias", .add_ne0 = 64 });
    sprig_model *m = NULL;
    CHECK(sprig_model_load(bo, &m, NULL) == SPRIG_OK);
    if (m) {
        CHECK(!m->layers[0].bo && m->layers[1].bo && m->layers[1].bo[1] == 0.05f * -2);
        sprig_model_free(m);
    }
    check_against_reference("llama + attn_output.bias", bo, var_l);
    expect_changed("attn_output.bias");
}

/* A weight the matmul layer refuses (a type without a kernel in this build,
 * or a packed copy that does not fit) is refused naming the file too (the
 * fuzzer found the matmul layer's message alone). Every K-quant file type
 * either loads and runs or says which file. */
static void test_weight_refusal_names_the_file(void)
{
    static const char *types[] = { "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k" };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        struct sprig_mkmodel_params p = shape("llama");
        p.dim = 256;
        p.ffn = 256;
        p.n_heads = 2;
        p.n_kv_heads = 1;
        p.n_layers = 1;
        p.ftype = sprig_ftype_find(types[i]);
        CHECK(p.ftype != NULL);
        if (!p.ftype) continue;
        p.type = p.ftype->type;
        char name[64];
        snprintf(name, sizeof name, "k-%s.gguf", types[i]);
        const char *path = write_model(name, &p);
        sprig_error err = { 0 };
        sprig_model *m = NULL;
        sprig_status st = sprig_model_load(path, &m, &err);
        CHECKF(st == SPRIG_OK || (!m && strstr(err.msg, path) == err.msg), "%s: status %d, message '%s' names the file first",
               types[i], st, err.msg);
        fprintf(stderr, "  %s: %s\n", types[i], st == SPRIG_OK ? "loads" : err.msg);
        sprig_model_free(m);
    }
}

/* A head larger than the attention kernels take is refused at load, naming
 * the file (it loaded, and the first forward aborted in the attention) */
static void test_head_dim_bound(void)
{
    struct sprig_mkmodel_params p = shape("llama");
    p.n_heads = 2;
    p.n_kv_heads = 1;
    p.n_layers = 1;
    p.head_dim = 1024;
    const char *path = write_model("hd1024.gguf", &p);
    copy_to_corpus(path, "hd1024.gguf");
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    CHECK(sprig_model_load(path, &m, &err) == SPRIG_E_UNSUPPORTED && !m);
    CHECKF(strstr(err.msg, path) == err.msg && strstr(err.msg, "head dimension 1024"), "message '%s'", err.msg);
    p.head_dim = 512;   /* the largest that runs (gemma4's global heads) */
    path = write_model("hd512.gguf", &p);
    char msg[512];
    int nv = 0;
    CHECKF(sprig_logits(path, var_l, &nv, msg, sizeof msg), "head dimension 512 runs: %s", msg);
}

static void expect_refused(const char *src, const char *name, const struct edit *e, sprig_status want, const char *n1, const char *n2)
{
    const char *path = write_variant(src, name, e);
    if (!path) return;
    copy_to_corpus(path, name);
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(path, &m, &err);
    CHECKF(st == want && !m, "%s: status %d (%s), want %d", name, st, err.msg, want);
    CHECKF(strstr(err.msg, n1) && (!n2 || strstr(err.msg, n2)), "%s: message '%s' should name '%s' and '%s'", name, err.msg, n1,
           n2 ? n2 : "");
    CHECKF(strstr(err.msg, path) != NULL, "%s: message '%s' names the file", name, err.msg);
    sprig_model_free(m);
}

static void test_broken_files_are_refused_by_name(void)
{
    struct sprig_mkmodel_params p = shape("llama");
    p.rope_scaling = SPRIG_MKMODEL_ROPE_LLAMA3;
    char l3[1024];   /* test_tmpfile names live in a ring of 8 */
    snprintf(l3, sizeof l3, "%s", write_model("b-llama3.gguf", &p));
    expect_refused(l3, "rope-freqs-len.gguf", &(struct edit){ .resize_tensor = "rope_freqs", .resize_ne0 = 9 }, SPRIG_E_FORMAT,
                   "tensor 'rope_freqs.weight' has shape [9", "expected [8]");
    expect_refused(l3, "rope-freqs-zero.gguf", &(struct edit){ .zero_tensor = "rope_freqs" }, SPRIG_E_FORMAT, "rope_freqs.weight",
                   "element 0");
    expect_refused(l3, "yarn.gguf", &(struct edit){ .set_kv = "llama.rope.scaling.type", .set_str = "yarn" }, SPRIG_E_UNSUPPORTED,
                   "llama.rope.scaling.type", "'yarn'");
    expect_refused(l3, "longrope.gguf", &(struct edit){ .set_kv = "llama.rope.scaling.type", .set_str = "longrope" },
                   SPRIG_E_UNSUPPORTED, "llama.rope.scaling.type", "'longrope'");
    expect_refused(l3, "factor.gguf", &(struct edit){ .set_kv = "llama.rope.scaling.factor", .set_f32 = -2.0f }, SPRIG_E_FORMAT,
                   "llama.rope.scaling.factor", NULL);
    expect_refused(l3, "vlen.gguf", &(struct edit){ .set_kv = "llama.attention.value_length", .set_u32 = 8, .set_is_u32 = true },
                   SPRIG_E_UNSUPPORTED, "llama.attention.value_length", NULL);
    expect_refused(l3, "klen.gguf", &(struct edit){ .set_kv = "llama.attention.key_length", .set_u32 = 32, .set_is_u32 = true },
                   SPRIG_E_FORMAT, "blk.0.attn_q.weight", "expected [64, 128]");

    /* a tensor the architecture does not load is refused by name, as
     * llama.cpp refuses it ("wrong number of tensors") */
    expect_refused(l3, "extra-tensor.gguf", &(struct edit){ .add_tensor = "blk.0.ffn_gate.bias", .add_ne0 = 96 },
                   SPRIG_E_UNSUPPORTED, "tensor 'blk.0.ffn_gate.bias' is not one architecture 'llama' uses", NULL);
    expect_refused(l3, "extra-layer.gguf", &(struct edit){ .add_tensor = "blk.2.attn_norm.weight", .add_ne0 = 64 },
                   SPRIG_E_UNSUPPORTED, "tensor 'blk.2.attn_norm.weight' is not one", "(2 layers)");
    expect_refused(l3, "bo-shape.gguf", &(struct edit){ .add_tensor = "blk.0.attn_output.bias", .add_ne0 = 128 },
                   SPRIG_E_FORMAT, "tensor 'blk.0.attn_output.bias' has shape [128", "expected [64]");

    p = shape("qwen2");
    char q2[1024];   /* test_tmpfile names live in a ring of 8 */
    snprintf(q2, sizeof q2, "%s", write_model("b-qwen2.gguf", &p));
    expect_refused(q2, "q2-bo.gguf", &(struct edit){ .add_tensor = "blk.0.attn_output.bias", .add_ne0 = 64 },
                   SPRIG_E_UNSUPPORTED, "tensor 'blk.0.attn_output.bias' is not one architecture 'qwen2' uses", NULL);
    expect_refused(q2, "no-bias.gguf", &(struct edit){ .drop_tensor = "blk.1.attn_k.bias" }, SPRIG_E_FORMAT,
                   "missing tensor 'blk.1.attn_k.bias'", NULL);
    expect_refused(q2, "bias-shape.gguf", &(struct edit){ .resize_tensor = "blk.0.attn_q.bias", .resize_ne0 = 32 }, SPRIG_E_FORMAT,
                   "tensor 'blk.0.attn_q.bias' has shape [32", "expected [64]");
    expect_refused(q2, "q2-vocab.gguf", &(struct edit){ .set_kv = "qwen2.vocab_size", .set_u32 = 301, .set_is_u32 = true },
                   SPRIG_E_FORMAT, "qwen2.vocab_size", NULL);

    p = shape("qwen3");
    p.head_dim = 32;
    char q3[1024];   /* test_tmpfile names live in a ring of 8 */
    snprintf(q3, sizeof q3, "%s", write_model("b-qwen3.gguf", &p));
    expect_refused(q3, "no-qnorm.gguf", &(struct edit){ .drop_tensor = "blk.1.attn_q_norm" }, SPRIG_E_FORMAT,
                   "missing tensor 'blk.1.attn_q_norm.weight'", NULL);
    expect_refused(q3, "knorm-shape.gguf", &(struct edit){ .resize_tensor = "blk.0.attn_k_norm", .resize_ne0 = 16 }, SPRIG_E_FORMAT,
                   "tensor 'blk.0.attn_k_norm.weight' has shape [16", "expected [32]");
    expect_refused(q3, "no-keylen.gguf", &(struct edit){ .drop_kv = "qwen3.attention.key_length" }, SPRIG_E_UNSUPPORTED,
                   "qwen3.attention.value_length", "key head size 16");
    expect_refused(q3, "arch.gguf", &(struct edit){ .set_kv = "general.architecture", .set_str = "qwen3next" }, SPRIG_E_UNSUPPORTED,
                   "'qwen3next' is not supported", "llama, qwen2, qwen3");
}

int main(void)
{
    RUN(test_llama3_rope_freqs);
    RUN(test_qwen2_biases);
    RUN(test_qwen3_norms);
    RUN(test_llama_output_bias);
    RUN(test_weight_refusal_names_the_file);
    RUN(test_head_dim_bound);
    RUN(test_broken_files_are_refused_by_name);
    return test_summary("test-arch");
}
