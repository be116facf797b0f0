/*
 * tests/test-attention.c — tree-batch attention: every kernel against the
 * one-query reference (bitwise), the reference against a double-precision
 * softmax (tolerance), and the exactness contract the speculative decoder
 * relies on: row i of a causal batch equals that query alone, a tree-masked
 * row equals the same query alone against its visible keys compacted to
 * contiguous slots, bitwise, for f32/f16 caches, hd 8/64/128/256/512, GQA and
 * thread counts 1/2/3. Small heads (hd <= 16, the AVX-512 chunked path):
 * every chunk layout, n = 1..16, histories up to 2048, random and tree masks,
 * a masked key holding inf values. Also: -1e9 rows never NaN, argument
 * checks, scratch limits.
 *
 * SPRIG_BENCH_ATTN=1 additionally prints time per call for n = 1..64 at
 * history 64/512/2048 (llama-1b shapes, 2 threads).
 */
#include "test.h"
#include "base/mem.h"
#include "base/pool.h"
#include "base/rng.h"
#include "base/timer.h"
#include "tensor/attention.h"
#include "tensor/types.h"

static sprig_pool *g_pool[4];    /* index = thread count (1..3) */
static bool g_has[3];             /* kernels the CPU can run, by g_kernels index */

/* ------------------------------------------------------------------ fixtures */

typedef struct {
    int n, n_head, n_kv_head, hd, n_keys, type;
    int64_t stride;
    float *q;         /* [n][n_head*hd] */
    void *k, *v;      /* [n_keys][stride] */
    float *mask;      /* [n][n_keys] or NULL */
    float *out;       /* [n][n_head*hd] */
    float *scratch;
    size_t scratch_n;
} fx;

static void fill(float *x, size_t n, sprig_rng *r, double amp)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(amp * sprig_rng_normal(r));
}

static void fx_init(fx *f, int n, int n_head, int n_kv_head, int hd, int n_keys, int type, int pad, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    f->n = n; f->n_head = n_head; f->n_kv_head = n_kv_head; f->hd = hd; f->n_keys = n_keys; f->type = type;
    f->stride = (int64_t)n_kv_head * hd + pad;
    sprig_rng r;
    sprig_rng_seed(&r, seed);
    size_t qn = (size_t)n * n_head * hd, kn = (size_t)n_keys * f->stride;
    f->q = sprig_calloc_aligned(qn, sizeof(float));
    f->out = sprig_calloc_aligned(qn, sizeof(float));
    fill(f->q, qn, &r, 1.5);
    float *kf = sprig_calloc_aligned(kn, sizeof(float)), *vf = sprig_calloc_aligned(kn, sizeof(float));
    fill(kf, kn, &r, 1.0);
    fill(vf, kn, &r, 1.0);
    if (type == SPRIG_TYPE_F16) {
        f->k = sprig_calloc_aligned(kn, 2);
        f->v = sprig_calloc_aligned(kn, 2);
        for (size_t i = 0; i < kn; i++) {
            ((sprig_f16 *)f->k)[i] = sprig_f32_to_f16(kf[i]);
            ((sprig_f16 *)f->v)[i] = sprig_f32_to_f16(vf[i]);
        }
        sprig_free_aligned(kf);
        sprig_free_aligned(vf);
    } else {
        f->k = kf;
        f->v = vf;
    }
    f->scratch_n = sprig_attn_scratch_floats(n, n_head, n_keys, 3);
    f->scratch = sprig_calloc_aligned(f->scratch_n, sizeof(float));
}

static void fx_free(fx *f)
{
    sprig_free_aligned(f->q); sprig_free_aligned(f->out); sprig_free_aligned(f->k);
    sprig_free_aligned(f->v); sprig_free_aligned(f->mask); sprig_free_aligned(f->scratch);
}

static sprig_attn_args fx_args(const fx *f)
{
    sprig_attn_args a = {
        .q = f->q, .n = f->n, .n_head = f->n_head, .n_kv_head = f->n_kv_head, .hd = f->hd,
        .k = f->k, .v = f->v, .kv_type = f->type, .kv_stride = f->stride, .n_keys = f->n_keys,
        .mask = f->mask, .scale = 1.0f / sqrtf((float)f->hd), .out = f->out,
        .scratch = f->scratch, .scratch_floats = f->scratch_n,
    };
    return a;
}

static size_t esize(int type) { return type == SPRIG_TYPE_F16 ? 2 : 4; }

/* Tree mask [n][offset+n]: history open, block = ancestors and self. */
static float *tree_mask(const int *parents, int n, int offset)
{
    float *m = sprig_calloc_aligned((size_t)n * (offset + n), sizeof(float));
    for (int i = 0; i < n; i++) {
        float *row = m + (size_t)i * (offset + n);
        for (int t = 0; t < n; t++) row[offset + t] = -1e9f;
        for (int t = i;; t = parents[t]) {
            row[offset + t] = 0.0f;
            if (t == 0) break;
        }
    }
    return m;
}

/* Run the single query `qi` of f against only the keys row `qi` of f->mask
 * sees (or the causal prefix when f->mask is NULL), compacted to contiguous
 * slots; writes the head outputs [n_head*hd] to out. */
static void run_alone(const fx *f, int qi, float *out, int nth)
{
    const int nk = f->n_keys, qd = f->n_head * f->hd;
    const size_t es = esize(f->type), row = (size_t)f->stride * es;
    char *kc = sprig_calloc_aligned((size_t)nk, row), *vc = sprig_calloc_aligned((size_t)nk, row);
    int m = 0;
    for (int j = 0; j < nk; j++) {
        bool vis = f->mask ? f->mask[(size_t)qi * nk + j] == 0.0f : j < nk - f->n + qi + 1;
        if (!vis) continue;
        memcpy(kc + (size_t)m * row, (const char *)f->k + (size_t)j * row, row);
        memcpy(vc + (size_t)m * row, (const char *)f->v + (size_t)j * row, row);
        m++;
    }
    size_t sn = sprig_attn_scratch_floats(1, f->n_head, m, nth);
    float *scr = sprig_calloc_aligned(sn, sizeof(float));
    sprig_attn_args a = {
        .q = f->q + (size_t)qi * qd, .n = 1, .n_head = f->n_head, .n_kv_head = f->n_kv_head, .hd = f->hd,
        .k = kc, .v = vc, .kv_type = f->type, .kv_stride = f->stride, .n_keys = m, .mask = NULL,
        .scale = 1.0f / sqrtf((float)f->hd), .out = out, .scratch = scr, .scratch_floats = sn,
    };
    sprig_attention(g_pool[nth], &a);
    sprig_free_aligned(scr);
    sprig_free_aligned(kc);
    sprig_free_aligned(vc);
}

