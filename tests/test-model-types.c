/*
 * tests/test-model-types.c — the exactness speculation relies on, for every
 * weight type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) on a synthetic model whose dims
 * exercise the kernels' tails: every row of a batched forward is
 * bit-identical to the same token decoded alone, for 1, 2 and 3 threads, and
 * a tree forward (ancestor mask, depth positions) followed by a KV gather
 * equals plain decoding of the accepted path. Also the reference kernels
 * (SPRIG_NO_SIMD path) against the SIMD ones end to end. A Q4_K_M file whose
 * rows of 160 take llama-quantize's Q5_0 fallback runs, batch-independent,
 * close to its F32 twin.
 */
#include "test.h"
#include "mkmodel/mkmodel.h"
#include "gguf/quant_mix.h"
#include "model/model.h"
#include "tensor/ops.h"

static const int types[] = { SPRIG_TYPE_F32,  SPRIG_TYPE_F16,  SPRIG_TYPE_BF16, SPRIG_TYPE_Q8_0,
                             SPRIG_TYPE_Q4_0, SPRIG_TYPE_Q4_1, SPRIG_TYPE_Q5_0, SPRIG_TYPE_Q5_1 };

/* ftype: a llama.cpp file type (NULL: every weight of `type`). */
static sprig_model *make_shape(int type, const char *ftype, int dim, int heads, int kv_heads, int ffn)
{
    struct sprig_mkmodel_params p;
    sprig_error err = { 0 };
    CHECK(sprig_mkmodel_preset("tiny", &p, &err) == SPRIG_OK);
    p.dim = dim;
    p.n_heads = heads;
    p.n_kv_heads = kv_heads;
    p.ffn = ffn;
    p.n_layers = 2;
    p.type = type;
    p.seed = 11;
    if (ftype) p.ftype = sprig_ftype_find(ftype);
    char name[64];
    snprintf(name, sizeof name, "tiny-%s-%d.gguf", ftype ? ftype : sprig_type_name(type), dim);
    const char *path = test_tmpfile(name);
    CHECKF(sprig_mkmodel_write(&p, path, &err) == SPRIG_OK, "%s", err.msg);
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(path, &m, &err) == SPRIG_OK, "%s", err.msg);
    return m;
}

/* dim 96 = 6 x 16: tails in the column blocking, 3 x 32 quant blocks */
static sprig_model *make(int type) { return make_shape(type, NULL, 96, 6, 2, 160); }

