/*
 * tests/test-matmul — the matmul kernels against the plain-C reference, bit
 * for bit, and the reference against a double-precision dot product.
 *
 * Every type (F32, F16, BF16, Q8_0, Q4_0) x every kernel family this CPU has
 * (reference, avx2, avx512) x batch sizes 1..64 x thread counts 1, 2, 3, on
 * shapes whose n_out is not a multiple of the 16-column panel and (for float
 * types) whose n_in is not a multiple of 16. Activations include all-zero,
 * huge, tiny (subnormal) and non-finite blocks. Also: fused multi-weight
 * dispatch, weights packed by different families in one call, the activation
 * quantizers against the scalar rule, and bad-input errors.
 */
#include "test.h"

#include "base/mem.h"
#include "base/pool.h"
#include "tensor/matmul.h"
#include "tensor/matmul-kern.h"

#include <float.h>

static const int types[] = { SPRIG_TYPE_F32, SPRIG_TYPE_F16, SPRIG_TYPE_BF16, SPRIG_TYPE_Q8_0, SPRIG_TYPE_Q4_0 };
#define N_TYPES ((int)(sizeof types / sizeof types[0]))
static const char *const families[] = { "reference", "avx2", "avx512" };
#define N_FAM 3
static const int batch_full[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 31, 32, 33, 64 };
static const int batch_quick[] = { 1, 3, 6, 8, 17, 33 };
#define MAX_N 64

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* uniform in [-1, 1) */
static float frand(void) { return (float)((double)(next_u64() >> 11) * (2.0 / 9007199254740992.0) - 1.0); }

static sprig_pool *pools[4];

/* Raw GGUF bytes of an n_out x n_in matrix of `type` from random floats. */
static void *make_weight(int type, int64_t n_in, int64_t n_out)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    size_t rb;
    CHECK(sprig_row_bytes(type, n_in, &rb));
    uint8_t *raw = malloc(rb * (size_t)n_out);
    float *row = malloc((size_t)n_in * sizeof(float));
    for (int64_t o = 0; o < n_out; o++) {
        float scale = (o % 7 == 3) ? 40.0f : 0.5f;
        for (int64_t k = 0; k < n_in; k++) row[k] = frand() * scale;
        if (o == 5) memset(row, 0, (size_t)n_in * sizeof(float));   /* an all-zero output row */
        t->from_f32(row, raw + (size_t)o * rb, n_in);
    }
    if (type == SPRIG_TYPE_Q8_0) {
        /* Files may hold q = -128, which our quantizer never writes. */
        for (int64_t o = 0; o < n_out; o += 3) ((sprig_block_q8_0 *)(raw + (size_t)o * rb))[0].qs[o % 32] = -128;
    }
    free(row);
    return raw;
}

/* [n][k] activations with special blocks in some rows. */
static float *make_act(int n, int64_t k, bool nonfinite)
{
    float *x = malloc((size_t)n * (size_t)k * sizeof(float));
    for (int r = 0; r < n; r++) {
        float *xr = x + (size_t)r * k;
        for (int64_t i = 0; i < k; i++) xr[i] = frand() * (r % 5 == 1 ? 100.0f : 1.0f);
        int64_t b0 = (r % 3) * 32 < k - 32 ? (r % 3) * 32 : 0;
        switch (r % 6) {
        case 0: for (int i = 0; i < 32 && b0 + i < k; i++) xr[b0 + i] = 0.0f; break;          /* zero block */
        case 2: for (int i = 0; i < 32 && b0 + i < k; i++) xr[b0 + i] *= 1e30f; break;        /* huge */
        case 3: for (int i = 0; i < 32 && b0 + i < k; i++) xr[b0 + i] *= 1e-39f; break;       /* subnormal */
        case 4: xr[b0 + 3] = 0.5f; xr[b0 + 4] = -0.5f; xr[b0 + 7] = 127.0f; break;             /* ties */
        default: break;
        }
        if (nonfinite && r == 7 % n) xr[k / 2] = INFINITY;
        if (nonfinite && r == 9 % n) xr[k - 1] = NAN;
    }
    return x;
}