static const char *g_kernels[3] = { "c", "avx2", "avx512" };
#define N_KERNELS 3

/* ------------------------------------------------------------------ tests */

/* Reference against a straightforward double-precision attention. */
static void test_ref_matches_double(void)
{
    const int cfg[][5] = { { 3, 8, 4, 8, 9 }, { 4, 4, 1, 64, 21 }, { 2, 6, 6, 128, 5 }, { 5, 8, 2, 24, 40 } };
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        for (int masked = 0; masked < 2; masked++) {
            fx f;
            fx_init(&f, cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3], cfg[c][4], SPRIG_TYPE_F32, 3, 100 + c);
            if (masked) {   /* random visibility, each row sees at least one key */
                sprig_rng r;
                sprig_rng_seed(&r, 7 + c);
                f.mask = sprig_calloc_aligned((size_t)f.n * f.n_keys, sizeof(float));
                for (int i = 0; i < f.n; i++)
                    for (int j = 0; j < f.n_keys; j++)
                        f.mask[(size_t)i * f.n_keys + j] = (j != i && sprig_rng_uniform(&r) < 0.4) ? -1e9f : 0.0f;
            }
            sprig_attn_args a = fx_args(&f);
            sprig_attention_ref(&a);
            const int group = f.n_head / f.n_kv_head, qd = f.n_head * f.hd;
            double maxerr = 0;
            for (int i = 0; i < f.n; i++)
                for (int h = 0; h < f.n_head; h++) {
                    const int g = h / group;
                    double s[64], mx = -1e300, sum = 0, o[128] = { 0 };
                    const float *q = f.q + (size_t)i * qd + h * f.hd;
                    for (int j = 0; j < f.n_keys; j++) {
                        bool vis = masked ? f.mask[(size_t)i * f.n_keys + j] == 0.0f : j < f.n_keys - f.n + i + 1;
                        s[j] = -1e300;
                        if (!vis) continue;
                        const float *k = (const float *)f.k + (size_t)j * f.stride + g * f.hd;
                        double d = 0;
                        for (int e = 0; e < f.hd; e++) d += (double)q[e] * k[e];
                        s[j] = d / sqrt((double)f.hd);
                        if (s[j] > mx) mx = s[j];
                    }
                    for (int j = 0; j < f.n_keys; j++) {
                        if (s[j] == -1e300) continue;
                        double p = exp(s[j] - mx);
                        sum += p;
                        const float *v = (const float *)f.v + (size_t)j * f.stride + g * f.hd;
                        for (int e = 0; e < f.hd; e++) o[e] += p * v[e];
                    }
                    for (int e = 0; e < f.hd; e++) {
                        double err = fabs(o[e] / sum - f.out[(size_t)i * qd + h * f.hd + e]);
                        if (err > maxerr) maxerr = err;
                    }
                }
            CHECKF(maxerr < 2e-5, "config %zu masked %d: max error %g", c, masked, maxerr);
            fx_free(&f);
        }
    }
}

/* Every kernel and thread count equals the reference bit for bit. */
static void test_kernels_match_ref(void)
{
    const int shapes[][3] = { { 8, 4, 8 }, { 32, 8, 64 }, { 4, 1, 128 }, { 6, 6, 24 }, { 8, 2, 80 }, { 2, 2, 1 }, { 4, 2, 200 },
                              { 2, 1, 256 }, { 4, 2, 512 } };
    const int ns[] = { 1, 3, 8, 17, 33 };
    const int offs[] = { 0, 5, 70 };
    int cases = 0, bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 2; t++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++)
                    for (int masked = 0; masked < 2; masked++) {
                        if (test_quick() && (ni + oi + s) % 3 != 0) continue;
                        if (shapes[s][0] >= 32 && ns[ni] > 8 && offs[oi] > 5) continue;   /* keep it fast */
                        const int n = ns[ni], nk = offs[oi] + n;
                        const int type = t ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32;
                        fx f;
                        fx_init(&f, n, shapes[s][0], shapes[s][1], shapes[s][2], nk, type, (int)s,
                                1000 + s * 100 + ni * 10 + oi + t * 7);
                        if (masked) {
                            sprig_rng r;
                            sprig_rng_seed(&r, 99 + s + ni);
                            f.mask = sprig_calloc_aligned((size_t)n * nk, sizeof(float));
                            for (int i = 0; i < n; i++)
                                for (int j = 0; j < nk; j++) {
                                    double u = sprig_rng_uniform(&r);
                                    f.mask[(size_t)i * nk + j] = u < 0.3 ? -1e9f : u < 0.35 ? -0.0f : 0.0f;
                                }
                        }
                        size_t qn = (size_t)n * f.n_head * f.hd;
                        float *want = malloc(qn * sizeof(float));
                        sprig_attn_args a = fx_args(&f);
                        if ((ni + oi + s) % 2) a.softcap = 1.5f;   /* gemma2's soft-capped scores, every path */
                        sprig_attention_ref(&a);
                        memcpy(want, f.out, qn * sizeof(float));
                        for (int kidx = 0; kidx < N_KERNELS; kidx++) {
                            if (!g_has[kidx]) continue;
                            CHECK(sprig_attention_use_kernel(g_kernels[kidx]));
                            for (int nth = 1; nth <= 3; nth++) {
                                memset(f.out, 0xff, qn * sizeof(float));
                                sprig_attention(g_pool[nth], &a);
                                cases++;
                                if (memcmp(want, f.out, qn * sizeof(float)) != 0) {
                                    if (bad++ < 5)
                                        fprintf(stderr, "  mismatch: kernel %s nth %d heads %d/%d hd %d %s n %d off %d mask %d\n",
                                                g_kernels[kidx], nth, f.n_head, f.n_kv_head, f.hd,
                                                t ? "f16" : "f32", n, offs[oi], masked);
                                }
                            }
                        }
                        sprig_attention_use_kernel(NULL);
                        free(want);
                        fx_free(&f);
                    }
    CHECKF(bad == 0, "%d of %d kernel runs differ from the reference", bad, cases);
    CHECK(cases > 50);
}