static sprig_ctx *ctx_for(const sprig_model *m, sprig_pool *pool)
{
    sprig_error err = { 0 };
    sprig_ctx *c = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 128, .n_batch = 32 };
    CHECKF(sprig_ctx_create(m, pool, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
    return c;
}

static void batched_equals_sequential(const sprig_model *m, sprig_pool *pool, int type)
{
    int V = m->hp.n_vocab, N = 24;
    int32_t toks[24];
    for (int i = 0; i < N; i++) toks[i] = i == 0 ? 1 : 3 + (i * 131) % (V - 3);
    float *a = malloc(sizeof(float) * V * N), *b = malloc(sizeof(float) * V * N);
    sprig_error err = { 0 };
    sprig_ctx *c1 = ctx_for(m, pool), *c2 = ctx_for(m, pool);
    CHECK(sprig_forward(c1, &(struct sprig_fwd){ .n = 4, .tokens = toks }, &err) == SPRIG_OK);
    CHECK(sprig_forward(c1, &(struct sprig_fwd){ .n = N - 4, .tokens = toks + 4, .n_out = N - 4, .logits = a + 4 * V }, &err) == SPRIG_OK);
    for (int i = 0; i < N; i++)
        CHECK(sprig_forward(c2, &(struct sprig_fwd){ .n = 1, .tokens = toks + i, .n_out = 1, .logits = b + i * V }, &err) == SPRIG_OK);
    CHECKF(memcmp(a + 4 * V, b + 4 * V, sizeof(float) * V * (N - 4)) == 0, "%s, %d threads: batched rows differ from sequential",
           sprig_type_name(type), sprig_pool_size(pool));
    sprig_ctx_free(c1);
    sprig_ctx_free(c2);
    free(a);
    free(b);
}

static void tree_equals_plain(const sprig_model *m, sprig_pool *pool, int type)
{
    int V = m->hp.n_vocab;
    int32_t hist[5] = { 1, 40, 41, 42, 43 };
    int32_t tok[6] = { 50, 51, 52, 53, 54, 55 };
    int parent[6] = { 0, 0, 1, 0, 3, 4 };     /* root; chain 1-2; sibling 3 with chain 4-5 */
    int depth[6] = { 0, 1, 2, 1, 2, 3 };
    int n = 6, off = 5;
    float mask[6][11];
    for (int q = 0; q < n; q++)
        for (int j = 0; j < off + n; j++) {
            bool vis = j < off;
            for (int a = q; !vis;) { if (a == j - off) vis = true; if (a == 0) break; a = parent[a]; }
            mask[q][j] = vis ? 0 : -1e9f;
        }
    int32_t pos[6];
    for (int i = 0; i < n; i++) pos[i] = off + depth[i];
    float *tl = malloc(sizeof(float) * V * n), *pl = malloc(sizeof(float) * V * 4);
    sprig_error err = { 0 };
    sprig_ctx *ct = ctx_for(m, pool), *cp = ctx_for(m, pool);
    CHECK(sprig_forward(ct, &(struct sprig_fwd){ .n = off, .tokens = hist }, &err) == SPRIG_OK);
    CHECK(sprig_forward(cp, &(struct sprig_fwd){ .n = off, .tokens = hist }, &err) == SPRIG_OK);
    CHECK(sprig_forward(ct, &(struct sprig_fwd){ .n = n, .tokens = tok, .pos = pos, .mask = &mask[0][0], .n_out = n, .logits = tl }, &err) == SPRIG_OK);
    int path[4] = { 0, 3, 4, 5 };
    for (int i = 0; i < 4; i++)
        CHECK(sprig_forward(cp, &(struct sprig_fwd){ .n = 1, .tokens = &tok[path[i]], .n_out = 1, .logits = pl + i * V }, &err) == SPRIG_OK);
    for (int i = 0; i < 4; i++)
        CHECKF(memcmp(tl + path[i] * V, pl + i * V, sizeof(float) * V) == 0, "%s: tree node %d differs from plain",
               sprig_type_name(type), path[i]);
    CHECK(sprig_kv_gather_within_tail(sprig_ctx_kv(ct), n, path, 4, &err) == SPRIG_OK);
    int32_t nxt = 60;
    float *x = malloc(sizeof(float) * V), *y = malloc(sizeof(float) * V);
    CHECK(sprig_forward(ct, &(struct sprig_fwd){ .n = 1, .tokens = &nxt, .n_out = 1, .logits = x }, &err) == SPRIG_OK);
    CHECK(sprig_forward(cp, &(struct sprig_fwd){ .n = 1, .tokens = &nxt, .n_out = 1, .logits = y }, &err) == SPRIG_OK);
    CHECKF(memcmp(x, y, sizeof(float) * V) == 0, "%s: after the gather the cache differs from plain", sprig_type_name(type));
    free(x); free(y); free(tl); free(pl);
    sprig_ctx_free(ct);
    sprig_ctx_free(cp);
}

static void test_every_type_is_batch_independent(void)
{
    sprig_error err;
    sprig_pool *pools[3] = { NULL, sprig_pool_create(2, &err), sprig_pool_create(3, &err) };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        sprig_model *m = make(types[i]);
        if (!m) continue;
        for (int p = 0; p < 3; p++) {
            batched_equals_sequential(m, pools[p], types[i]);
            tree_equals_plain(m, pools[p], types[i]);
        }
        sprig_model_free(m);
    }
    sprig_pool_free(pools[1]);
    sprig_pool_free(pools[2]);
}

/* The logits of a quantized model stay close to its F32 twin (same seed):
 * the quantizers and kernels compute the right thing, not just a consistent one. */
