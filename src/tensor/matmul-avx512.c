/*
 * tensor/matmul-avx512 — AVX-512 (F, BW, VL, DQ, VNNI) matmul kernels and the
 * activation quantizer; compiled with AVX-512 flags, called only after CPUID.
 *
 * One zmm holds 16 output columns (a packed panel, see matmul-kern.h). A tile
 * is G panels x R activation rows: every 64-byte weight load is applied to
 * all R rows before the next one, so a batch of R rows costs one pass over
 * the weights. Panels are the outer loop and row chunks the inner one, so a
 * panel stays in L1/L2 while every row chunk uses it.
 *
 * Quantized weights: per 32-block, the int32 accumulator starts at the
 * activation's offset correction (-128*sum(a) for Q8_0 stored as q ^ 0x80,
 * -8*sum(a) for Q4_0 nibbles), takes 8 vpdpbusd (u8 weights x the
 * activation's 4 int8 broadcast), giving the exact block dot; then
 * acc = fma(cvt(isum), dw * da, acc), as the reference does.
 * Float weights: acc = fma(w, x, acc) per k, in k order.
 * Register budget: 32 zmm; the (R, G) table below keeps accumulators and one
 * step's weights in registers.
 */
#include "tensor/matmul-kern.h"
#include "tensor/types.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

#define RMAX 12   /* rows per tile */
#define GMAX 8    /* panels per tile */

AI __m512i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* Store 16 columns starting at col (masked at the right edge of y). */
AI void store16(float *y, int64_t col, int64_t n_out, __m512 v)
{
    int64_t rem = n_out - col;
    if (rem >= 16) _mm512_storeu_ps(y + col, v);
    else if (rem > 0) _mm512_mask_storeu_ps(y + col, (__mmask16)((1u << rem) - 1), v);
}

/* ---------------------------------------------------------------- quantized tile */

AI void qtile(const sprig_mm_job *J, int64_t p, int r0, const int R, const int G, const bool q4)
{
    const int64_t nb = J->n_in / SPRIG_QK;
    const size_t ps = J->pstride, qsb = q4 ? 256 : 512;
    const uint8_t *base = J->packed + (size_t)p * ps;
    const uint8_t *wd = base + (size_t)nb * qsb;
    const int8_t *aq = J->aq + (size_t)r0 * SPRIG_QK;
    const int64_t n = J->n;
    const float *ad = J->ad + r0;
    const int32_t *ac = (q4 ? J->ac4 : J->ac8) + r0;
    const __m512i m4 = _mm512_set1_epi8(15);

    __m512 acc[RMAX][GMAX];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int g = 0; g < G; g++) acc[r][g] = _mm512_setzero_ps();

    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qb = base + (size_t)b * qsb;
        __m512i ia[RMAX][GMAX];
        UNROLL for (int r = 0; r < R; r++) {
            __m512i c = _mm512_set1_epi32(ac[b * n + r]);
            UNROLL for (int g = 0; g < G; g++) ia[r][g] = c;
        }
        if (!q4) {
            UNROLL for (int j = 0; j < 8; j++) {
                __m512i wv[GMAX];
                UNROLL for (int g = 0; g < G; g++) wv[g] = _mm512_loadu_si512(qb + g * ps + j * 64);
                UNROLL for (int r = 0; r < R; r++) {
                    __m512i av = bcast4(aq + (b * n + r) * SPRIG_QK + j * 4);
                    UNROLL for (int g = 0; g < G; g++) ia[r][g] = _mm512_dpbusd_epi32(ia[r][g], wv[g], av);
                }
            }
        } else {
            UNROLL for (int t = 0; t < 4; t++) {
                __m512i lo[GMAX], hi[GMAX];
                UNROLL for (int g = 0; g < G; g++) {
                    __m512i v = _mm512_loadu_si512(qb + g * ps + t * 64);
                    lo[g] = _mm512_and_si512(v, m4);
                    hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                }
                UNROLL for (int r = 0; r < R; r++) {
                    const int8_t *a = aq + (b * n + r) * SPRIG_QK + t * 4;
                    __m512i al = bcast4(a), ah = bcast4(a + 16);
                    UNROLL for (int g = 0; g < G; g++) {
                        ia[r][g] = _mm512_dpbusd_epi32(ia[r][g], lo[g], al);
                        ia[r][g] = _mm512_dpbusd_epi32(ia[r][g], hi[g], ah);
                    }
                }
            }
        }
        __m512 dw[GMAX];
        UNROLL for (int g = 0; g < G; g++)
            dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wd + g * ps + b * 32)));
        UNROLL for (int r = 0; r < R; r++) {
            __m512 s = _mm512_set1_ps(ad[b * n + r]);
            UNROLL for (int g = 0; g < G; g++)
                acc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[r][g]), _mm512_mul_ps(dw[g], s), acc[r][g]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *yr = J->y + (size_t)(r0 + r) * J->n_out;
        UNROLL for (int g = 0; g < G; g++) store16(yr, (p + g) * SPRIG_MM_PANEL, J->n_out, acc[r][g]);
    }
}