/* Row i of a causal batch == query i alone against keys 0..offset+i. */
static void test_causal_rows_equal_single(void)
{
    const int shapes[][3] = { { 8, 4, 8 }, { 32, 8, 64 }, { 8, 8, 128 } };
    for (size_t s = 0; s < 3; s++)
        for (int t = 0; t < 2; t++)
            for (int kidx = 0; kidx < N_KERNELS; kidx++) {
                if (!g_has[kidx]) continue;
                sprig_attention_use_kernel(g_kernels[kidx]);
                const int n = test_quick() ? 6 : 12, off = 29;
                fx f;
                fx_init(&f, n, shapes[s][0], shapes[s][1], shapes[s][2], off + n,
                        t ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32, 0, 5000 + s * 2 + t);
                sprig_attn_args a = fx_args(&f);
                const int qd = f.n_head * f.hd;
                float *one = malloc((size_t)qd * sizeof(float));
                for (int nth = 1; nth <= 3; nth += 2) {
                    sprig_attention(g_pool[nth], &a);
                    int bad = 0;
                    for (int i = 0; i < n; i++) {
                        run_alone(&f, i, one, 4 - nth);
                        if (memcmp(one, f.out + (size_t)i * qd, (size_t)qd * sizeof(float))) bad++;
                    }
                    CHECKF(bad == 0, "kernel %s hd %d %s nth %d: %d rows differ from the lone query",
                           g_kernels[kidx], f.hd, t ? "f16" : "f32", nth, bad);
                }
                free(one);
                fx_free(&f);
            }
    sprig_attention_use_kernel(NULL);
}

/* A tree-masked row == the query alone against its ancestors compacted. */
static void test_tree_rows_equal_compacted(void)
{
    /* the chain 0-1-3-4 with the sibling leaf 2, then a bushier tree */
    static const int tree_a[] = { 0, 0, 1, 1, 3 }, tree_b[] = { 0, 0, 1, 1, 3, 2, 0, 6 };
    const int shapes[][3] = { { 8, 4, 8 }, { 32, 8, 64 }, { 4, 2, 128 } };
    const int offs[] = { 0, 1, 37, 130 };
    for (int tr = 0; tr < 2; tr++)
    for (size_t s = 0; s < 3; s++)
        for (int t = 0; t < 2; t++)
            for (size_t oi = 0; oi < 4; oi++)
                for (int kidx = 0; kidx < N_KERNELS; kidx++) {
                    if (!g_has[kidx]) continue;
                    if (test_quick() && oi == 3) continue;
                    sprig_attention_use_kernel(g_kernels[kidx]);
                    const int off = offs[oi];
                    const int *parents = tr ? tree_b : tree_a, n = tr ? 8 : 5;
                    fx f;
                    fx_init(&f, n, shapes[s][0], shapes[s][1], shapes[s][2], off + n,
                            t ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32, 4, 7000 + s * 13 + t * 5 + oi);
                    f.mask = tree_mask(parents, n, off);
                    /* the last node also loses some history columns (a fully masked stretch) */
                    for (int j = off / 3; j < off - 2; j++) f.mask[(size_t)(n - 1) * (off + n) + j] = -1e9f;
                    sprig_attn_args a = fx_args(&f);
                    const int qd = f.n_head * f.hd;
                    float *one = malloc((size_t)qd * sizeof(float));
                    for (int nth = 1; nth <= 3; nth++) {
                        memset(f.out, 0, (size_t)n * qd * sizeof(float));
                        sprig_attention(g_pool[nth], &a);
                        int bad = 0;
                        for (int i = 0; i < n; i++) {
                            run_alone(&f, i, one, 1 + (i % 3));
                            if (memcmp(one, f.out + (size_t)i * qd, (size_t)qd * sizeof(float))) bad++;
                        }
                        CHECKF(bad == 0, "tree %d kernel %s hd %d %s off %d nth %d: %d tree rows differ from the compacted query",
                               tr, g_kernels[kidx], f.hd, t ? "f16" : "f32", off, nth, bad);
                    }
                    free(one);
                    fx_free(&f);
                }
    sprig_attention_use_kernel(NULL);
}

/* The chain [0,0,1,1,3] with a sibling leaf: the sibling is invisible. */
static void test_sibling_invisible(void)
{
    static const int parents[] = { 0, 0, 1, 1, 3 };
    fx f;
    fx_init(&f, 5, 8, 4, 8, 10 + 5, SPRIG_TYPE_F32, 0, 31);
    f.mask = tree_mask(parents, 5, 10);
    sprig_attn_args a = fx_args(&f);
    sprig_attention(g_pool[2], &a);
    float *before = malloc(5 * 64 * sizeof(float));
    memcpy(before, f.out, 5 * 64 * sizeof(float));
    /* perturb node 2's K/V (a sibling of 3, not an ancestor of 4): rows 0,1,3,4 unchanged */
    for (int d = 0; d < 32; d++) {
        ((float *)f.k)[(size_t)(10 + 2) * f.stride + d] += 1.0f;
        ((float *)f.v)[(size_t)(10 + 2) * f.stride + d] -= 3.0f;
    }
    sprig_attention(g_pool[2], &a);
    for (int i = 0; i < 5; i++) {
        bool same = memcmp(before + i * 64, f.out + i * 64, 64 * sizeof(float)) == 0;
        CHECKF(same == (i != 2), "row %d %s after changing node 2", i, same ? "unchanged" : "changed");
    }
    free(before);
    fx_free(&f);
}