/* ------------------------------------------------------------------ reference vs double */

/* The reference stays within the error the spec allows of an exact dot:
 * float weights: accumulated rounding; quantized: the activation rounding
 * (|x - q*d| <= d/2 per element), the F16 scale's rounding, float rounding. */
static void test_reference_vs_double(void)
{
    const int64_t K = 256, N = 37;
    const int n = 6;
    for (int ti = 0; ti < N_TYPES; ti++) {
        int type = types[ti];
        void *raw = make_weight(type, K, N);
        float *x = make_act(n, K, false);
        sprig_weight w;
        CHECK(sprig_weight_init(&w, "t", type, raw, K, N, NULL) == SPRIG_OK);
        float *y = malloc((size_t)n * N * sizeof(float));
        sprig_matmul_ref(&w, x, n, y);
        float *wr = malloc((size_t)K * sizeof(float));
        int bad = 0;
        for (int64_t o = 0; o < N; o++) {
            sprig_weight_row_f32(&w, o, wr);
            for (int r = 0; r < n; r++) {
                const float *xr = x + (size_t)r * K;
                double exact = 0, mag = 0, qerr = 0;
                bool ovf = false;   /* a block whose F16 scale overflows: the output is not finite */
                for (int64_t b = 0; b < K / 32; b++) {
                    double amax = 0, wsum = 0;
                    for (int i = 0; i < 32; i++) {
                        exact += (double)wr[b * 32 + i] * xr[b * 32 + i];
                        mag += fabs((double)wr[b * 32 + i] * xr[b * 32 + i]);
                        amax = fmax(amax, fabs(xr[b * 32 + i]));
                        wsum += fabs(wr[b * 32 + i]);
                    }
                    /* + the F16 scale: |d16 - d| <= d * 2^-11, or 2^-25 among F16 subnormals */
                    qerr += wsum * amax / 254.0 * 1.0001 + wsum * 127.0 * fmax(amax / 127.0 / 2048.0, 0x1p-25);
                    ovf |= amax / 127.0 >= 65520.0;
                }
                bool quant = type == SPRIG_TYPE_Q8_0 || type == SPRIG_TYPE_Q4_0;
                double tol = (quant ? qerr + mag * 1e-5 : mag * 1e-5) + 1e-30;
                double got = y[(size_t)r * N + o];
                if (quant && ovf ? isfinite(got) : !(fabs(got - exact) <= tol)) {
                    if (bad++ < 3)
                        fprintf(stderr, "  %s o=%lld r=%d: ref %.9g exact %.9g tol %.3g\n", sprig_type_name(type),
                                (long long)o, r, got, exact, tol);
                }
            }
        }
        CHECKF(bad == 0, "%s: %d outputs off the exact dot", sprig_type_name(type), bad);
        /* The public reference agrees with itself row by row. */
        float *y1 = malloc((size_t)N * sizeof(float));
        sprig_matmul_ref(&w, x + 3 * K, 1, y1);
        CHECK(memcmp(y1, y + 3 * N, (size_t)N * sizeof(float)) == 0);
        free(y1);
        free(wr);
        free(y);
        free(x);
        sprig_weight_free(&w);
        free(raw);
    }
}

/* ------------------------------------------------------------------ quantizer */

