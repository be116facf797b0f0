/*
 * tests/test-matmul — the matmul kernels against the plain-C reference, bit
 * for bit, and the reference against a double-precision dot product.
 *
 * Every type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K) x every kernel family this CPU has
 * (reference, avx2, avx512) x batch sizes 1..77 (the AVX2 unpacked K tiles take 64 rows at a time) x thread counts 1, 2, 3, on
 * shapes whose n_out is not a multiple of the 16-column panel and (for float
 * types) whose n_in is not a multiple of 16. Activations include all-zero,
 * huge, tiny (subnormal) and non-finite blocks. Also: fused multi-weight
 * dispatch, weights packed by different families in one call, the activation
 * quantizers against the scalar rule, and bad-input errors. K-quants: a
 * dequantizer written here from llama.cpp's element order (checked against
 * values llama.cpp's own dequantize_row_q*_K printed for fixed blocks), a
 * hand-computed product per type, and the packed layout read back as
 * matmul-kern.h documents it. Q4_1/Q5_0/Q5_1 (no SIMD kernels: the
 * reference runs for every family): a hand-computed product per type from
 * blocks built here in llama.cpp's layout.
 */
#include "test.h"

#include "base/mem.h"
#include "base/pool.h"
#include "tensor/matmul.h"
#include "tensor/matmul-kern.h"

#include <float.h>

static const int types[] = { SPRIG_TYPE_F32, SPRIG_TYPE_F16, SPRIG_TYPE_BF16, SPRIG_TYPE_Q8_0, SPRIG_TYPE_Q4_0,
                             SPRIG_TYPE_Q4_1, SPRIG_TYPE_Q5_0, SPRIG_TYPE_Q5_1,
                             SPRIG_MM_Q2_K,   SPRIG_MM_Q3_K,   SPRIG_MM_Q4_K,    SPRIG_MM_Q5_K,   SPRIG_MM_Q6_K };
#define N_TYPES ((int)(sizeof types / sizeof types[0]))
static const char *const families[] = { "reference", "avx2", "avx512" };
#define N_FAM 3
static const int batch_full[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 31, 32, 33, 64, 77 };
static const int batch_quick[] = { 1, 3, 6, 8, 17, 33 };
#define MAX_N 77

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

static bool is_k(int type) { return type >= SPRIG_MM_Q2_K && type <= SPRIG_MM_Q6_K; }
/* the 32-block types */
static bool is_q32(int type)
{
    return type == SPRIG_TYPE_Q8_0 || type == SPRIG_TYPE_Q4_0 || type == SPRIG_TYPE_Q4_1 || type == SPRIG_TYPE_Q5_0 ||
           type == SPRIG_TYPE_Q5_1;
}
static bool is_quant(int type) { return is_q32(type) || is_k(type); }

/* ------------------------------------------------------------------ K-quant dequantizer (test side) */

/* Where a K block keeps its f16 d and dmin (-1: none). */
struct kfacts { int type; size_t size; int d_off, dmin_off; };
static const struct kfacts kfacts[] = {
    { SPRIG_MM_Q2_K, 84, 80, 82 }, { SPRIG_MM_Q3_K, 110, 108, -1 }, { SPRIG_MM_Q4_K, 144, 0, 2 },
    { SPRIG_MM_Q5_K, 176, 0, 2 },  { SPRIG_MM_Q6_K, 210, 208, -1 },
};
static const struct kfacts *kf(int type) { return &kfacts[type - SPRIG_MM_Q2_K]; }

static float h2f(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return sprig_f16_to_f32(h);
}

static void k4sm(const uint8_t *q, int j, int *d, int *m)
{
    if (j < 4) { *d = q[j] & 63; *m = q[j + 4] & 63; }
    else { *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4); *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4); }
}

/* One super-block to floats, y = pa - pb, walking the block the way
 * llama.cpp's dequantize_row_q*_K does: pa = d * scale * (unit - offset),
 * pb = dmin * min (0 without mins). */
static void kdequant(int type, const uint8_t *blk, float pa[256], float pb[256])
{
    for (int i = 0; i < 256; i++) pb[i] = 0;
    if (type == SPRIG_MM_Q2_K) {
        const sprig_kblk_q2_k *b = (const void *)blk;
        float d = h2f(blk + 80), dm = h2f(blk + 82);
        int is = 0, o = 0;
        for (int n = 0; n < 2; n++)
            for (int shift = 0; shift < 8; shift += 2)
                for (int half = 0; half < 2; half++) {
                    int sc = b->scales[is++];
                    for (int l = 0; l < 16; l++, o++) {
                        pa[o] = d * (float)(sc & 0xF) * (float)((b->qs[32 * n + 16 * half + l] >> shift) & 3);
                        pb[o] = dm * (float)(sc >> 4);
                    }
                }
    } else if (type == SPRIG_MM_Q3_K) {
        const sprig_kblk_q3_k *b = (const void *)blk;
        float d = h2f(blk + 108);
        uint32_t aux[4];
        memcpy(aux, b->scales, 12);
        uint32_t tmp = aux[2];
        aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
        aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
        aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
        aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
        const int8_t *sc = (const int8_t *)aux;
        int is = 0, o = 0, m = 1;
        for (int n = 0; n < 2; n++)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int half = 0; half < 2; half++) {
                    float dl = d * (float)(sc[is++] - 32);
                    for (int l = 0; l < 16; l++, o++) {
                        int L = 16 * half + l;
                        pa[o] = dl * (float)(((b->qs[32 * n + L] >> shift) & 3) - ((b->hmask[L] & m) ? 0 : 4));
                    }
                }
    } else if (type == SPRIG_MM_Q4_K || type == SPRIG_MM_Q5_K) {
        const bool five = type == SPRIG_MM_Q5_K;
        const uint8_t *scales = blk + 4, *qh = blk + 16, *q = blk + (five ? 48 : 16);
        float d = h2f(blk), dm = h2f(blk + 2);
        int o = 0;
        for (int j = 0; j < 4; j++, q += 32)
            for (int hi = 0; hi < 2; hi++) {
                int sc, mn;
                k4sm(scales, 2 * j + hi, &sc, &mn);
                for (int l = 0; l < 32; l++, o++) {
                    int u = hi ? q[l] >> 4 : q[l] & 0xF;
                    if (five && (qh[l] & (1 << (2 * j + hi)))) u += 16;
                    pa[o] = d * (float)sc * (float)u;
                    pb[o] = dm * (float)mn;
                }
            }
    } else {
        const sprig_kblk_q6_k *b = (const void *)blk;
        float d = h2f(blk + 208);
        for (int n = 0; n < 2; n++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *ql = b->ql + 64 * n, *qh = b->qh + 32 * n;
                const int8_t *sc = b->scales + 8 * n;
                int is = l / 16;
                int q1 = (ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4), q2 = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
                int q3 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), q4 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                float *y = pa + 128 * n;
                y[l] = d * (float)sc[is] * (float)(q1 - 32);
                y[l + 32] = d * (float)sc[is + 2] * (float)(q2 - 32);
                y[l + 64] = d * (float)sc[is + 4] * (float)(q3 - 32);
                y[l + 96] = d * (float)sc[is + 6] * (float)(q4 - 32);
            }
    }
}