/* ---------------------------------------------------------------- float tile */

AI __m512 loadw(int type, const uint8_t *p)
{
    if (type == SPRIG_TYPE_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (type == SPRIG_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AI void ftile(const sprig_mm_job *J, int64_t p, int r0, const int R, const int G, const int type)
{
    const int64_t K = J->n_in;
    const size_t ps = J->pstride, kb = type == SPRIG_TYPE_F32 ? 64 : 32;
    const uint8_t *base = J->packed + (size_t)p * ps;
    const float *x = J->x + (size_t)r0 * K;

    __m512 acc[RMAX][GMAX];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int g = 0; g < G; g++) acc[r][g] = _mm512_setzero_ps();

#pragma GCC unroll 2
    for (int64_t k = 0; k < K; k++) {
        __m512 wv[GMAX];
        UNROLL for (int g = 0; g < G; g++) wv[g] = loadw(type, base + g * ps + k * kb);
        UNROLL for (int r = 0; r < R; r++) {
            __m512 xv = _mm512_set1_ps(x[r * K + k]);
            UNROLL for (int g = 0; g < G; g++) acc[r][g] = _mm512_fmadd_ps(wv[g], xv, acc[r][g]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *yr = J->y + (size_t)(r0 + r) * J->n_out;
        UNROLL for (int g = 0; g < G; g++) store16(yr, (p + g) * SPRIG_MM_PANEL, J->n_out, acc[r][g]);
    }
}

/* ---------------------------------------------------------------- instantiation */

typedef void (*tile_fn)(const sprig_mm_job *J, int64_t p, int r0);

/* Panels per tile for R rows: quantized tiles hold 2*R*G accumulators + 2*G
 * weight/scale vectors; float tiles R*G accumulators + G weights. */
static const int q_g[RMAX + 1] = { 0, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1 };
static const int f_g[RMAX + 1] = { 0, 8, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2 };

#define QT(NAME, R, G, Q4) \
    static void NAME##_r##R##_g##G(const sprig_mm_job *J, int64_t p, int r0) { qtile(J, p, r0, R, G, Q4); }
#define FT(NAME, R, G, TY) \
    static void NAME##_r##R##_g##G(const sprig_mm_job *J, int64_t p, int r0) { ftile(J, p, r0, R, G, TY); }

#define QSET(NAME, Q4) \
    QT(NAME, 1, 4, Q4) QT(NAME, 2, 4, Q4) QT(NAME, 3, 2, Q4) QT(NAME, 4, 2, Q4) QT(NAME, 5, 2, Q4) \
    QT(NAME, 6, 2, Q4) QT(NAME, 7, 1, Q4) QT(NAME, 8, 1, Q4) QT(NAME, 9, 1, Q4) QT(NAME, 10, 1, Q4) \
    QT(NAME, 11, 1, Q4) QT(NAME, 12, 1, Q4) \
    QT(NAME, 1, 1, Q4) QT(NAME, 2, 1, Q4) QT(NAME, 3, 1, Q4) QT(NAME, 4, 1, Q4) QT(NAME, 5, 1, Q4) \
    QT(NAME, 6, 1, Q4) \
    static const tile_fn NAME##_big[RMAX + 1] = { NULL, NAME##_r1_g4, NAME##_r2_g4, NAME##_r3_g2, \
        NAME##_r4_g2, NAME##_r5_g2, NAME##_r6_g2, NAME##_r7_g1, NAME##_r8_g1, NAME##_r9_g1, NAME##_r10_g1, \
        NAME##_r11_g1, NAME##_r12_g1 }; \
    static const tile_fn NAME##_one[RMAX + 1] = { NULL, NAME##_r1_g1, NAME##_r2_g1, NAME##_r3_g1, \
        NAME##_r4_g1, NAME##_r5_g1, NAME##_r6_g1, NAME##_r7_g1, NAME##_r8_g1, NAME##_r9_g1, NAME##_r10_g1, \
        NAME##_r11_g1, NAME##_r12_g1 };

#define FSET(NAME, TY) \
    FT(NAME, 1, 8, TY) FT(NAME, 2, 4, TY) FT(NAME, 3, 4, TY) FT(NAME, 4, 4, TY) FT(NAME, 5, 4, TY) \
    FT(NAME, 6, 4, TY) FT(NAME, 7, 2, TY) FT(NAME, 8, 2, TY) FT(NAME, 9, 2, TY) FT(NAME, 10, 2, TY) \
    FT(NAME, 11, 2, TY) FT(NAME, 12, 2, TY) \
    FT(NAME, 1, 1, TY) FT(NAME, 2, 1, TY) FT(NAME, 3, 1, TY) FT(NAME, 4, 1, TY) FT(NAME, 5, 1, TY) \
    FT(NAME, 6, 1, TY) FT(NAME, 7, 1, TY) FT(NAME, 8, 1, TY) FT(NAME, 9, 1, TY) FT(NAME, 10, 1, TY) \
    FT(NAME, 11, 1, TY) FT(NAME, 12, 1, TY) \
    static const tile_fn NAME##_big[RMAX + 1] = { NULL, NAME##_r1_g8, NAME##_r2_g4, NAME##_r3_g4, \
        NAME##_r4_g4, NAME##_r5_g4, NAME##_r6_g4, NAME##_r7_g2, NAME##_r8_g2, NAME##_r9_g2, NAME##_r10_g2, \
        NAME##_r11_g2, NAME##_r12_g2 }; \
    static const tile_fn NAME##_one[RMAX + 1] = { NULL, NAME##_r1_g1, NAME##_r2_g1, NAME##_r3_g1, \
        NAME##_r4_g1, NAME##_r5_g1, NAME##_r6_g1, NAME##_r7_g1, NAME##_r8_g1, NAME##_r9_g1, NAME##_r10_g1, \
        NAME##_r11_g1, NAME##_r12_g1 };

QSET(q8, false)
QSET(q4, true)
FSET(f32, SPRIG_TYPE_F32)
FSET(f16, SPRIG_TYPE_F16)
FSET(bf16, SPRIG_TYPE_BF16)

/* Panels outer, row chunks of nearly equal size (R or R+1 rows) inner. A step
 * covers g panels, the smallest tile width any chunk allows, so every chunk
 * works on the same panels while they are in cache. */
static void drive(const sprig_mm_job *J, const tile_fn *big, const tile_fn *one, const int *gtab)
{
    const int n = J->n, chunks = (n + RMAX - 1) / RMAX;
    int gstep = GMAX;
    for (int c = 0; c < chunks; c++) {
        int R = (int)((int64_t)n * (c + 1) / chunks) - (int)((int64_t)n * c / chunks);
        if (gtab[R] < gstep) gstep = gtab[R];
    }
    for (int64_t p = J->p0; p < J->p1;) {
        int g = gstep <= J->p1 - p ? gstep : 1;
        for (int c = 0; c < chunks; c++) {
            int r0 = (int)((int64_t)n * c / chunks), R = (int)((int64_t)n * (c + 1) / chunks) - r0;
            if (g > 1 && gtab[R] == g) big[R](J, p, r0);
            else for (int i = 0; i < g; i++) one[R](J, p + i, r0);
        }
        p += g;
    }
}

static void k_q8(const sprig_mm_job *J) { drive(J, q8_big, q8_one, q_g); }
static void k_q4(const sprig_mm_job *J) { drive(J, q4_big, q4_one, q_g); }
static void k_f32(const sprig_mm_job *J) { drive(J, f32_big, f32_one, f_g); }
static void k_f16(const sprig_mm_job *J) { drive(J, f16_big, f16_one, f_g); }
static void k_bf16(const sprig_mm_job *J) { drive(J, bf16_big, bf16_one, f_g); }

/* ---------------------------------------------------------------- activation quantizer */

static void quant_row(const float *x, int64_t nb, int64_t stride, int8_t *q, float *d, int32_t *c8, int32_t *c4)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * SPRIG_QK;
        int8_t *qb = q + b * stride * SPRIG_QK;
        __m512 x0 = _mm512_loadu_ps(xb), x1 = _mm512_loadu_ps(xb + 16);
        __m512i a0 = _mm512_and_si512(_mm512_castps_si512(x0), absm);
        __m512i a1 = _mm512_and_si512(_mm512_castps_si512(x1), absm);
        uint32_t amax = _mm512_reduce_max_epu32(_mm512_max_epu32(a0, a1));
        float fa, da;
        memcpy(&fa, &amax, 4);
        da = fa / 127.0f;
        if (amax >= 0x7f800000u || !(da >= FLT_MIN)) {
            memset(qb, 0, SPRIG_QK);
            d[b * stride] = amax >= 0x7f800000u ? NAN : 0.0f;
            c8[b * stride] = c4[b * stride] = 0;
            continue;
        }
        __m512 id = _mm512_set1_ps(1.0f / da);
        __m512i q0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(x0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512i q1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(x1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)qb, _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(qb + 16), _mm512_cvtepi32_epi8(q1));
        int32_t s = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        d[b * stride] = da;
        c8[b * stride] = -128 * s;
        c4[b * stride] = -8 * s;
    }
}

const struct sprig_mm_family sprig_mm_family_avx512 = {
    .name = "avx512-vnni", .q8_xor = true,
    .f32 = k_f32, .f16 = k_f16, .bf16 = k_bf16, .q8_0 = k_q8, .q4_0 = k_q4,
    .quant = quant_row,
};