static void test_quant_block(void)
{
    float x[32];
    sprig_mm_qblock r;
    memset(x, 0, sizeof x);
    sprig_mm_quant_block_ref(x, &r);
    CHECK(r.d == 0.0f && r.c8 == 0 && r.c4 == 0 && !signbit(r.d));
    for (int i = 0; i < 32; i++) CHECK_EQ_INT(r.q[i], 0);

    /* ties round to even: amax 127 -> d = 1, id = 1 */
    x[0] = 127; x[1] = 0.5f; x[2] = 1.5f; x[3] = 2.5f; x[4] = -0.5f; x[5] = -1.5f; x[6] = -127;
    sprig_mm_quant_block_ref(x, &r);
    CHECK(r.d == 1.0f);
    CHECK_EQ_INT(r.q[0], 127); CHECK_EQ_INT(r.q[1], 0); CHECK_EQ_INT(r.q[2], 2); CHECK_EQ_INT(r.q[3], 2);
    CHECK_EQ_INT(r.q[4], 0); CHECK_EQ_INT(r.q[5], -2); CHECK_EQ_INT(r.q[6], -127);
    CHECK_EQ_INT(r.c8, -128 * (127 + 2 + 2 - 2 - 127));
    CHECK_EQ_INT(r.c4, -8 * (127 + 2 + 2 - 2 - 127));

    x[9] = INFINITY;
    sprig_mm_quant_block_ref(x, &r);
    CHECK(isnan(r.d) && r.c8 == 0 && r.q[0] == 0);
    x[9] = NAN;
    sprig_mm_quant_block_ref(x, &r);
    CHECK(isnan(r.d));

    for (int i = 0; i < 32; i++) x[i] = 1e-40f * (float)(i - 16);   /* subnormal block */
    sprig_mm_quant_block_ref(x, &r);
    CHECK(r.d == 0.0f && r.c8 == 0);

    for (int i = 0; i < 32; i++) x[i] = 3e38f * (i & 1 ? 1.0f : -0.9f);   /* near FLT_MAX: the F16 scale overflows */
    sprig_mm_quant_block_ref(x, &r);
    CHECK(isinf(r.d) && r.d > 0 && r.q[1] == 127 && r.q[0] == -114);

    /* d is amax/127 through F16; the multiplier is 127/amax, not 1/d */
    for (int i = 0; i < 32; i++) x[i] = (float)(i - 13) * 0.0371f;
    sprig_mm_quant_block_ref(x, &r);
    const float amax = 18 * 0.0371f;
    CHECK(r.d == sprig_f16_to_f32(sprig_f32_to_f16(amax / 127.0f)) && r.d != amax / 127.0f);
    for (int i = 0; i < 32; i++) CHECK_EQ_INT(r.q[i], (int)nearbyintf(x[i] * (127.0f / amax)));

    /* Every SIMD quantizer equals the scalar rule, for row counts (record
     * strides) 1 and 16 and block counts that are not multiples of 16. */
    const struct sprig_cpu_features *c = sprig_cpu_features();
    const struct sprig_mm_family *fams[2] = {
        c->avx2 && c->fma && c->f16c ? &sprig_mm_family_avx2 : NULL,
        c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq && c->avx512vnni ? &sprig_mm_family_avx512 : NULL,
    };
    const int n = 16, K = 32 * 150;
    const int64_t nb = K / 32;
    float *xa = make_act(n, K, true);
    for (int i = 0; i < 32; i++) xa[5 * K + 64 + i] = 3e38f * (i & 1 ? 1.0f : -0.9f);
    for (int i = 0; i < 32; i++) xa[6 * K + 4000 + i] = 1e-36f * (float)(i - 16);   /* d just under FLT_MIN */
    sprig_mm_qblock *r0 = calloc((size_t)n * nb, sizeof *r0), *r1 = calloc((size_t)n * nb, sizeof *r1);
    for (int f = 0; f < 2; f++) {
        if (!fams[f]) continue;
        for (int rows = 1; rows <= n; rows += n - 1) {
            for (int i = 0; i < rows; i++)
                for (int64_t b = 0; b < nb; b++) sprig_mm_quant_block_ref(xa + i * K + b * 32, &r0[b * rows + i]);
            memset(r1, 0x55, (size_t)n * nb * sizeof *r1);
            for (int i = 0; i < rows; i++) fams[f]->quant(xa + i * K, nb, rows, r1 + i);
            CHECKF(memcmp(r0, r1, (size_t)rows * nb * sizeof *r0) == 0, "%s quantizer differs (rows %d)",
                   fams[f]->name, rows);
        }
    }
    free(r0);
    free(r1);
    free(xa);
}

/* ------------------------------------------------------------------ kernels vs reference */

struct shape { int64_t n_in, n_out; };