/* -1e9 everywhere in a row, or all history masked: finite output, no NaN. */
static void test_masked_rows_finite(void)
{
    for (int kidx = 0; kidx < N_KERNELS; kidx++) {
        if (!g_has[kidx]) continue;
        sprig_attention_use_kernel(g_kernels[kidx]);
        fx f;
        fx_init(&f, 4, 8, 4, 64, 50, SPRIG_TYPE_F16, 0, 41);
        f.mask = sprig_calloc_aligned(4 * 50, sizeof(float));
        for (int j = 0; j < 50; j++) {
            f.mask[0 * 50 + j] = -1e9f;                     /* row 0: everything blocked */
            f.mask[1 * 50 + j] = j == 47 ? 0.0f : -1e9f;     /* row 1: only itself */
            f.mask[2 * 50 + j] = j < 46 ? -1e9f : 0.0f;      /* row 2: history blocked */
        }
        sprig_attn_args a = fx_args(&f);
        sprig_attention(g_pool[2], &a);
        int nonfinite = 0;
        for (int e = 0; e < 4 * 8 * 64; e++) nonfinite += !isfinite(f.out[e]);
        CHECK_EQ_INT(nonfinite, 0);
        /* row 1 sees one key: its output is that key's value exactly (p = 1, sum = 1) */
        for (int h = 0; h < 8; h++)
            for (int d = 0; d < 64; d++) {
                float v = sprig_f16_to_f32(((const sprig_f16 *)f.v)[(size_t)47 * f.stride + (h / 2) * 64 + d]);
                if (f.out[(size_t)1 * 512 + h * 64 + d] != v) { CHECK(f.out[(size_t)1 * 512 + h * 64 + d] == v); h = 8; break; }
            }
        fx_free(&f);
    }
    sprig_attention_use_kernel(NULL);
}

/* GQA: head h reads kv head h / group (values constant per kv head). */
static void test_gqa_mapping(void)
{
    fx f;
    fx_init(&f, 3, 12, 3, 16, 20, SPRIG_TYPE_F32, 0, 51);
    for (int j = 0; j < 20; j++)
        for (int g = 0; g < 3; g++)
            for (int d = 0; d < 16; d++) ((float *)f.v)[(size_t)j * f.stride + g * 16 + d] = (float)(g + 1) * 0.5f;
    sprig_attn_args a = fx_args(&f);
    sprig_attention(g_pool[3], &a);
    for (int i = 0; i < 3; i++)
        for (int h = 0; h < 12; h++)
            CHECK_NEAR(f.out[(size_t)i * 192 + h * 16 + 5], (h / 4 + 1) * 0.5, 1e-6);
    fx_free(&f);
}

/* Head shapes of the small-head path (hd <= 16), one per chunk layout: the
 * real models (8/4/8 target, 4/2/8 drafter), MHA, GQA 3/4/8/16, odd hd. */
static const int g_small_shapes[][3] = {
    { 8, 4, 8 }, { 4, 2, 8 }, { 8, 8, 8 }, { 8, 2, 8 }, { 16, 4, 8 }, { 12, 4, 8 }, { 6, 2, 16 },
    { 4, 4, 16 }, { 1, 1, 16 }, { 3, 3, 12 }, { 32, 4, 4 }, { 8, 1, 7 }, { 16, 16, 2 }, { 24, 8, 3 },
    { 5, 5, 5 }, { 2, 1, 1 }, { 16, 1, 16 }, { 4, 4, 9 },
};
#define N_SMALL_SHAPES (sizeof g_small_shapes / sizeof g_small_shapes[0])

/* Random parents (each node's parent precedes it) and the tree mask over a history. */
static float *random_tree_mask(sprig_rng *r, int n, int off)
{
    int parents[64];
    parents[0] = 0;
    for (int i = 1; i < n; i++) parents[i] = (int)(sprig_rng_uniform(r) * i);
    return tree_mask(parents, n, off);
}

/* Small heads: every n = 1..16, histories up to 2048, causal / random mask /
 * tree mask, f32/f16, every kernel and 1-3 threads, bitwise equal to the reference. */