/* A row of a K type to floats. */
static void kdequant_row(int type, const uint8_t *row, int64_t n_in, float *out)
{
    float pa[256], pb[256];
    for (int64_t s = 0; s < n_in / 256; s++) {
        kdequant(type, row + s * kf(type)->size, pa, pb);
        for (int i = 0; i < 256; i++) out[s * 256 + i] = pa[i] - pb[i];
    }
}

/* Raw GGUF bytes of an n_out x n_in matrix of `type` from random floats. */
static void *make_weight(int type, int64_t n_in, int64_t n_out)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    size_t rb;
    CHECK(sprig_row_bytes(type, n_in, &rb));
    uint8_t *raw = malloc(rb * (size_t)n_out);
    if (is_k(type)) {
        /* random blocks; sane f16 scales: d in +-[1e-3, 1e-2), dmin in [0, 1e-2)
         * (row 5 all zero, every 7th row with scales 40x larger) */
        const struct kfacts *f = kf(type);
        for (size_t i = 0; i < rb * (size_t)n_out; i++) raw[i] = (uint8_t)next_u64();
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t s = 0; s < n_in / 256; s++) {
                uint8_t *blk = raw + (size_t)o * rb + (size_t)s * f->size;
                float mul = o % 7 == 3 ? 40.0f : 1.0f;
                uint16_t d = sprig_f32_to_f16(mul * (0.001f + 0.009f * fabsf(frand())) * (frand() < 0 ? -1 : 1));
                uint16_t dm = sprig_f32_to_f16(mul * 0.01f * fabsf(frand()));
                if (o == 5) d = dm = 0;
                memcpy(blk + f->d_off, &d, 2);
                if (f->dmin_off >= 0) memcpy(blk + f->dmin_off, &dm, 2);
            }
        return raw;
    }
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
    const int64_t K = 512, N = 37;
    const int n = 6;
    for (int ti = 0; ti < N_TYPES; ti++) {
        int type = types[ti];
        void *raw = make_weight(type, K, N);
        float *x = make_act(n, K, false);
        sprig_weight w;
        CHECK(sprig_weight_init(&w, "t", type, raw, K, N, NULL) == SPRIG_OK);
        float *y = malloc((size_t)n * N * sizeof(float));
        sprig_matmul_ref(&w, x, n, y);
        float *wr = malloc((size_t)K * sizeof(float)), *wm = malloc((size_t)K * sizeof(float));
        int bad = 0;
        const int bs = is_k(type) ? 256 : 32;   /* activation block */
        for (int64_t o = 0; o < N; o++) {
            /* wm: the magnitude the float roundings scale with (for K types
             * |d*sc*u| + |dmin*m|: the two parts are summed apart) */
            if (is_k(type)) {
                float pa[256], pb[256];
                const uint8_t *row = (const uint8_t *)raw + (size_t)o * w.row_bytes;
                for (int64_t s = 0; s < K / 256; s++) {
                    kdequant(type, row + s * kf(type)->size, pa, pb);
                    for (int i = 0; i < 256; i++) {
                        wr[s * 256 + i] = pa[i] - pb[i];
                        wm[s * 256 + i] = fabsf(pa[i]) + fabsf(pb[i]);
                    }
                }
            } else {
                sprig_weight_row_f32(&w, o, wr);
                for (int64_t k = 0; k < K; k++) wm[k] = fabsf(wr[k]);
                if (type == SPRIG_TYPE_Q4_1 || type == SPRIG_TYPE_Q5_1) {
                    /* |d*u| + |m|: the two parts are summed apart */
                    const size_t bsz = sprig_type_traits(type)->type_size;
                    for (int64_t k = 0; k < K; k++) {
                        float m = h2f((const uint8_t *)raw + (size_t)o * w.row_bytes + (size_t)(k / 32) * bsz + 2);
                        wm[k] = fabsf(wr[k] - m) + fabsf(m);
                    }
                }
            }
            for (int r = 0; r < n; r++) {
                const float *xr = x + (size_t)r * K;
                double exact = 0, mag = 0, qerr = 0;
                bool ovf = false;   /* a 32-block whose F16 scale overflows: the output is not finite */
                for (int64_t b = 0; b < K / bs; b++) {
                    double amax = 0, wsum = 0;
                    for (int i = 0; i < bs; i++) {
                        exact += (double)wr[b * bs + i] * xr[b * bs + i];
                        mag += fabs((double)wm[b * bs + i] * xr[b * bs + i]);
                        amax = fmax(amax, fabs(xr[b * bs + i]));
                        wsum += fabs(wr[b * bs + i]);
                    }
                    /* + the F16 scale: |d16 - d| <= d * 2^-11, or 2^-25 among F16 subnormals */
                    qerr += wsum * amax / 254.0 * 1.0001 + wsum * 127.0 * fmax(amax / 127.0 / 2048.0, 0x1p-25);
                    ovf |= bs == 32 && amax / 127.0 >= 65520.0;
                }
                bool quant = is_quant(type);
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
        free(wm);
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

static const struct sprig_mm_family *family_of(int f)
{
    return f == 1 ? &sprig_mm_family_avx2 : f == 2 ? &sprig_mm_family_avx512 : NULL;
}

/* Whether family f has a kernel for `type` (weights it lacks run the reference). */
static bool fam_has(int f, int type)
{
    const struct sprig_mm_family *m = family_of(f);
    if (!m) return false;
    switch (type) {
    case SPRIG_MM_Q2_K: return m->q2_k != NULL;
    case SPRIG_MM_Q3_K: return m->q3_k != NULL;
    case SPRIG_MM_Q4_K: return m->q4_k != NULL;
    case SPRIG_MM_Q5_K: return m->q5_k != NULL;
    case SPRIG_MM_Q6_K: return m->q6_k != NULL;
    case SPRIG_TYPE_Q4_1: return m->q4_1 != NULL;
    case SPRIG_TYPE_Q5_0: return m->q5_0 != NULL;
    case SPRIG_TYPE_Q5_1: return m->q5_1 != NULL;
    default: return true;
    }
}

/* Whether family f reads weights of `type` in place (sprig_weight_init_mapped). */
static bool fam_has_rows(int f, int type)
{
    const struct sprig_mm_family *m = family_of(f);
    if (!m || !m->rows) return false;
    switch (type) {
    case SPRIG_TYPE_Q8_0: return m->rows->q8_0 != NULL;
    case SPRIG_MM_Q4_K: return m->rows->q4_k != NULL;
    case SPRIG_MM_Q5_K: return m->rows->q5_k != NULL;
    case SPRIG_MM_Q6_K: return m->rows->q6_k != NULL;
    default: return false;
    }
}

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
    for (int fm = 0; fm < 2 * N_FAM; fm++) {
        const int f = fm / 2;
        const bool mapped = fm & 1;   /* the raw-row kernels (experts) */
        if (!sprig_kernels_force(families[f])) continue;
        sprig_weight w;
        if (mapped) {
            CHECK(sprig_weight_init_mapped(&w, "w", type, raw, K, N, NULL) == SPRIG_OK);
            /* mapped (no copy, the raw-row kernel runs) exactly where the family has one; else as packed */
            CHECK(w.mapped == fam_has_rows(f, type));
            if (!w.mapped) {
                sprig_weight_free(&w);
                continue;   /* the packed pass covered it */
            }
            CHECK(w.packed == NULL && w.kernel == f && w.raw == raw);
        } else {
            CHECK(sprig_weight_init(&w, "w", type, raw, K, N, NULL) == SPRIG_OK);
            /* packed (so the family's kernel runs) exactly when it has one, and
             * by this family */
            CHECK((w.packed != NULL) == fam_has(f, type));
            CHECK(w.kernel == (fam_has(f, type) ? f : SPRIG_KERNELS_REF) && !w.mapped);
        }
        for (int th = 1; th <= 3; th++) {
            if (f == 0 && th == 2) continue;   /* the reference family is slow; 1 and 3 threads suffice */
            for (int i = 0; i < nn; i++) {
                int n = ns[i];
                if (f == 0 && n > 17) continue;
                /* both prefetch schemes, alternating over threads and row
                 * counts (only speed may depend on them) */
                const int pf = (th + i) & 1 ? SPRIG_PF_FAR : SPRIG_PF_NEAR;
                sprig_prefetch_force(pf);
                sprig_act a;
                sprig_act_init(&a, x, n, K, scratch, sb);
                const sprig_weight *ws[1] = { &w };
                for (size_t j = 0; j < (size_t)n * N; j++) y[j] = -12345.0f;
                float *ys[1] = { y };
                sprig_matmul(pools[th], &a, 1, ws, ys);
                CHECKF(memcmp(y, ref, (size_t)n * N * sizeof(float)) == 0,
                       "%s%s %s [%lld x %lld] n=%d threads=%d prefetch %s differs from the reference", families[f],
                       mapped ? " (mapped rows)" : "", sprig_type_name(type), (long long)K, (long long)N, n, th,
                       pf == SPRIG_PF_FAR ? "far" : "near");
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
    sprig_prefetch_force(-1);
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
        bool quant = is_q32(type);
        /* d: k long enough that tiles run over several k ranges (see the kernels) */
        struct shape a = { quant ? 96 : 100, 172 }, b = { quant ? 256 : 64, 513 }, c = { 32, 1 },
                     d = { quant ? 1280 : 300, 40 };
        if (is_k(type)) {
            a = (struct shape){ 256, 172 };
            b = (struct shape){ 512, 513 };
            c = (struct shape){ 256, 1 };
            d = (struct shape){ 4096, 40 };
        }
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

/* ------------------------------------------------------------------ K-quants */

/* A fixed block: byte i = i * 37 + 11 * type + 5, d = 1, dmin = 0.5. */
static void golden_block(int type, uint8_t *b)
{
    const struct kfacts *f = kf(type);
    for (size_t i = 0; i < f->size; i++) b[i] = (uint8_t)(i * 37 + 11 * (size_t)type + 5);
    uint16_t d = 0x3C00, dm = 0x3800;
    memcpy(b + f->d_off, &d, 2);
    if (f->dmin_off >= 0) memcpy(b + f->dmin_off, &dm, 2);
}

/* The dequantizer above against llama.cpp: values its dequantize_row_q*_K
 * printed for golden_block (elements 0, 17, 40, 77, 130, 165, 201, 255 and
 * sum of y[e] * (e % 7 + 1)); then the matmul reference against that
 * dequantizer on the same block, with activations it quantizes exactly. */
static void test_kquant_golden(void)
{
    static const struct { int type; double cs; float y[8]; } gold[] = {
        { 10, 8166.5, { 5.5f, -4.5f, 20.5f, 14.0f, 6.5f, 8.0f, 44.0f, 37.5f } },
        { 11, -1186, { -28.0f, 57.0f, -24.0f, -42.0f, 108.0f, -6.0f, 0.0f, 0.0f } },
        { 12, 143269, { 236.5f, 381.5f, -11.0f, 360.5f, -3.0f, 311.0f, 158.0f, 102.5f } },
        { 13, 417243, { 130.0f, 970.0f, 113.5f, 1047.0f, -18.5f, 119.5f, 21.5f, 605.5f } },
        { 14, -65151, { 2945.0f, 3472.0f, 783.0f, 312.0f, 847.0f, -376.0f, -810.0f, 2006.0f } },
    };
    static const int idx[8] = { 0, 17, 40, 77, 130, 165, 201, 255 };
    for (size_t g = 0; g < sizeof gold / sizeof gold[0]; g++) {
        const int type = gold[g].type;
        _Alignas(16) uint8_t blk[256];
        float y[256];
        golden_block(type, blk);
        kdequant_row(type, blk, 256, y);
        double cs = 0;
        for (int e = 0; e < 256; e++) cs += y[e] * (double)(e % 7 + 1);
        CHECKF(cs == gold[g].cs, "%s dequant checksum %.17g, llama.cpp %.17g", sprig_type_name(type), cs, gold[g].cs);
        for (int i = 0; i < 8; i++)
            CHECKF(y[idx[i]] == gold[g].y[i], "%s element %d: %g, llama.cpp %g", sprig_type_name(type), idx[i],
                   y[idx[i]], gold[g].y[i]);
        /* x in -127..127 with amax 127: da = 1, q = x, so the reference
         * is the exact integer dot of the dequantized block (all partial
         * sums are integers or halves far below 2^24) */
        float x[256];
        for (int e = 0; e < 256; e++) x[e] = (float)((e * 29 + 7) % 255 - 127);
        x[3] = 127;
        double want = 0;
        for (int e = 0; e < 256; e++) want += (double)y[e] * x[e];
        sprig_weight w;
        sprig_kernels_force("reference");
        CHECK(sprig_weight_init(&w, "gold", type, blk, 256, 1, NULL) == SPRIG_OK);
        float got;
        sprig_matmul_ref(&w, x, 1, &got);
        CHECKF(got == want, "%s reference %.9g, exact %.9g", sprig_type_name(type), got, want);
        sprig_weight_free(&w);
        sprig_kernels_force("auto");
    }
}

/* One super-block per type built by hand (d = dmin = 1) times x = 1 except
 * x[0] = 127 (so da = 1 and q = x): y = sum over sub-blocks of the weight
 * value times 16 or 32, plus 126 * the weight value of element 0. */
static void test_kquant_hand(void)
{
    _Alignas(16) uint8_t b[256];
    float x[256], y;
    for (int e = 0; e < 256; e++) x[e] = 1.0f;
    x[0] = 127.0f;
    const uint16_t one = 0x3C00;
    sprig_kernels_force("reference");
    for (int type = SPRIG_MM_Q2_K; type <= SPRIG_MM_Q6_K; type++) {
        memset(b, 0, sizeof b);
        float want = 0;
        switch (type) {
        case SPRIG_MM_Q2_K: {
            /* scales[i] = 1 << 4 | i % 4 (scale i % 4, min 1); qs = 0xE4: the
             * unit of element 128h + 32j + l is j. Per 16 (i = e/16): w = (i%4) * ((i%8)/2) - 1
             * = -1 -1 1 2 -1 1 5 8, twice: sum 28; w(0) = -1. */
            sprig_kblk_q2_k *k = (void *)b;
            for (int i = 0; i < 16; i++) k->scales[i] = (uint8_t)(0x10 | (i % 4));
            memset(k->qs, 0xE4, sizeof k->qs);
            k->d = k->dmin = one;
            want = 16 * 28 + 126 * -1;   /* 322 */
            break;
        }
        case SPRIG_MM_Q3_K: {
            /* scales: bytes 0-7 = 0x21, 8-11 = 0xAA: sc 1 for sub-blocks 0-7, 2
             * for 8-15; qs = 0xE4 (low bits j at 128h + 32j + l); hmask = 1:
             * only elements 0-31 (h = 0, j = 0) have the high bit, so units
             * u - 4 = 0, -3, -2, -1 (x sc 1), then -4, -3, -2, -1 (x sc 2). */
            sprig_kblk_q3_k *k = (void *)b;
            memset(k->scales, 0x21, 8);
            memset(k->scales + 8, 0xAA, 4);
            memset(k->qs, 0xE4, sizeof k->qs);
            memset(k->hmask, 0x01, sizeof k->hmask);
            k->d = one;
            want = 32 * (0 - 3 - 2 - 1) + 32 * 2 * (-4 - 3 - 2 - 1) + 126 * 0;   /* -832 */
            break;
        }
        case SPRIG_MM_Q4_K:
        case SPRIG_MM_Q5_K: {
            /* scales 1, 2, 3, 4, 5, 5, 5, 5 (bytes 0-3 = 1..4, 8-11 = 0x15), mins 1
             * (bytes 4-7 = 1, 8-11 high nibble 1); qs = 0x32: unit 2 in the even
             * sub-blocks (low nibbles), 3 in the odd ones. w = 1 5 5 11 9 14 9 14,
             * sum 68. Q5_K: qh = 1 adds 16 to sub-block 0 only: w(0) = 18 - 1 = 17,
             * sum 84. */
            sprig_kblk_q4_k *k = (void *)b;   /* Q5_K shares d, dmin, scales */
            const uint8_t sc[12] = { 1, 2, 3, 4, 1, 1, 1, 1, 0x15, 0x15, 0x15, 0x15 };
            memcpy(k->scales, sc, 12);
            k->d = k->dmin = one;
            if (type == SPRIG_MM_Q4_K) {
                memset(k->qs, 0x32, sizeof k->qs);
                want = 32 * 68 + 126 * 1;   /* 2302 */
            } else {
                sprig_kblk_q5_k *k5 = (void *)b;
                memset(k5->qs, 0x32, sizeof k5->qs);
                memset(k5->qh, 0x01, sizeof k5->qh);
                want = 32 * 84 + 126 * 17;   /* 4830 */
            }
            break;
        }
        default: {
            /* scales j - 8; ql = 0x21 (unit 1 at offsets 0-63 of each half of 128,
             * 2 at 64-127), qh = 0x40 (+16 at offsets 96-127): u - 32 = -31 for
             * sub-blocks j % 8 < 4, -30 for 4-5, -14 for 6-7. Sum of sc * (u - 32):
             * 806 + 210 + 42 - 186 - 270 - 182 = 420; w(0) = -8 * -31 = 248. */
            sprig_kblk_q6_k *k = (void *)b;
            for (int j = 0; j < 16; j++) k->scales[j] = (int8_t)(j - 8);
            memset(k->ql, 0x21, sizeof k->ql);
            memset(k->qh, 0x40, sizeof k->qh);
            k->d = one;
            want = 16 * 420 + 126 * 248;   /* 37968 */
            break;
        }
        }
        sprig_weight w;
        CHECK(sprig_weight_init(&w, "hand", type, b, 256, 1, NULL) == SPRIG_OK);
        sprig_matmul_ref(&w, x, 1, &y);
        CHECKF(y == want, "%s hand case: reference %.9g, by hand %.9g", sprig_type_name(type), y, want);
        float yd[256];
        kdequant_row(type, b, 256, yd);
        double dot = 0;
        for (int e = 0; e < 256; e++) dot += (double)yd[e] * x[e];
        CHECKF(dot == want, "%s hand case: dequantizer %.9g, by hand %.9g", sprig_type_name(type), dot, want);
        sprig_weight_free(&w);
    }
    sprig_kernels_force("auto");
}

/* The packed layout read back as matmul-kern.h documents it. */
static void test_kquant_layout(void)
{
    const int64_t K = 512, N = 20, ns = K / 256;
    struct arr { int raw, len, dst; };
    static const struct { int type, rec, nd; struct arr a[2]; int sc; } lay[] = {
        { SPRIG_MM_Q2_K, SPRIG_MM_Q2K_REC, 2, { { 16, 64, 0 }, { 0, 0, 0 } }, SPRIG_MM_Q2K_SC },
        { SPRIG_MM_Q3_K, SPRIG_MM_Q3K_REC, 1, { { 32, 64, 0 }, { 0, 32, SPRIG_MM_Q3K_HM } }, SPRIG_MM_Q3K_SC },
        { SPRIG_MM_Q4_K, SPRIG_MM_Q4K_REC, 2, { { 16, 128, 0 }, { 0, 0, 0 } }, SPRIG_MM_Q4K_SC },
        { SPRIG_MM_Q5_K, SPRIG_MM_Q5K_REC, 2, { { 48, 128, 0 }, { 16, 32, SPRIG_MM_Q5K_QH } }, SPRIG_MM_Q5K_SC },
        { SPRIG_MM_Q6_K, SPRIG_MM_Q6K_REC, 1, { { 0, 128, 0 }, { 128, 64, SPRIG_MM_Q6K_QH } }, SPRIG_MM_Q6K_SC },
    };
    for (size_t li = 0; li < sizeof lay / sizeof lay[0]; li++) {
        const int type = lay[li].type;
        const struct kfacts *f = kf(type);
        uint8_t *raw = make_weight(type, K, N);
        sprig_weight w;
        sprig_kernels_force("reference");
        CHECK(sprig_weight_init(&w, "lay", type, raw, K, N, NULL) == SPRIG_OK);
        sprig_kernels_force("auto");
        const size_t ps = sprig_mm_panel_bytes(type, K);
        CHECK_EQ_INT(ps, ns * lay[li].rec + ((ns * lay[li].nd * 32 + 63) / 64) * 64);
        CHECK(ps % 64 == 0);
        uint8_t *pk = calloc(2, ps);
        sprig_mm_pack(&w, pk, false);
        int bad = 0;
        for (int64_t o = 0; o < 32; o++) {
            const int c = (int)(o % 16);
            const uint8_t *panel = pk + (o / 16) * ps, *ds = panel + ns * lay[li].rec;
            for (int64_t s = 0; s < ns; s++) {
                const uint8_t *rec = panel + s * lay[li].rec;
                const uint8_t *blk = o < N ? raw + o * w.row_bytes + s * f->size : NULL;
                for (int a = 0; a < 2; a++)
                    for (int t = 0; t < lay[li].a[a].len / 4; t++)
                        for (int i = 0; i < 4; i++)
                            bad += rec[lay[li].a[a].dst + t * 64 + c * 4 + i] != (blk ? blk[lay[li].a[a].raw + 4 * t + i] : 0);
                /* scales as the kernels read them, against the dequantizer's view */
                float pa[256], pb[256];
                if (blk) kdequant(type, blk, pa, pb);
                float d = blk ? h2f(blk + f->d_off) : 0, dm = blk && f->dmin_off >= 0 ? h2f(blk + f->dmin_off) : 0;
                bad += memcmp(ds + (s * lay[li].nd * 16 + c) * 2, blk ? blk + f->d_off : (const uint8_t *)"\0\0", 2) != 0;
                if (lay[li].nd == 2)
                    bad += memcmp(ds + (s * 32 + 16 + c) * 2, blk ? blk + f->dmin_off : (const uint8_t *)"\0\0", 2) != 0;
                for (int j = 0; j < 16; j++) {
                    int sc, mn = 0;
                    const uint8_t *sp = rec + lay[li].sc;
                    if (type == SPRIG_MM_Q2_K) {
                        int byte = sp[(j / 2) * 32 + c * 2 + (j & 1)];
                        sc = byte & 15;
                        mn = byte >> 4;
                    } else if (type == SPRIG_MM_Q4_K || type == SPRIG_MM_Q5_K) {
                        sc = sp[(j / 2) * 16 + c];
                        mn = sp[128 + (j / 4) * 32 + c * 2 + ((j / 2) & 1)];
                    } else {
                        sc = (int8_t)sp[j * 16 + c];
                    }
                    if (!blk) { bad += sc != 0 || mn != 0; continue; }
                    /* element 16j: pa = d * sc * (u - off) and pb = dmin * m; compare where d != 0 */
                    if (d != 0 && dm != 0 && lay[li].nd == 2) bad += pb[16 * j] != dm * (float)mn;
                    if (d != 0) {
                        /* find an element of sub-block j whose unit is nonzero after the offset */
                        for (int i = 0; i < 16; i++) {
                            float v = pa[16 * j + i];
                            if (v != 0) {   /* v / (d * sc) must be an integer unit */
                                float u = v / (d * (float)sc);
                                bad += sc == 0 || u != nearbyintf(u);
                                break;
                            }
                        }
                    }
                }
            }
        }
        CHECKF(bad == 0, "%s packed layout: %d mismatches", sprig_type_name(type), bad);
        free(pk);
        sprig_weight_free(&w);
        free(raw);
    }
}

/* The int16 bounds of the SIMD K kernels at their extremes: every unit at
 * its maximum (all quant bytes 0xff), scales at both ends, activations all
 * +127, all -127 or +-127 in pairs; a saturating or wrapping step would
 * differ from the reference's int32 sums. The AVX2 family must have all
 * five K kernels (so these and the batteries run them, not a fallback). */
static void test_kquant_extremes(void)
{
    const int64_t K = 512, N = 35;
    const int n = 5;
    const struct sprig_cpu_features *c = sprig_cpu_features();
    if (c->avx2 && c->fma && c->f16c)
        CHECK(fam_has(1, SPRIG_MM_Q2_K) && fam_has(1, SPRIG_MM_Q3_K) && fam_has(1, SPRIG_MM_Q4_K) &&
              fam_has(1, SPRIG_MM_Q5_K) && fam_has(1, SPRIG_MM_Q6_K));
    float *x = malloc((size_t)n * K * sizeof(float));
    for (int64_t i = 0; i < K; i++) {
        x[i] = 1.0f;
        x[K + i] = -1.0f;
        x[2 * K + i] = (i / 2) % 2 ? -1.0f : 1.0f;   /* pairs of equal sign, alternating */
        x[3 * K + i] = (i / 16) % 2 ? -1.0f : 1.0f;  /* sub-blocks of 16 alternating */
        x[4 * K + i] = (i / 32) % 3 ? 1.0f : -1.0f;
    }
    float *ref = malloc((size_t)n * N * sizeof(float)), *y = malloc((size_t)n * N * sizeof(float));
    size_t sb = sprig_act_scratch_bytes(n, K);
    void *scratch = sprig_calloc_aligned(sb, 1);
    for (int ti = SPRIG_MM_Q2_K; ti <= SPRIG_MM_Q6_K; ti++) {
        const struct kfacts *kfa = kf(ti);
        size_t rb;
        CHECK(sprig_row_bytes(ti, K, &rb));
        uint8_t *raw = malloc(rb * (size_t)N);
        for (int64_t o = 0; o < N; o++)
            for (int64_t s = 0; s < K / 256; s++) {
                uint8_t *blk = raw + (size_t)o * rb + (size_t)s * kfa->size;
                memset(blk, 0xff, kfa->size);
                /* odd rows: scale bytes 0x80 (Q6_K -128, others their high bit) */
                if (o & 1) {
                    int so = ti == SPRIG_MM_Q6_K ? 192 : ti == SPRIG_MM_Q3_K ? 96 : ti == SPRIG_MM_Q2_K ? 0 : 4;
                    int sl = ti == SPRIG_MM_Q6_K ? 16 : ti == SPRIG_MM_Q2_K ? 16 : 12;
                    memset(blk + so, 0x80, (size_t)sl);
                }
                uint16_t d = sprig_f32_to_f16(o % 3 ? 1.0f / 1024 : -1.0f / 512), dm = sprig_f32_to_f16(1.0f / 256);
                memcpy(blk + kfa->d_off, &d, 2);
                if (kfa->dmin_off >= 0) memcpy(blk + kfa->dmin_off, &dm, 2);
            }
        sprig_weight w0;
        sprig_kernels_force("reference");
        CHECK(sprig_weight_init(&w0, "ref", ti, raw, K, N, NULL) == SPRIG_OK);
        sprig_matmul_ref(&w0, x, n, ref);
        sprig_weight_free(&w0);
        for (int fm = 2; fm < 2 * N_FAM; fm++) {
            const int f = fm / 2;
            const bool mapped = fm & 1;
            if (!sprig_kernels_force(families[f]) || !fam_has(f, ti) || (mapped && !fam_has_rows(f, ti))) continue;
            sprig_weight w;
            if (mapped) {
                CHECK(sprig_weight_init_mapped(&w, "w", ti, raw, K, N, NULL) == SPRIG_OK);
                CHECK(w.mapped && w.packed == NULL && w.kernel == f);
            } else {
                CHECK(sprig_weight_init(&w, "w", ti, raw, K, N, NULL) == SPRIG_OK);
                CHECK(w.packed != NULL && w.kernel == f);
            }
            for (int nn = 1; nn <= n; nn++) {
                sprig_act a;
                sprig_act_init(&a, x, nn, K, scratch, sb);
                const sprig_weight *ws[1] = { &w };
                float *ys[1] = { y };
                sprig_matmul(pools[1], &a, 1, ws, ys);
                CHECKF(memcmp(y, ref, (size_t)nn * N * sizeof(float)) == 0, "%s%s %s extremes n=%d differ from the reference",
                       families[f], mapped ? " (mapped rows)" : "", sprig_type_name(ti), nn);
            }
            sprig_weight_free(&w);
        }
        sprig_kernels_force("auto");
        free(raw);
    }
    sprig_free_aligned(scratch);
    free(y);
    free(ref);
    free(x);
}

/* The 256-element activation form: the rule, bsum and bsum32, and every
 * SIMD quantizer (when a family has one) equal to the scalar one. */
static void test_kquant_act(void)
{
    float x[256];
    sprig_mm_kblock r;
    memset(x, 0, sizeof x);
    sprig_mm_kquant_block_ref(x, &r);
    CHECK(r.d == 0.0f && !signbit(r.d) && r.bsum[3] == 0);
    for (int i = 0; i < 256; i++) x[i] = (float)((i * 13) % 255 - 127);
    x[200] = 254.0f;   /* amax 254: d = 2; odd values are ties, to even */
    sprig_mm_kquant_block_ref(x, &r);
    CHECK(r.d == 2.0f);
    int bad = 0;
    for (int i = 0; i < 256; i++) bad += r.q[i] != (int)nearbyintf(x[i] / 2);
    for (int j = 0; j < 16; j++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += r.q[16 * j + i];
        bad += r.bsum[j] != s;
    }
    for (int j = 0; j < 8; j++) bad += r.bsum32[j] != r.bsum[2 * j] + r.bsum[2 * j + 1];
    CHECK(bad == 0);
    CHECK_EQ_INT(r.q[200], 127);
    x[100] = NAN;
    sprig_mm_kquant_block_ref(x, &r);
    CHECK(isnan(r.d) && r.q[0] == 0 && r.bsum[0] == 0);
    for (int i = 0; i < 256; i++) x[i] = 1e-39f * (float)(i % 5);
    sprig_mm_kquant_block_ref(x, &r);
    CHECK(r.d == 0.0f && r.q[4] == 0);
    /* llama.cpp's q8_K scale: multiplier 127/amax, d = 1/(127/amax) (not amax/127) */
    for (int i = 0; i < 256; i++) x[i] = (float)(i - 100) * 0.0123f;
    sprig_mm_kquant_block_ref(x, &r);
    {
        const float amax = 155 * 0.0123f, id = 127.0f / amax;
        CHECK(r.d == 1.0f / id);
        int off = 0;
        for (int i = 0; i < 256; i++) off += r.q[i] != (int)nearbyintf(x[i] * id);
        CHECK(off == 0);
    }

    const int n = 5, K = 256 * 21;
    float *xa = make_act(n, K, true);
    /* whole super-blocks all zero, all subnormal, and of one value repeated */
    for (int i = 0; i < 256; i++) {
        xa[3 * 256 + i] = 0.0f;
        xa[K + 5 * 256 + i] = 1e-39f * (float)(i % 7);
        xa[2 * K + 7 * 256 + i] = -3.0f;
    }
    sprig_mm_kblock *r0 = calloc((size_t)n * 21, sizeof *r0), *r1 = calloc((size_t)n * 21, sizeof *r1);
    for (int fi = 1; fi <= 2; fi++) {
        const struct sprig_mm_family *f = family_of(fi);
        if (!sprig_kernels_force(fi == 1 ? "avx2" : "avx512") || !f->quant_k) continue;
        for (int i = 0; i < n; i++)
            for (int64_t s = 0; s < 21; s++) sprig_mm_kquant_block_ref(xa + i * K + s * 256, &r0[s * n + i]);
        memset(r1, 0x55, (size_t)n * 21 * sizeof *r1);
        for (int i = 0; i < n; i++) f->quant_k(xa + i * K, 21, n, r1 + i);
        CHECKF(memcmp(r0, r1, (size_t)n * 21 * sizeof *r0) == 0, "%s 256-quantizer differs", f->name);
    }
    sprig_kernels_force("auto");
    free(r0);
    free(r1);
    free(xa);
}

/* ------------------------------------------------------------------ Q4_1 / Q5_0 / Q5_1 by hand */

/* One block of each type built here from codes u[32] in llama.cpp's layout
 * (qs[j]: low nibble element j, high nibble element j + 16; qh bit j:
 * element j's fifth bit), times activations that quantize exactly (amax
 * 127: da = 1, q = x), against the product computed by hand in double;
 * every term is exact, so the float result must equal it. Two blocks per
 * row, two rows, and the same through the threaded driver. */
static void q32_block(int type, const uint8_t u[32], float d, float m, uint8_t *blk)
{
    uint16_t hd = sprig_f32_to_f16(d), hm = sprig_f32_to_f16(m);
    memcpy(blk, &hd, 2);
    size_t qs = 2;
    if (type != SPRIG_TYPE_Q5_0) { memcpy(blk + 2, &hm, 2); qs = 4; }
    if (type != SPRIG_TYPE_Q4_1) {
        uint32_t h = 0;
        for (int j = 0; j < 32; j++) h |= (uint32_t)(u[j] >> 4) << j;
        for (int i = 0; i < 4; i++) blk[qs + i] = (uint8_t)(h >> (8 * i));
        qs += 4;
    }
    for (int j = 0; j < 16; j++) blk[qs + j] = (uint8_t)((u[j] & 15) | (u[j + 16] & 15) << 4);
}

static void test_q32_hand(void)
{
    const int tys[3] = { SPRIG_TYPE_Q4_1, SPRIG_TYPE_Q5_0, SPRIG_TYPE_Q5_1 };
    for (int ti = 0; ti < 3; ti++) {
        const int type = tys[ti], umax = type == SPRIG_TYPE_Q4_1 ? 15 : 31;
        const size_t bsz = sprig_type_traits(type)->type_size;
        enum { K = 64, N = 3, R = 2 };
        uint8_t raw[N * 2 * 24];
        double want[R][N];
        float x[R][K];
        for (int r = 0; r < R; r++)
            for (int k = 0; k < K; k++) x[r][k] = k == 5 + r || k == 40 ? 127.0f : (float)((k * 7 + r * 3) % 41 - 20);
        for (int o = 0; o < N; o++) {
            const float d = 0.25f * (float)(o + 1), m = -0.5f * (float)o - 1.0f;
            double v[K];
            for (int b = 0; b < 2; b++) {
                uint8_t u[32];
                for (int j = 0; j < 32; j++) u[j] = (uint8_t)((j * 5 + o * 3 + b * 11) % (umax + 1));
                q32_block(type, u, d, m, raw + (size_t)(o * 2 + b) * bsz);
                for (int j = 0; j < 32; j++)
                    v[32 * b + j] = type == SPRIG_TYPE_Q5_0 ? (double)d * (u[j] - 16) : (double)d * u[j] + m;
            }
            /* the type table's dequantizer reads the same values */
            float deq[K];
            sprig_type_traits(type)->to_f32(raw + (size_t)o * 2 * bsz, deq, K);
            for (int k = 0; k < K; k++)
                CHECKF(deq[k] == (float)v[k], "%s o=%d k=%d: %g vs %g", sprig_type_name(type), o, k, deq[k], v[k]);
            for (int r = 0; r < R; r++) {
                want[r][o] = 0;
                for (int k = 0; k < K; k++) want[r][o] += v[k] * x[r][k];
            }
        }
        sprig_weight w;
        CHECK(sprig_weight_init(&w, "hand", type, raw, K, N, NULL) == SPRIG_OK);
        CHECK(w.packed == NULL);   /* no family packs these: the reference runs */
        float y[R][N];
        sprig_matmul_ref(&w, &x[0][0], R, &y[0][0]);
        for (int r = 0; r < R; r++)
            for (int o = 0; o < N; o++)
                CHECKF(y[r][o] == (float)want[r][o], "%s r=%d o=%d: %.9g want %.9g", sprig_type_name(type), r, o,
                       y[r][o], want[r][o]);
        /* the same through the threaded driver */
        size_t sb = sprig_act_scratch_bytes(R, K);
        void *scratch = sprig_calloc_aligned(sb, 1);
        sprig_act a;
        sprig_act_init(&a, &x[0][0], R, K, scratch, sb);
        float y2[R][N];
        const sprig_weight *ws[1] = { &w };
        float *ys[1] = { &y2[0][0] };
        sprig_matmul(pools[2], &a, 1, ws, ys);
        CHECK(memcmp(y, y2, sizeof y) == 0);
        sprig_free_aligned(scratch);
        sprig_weight_free(&w);
    }
}

/* ------------------------------------------------------------------ bad input, misc */

static void test_bad_input(void)
{
    sprig_weight w;
    sprig_error e;
    uint8_t buf[34 * 4] = { 0 };
    CHECK(sprig_weight_init(&w, "blk.0.q", 9 /* q8_1 */, buf, 32, 1, &e) == SPRIG_E_UNSUPPORTED);
    CHECK(strstr(e.msg, "blk.0.q") && strstr(e.msg, "q8_1"));
    CHECK(sprig_weight_init(&w, "blk.0.k", SPRIG_TYPE_Q8_0, buf, 48, 1, &e) == SPRIG_E_FORMAT);
    CHECK(strstr(e.msg, "blk.0.k") && strstr(e.msg, "48"));
    CHECK(sprig_weight_init(&w, "blk.1.ffn_down", SPRIG_MM_Q4_K, buf, 128, 1, &e) == SPRIG_E_FORMAT);
    CHECK(strstr(e.msg, "blk.1.ffn_down") && strstr(e.msg, "128") && strstr(e.msg, "256"));
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

/* The prefetch scheme: forced either way and back to the CPU's choice (the
 * table's, or SPRIG_PREFETCH's), which names what chose it. */
static void test_prefetch_scheme(void)
{
    const int chosen = sprig_prefetch_scheme();
    CHECK(chosen == SPRIG_PF_NEAR || chosen == SPRIG_PF_FAR);
    CHECK_STR(sprig_prefetch_name(), chosen == SPRIG_PF_FAR ? "far" : "near");
    const char *why = sprig_prefetch_why(), *env = getenv("SPRIG_PREFETCH");
    if (env && (!strcmp(env, "near") || !strcmp(env, "far"))) {
        CHECK_STR(why, "SPRIG_PREFETCH");
        CHECK_STR(sprig_prefetch_name(), env);
    } else {
        CHECK(!strcmp(why, "default") || !strncmp(why, "cpu table: ", 11));
    }
    sprig_prefetch_force(SPRIG_PF_NEAR);
    CHECK(sprig_prefetch_scheme() == SPRIG_PF_NEAR);
    sprig_prefetch_force(SPRIG_PF_FAR);
    CHECK(sprig_prefetch_scheme() == SPRIG_PF_FAR);
    CHECK_STR(sprig_prefetch_name(), "far");
    sprig_prefetch_force(-1);
    CHECK(sprig_prefetch_scheme() == chosen);
    printf("  prefetch: %s (%s)\n", sprig_prefetch_name(), why);
}

int main(void)
{
    for (int t = 1; t <= 3; t++) {
        pools[t] = sprig_pool_create(t, NULL);
        if (!pools[t]) { fprintf(stderr, "no pool\n"); return 1; }
    }
    RUN(test_prefetch_scheme);
    RUN(test_quant_block);
    RUN(test_kquant_golden);
    RUN(test_kquant_hand);
    RUN(test_q32_hand);
    RUN(test_kquant_layout);
    RUN(test_kquant_act);
    RUN(test_kquant_extremes);
    RUN(test_reference_vs_double);
    RUN(test_kernels);
    RUN(test_fused);
    RUN(test_split_stress);
    RUN(test_bad_input);
    for (int t = 1; t <= 3; t++) sprig_pool_free(pools[t]);
    return test_summary("test-matmul");
}