static void check_kernels(int type, struct shape sh, bool quick)
{
    const int64_t K = sh.n_in, N = sh.n_out;
    void *raw = make_weight(type, K, N);
    float *x = make_act(MAX_N, K, true);
    sprig_weight w0;
    sprig_kernels_force("reference");
    CHECK(sprig_weight_init(&w0, "ref", type, raw, K, N, NULL) == SPRIG_OK);
    float *ref = malloc((size_t)MAX_N * N * sizeof(float));
    sprig_matmul_ref(&w0, x, MAX_N, ref);
    sprig_weight_free(&w0);

    size_t sb = sprig_act_scratch_bytes(MAX_N, K);
    void *scratch = sprig_calloc_aligned(sb, 1);
    float *y = malloc((size_t)MAX_N * N * sizeof(float));
    const int *ns = quick ? batch_quick : batch_full;
    int nn = quick ? (int)(sizeof batch_quick / sizeof *batch_quick) : (int)(sizeof batch_full / sizeof *batch_full);
    for (int f = 0; f < N_FAM; f++) {
        if (!sprig_kernels_force(families[f])) continue;
        sprig_weight w;
        CHECK(sprig_weight_init(&w, "w", type, raw, K, N, NULL) == SPRIG_OK);
        CHECK((w.packed != NULL) == (f != 0));
        for (int th = 1; th <= 3; th++) {
            if (f == 0 && th == 2) continue;   /* the reference family is slow; 1 and 3 threads suffice */
            for (int i = 0; i < nn; i++) {
                int n = ns[i];
                if (f == 0 && n > 17) continue;
                sprig_act a;
                sprig_act_init(&a, x, n, K, scratch, sb);
                const sprig_weight *ws[1] = { &w };
                for (size_t j = 0; j < (size_t)n * N; j++) y[j] = -12345.0f;
                float *ys[1] = { y };
                sprig_matmul(pools[th], &a, 1, ws, ys);
                CHECKF(memcmp(y, ref, (size_t)n * N * sizeof(float)) == 0,
                       "%s %s [%lld x %lld] n=%d threads=%d differs from the reference", families[f],
                       sprig_type_name(type), (long long)K, (long long)N, n, th);
                if (memcmp(y, ref, (size_t)n * N * sizeof(float)) != 0) {
                    for (size_t j = 0; j < (size_t)n * N; j++)
                        if (memcmp(&y[j], &ref[j], 4)) {
                            fprintf(stderr, "    first diff at row %zu col %zu: %.9g vs %.9g\n", j / N, j % N,
                                    y[j], ref[j]);
                            break;
                        }
                }
            }
        }
        sprig_weight_free(&w);
        CHECK(w.packed == NULL);
    }
    sprig_kernels_force("auto");
    free(y);
    sprig_free_aligned(scratch);
    free(ref);
    free(x);
    free(raw);
}

static void test_kernels(void)
{
    bool quick = test_quick();
    for (int ti = 0; ti < N_TYPES; ti++) {
        int type = types[ti];
        bool quant = type == SPRIG_TYPE_Q8_0 || type == SPRIG_TYPE_Q4_0;
        /* d: k long enough that tiles run over several k ranges (see the kernels) */
        struct shape a = { quant ? 96 : 100, 172 }, b = { quant ? 256 : 64, 513 }, c = { 32, 1 },
                     d = { quant ? 1280 : 300, 40 };
        check_kernels(type, a, quick);
        check_kernels(type, b, quick);
        check_kernels(type, c, quick);
        check_kernels(type, d, quick);
    }
}

/* Several weights in one dispatch (fused Q/K/V), of different types and
 * packed by different families; a reused activation; the next weights
 * announced (sprig_matmul_then). */