static void test_small_heads_match_ref(void)
{
    const int hists[] = { 0, 1, 7, 64, 130, 2048 };
    int cases = 0, bad = 0;
    sprig_rng r;
    sprig_rng_seed(&r, 4242);
    for (size_t s = 0; s < N_SMALL_SHAPES; s++)
        for (int n = 1; n <= 16; n++)
            for (size_t hi = 0; hi < sizeof hists / sizeof hists[0]; hi++)
                for (int mode = 0; mode < 3; mode++) {
                    const int hist = hists[hi] == 2048 ? 2048 - n : hists[hi];
                    /* all n for the real shapes; a spread for the others; long histories sparsely */
                    const bool real = s < 2;
                    if (!real && (n + (int)hi + mode) % 4 != 0) continue;
                    if (hist > 200 && (n + mode + (int)s) % (real ? 3 : 5) != 0) continue;
                    if (test_quick() && (n + (int)hi + mode + (int)s) % 5 != 0) continue;
                    const int nk = hist + n, type = (n + (int)s) % 3 == 0 ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32;
                    fx f;
                    fx_init(&f, n, g_small_shapes[s][0], g_small_shapes[s][1], g_small_shapes[s][2], nk, type,
                            (int)(s % 3), 20000 + s * 1000 + n * 10 + hi + mode * 7);
                    if (mode == 1) {
                        f.mask = sprig_calloc_aligned((size_t)n * nk, sizeof(float));
                        for (int i = 0; i < n; i++)
                            for (int j = 0; j < nk; j++) {
                                const double u = sprig_rng_uniform(&r);
                                f.mask[(size_t)i * nk + j] = u < 0.3 ? -1e9f : u < 0.35 ? -0.0f : 0.0f;
                            }
                        /* a key no row sees holds infinite values: skipped, never 0 * inf */
                        const int jb = nk / 2, jv = jb == nk - 1 ? 0 : nk - 1;   /* every row sees key jv */
                        for (int i = 0; i < n && nk >= 2; i++) {
                            f.mask[(size_t)i * nk + jb] = -1e9f;
                            f.mask[(size_t)i * nk + jv] = 0.0f;
                        }
                        for (int e = 0; e < f.n_kv_head * f.hd && nk >= 2; e++) {
                            if (type == SPRIG_TYPE_F16) ((sprig_f16 *)f.v)[(size_t)jb * f.stride + e] = 0x7C00;
                            else ((float *)f.v)[(size_t)jb * f.stride + e] = INFINITY;
                        }
                    } else if (mode == 2) {
                        f.mask = random_tree_mask(&r, n, hist);
                    }
                    const size_t qn = (size_t)n * f.n_head * f.hd;
                    float *want = malloc(qn * sizeof(float));
                    sprig_attn_args a = fx_args(&f);
                    sprig_attention_ref(&a);
                    memcpy(want, f.out, qn * sizeof(float));
                    if (mode == 1) {
                        int nonfinite = 0;
                        for (size_t e = 0; e < qn; e++) nonfinite += !isfinite(want[e]);
                        CHECKF(nonfinite == 0, "shape %zu n %d hist %d", s, n, hist);
                    }
                    for (int kidx = 0; kidx < N_KERNELS; kidx++) {
                        if (!g_has[kidx] || (kidx != 2 && (n + mode) % 4 != 0)) continue;
                        CHECK(sprig_attention_use_kernel(g_kernels[kidx]));
                        for (int nth = 1; nth <= 3; nth++) {
                            if (nth > 1 && (n + (int)hi) % 3 != nth - 1) continue;
                            memset(f.out, 0xff, qn * sizeof(float));
                            sprig_attention(g_pool[nth], &a);
                            cases++;
                            if (memcmp(want, f.out, qn * sizeof(float)) != 0 && bad++ < 5)
                                fprintf(stderr, "  mismatch: kernel %s nth %d heads %d/%d hd %d %s n %d hist %d mode %d\n",
                                        g_kernels[kidx], nth, f.n_head, f.n_kv_head, f.hd,
                                        type == SPRIG_TYPE_F16 ? "f16" : "f32", n, hist, mode);
                        }
                    }
                    sprig_attention_use_kernel(NULL);
                    free(want);
                    fx_free(&f);
                }
    CHECKF(bad == 0, "%d of %d small-head runs differ from the reference", bad, cases);
    CHECK(cases > 200);
}

/* Small heads, the speculative decoder's contract: a causal row and a tree
 * row equal the lone query against its visible keys, at histories 0..2048. */
static void test_small_heads_rows_alone(void)
{
    const int hists[] = { 0, 3, 64, 700, 2040 };
    sprig_rng r;
    sprig_rng_seed(&r, 77);
    for (size_t s = 0; s < 5; s++)
        for (size_t hi = 0; hi < sizeof hists / sizeof hists[0]; hi++)
            for (int tree = 0; tree < 2; tree++) {
                if (test_quick() && (hi + s + tree) % 3 != 0) continue;
                const int n = 2 + (int)((s * 5 + hi * 3 + tree) % 15);   /* 2..16 */
                const int hist = hists[hi];
                fx f;
                fx_init(&f, n, g_small_shapes[s][0], g_small_shapes[s][1], g_small_shapes[s][2], hist + n,
                        (hi + tree) % 2 ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32, 0, 30000 + s * 100 + hi * 10 + tree);
                if (tree) f.mask = random_tree_mask(&r, n, hist);
                sprig_attn_args a = fx_args(&f);
                const int qd = f.n_head * f.hd;
                float *one = malloc((size_t)qd * sizeof(float));
                const int nth = 1 + (int)(hi % 3);
                sprig_attention(g_pool[nth], &a);
                int badrows = 0;
                for (int i = 0; i < n; i++) {
                    run_alone(&f, i, one, 1 + (i % 3));
                    if (memcmp(one, f.out + (size_t)i * qd, (size_t)qd * sizeof(float))) badrows++;
                }
                CHECKF(badrows == 0, "heads %d/%d hd %d n %d hist %d tree %d nth %d: %d rows differ from the lone query",
                       f.n_head, f.n_kv_head, f.hd, n, hist, tree, nth, badrows);
                free(one);
                fx_free(&f);
            }
}

/* Hostile arguments are named by sprig_attn_check. */
/* Records of every format (tensor/kvrows.h), contiguous and paged (pages
 * scattered in memory), keys and values in different formats: every kernel
 * equals the reference bit for bit, and the reference equals attention over
 * the same rows decoded to f32 first (the decode is the only new step). */
struct recs {
    sprig_kvrows r;
    uint8_t *buf;              /* contiguous buffer or the pages' backing */
    const uint8_t **pages;
    float *dec;                /* [n_keys][n_kv_head*hd] decoded rows */
};