static void test_types_agree_with_f32(void)
{
    sprig_model *ref = make(SPRIG_TYPE_F32);
    if (!ref) return;
    int V = ref->hp.n_vocab;
    int32_t toks[6] = { 1, 70, 71, 72, 73, 74 };
    float *lr = malloc(sizeof(float) * V), *lq = malloc(sizeof(float) * V);
    sprig_error err = { 0 };
    sprig_ctx *c = ctx_for(ref, NULL);
    CHECK(sprig_prefill(c, toks, 6, lr, NULL, &err) == SPRIG_OK);
    sprig_ctx_free(c);
    static const double tol[] = { 0, 2e-3, 2e-2, 3e-2, 1.5e-1, 1.5e-1, 8e-2, 8e-2 };
    for (size_t i = 1; i < sizeof types / sizeof types[0]; i++) {
        sprig_model *m = make(types[i]);
        if (!m) continue;
        c = ctx_for(m, NULL);
        CHECK(sprig_prefill(c, toks, 6, lq, NULL, &err) == SPRIG_OK);
        double md = 0, mag = 0;
        for (int k = 0; k < V; k++) { md = fmax(md, fabs((double)lq[k] - lr[k])); mag = fmax(mag, fabs((double)lr[k])); }
        CHECKF(md <= tol[i] * (mag > 1 ? mag : 1), "%s: max |logit - f32| = %g (max |logit| %g)", sprig_type_name(types[i]), md, mag);
        fprintf(stderr, "  %s vs f32: max |logit diff| %.3g (max |logit| %.3g)\n", sprig_type_name(types[i]), md, mag);
        sprig_ctx_free(c);
        sprig_model_free(m);
    }
    free(lr);
    free(lq);
    sprig_model_free(ref);
}

/* The Q4_K_M file of a model with rows of 160 (Q5_0 fallback for the
 * attention and embeddings, K types where 256 divides): it runs, every
 * logit is finite, batched rows equal sequential ones, and the logits stay
 * close to the F32 twin of the same shape. */
static void test_q4_k_m_fallback(void)
{
    sprig_model *ref = make_shape(SPRIG_TYPE_F32, NULL, 160, 5, 1, 256);
    sprig_model *m = make_shape(SPRIG_TYPE_Q4_K, "q4_k_m", 160, 5, 1, 256);
    if (!ref || !m) { sprig_model_free(ref); sprig_model_free(m); return; }
    CHECK(m->layers[0].wq.type == SPRIG_TYPE_Q5_0);   /* the fallback is what runs */
    sprig_error err;
    sprig_pool *pool = sprig_pool_create(3, &err);
    batched_equals_sequential(m, NULL, SPRIG_TYPE_Q5_0);
    batched_equals_sequential(m, pool, SPRIG_TYPE_Q5_0);
    int V = ref->hp.n_vocab;
    int32_t toks[6] = { 1, 70, 71, 72, 73, 74 };
    float *lr = malloc(sizeof(float) * V), *lq = malloc(sizeof(float) * V);
    sprig_ctx *c = ctx_for(ref, NULL);
    CHECK(sprig_prefill(c, toks, 6, lr, NULL, &err) == SPRIG_OK);
    sprig_ctx_free(c);
    c = ctx_for(m, pool);
    CHECK(sprig_prefill(c, toks, 6, lq, NULL, &err) == SPRIG_OK);
    sprig_ctx_free(c);
    double md = 0, mag = 0;
    int nonfinite = 0;
    for (int k = 0; k < V; k++) {
        nonfinite += !isfinite(lq[k]);
        md = fmax(md, fabs((double)lq[k] - lr[k]));
        mag = fmax(mag, fabs((double)lr[k]));
    }
    CHECK_EQ_INT(nonfinite, 0);
    CHECKF(md <= 1.5e-1 * (mag > 1 ? mag : 1), "q4_k_m fallback: max |logit - f32| = %g (max |logit| %g)", md, mag);
    fprintf(stderr, "  q4_k_m (q5_0 fallback) vs f32: max |logit diff| %.3g (max |logit| %.3g)\n", md, mag);
    free(lr);
    free(lq);
    sprig_pool_free(pool);
    sprig_model_free(m);
    sprig_model_free(ref);
}

int main(void)
{
    RUN(test_every_type_is_batch_independent);
    RUN(test_types_agree_with_f32);
    RUN(test_q4_k_m_fallback);
    return test_summary("test-model-types");
}