static void test_fused(void)
{
    const int64_t K = 128;
    const int n = 9;
    const int64_t outs[4] = { 72, 40, 40, 24 };
    const int tys[4] = { SPRIG_TYPE_Q8_0, SPRIG_TYPE_Q4_0, SPRIG_TYPE_F16, SPRIG_TYPE_BF16 };
    const char *fam[4] = { "avx512", "avx2", "reference", "auto" };
    void *raw[4];
    sprig_weight w[4];
    float *y[4], *ref[4];
    float *x = make_act(n, K, false);
    for (int i = 0; i < 4; i++) {
        raw[i] = make_weight(tys[i], K, outs[i]);
        if (!sprig_kernels_force(fam[i])) sprig_kernels_force("auto");
        CHECK(sprig_weight_init(&w[i], "fused", tys[i], raw[i], K, outs[i], NULL) == SPRIG_OK);
        y[i] = malloc((size_t)n * outs[i] * sizeof(float));
        ref[i] = malloc((size_t)n * outs[i] * sizeof(float));
        sprig_matmul_ref(&w[i], x, n, ref[i]);
    }
    sprig_kernels_force("auto");
    size_t sb = sprig_act_scratch_bytes(n, K);
    void *scratch = sprig_calloc_aligned(sb, 1);
    for (int th = 1; th <= 3; th++) {
        sprig_act a;
        sprig_act_init(&a, x, n, K, scratch, sb);
        const sprig_weight *ws[4] = { &w[0], &w[1], &w[2], &w[3] };
        sprig_matmul(pools[th], &a, 2, ws, y);           /* quantizes */
        sprig_matmul(pools[th], &a, 2, ws + 2, y + 2);   /* float weights, same act */
        sprig_matmul(pools[th], &a, 4, ws, y);           /* all four; reuses the int8 form */
        for (int i = 0; i < 4; i++)
            CHECKF(memcmp(y[i], ref[i], (size_t)n * outs[i] * sizeof(float)) == 0, "fused weight %d threads %d", i,
                   th);
        /* announcing the next weights (packed by any family, or not packed) changes nothing */
        for (int i = 0; i < 4; i++) memset(y[i], 0, (size_t)n * outs[i] * sizeof(float));
        sprig_matmul_then(pools[th], &a, 2, ws, y, 2, ws + 2);
        sprig_matmul_then(pools[th], &a, 2, ws + 2, y + 2, 4, ws);
        for (int i = 0; i < 4; i++)
            CHECKF(memcmp(y[i], ref[i], (size_t)n * outs[i] * sizeof(float)) == 0, "weight %d after a next-hint, threads %d",
                   i, th);
    }
    for (int i = 0; i < 4; i++) {
        sprig_weight_free(&w[i]);
        free(raw[i]);
        free(y[i]);
        free(ref[i]);
    }
    sprig_free_aligned(scratch);
    free(x);
}

/* The work split (each thread's share, taken from the front, stolen from the
 * back): many small panels, more threads than CPUs (threads get descheduled
 * mid-matmul and their shares are stolen), many repetitions; every column
 * must be computed, and equal the reference. */
static void test_split_stress(void)
{
    const int64_t K = 64, N = 16 * 300 + 5;
    const int reps = test_quick() ? 20 : 200;
    void *raw = make_weight(SPRIG_TYPE_Q8_0, K, N);
    float *x = make_act(3, K, false);
    sprig_weight w;
    CHECK(sprig_weight_init(&w, "split", SPRIG_TYPE_Q8_0, raw, K, N, NULL) == SPRIG_OK);
    float *ref = malloc((size_t)3 * N * sizeof(float)), *y = malloc((size_t)3 * N * sizeof(float));
    sprig_matmul_ref(&w, x, 3, ref);
    size_t sb = sprig_act_scratch_bytes(3, K);
    void *scratch = sprig_calloc_aligned(sb, 1);
    sprig_pool *big = sprig_pool_create(2 * sprig_cpu_count() + 1, NULL);
    CHECK(big != NULL);
    sprig_pool *ps[2] = { pools[3], big };
    int bad = 0;
    for (int i = 0; i < 2 * reps && big; i++) {
        int n = 1 + i % 3;
        sprig_act a;
        sprig_act_init(&a, x, n, K, scratch, sb);
        const sprig_weight *ws[1] = { &w };
        float *ys[1] = { y };
        for (size_t j = 0; j < (size_t)n * N; j++) y[j] = -12345.0f;
        sprig_matmul(ps[i & 1], &a, 1, ws, ys);
        /* ref holds 3 rows; a batch of n rows equals its first n */
        if (memcmp(y, ref, (size_t)n * N * sizeof(float)) != 0) bad++;
    }
    CHECKF(bad == 0, "%d of %d split runs differ from the reference", bad, 2 * reps);
    sprig_pool_free(big);
    sprig_weight_free(&w);
    sprig_free_aligned(scratch);
    free(y);
    free(ref);
    free(x);
    free(raw);
}