static void recs_init(struct recs *R, int fmt, int paged, int n_keys, int n_kv_head, int hd, const float *cb, sprig_rng *rng)
{
    memset(R, 0, sizeof *R);
    const int64_t rec = sprig_kvrows_record_bytes(fmt, hd), hb = rec + (fmt == SPRIG_KVROWS_I8 ? 1 : 0);
    const int64_t stride = hb * n_kv_head + 3;
    const int shift = 2, per = 1 << shift, n_pages = (n_keys + per - 1) / per;
    const int ring = paged == 2 ? n_keys + 5 : 0;   /* layout 2: a ring of n_keys + 5 slots read from slot 7 */
    const size_t total = (size_t)(paged == 1 ? n_pages * per : ring ? ring : n_keys) * (size_t)stride;
    R->buf = sprig_calloc_aligned(total + 64, 1);
    for (size_t i = 0; i < total; i++) R->buf[i] = (uint8_t)sprig_rng_u64(rng);
    R->r = (sprig_kvrows){ .fmt = fmt, .stride = stride, .head_bytes = hb, .codebook = cb, .page_shift = shift };
    if (ring) {
        R->r.base = R->buf;
        R->r.ring_cap = ring;
        R->r.ring_rot = 7 % ring;
    } else if (paged) {
        /* page p lives at backing slot (p * 7 + 3) % n_pages: scattered, never in order */
        R->pages = calloc((size_t)n_pages, sizeof *R->pages);
        for (int pg = 0; pg < n_pages; pg++) {
            int at = pg;
            if (n_pages > 1) at = (int)(((int64_t)pg * 7 + 3) % n_pages);
            R->pages[pg] = R->buf + (size_t)at * per * (size_t)stride;
        }
        /* a permutation only if gcd(7, n_pages) == 1; keep the test honest */
        bool seen[4096] = { false };
        for (int pg = 0; pg < n_pages; pg++) {
            size_t at = (size_t)(R->pages[pg] - R->buf) / ((size_t)per * (size_t)stride);
            CHECK(!seen[at]);
            seen[at] = true;
        }
        R->r.pages = R->pages;
    } else {
        R->r.base = R->buf;
    }
    /* sidecars and plain formats: finite values */
    for (int j = 0; j < n_keys; j++)
        for (int g = 0; g < n_kv_head; g++) {
            uint8_t *p = (uint8_t *)sprig_kvrows_at(&R->r, j, g);
            float x;
            sprig_f16 h;
            switch (fmt) {
            case SPRIG_KVROWS_F32:
                for (int d = 0; d < hd; d++) { x = (float)sprig_rng_normal(rng); memcpy(p + 4 * d, &x, 4); }
                break;
            case SPRIG_KVROWS_F16:
                for (int d = 0; d < hd; d++) { h = sprig_f32_to_f16((float)sprig_rng_normal(rng)); memcpy(p + 2 * d, &h, 2); }
                break;
            case SPRIG_KVROWS_I8:
                h = sprig_f32_to_f16((float)(0.001 + 0.02 * sprig_rng_uniform(rng)));
                memcpy(p + hd, &h, 2);
                break;
            default: {
                const int64_t cb_bytes = rec - 4;
                h = sprig_f32_to_f16((float)(0.5 + sprig_rng_uniform(rng)));
                memcpy(p + cb_bytes, &h, 2);
                h = sprig_f32_to_f16((float)(0.5 + sprig_rng_uniform(rng)));
                memcpy(p + cb_bytes + 2, &h, 2);
                break;
            }
            }
        }
    R->dec = sprig_calloc_aligned((size_t)n_keys * n_kv_head * hd, sizeof(float));
    for (int j = 0; j < n_keys; j++)
        for (int g = 0; g < n_kv_head; g++)
            sprig_kvrows_decode_ref(&R->r, sprig_kvrows_at(&R->r, j, g), hd, R->dec + ((size_t)j * n_kv_head + g) * hd);
}

static void recs_free(struct recs *R)
{
    sprig_free_aligned(R->buf);
    sprig_free_aligned(R->dec);
    free(R->pages);
}

static void test_records_match_ref(void)
{
    static const struct { int kf, vf; } pairs[] = {
        { SPRIG_KVROWS_F32, SPRIG_KVROWS_F32 }, { SPRIG_KVROWS_F16, SPRIG_KVROWS_F16 }, { SPRIG_KVROWS_I8, SPRIG_KVROWS_I8 },
        { SPRIG_KVROWS_F16, SPRIG_KVROWS_T4 }, { SPRIG_KVROWS_F16, SPRIG_KVROWS_T3 }, { SPRIG_KVROWS_T4, SPRIG_KVROWS_T4 },
        { SPRIG_KVROWS_T3, SPRIG_KVROWS_I8 },
    };
    static const int hds[] = { 8, 24, 64, 128, 512 };   /* 512: gemma4's global heads */
    static const int ns[] = { 1, 3, 9, 33 };
    sprig_rng rng;
    sprig_rng_seed(&rng, 4242);
    float cb[16];
    for (int i = 0; i < 16; i++) cb[i] = (float)(-2.0 + 0.27 * i + 0.01 * sprig_rng_normal(&rng));
    int cases = 0;
    for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++)
        for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (int paged = 0; paged < 3; paged++) {   /* contiguous, paged, ring */
                    /* the sanitizer run takes one layout per case, rotating
                     * (K and V still meet every layout), and one thread count */
                    const bool quick = test_quick();
                    if (quick && (int)((pi + hi + ni) % 3) != paged) continue;
                    const int hd = hds[hi], n = ns[ni], n_kv = 2, n_head = 4;
                    const int n_keys = n + 37 + (int)(hi * 29);
                    fx f;
                    fx_init(&f, n, n_head, n_kv, hd, n_keys, SPRIG_TYPE_F32, 0, 100 + cases);
                    if (ni % 2) {   /* a tree mask on odd cases */
                        int par[64];
                        for (int i = 0; i < n; i++) par[i] = i ? (int)(sprig_rng_u64(&rng) % (uint64_t)i) : 0;
                        f.mask = tree_mask(par, n, n_keys - n);
                    }
                    struct recs K, V;
                    recs_init(&K, pairs[pi].kf, paged, n_keys, n_kv, hd, cb, &rng);
                    recs_init(&V, pairs[pi].vf, (paged + 1) % 3, n_keys, n_kv, hd, cb, &rng);
                    sprig_attn_args a = fx_args(&f);
                    a.kr = &K.r;
                    a.vr = &V.r;
                    a.k = a.v = NULL;
                    if ((hi + pi) % 2) a.softcap = 1.5f;
                    sprig_error e;
                    CHECK_EQ_INT(sprig_attn_check(&a, &e), SPRIG_OK);
                    const size_t on = (size_t)n * n_head * hd;
                    float *ref = sprig_calloc_aligned(on, sizeof(float)), *dec = sprig_calloc_aligned(on, sizeof(float));
                    sprig_attention_ref(&a);
                    memcpy(ref, f.out, on * sizeof(float));
                    /* the same rows decoded to f32 first */
                    sprig_attn_args b = fx_args(&f);
                    b.softcap = a.softcap;
                    b.k = K.dec; b.v = V.dec; b.kv_stride = (int64_t)n_kv * hd;
                    sprig_attention_ref(&b);
                    memcpy(dec, f.out, on * sizeof(float));
                    CHECK(memcmp(ref, dec, on * sizeof(float)) == 0);
                    for (int kk = 0; kk < N_KERNELS; kk++) {
                        if (!g_has[kk]) continue;
                        sprig_attention_use_kernel(g_kernels[kk]);
                        for (int nth = 1; nth <= 3; nth += 2) {
                            if (quick && nth != ((pi + ni) % 2 ? 3 : 1)) continue;
                            memset(f.out, 0x7f, on * sizeof(float));
                            sprig_attention(g_pool[nth], &a);
                            if (memcmp(f.out, ref, on * sizeof(float)) != 0) {
                                fprintf(stderr, "records: kernel %s fmt %s/%s hd %d n %d paged %d nth %d differs\n", g_kernels[kk],
                                        sprig_kvrows_fmt_name(pairs[pi].kf), sprig_kvrows_fmt_name(pairs[pi].vf), hd, n, paged, nth);
                                CHECK(0);
                            }
                        }
                    }
                    sprig_attention_use_kernel(NULL);
                    sprig_free_aligned(ref);
                    sprig_free_aligned(dec);
                    recs_free(&K);
                    recs_free(&V);
                    fx_free(&f);
                    cases++;
                }
    CHECK(cases == 7 * 5 * 4 * (test_quick() ? 1 : 3));
}