/* ------------------------------------------------------------------ bad input, misc */

static void test_bad_input(void)
{
    sprig_weight w;
    sprig_error e;
    uint8_t buf[34 * 4] = { 0 };
    CHECK(sprig_weight_init(&w, "blk.0.q", 3 /* q4_1 */, buf, 32, 1, &e) == SPRIG_E_UNSUPPORTED);
    CHECK(strstr(e.msg, "blk.0.q") && strstr(e.msg, "q4_1"));
    CHECK(sprig_weight_init(&w, "blk.0.k", SPRIG_TYPE_Q8_0, buf, 48, 1, &e) == SPRIG_E_FORMAT);
    CHECK(strstr(e.msg, "blk.0.k") && strstr(e.msg, "48"));
    CHECK(sprig_weight_init(&w, "v", SPRIG_TYPE_F32, buf, 0, 1, &e) == SPRIG_E_UNSUPPORTED);
    CHECK(sprig_weight_init(&w, "v", SPRIG_TYPE_F32, buf, 4, -1, &e) == SPRIG_E_UNSUPPORTED);
    CHECK(sprig_weight_init(&w, "v", SPRIG_TYPE_F32, NULL, 4, 1, &e) == SPRIG_E_INVALID_ARG);
    CHECK(sprig_weight_init(&w, "v", 999, buf, 4, 1, &e) == SPRIG_E_UNSUPPORTED);
    CHECK(sprig_weight_init(&w, "v", SPRIG_TYPE_F32, buf, (int64_t)1 << 40, 1, &e) == SPRIG_E_UNSUPPORTED);
    CHECK(sprig_act_scratch_bytes(1 << 30, (int64_t)1 << 40) == SIZE_MAX);   /* k beyond the limit */
    CHECK(sprig_act_scratch_bytes(1 << 30, (int64_t)1 << 30) > ((size_t)1 << 60));
    CHECK(sprig_act_scratch_bytes(0, 0) >= 64);

    CHECK(sprig_kernels_force("no-such-family") == false);
    CHECK(sprig_kernels_force("reference"));
    CHECK_STR(sprig_kernels_name(), "reference");
    CHECK(sprig_kernels_force("auto"));
    fprintf(stderr, "  kernels: %s\n", sprig_kernels_name());

    /* Row lookup equals the type's reference dequantizer. */
    void *raw = make_weight(SPRIG_TYPE_Q4_0, 64, 3);
    CHECK(sprig_weight_init(&w, "emb", SPRIG_TYPE_Q4_0, raw, 64, 3, NULL) == SPRIG_OK);
    float a[64], b[64];
    sprig_weight_row_f32(&w, 2, a);
    sprig_type_traits(SPRIG_TYPE_Q4_0)->to_f32((const uint8_t *)raw + 2 * w.row_bytes, b, 64);
    CHECK(memcmp(a, b, sizeof a) == 0);
    sprig_weight_free(&w);
    sprig_weight_free(&w);   /* idempotent */
    free(raw);
}

int main(void)
{
    for (int t = 1; t <= 3; t++) {
        pools[t] = sprig_pool_create(t, NULL);
        if (!pools[t]) { fprintf(stderr, "no pool\n"); return 1; }
    }
    RUN(test_quant_block);
    RUN(test_reference_vs_double);
    RUN(test_kernels);
    RUN(test_fused);
    RUN(test_split_stress);
    RUN(test_bad_input);
    for (int t = 1; t <= 3; t++) sprig_pool_free(pools[t]);
    return test_summary("test-matmul");
}