/* Two-segment value rows (old slots as 4-bit codes, recent ones as f16 in a
 * ring, split anywhere, including 0 and n_keys): every kernel equals the
 * reference, and the reference equals attention over the rows decoded. */
static void test_split_rows_match_ref(void)
{
    sprig_rng rng;
    sprig_rng_seed(&rng, 77);
    float cb[16];
    for (int i = 0; i < 16; i++) cb[i] = (float)(-2.0 + 0.27 * i);
    const int hd = 64, n_kv = 2, n_head = 4;
    for (int n = 1; n <= 9; n += 4)
        for (int split = 0; split <= 90; split += 30) {
            const int n_keys = 90;
            fx f;
            fx_init(&f, n, n_head, n_kv, hd, n_keys, SPRIG_TYPE_F32, 0, 500 + (uint64_t)split + (uint64_t)n);
            struct recs K, A, B;
            recs_init(&K, SPRIG_KVROWS_F16, 0, n_keys, n_kv, hd, cb, &rng);
            recs_init(&A, SPRIG_KVROWS_T4, 0, n_keys, n_kv, hd, cb, &rng);
            recs_init(&B, SPRIG_KVROWS_F16, 2, n_keys, n_kv, hd, cb, &rng);
            sprig_kvrows vr = A.r;
            vr.split = split;
            vr.next = &B.r;
            sprig_attn_args a = fx_args(&f);
            a.kr = &K.r;
            a.vr = &vr;
            sprig_error e;
            CHECKF(sprig_attn_check(&a, &e) == SPRIG_OK, "%s", e.msg);
            const size_t on = (size_t)n * n_head * hd, row = (size_t)n_kv * hd;
            float *ref = sprig_calloc_aligned(on, sizeof(float));
            sprig_attention_ref(&a);
            memcpy(ref, f.out, on * sizeof(float));
            float *dv = sprig_calloc_aligned((size_t)n_keys * row, sizeof(float));
            for (int j = 0; j < n_keys; j++)
                memcpy(dv + j * row, j < split ? A.dec + j * row : B.dec + (size_t)(j - split) * row, row * sizeof(float));
            sprig_attn_args b = fx_args(&f);
            b.k = K.dec; b.v = dv; b.kv_stride = (int64_t)row;
            sprig_attention_ref(&b);
            CHECK(memcmp(ref, f.out, on * sizeof(float)) == 0);
            for (int kk = 0; kk < N_KERNELS; kk++) {
                if (!g_has[kk]) continue;
                sprig_attention_use_kernel(g_kernels[kk]);
                memset(f.out, 0x7f, on * sizeof(float));
                sprig_attention(g_pool[2], &a);
                CHECKF(memcmp(f.out, ref, on * sizeof(float)) == 0, "kernel %s n %d split %d", g_kernels[kk], n, split);
            }
            sprig_attention_use_kernel(NULL);
            /* a split past n_keys is refused */
            vr.split = n_keys + 1;
            CHECK(sprig_attn_check(&a, &e) == SPRIG_E_INVALID_ARG && strstr(e.msg, "split"));
            sprig_free_aligned(ref);
            sprig_free_aligned(dv);
            recs_free(&K);
            recs_free(&A);
            recs_free(&B);
            fx_free(&f);
        }
}

static void test_arg_checks(void)
{
    fx f;
    fx_init(&f, 2, 4, 2, 8, 6, SPRIG_TYPE_F32, 0, 61);
    sprig_attn_args a = fx_args(&f), b;
    sprig_error e;
    CHECK_EQ_INT(sprig_attn_check(&a, &e), SPRIG_OK);
    b = a; b.hd = 0;                 CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "hd"));
    b = a; b.hd = 512;               CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG);
    b = a; b.n_kv_head = 3;          CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "n_kv_head"));
    b = a; b.kv_type = SPRIG_TYPE_Q8_0; CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "kv_type"));
    b = a; b.kv_stride = 15;         CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "kv_stride"));
    b = a; b.n_keys = 1;             CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "n_keys"));
    b = a; b.n = 0;                  CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG);
    b = a; b.v = NULL;               CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "v is NULL"));
    b = a; b.scale = NAN;            CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG);
    b = a; b.scratch_floats = 3;     CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG); CHECK(strstr(e.msg, "scratch_floats"));
    b = a; b.scratch_floats = sprig_attn_scratch_floats(2, 4, 6, 1); CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_OK);
    b.scratch_floats -= 2;           CHECK_EQ_INT(sprig_attn_check(&b, &e), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_attn_check(NULL, &e), SPRIG_E_INVALID_ARG);
    /* scratch sizing is monotone and overflow-safe */
    CHECK(sprig_attn_scratch_floats(8, 32, 1000, 2) <= sprig_attn_scratch_floats(9, 32, 1000, 2));
    CHECK(sprig_attn_scratch_floats(8, 32, 1000, 2) <= sprig_attn_scratch_floats(8, 32, 1001, 2));
    CHECK(sprig_attn_scratch_floats(8, 32, 1000, 2) <= sprig_attn_scratch_floats(8, 32, 1000, 3));
    CHECK(sprig_attn_scratch_floats(1 << 30, 1 << 30, 1 << 30, 256) >= ((size_t)1 << 40));
    fx_free(&f);
}

/* A scratch sized for one thread runs correctly on a 3-thread pool. */
static void test_small_scratch_limits_threads(void)
{
    fx f;
    fx_init(&f, 6, 8, 4, 32, 40, SPRIG_TYPE_F32, 0, 71);
    sprig_attn_args a = fx_args(&f);
    sprig_attention_ref(&a);
    float *want = malloc(6 * 256 * sizeof(float));
    memcpy(want, f.out, 6 * 256 * sizeof(float));
    size_t one = sprig_attn_scratch_floats(6, 8, 40, 1);
    float *scr = sprig_calloc_aligned(one, sizeof(float));
    a.scratch = scr + 1;                 /* unaligned on purpose */
    a.scratch_floats = one - 1;
    memset(f.out, 0, 6 * 256 * sizeof(float));
    sprig_attention(g_pool[3], &a);
    CHECK(memcmp(want, f.out, 6 * 256 * sizeof(float)) == 0);
    sprig_free_aligned(scr);
    free(want);
    fx_free(&f);
}

/* ------------------------------------------------------------------ bench */

/* Best time of batches of 5 calls over ~0.3 s (the minimum filters out the
 * noise of a shared machine), in microseconds per call. */
static double time_call(sprig_pool *pool, const sprig_attn_args *a)
{
    double best = 1e30, t0 = sprig_time_ms();
    sprig_attention(pool, a);
    while (sprig_time_ms() - t0 < 300) {
        double b0 = sprig_time_ms();
        for (int i = 0; i < 5; i++) sprig_attention(pool, a);
        double per = (sprig_time_ms() - b0) / 5;
        if (per < best) best = per;
    }
    return best * 1000.0;
}

static void bench(void)
{
    sprig_error err;
    sprig_pool *pool = sprig_pool_create(2, &err);
    const int hist[] = { 64, 512, 2048 }, ns[] = { 1, 8, 16, 64 };
    for (int t = 0; t < 2; t++) {
        const int type = t ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32;
        fprintf(stderr, "bench %s cache, kernel %s, llama-1b shape (32 heads, 8 kv heads, hd 64), 2 threads:\n",
                t ? "f16" : "f32", sprig_attention_kernel());
        for (int hi = 0; hi < 3; hi++) {
            double t1 = 0;
            for (int ni = 0; ni < 4; ni++) {
                fx f;
                fx_init(&f, ns[ni], 32, 8, 64, hist[hi] + ns[ni], type, 0, 9);
                sprig_attn_args a = fx_args(&f);
                a.scratch_floats = 0;
                double per = time_call(pool, &a);
                if (ni == 0) t1 = per;
                fprintf(stderr, "  hist %5d  n %3d  %9.1f us/call  T(n)/T(1) %6.2f  %7.2f us/query\n",
                        hist[hi], ns[ni], per, per / t1, per / ns[ni]);
                fx_free(&f);
            }
        }
    }
    fprintf(stderr, "bench stories260K shape (8 heads, 4 kv heads, hd 8), f32, hist 512, 2 threads:\n");
    for (int ni = 0; ni < 4; ni++) {
        fx f;
        fx_init(&f, ns[ni], 8, 4, 8, 512 + ns[ni], SPRIG_TYPE_F32, 0, 9);
        sprig_attn_args a = fx_args(&f);
        a.scratch_floats = 0;
        fprintf(stderr, "  n %3d  %8.2f us/call\n", ns[ni], time_call(pool, &a));
        fx_free(&f);
    }
    sprig_pool_free(pool);
}

int main(void)
{
    sprig_error err;
    for (int i = 1; i <= 3; i++) g_pool[i] = sprig_pool_create(i, &err);
    sprig_attention_set_parallel_threshold(0);   /* small shapes still run on every thread */
    for (int k = 0; k < N_KERNELS; k++) g_has[k] = sprig_attention_use_kernel(g_kernels[k]);
    sprig_attention_use_kernel(NULL);
    fprintf(stderr, "attention kernel: %s (also testing:%s%s%s)\n", sprig_attention_kernel(),
            g_has[0] ? " c" : "", g_has[1] ? " avx2" : "", g_has[2] ? " avx512" : "");
    RUN(test_ref_matches_double);
    RUN(test_kernels_match_ref);
    RUN(test_causal_rows_equal_single);
    RUN(test_tree_rows_equal_compacted);
    RUN(test_sibling_invisible);
    RUN(test_masked_rows_finite);
    RUN(test_gqa_mapping);
    RUN(test_small_heads_match_ref);
    RUN(test_small_heads_rows_alone);
    RUN(test_records_match_ref);
    RUN(test_split_rows_match_ref);
    RUN(test_arg_checks);
    RUN(test_small_scratch_limits_threads);
    sprig_attention_set_parallel_threshold(-1);
    if (getenv("SPRIG_BENCH_ATTN")) bench();
    for (int i = 1; i <= 3; i++) sprig_pool_free(g_pool[i]);
    return test_summary("test-attention");
}
