/*
 * tensor/matmul-avx512 — AVX-512 (F, BW, VL, DQ, VNNI) matmul kernels and the
 * activation quantizer; compiled with AVX-512 flags, called only after CPUID.
 *
 * One zmm holds 16 output columns (a packed panel, see matmul-kern.h). Every
 * 64-byte weight load is applied to all rows of a tile before the next one,
 * so a batch costs one pass over the weights.
 *
 * Quantized weights: per 32-block, each row's int32 accumulator starts at the
 * activation's offset correction (-128*sum(a) for Q8_0 stored as q ^ 0x80,
 * -8*sum(a) for Q4_0 nibbles) and takes 8 vpdpbusd (u8 weights x the
 * activation's 4 int8 broadcast), giving the exact block dot; then
 * acc = fma(cvt(isum), dw * da, acc), as the reference does. Two tile shapes:
 *  - G-panel tiles of up to 12 rows (G = 4 for 1-2 rows, 2 for 3-6, 1
 *    above), weights outer (j loop), 2*R*G accumulators. Decode runs here: G
 *    panels are G quant and G scale streams per thread, which DRAM serves
 *    better at 60 GB/s than one stream (measured: 86% of a paired read against
 *    77-81%). Batches of 5-16 rows do not (a 6-row tile of 2 panels spills
 *    registers: ~40% slower than one panel); bigger ones run in chunks;
 *  - for 5 to 16 rows, ONE panel, rows outer with the 8 weight vectors of a
 *    block in registers; each row's dot is a chain of 8 vpdpbusd into a
 *    temporary (renamed: R accumulators + 8 weights fit 32 zmm up to R = 16),
 *    so the batch keeps its accumulators in registers for the whole k range.
 *    The quants and the scales of consecutive panels are prefetched ~34
 *    blocks ahead.
 * K-quant weights (Q2_K..Q6_K): per super-block and sub-block, a chain of vpdpbusd of the
 * unit bytes (nibbles of the raw quant bytes, Q5_K/Q6_K's high bits merged
 * in with one vpternlogd) against the activation's broadcast bytes, started
 * at 0 (Q6_K: at -32 * bsum), then I += S * sc (vpmulld by the 16 columns'
 * scales); Q4_K/Q5_K's -M is 4 vpdpwssd of the negated min pairs against the
 * bsum32 pairs. acc = fma(I, d * da, acc), acc = fma(-M, dmin * da, acc): the
 * reference's roundings. Tiles: 1-8 rows on one panel, rows outer (a
 * sub-block's 8 weight vectors stay in registers, each row's S is a renamed
 * temporary: nothing spills; G-panel tiles, weights outer, stay for -DKG2/
 * -DKG34 measurements; Q2_K/Q3_K: -4 * bsum starts and, for Q2_K, 8
 * vpdpwssd of the min pairs); more rows in chunks of up to 8 with k in
 * ranges, like Q8_0.
 * Measured (1 thread, 2048 x 8192, Zen 5 under load, so +-10%): n=1 Q4_K
 * ~310 us (Q4_0 ~330), Q6_K ~485, Q2_K ~290; n=16 Q4_K ~1200 us (Q4_0
 * ~1050), Q6_K ~1550, Q2_K ~1090.
 * Float weights: a tile is G panels x R <= 12 rows, acc = fma(w, x, acc) per
 * k, in k order.
 * With more rows than a tile takes, rows run in chunks and k is walked in
 * ranges of ~8 KB of panel, every chunk over a range while it is in L1
 * (partial sums wait in y).
 *
 * Measured on Zen 4 (the 512-bit ops take both 256-bit FMA pipes): vpdpbusd,
 * vmulps and vfmadd each issue once per cycle and share those pipes (vcvtdq2ps
 * and vcvtph2ps do not), so a row-block costs 8 + 1 + 1 = 10 cycles: 80% of
 * the vpdpbusd peak is the ceiling of this (bit-exact per-block) scheme. The
 * 16-row tile runs at 80-88% of that ceiling (63-71% of peak), from L2 on one
 * thread as streaming from DRAM on two (`sprig bench matmul --ns 16`), so
 * it is instruction-bound, not memory-bound. Measured and not it: the
 * correction broadcast, splitting the 8-deep vpdpbusd chain in two, the
 * prefetch distance (4-34 KB). Dropping the vmulps gains ~6%.
 */
#include "tensor/matmul-kern.h"
#include "tensor/types.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

#define RMAX 12   /* rows per float tile */
#define QRMAX 16  /* rows per quantized tile */
#define Q_ONE_MIN 5 /* fewest rows that run one-panel tiles */

/* Software prefetch (into L2), PF_DIST bytes of a panel ahead: float tiles
 * of at least PF_MIN_ROWS / 2 rows, Q8_0/Q4_0 G-panel tiles of one row
 * (PF_DIST_1: decode gains a few percent at high bandwidth; longer distances
 * lose) or of PF_MIN_ROWS rows (2..5 rows measured best without). */
#ifndef PF_MIN_ROWS
#define PF_MIN_ROWS 6
#endif
#ifndef PF_DIST
#define PF_DIST 8192
#endif
#ifndef PF_DIST_1
#define PF_DIST_1 2048
#endif
/* K-quant tiles prefetch at every row count (PF_DIST_1 ahead for one row,
 * PF_DIST for more), with the NTA hint. Measured as below (Q4_K and Q6_K,
 * 2048 x 16384 and 8192 x 2048): without a prefetch 2-5 rows ran 1.2-3x
 * slower than with one (a 5-row Q4_K call took longer than a 6-row one, and
 * than two 8-row ones); NTA gained ~4% over T1 at 4-16 rows, also where
 * chunks of rows re-read a k range (T1 or T0 there: 1-13% slower). */
#ifndef K_PF_HINT
#define K_PF_HINT _MM_HINT_NTA
#endif

/* The far prefetch scheme (matmul.h; Zen 4 and CPUs the table does not
 * name): the T1 hint where near uses NTA, one-row K-quant tiles
 * K_PF_DIST_1_FAR ahead, one-panel Q8_0/Q4_0 tiles Q_PF_DIST_FAR. Measured
 * on Zen 4 (EPYC 9004, 2 threads, in-process A/B over 16 DRAM-resident
 * tensors of llama-1b, medians of 30 paired calls) against near: Q4_K one
 * row 0.68x the time, 8 rows 0.63-0.72x (ffn_gate 2048 x 8192, and Q6_K
 * ffn_down 8192 x 2048: 0.76x and 0.63x); Q8_0 8 rows 0.69x, 16 rows
 * 0.93x. */
#ifndef K_PF_DIST_1_FAR
#define K_PF_DIST_1_FAR 16384
#endif
#ifndef Q_PF_DIST_FAR
#define Q_PF_DIST_FAR 34816
#endif
/* One prefetch of a weight line under the job's scheme: far with T1 (into
 * L2), near with the tile's own hint. */
#define PF(p, far, NEAR_HINT) \
    ((far) ? _mm_prefetch((const char *)(p), _MM_HINT_T1) : _mm_prefetch((const char *)(p), NEAR_HINT))

/* A K-quant tile's prefetch at super-block s of one panel: its record
 * stream (PF_DIST_1, or K_PF_DIST_1_FAR, ahead for one row, PF_DIST for
 * more) and the f16 scales as far ahead. */
AI void k_prefetch(const uint8_t *rb, const uint8_t *dsb, int64_t s, size_t rec, int nd, int R, bool far)
{
    const size_t dist = R == 1 ? (far ? K_PF_DIST_1_FAR : PF_DIST_1) : PF_DIST;
    for (size_t l = 0; l < rec; l += 64) PF(rb + dist + l, far, K_PF_HINT);
    PF(dsb + (s + (int64_t)(dist / rec)) * nd * 32, far, K_PF_HINT);
}
/* One-panel quantized tiles: bytes of quants ahead (34 Q8_0 blocks), the
 * scales as many blocks ahead; one line per row of the tile (the rest after
 * the last row) instead of a block's lines back to back, with the NTA hint
 * (into L1) instead of T1. Measured (Zen 5, 2 threads, 2048 x 16384 and
 * 8192 x 4096, in-process A/B over DRAM-resident copies, medians of 40
 * paired calls): a sampled profile of the 8-row tile had ~28% of its
 * samples on the block's back-to-back prefetch instructions (stalled for
 * miss buffers); NTA beat T1 by 3-12% at 8-16 rows, one line per row
 * gained 5-8% more, 17 KB ahead 3-10% over 8.5 KB; prefetching every other
 * line only lost 50%. */
#ifndef Q_PF_DIST
#define Q_PF_DIST 17408
#endif
#ifndef Q_PF_HINT
#define Q_PF_HINT _MM_HINT_NTA
#endif
#define GMAX 8    /* panels per tile */
#define QGRMAX 12 /* rows per quantized G-panel tile */

AI __m512i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* acc += dot4(u8 w, s8 broadcast of the 4 bytes at p), the broadcast embedded
 * in the instruction's memory operand (gcc would emit a separate
 * vpbroadcastd, an extra uop on a busy vector port). */
AI __m512i dpbusd_b(__m512i acc, __m512i w, const int8_t *p)
{
    __asm__("vpdpbusd %[m]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [m] "m"(*(const int32_t *)p));
    return acc;
}

/* Store 16 columns starting at col (masked at the right edge of y). */
AI void store16(float *y, int64_t col, int64_t n_out, __m512 v)
{
    int64_t rem = n_out - col;
    if (rem >= 16) _mm512_storeu_ps(y + col, v);
    else if (rem > 0) _mm512_mask_storeu_ps(y + col, (__mmask16)((1u << rem) - 1), v);
}

/* Load 16 columns starting at col (masked at the right edge; lanes past it are 0). */
AI __m512 load16(const float *y, int64_t col, int64_t n_out)
{
    int64_t rem = n_out - col;
    if (rem >= 16) return _mm512_loadu_ps(y + col);
    return _mm512_maskz_loadu_ps(rem > 0 ? (__mmask16)((1u << rem) - 1) : 0, y + col);
}

/* Accumulators of a float tile: zero when its k range starts at 0, else the partial
 * sums an earlier range left in y (a float stored and reloaded is the same
 * float, so splitting k changes no rounding). */
#define TILE_ACC_INIT(first)                                                                        \
    UNROLL for (int r = 0; r < R; r++) {                                                           \
        const float *yr = J->y + (size_t)(r0 + r) * J->n_out;                                      \
        UNROLL for (int g = 0; g < G; g++)                                                         \
            acc[r][g] = (first) ? _mm512_setzero_ps() : load16(yr, (p + g) * SPRIG_MM_PANEL, J->n_out); \
    }

/* ---------------------------------------------------------------- quantized tile */

/* Rows [r0, r0+R) x panel p x blocks [b0, b1). Rows outer, the 8 weight
 * vectors of a block in registers: each row's exact block dot is a chain of 8
 * vpdpbusd into one temporary (renamed, so R accumulators + 8 weights + a few
 * temporaries fit 32 zmm up to R = 16). A non-zero dist prefetches the
 * quants that many bytes ahead (consecutive panels are contiguous, so it runs
 * on into the next panel) and the scales as many blocks ahead (into the next
 * panel's near the end). */
AI void qtile_r(const sprig_mm_job *J, int64_t p, int r0, int64_t b0, int64_t b1, const int R, const bool q4,
              const size_t dist)
{
    const size_t qsb = q4 ? 256 : 512;
    const int64_t nb = J->n_in / SPRIG_QK;
    const uint8_t *base = J->packed + (size_t)p * J->pstride, *wd = base + (size_t)nb * qsb;
    const sprig_mm_qblock *aq = J->aq + r0;   /* row r of block b: aq[b * n + r] */
    const int64_t n = J->n;
    const __m512i m4 = _mm512_set1_epi8(15);
    const bool far = J->pf_far;

    __m512 acc[QRMAX];   /* zero, or the partial sums an earlier k range left in y */
    UNROLL for (int r = 0; r < R; r++)
        acc[r] = b0 == 0 ? _mm512_setzero_ps() : load16(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL, J->n_out);

    const int npf = (int)(qsb / 64);   /* lines per block */
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *qb = base + (size_t)b * qsb, *db = wd + (size_t)b * 32;
        if (dist) {
            if (!(b & 1)) {   /* scales: this panel's, dist/16 ahead, then the next panel's */
                int64_t bb = b + (int64_t)(dist / qsb);
                const char *sp = bb < nb ? (const char *)wd + bb * 32 : (const char *)wd + J->pstride + (bb - nb) * 32;
                PF(sp, far, Q_PF_HINT);
            }
        }
        __m512i wv[8];
        if (!q4) {
            UNROLL for (int j = 0; j < 8; j++) wv[j] = _mm512_loadu_si512(qb + j * 64);
        } else {
            UNROLL for (int t = 0; t < 4; t++) {
                __m512i v = _mm512_loadu_si512(qb + t * 64);
                wv[2 * t] = _mm512_and_si512(v, m4);
                wv[2 * t + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)db));
        UNROLL for (int r = 0; r < R; r++) {
            if (dist) {   /* the block dist ahead, a line per row (the rest after the last) */
                if (r < npf) PF(qb + dist + 64 * r, far, Q_PF_HINT);
                if (r == R - 1) UNROLL for (int l = R; l < npf; l++) PF(qb + dist + 64 * l, far, Q_PF_HINT);
            }
            const sprig_mm_qblock *a = &aq[b * n + r];
            __m512i ia = _mm512_set1_epi32(q4 ? a->c4 : a->c8);
            if (!q4) {
                UNROLL for (int j = 0; j < 8; j++) ia = dpbusd_b(ia, wv[j], a->q + j * 4);
            } else {
                UNROLL for (int t = 0; t < 4; t++) {
                    ia = dpbusd_b(ia, wv[2 * t], a->q + t * 4);
                    ia = dpbusd_b(ia, wv[2 * t + 1], a->q + 16 + t * 4);
                }
            }
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), _mm512_mul_ps(dw, _mm512_set1_ps(a->d)), acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        store16(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL, J->n_out, acc[r]);
}

/* Rows [r0, r0+R) x panels [p, p+G) x blocks [b0, b1), R <= QGRMAX: per
 * weight vector (j loop), all R rows; 2*R*G accumulators. */
AI void qtile_g(const sprig_mm_job *J, int64_t p, int r0, int64_t b0, int64_t b1, const int R, const int G, const bool q4)
{
    const int64_t nb = J->n_in / SPRIG_QK;
    const size_t ps = J->pstride, qsb = q4 ? 256 : 512;
    const uint8_t *base = J->packed + (size_t)p * ps;
    const uint8_t *wd = base + (size_t)nb * qsb;
    const sprig_mm_qblock *aq = J->aq + r0;   /* row r of block b: aq[b * n + r] */
    const int64_t n = J->n;
    const __m512i m4 = _mm512_set1_epi8(15);

    __m512 acc[QGRMAX][4];
    TILE_ACC_INIT(b0 == 0)

    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *qb = base + (size_t)b * qsb;
        if (R == 1 || R >= PF_MIN_ROWS) {   /* start DRAM reads ahead */
            const size_t dist = R == 1 ? PF_DIST_1 : PF_DIST;
            UNROLL for (int g = 0; g < G; g++) {
                UNROLL for (size_t l = 0; l < qsb; l += 64)
                    _mm_prefetch((const char *)qb + g * ps + dist + l, _MM_HINT_T1);
                if (!(b & 1)) _mm_prefetch((const char *)wd + g * ps + b * 32 + dist / 16, _MM_HINT_T1);
            }
        }
        __m512i ia[QGRMAX][4];
        UNROLL for (int r = 0; r < R; r++) {
            __m512i c = _mm512_set1_epi32(q4 ? aq[b * n + r].c4 : aq[b * n + r].c8);
            UNROLL for (int g = 0; g < G; g++) ia[r][g] = c;
        }
        if (!q4) {
            UNROLL for (int j = 0; j < 8; j++) {
                __m512i wv[4];
                UNROLL for (int g = 0; g < G; g++) wv[g] = _mm512_loadu_si512(qb + g * ps + j * 64);
                UNROLL for (int r = 0; r < R; r++) {
                    const int8_t *a = aq[b * n + r].q + j * 4;
                    if (G == 1) {
                        ia[r][0] = dpbusd_b(ia[r][0], wv[0], a);
                    } else {   /* one broadcast register for the G panels */
                        __m512i av = bcast4(a);
                        UNROLL for (int g = 0; g < G; g++) ia[r][g] = _mm512_dpbusd_epi32(ia[r][g], wv[g], av);
                    }
                }
            }
        } else {
            UNROLL for (int t = 0; t < 4; t++) {
                __m512i lo[4], hi[4];
                UNROLL for (int g = 0; g < G; g++) {
                    __m512i v = _mm512_loadu_si512(qb + g * ps + t * 64);
                    lo[g] = _mm512_and_si512(v, m4);
                    hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                }
                UNROLL for (int r = 0; r < R; r++) {
                    const int8_t *a = aq[b * n + r].q + t * 4;
                    if (G == 1) {
                        ia[r][0] = dpbusd_b(ia[r][0], lo[0], a);
                        ia[r][0] = dpbusd_b(ia[r][0], hi[0], a + 16);
                    } else {
                        __m512i al = bcast4(a), ah = bcast4(a + 16);
                        UNROLL for (int g = 0; g < G; g++) {
                            ia[r][g] = _mm512_dpbusd_epi32(ia[r][g], lo[g], al);
                            ia[r][g] = _mm512_dpbusd_epi32(ia[r][g], hi[g], ah);
                        }
                    }
                }
            }
        }
        __m512 dw[4];
        UNROLL for (int g = 0; g < G; g++)
            dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wd + g * ps + b * 32)));
        UNROLL for (int r = 0; r < R; r++) {
            __m512 s = _mm512_set1_ps(aq[b * n + r].d);
            UNROLL for (int g = 0; g < G; g++)
                acc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[r][g]), _mm512_mul_ps(dw[g], s), acc[r][g]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *yr = J->y + (size_t)(r0 + r) * J->n_out;
        UNROLL for (int g = 0; g < G; g++) store16(yr, (p + g) * SPRIG_MM_PANEL, J->n_out, acc[r][g]);
    }
}

/* ---------------------------------------------------------------- K-quant tile */

#define KRMAX 8   /* rows per K-quant tile */

/* 16 int32 lanes from 16 bytes (unsigned / signed). */
AI __m512i u8x16(const uint8_t *p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)); }
AI __m512i s8x16(const uint8_t *p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)); }

/* Rows [r0, r0+R) x panels [p, p+G) x super-blocks [s0, s1) of a Q4_K, Q5_K
 * or Q6_K weight (layout in matmul-kern.h), weights outer, rows inner. Per
 * (row, panel): the float accumulator, the exact int32 I of the super-block
 * and one sub-block sum S (two for R*G <= 4: both nibbles of a load at
 * once; 3*R*G or 4*R*G zmm, R*G <= 8; gcc still spills some). A sub-block's S is a chain
 * of vpdpbusd (unit bytes x 4 broadcast activation bytes) — for Q6_K started
 * at -32 * bsum[j] — then I += S * sc_j (vpmulld by the panel's 16 scales).
 * Q4_K/Q5_K: -M comes from vpdpwssd of the negated min pairs against the
 * activation's bsum32 pairs. Then acc = fma(I, d * da, acc) and
 * acc = fma(-M, dmin * da, acc): the reference's roundings. */
AI void ktile(const sprig_mm_job *J, int64_t p, int r0, int64_t s0, int64_t s1, const int R, const int G, const int type)
{
    const int64_t ns = J->n_in / SPRIG_MM_QK_K;
    const size_t ps = J->pstride;
    const size_t rec = type == SPRIG_MM_Q4_K ? SPRIG_MM_Q4K_REC : type == SPRIG_MM_Q5_K ? SPRIG_MM_Q5K_REC : SPRIG_MM_Q6K_REC;
    const int nd = type == SPRIG_MM_Q6_K ? 1 : 2;
    const uint8_t *base = J->packed + (size_t)p * ps, *dsb = base + (size_t)ns * rec;
    const sprig_mm_kblock *ak = J->ak + r0;   /* row r of super-block s: ak[s * n + r] */
    const int64_t n = J->n;
    const __m512i m4 = _mm512_set1_epi8(15);

    __m512 acc[KRMAX][4];
    TILE_ACC_INIT(s0 == 0)

    for (int64_t s = s0; s < s1; s++) {
        const uint8_t *rb = base + (size_t)s * rec;
        UNROLL for (int g = 0; g < G; g++) k_prefetch(rb + g * ps, dsb + g * ps, s, rec, nd, R, J->pf_far);   /* start DRAM reads ahead */
        const sprig_mm_kblock *a = &ak[s * n];
        __m512i I[KRMAX][4], S[KRMAX][4];
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int g = 0; g < G; g++) I[r][g] = _mm512_setzero_si512();

        if (type != SPRIG_MM_Q6_K) {
            const size_t sco = type == SPRIG_MM_Q4_K ? SPRIG_MM_Q4K_SC : SPRIG_MM_Q5K_SC;
            const size_t mo = type == SPRIG_MM_Q4_K ? SPRIG_MM_Q4K_M : SPRIG_MM_Q5K_M;
            /* sub-block j = 2*g2 + hi: nibble hi of qs bytes 32*g2 .. +31 (groups 8*g2 + t),
             * Q5_K's fifth bit j of qh[l] (qh groups t) */
            /* small tiles take both nibbles of a load at once (two chains per
             * row and panel), bigger ones one sub-block at a time */
            const int NH = R * G <= 4 ? 2 : 1;
            UNROLL for (int jj = 0; jj < 8; jj += NH) {
                const int g2 = jj / 2;
                __m512i S2[KRMAX][4][2];
                UNROLL for (int r = 0; r < R; r++) UNROLL for (int g = 0; g < G; g++) UNROLL for (int e = 0; e < NH; e++)
                    S2[r][g][e] = _mm512_setzero_si512();
                UNROLL for (int t = 0; t < 8; t++) {
                    __m512i w[4][2];
                    UNROLL for (int g = 0; g < G; g++) {
                        __m512i v = _mm512_loadu_si512(rb + g * ps + (size_t)(8 * g2 + t) * 64);
                        __m512i h = type == SPRIG_MM_Q5_K ? _mm512_loadu_si512(rb + g * ps + SPRIG_MM_Q5K_QH + (size_t)t * 64)
                                                         : v;
                        UNROLL for (int e = 0; e < NH; e++) {
                            const int j = jj + e, hi = j & 1;
                            w[g][e] = _mm512_and_si512(hi ? _mm512_srli_epi16(v, 4) : v, m4);
                            if (type == SPRIG_MM_Q5_K) {
                                /* bit j of each byte to bit 4 */
                                __m512i hj = j < 4 ? _mm512_slli_epi16(h, 4 - j) : j > 4 ? _mm512_srli_epi16(h, j - 4) : h;
                                w[g][e] = _mm512_ternarylogic_epi32(w[g][e], hj, _mm512_set1_epi8(16), 0xF8);   /* w | (h & 16) */
                            }
                        }
                    }
                    UNROLL for (int e = 0; e < NH; e++) {
                        const int hi = (jj + e) & 1;
                        UNROLL for (int r = 0; r < R; r++) {
                            const int8_t *q = a[r].q + 64 * g2 + 32 * hi + 4 * t;
                            if (G == 1) {
                                S2[r][0][e] = dpbusd_b(S2[r][0][e], w[0][e], q);
                            } else {
                                __m512i av = bcast4(q);
                                UNROLL for (int g = 0; g < G; g++) S2[r][g][e] = _mm512_dpbusd_epi32(S2[r][g][e], w[g][e], av);
                            }
                        }
                    }
                }
                /* (an opaque copy of the pointer keeps gcc from hoisting all the
                 * scale loads of the super-block to its start and spilling them) */
                const uint8_t *scp = rb + sco + (size_t)jj * 16;
                __asm__("" : "+r"(scp));
                UNROLL for (int e = 0; e < NH; e++)
                    UNROLL for (int g = 0; g < G; g++) {
                        __m512i sc = u8x16(scp + g * ps + (size_t)e * 16);
                        UNROLL for (int r = 0; r < R; r++)
                            I[r][g] = _mm512_add_epi32(I[r][g], _mm512_mullo_epi32(S2[r][g][e], sc));
                    }
            }
            /* -M: negated min pairs (int16) . bsum32 pairs */
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int g = 0; g < G; g++) S[r][g] = _mm512_setzero_si512();
            UNROLL for (int pr = 0; pr < 4; pr++) {
                __m512i mn[4];
                UNROLL for (int g = 0; g < G; g++)
                    mn[g] = _mm512_sub_epi16(_mm512_setzero_si512(),
                                             _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(rb + g * ps + mo + (size_t)pr * 32))));
                UNROLL for (int r = 0; r < R; r++) {
                    __m512i bs = bcast4((const int8_t *)&a[r].bsum32[2 * pr]);
                    UNROLL for (int g = 0; g < G; g++) S[r][g] = _mm512_dpwssd_epi32(S[r][g], mn[g], bs);
                }
            }
        } else {
            /* c[r][j] = -32 * bsum[j], broadcast as each sub-block's start */
            _Alignas(64) int32_t c[KRMAX][16];
            UNROLL for (int r = 0; r < R; r++)
                _mm512_store_si512(c[r], _mm512_sub_epi32(_mm512_setzero_si512(),
                    _mm512_slli_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)a[r].bsum)), 5)));
            /* sub-block j = 8h + 2k + qq: elements 128h + 32k + 16qq + 4t + i; low (k < 2) or
             * high nibble of ql group 16h + 8(k&1) + 4qq + t, bits 2k of qh group 8h + 4qq + t */
            UNROLL for (int h = 0; h < 2; h++) UNROLL for (int k = 0; k < 4; k++) UNROLL for (int qq = 0; qq < 2; qq++) {
                const int j = 8 * h + 2 * k + qq;
                UNROLL for (int r = 0; r < R; r++) {
                    __m512i c0 = _mm512_set1_epi32(c[r][j]);
                    UNROLL for (int g = 0; g < G; g++) S[r][g] = c0;
                }
                UNROLL for (int t = 0; t < 4; t++) {
                    __m512i w[4];
                    UNROLL for (int g = 0; g < G; g++) {
                        __m512i v = _mm512_loadu_si512(rb + g * ps + (size_t)(16 * h + 8 * (k & 1) + 4 * qq + t) * 64);
                        __m512i qh = _mm512_loadu_si512(rb + g * ps + SPRIG_MM_Q6K_QH + (size_t)(8 * h + 4 * qq + t) * 64);
                        v = _mm512_and_si512(k < 2 ? v : _mm512_srli_epi16(v, 4), m4);
                        /* bits 2k, 2k+1 of each qh byte to bits 4, 5 */
                        qh = k == 0 ? _mm512_slli_epi16(qh, 4) : k == 1 ? _mm512_slli_epi16(qh, 2) : k == 3 ? _mm512_srli_epi16(qh, 2) : qh;
                        w[g] = _mm512_ternarylogic_epi32(v, qh, _mm512_set1_epi8(0x30), 0xF8);   /* v | (qh & 0x30) */
                    }
                    UNROLL for (int r = 0; r < R; r++) {
                        const int8_t *q = a[r].q + 16 * j + 4 * t;
                        if (G == 1) {
                            S[r][0] = dpbusd_b(S[r][0], w[0], q);
                        } else {
                            __m512i av = bcast4(q);
                            UNROLL for (int g = 0; g < G; g++) S[r][g] = _mm512_dpbusd_epi32(S[r][g], w[g], av);
                        }
                    }
                }
                const uint8_t *scp = rb + SPRIG_MM_Q6K_SC + (size_t)j * 16;
                __asm__("" : "+r"(scp));   /* as above */
                UNROLL for (int g = 0; g < G; g++) {
                    __m512i sc = s8x16(scp + g * ps);
                    UNROLL for (int r = 0; r < R; r++) I[r][g] = _mm512_add_epi32(I[r][g], _mm512_mullo_epi32(S[r][g], sc));
                }
            }
        }
        UNROLL for (int g = 0; g < G; g++) {
            const uint8_t *dp = dsb + g * ps + (size_t)s * nd * 32;
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dp));
            UNROLL for (int r = 0; r < R; r++) {
                const __m512 da = _mm512_set1_ps(a[r].d);
                acc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[r][g]), _mm512_mul_ps(d, da), acc[r][g]);
                if (type != SPRIG_MM_Q6_K) {
                    const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dp + 32)));
                    acc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r][g]), _mm512_mul_ps(dm, da), acc[r][g]);
                }
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *yr = J->y + (size_t)(r0 + r) * J->n_out;
        UNROLL for (int g = 0; g < G; g++) store16(yr, (p + g) * SPRIG_MM_PANEL, J->n_out, acc[r][g]);
    }
}

/* Rows [r0, r0+R) x ONE panel p x super-blocks [s0, s1), rows outer: the 8
 * (Q4_K/Q5_K) or 4 (Q6_K) weight vectors of a sub-block stay in registers
 * and each row's sub-block sum is a renamed temporary, so only the float
 * accumulator and I of each row persist (2*R + 8 + a few zmm, R <= 8). Same
 * sums and roundings as ktile. */
AI void ktile_r(const sprig_mm_job *J, int64_t p, int r0, int64_t s0, int64_t s1, const int R, const int type)
{
    const int64_t ns = J->n_in / SPRIG_MM_QK_K;
    const size_t rec = type == SPRIG_MM_Q4_K ? SPRIG_MM_Q4K_REC : type == SPRIG_MM_Q5_K ? SPRIG_MM_Q5K_REC : SPRIG_MM_Q6K_REC;
    const int nd = type == SPRIG_MM_Q6_K ? 1 : 2;
    const uint8_t *base = J->packed + (size_t)p * J->pstride, *dsb = base + (size_t)ns * rec;
    const sprig_mm_kblock *ak = J->ak + r0;
    const int64_t n = J->n;
    const __m512i m4 = _mm512_set1_epi8(15);

    __m512 acc[KRMAX];
    UNROLL for (int r = 0; r < R; r++)
        acc[r] = s0 == 0 ? _mm512_setzero_ps() : load16(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL, J->n_out);

    for (int64_t s = s0; s < s1; s++) {
        const uint8_t *rb = base + (size_t)s * rec;
        k_prefetch(rb, dsb, s, rec, nd, R, J->pf_far);
        const sprig_mm_kblock *a = &ak[s * n];
        __m512i I[KRMAX];
        UNROLL for (int r = 0; r < R; r++) I[r] = _mm512_setzero_si512();
        if (type != SPRIG_MM_Q6_K) {
            const size_t sco = type == SPRIG_MM_Q4_K ? SPRIG_MM_Q4K_SC : SPRIG_MM_Q5K_SC;
            const size_t mo = type == SPRIG_MM_Q4_K ? SPRIG_MM_Q4K_M : SPRIG_MM_Q5K_M;
            for (int j = 0; j < 8; j++) {   /* not unrolled: j is a run-time shift */
                const int g2 = j / 2, hi = j & 1;
                const uint8_t *qp = rb + (size_t)(8 * g2) * 64;
                __m512i w[8];
                UNROLL for (int t = 0; t < 8; t++) {
                    __m512i v = _mm512_loadu_si512(qp + t * 64);
                    w[t] = _mm512_and_si512(hi ? _mm512_srli_epi16(v, 4) : v, m4);
                    if (type == SPRIG_MM_Q5_K) {
                        __m512i h = _mm512_loadu_si512(rb + SPRIG_MM_Q5K_QH + (size_t)t * 64);
                        h = _mm512_sll_epi16(_mm512_srl_epi16(h, _mm_cvtsi32_si128(j)), _mm_cvtsi32_si128(4));
                        w[t] = _mm512_ternarylogic_epi32(w[t], h, _mm512_set1_epi8(16), 0xF8);
                    }
                }
                const __m512i sc = u8x16(rb + sco + (size_t)j * 16);
                UNROLL for (int r = 0; r < R; r++) {
                    const int8_t *q = a[r].q + 64 * g2 + 32 * hi;
                    __m512i S = _mm512_setzero_si512();
                    UNROLL for (int t = 0; t < 8; t++) S = dpbusd_b(S, w[t], q + 4 * t);
                    I[r] = _mm512_add_epi32(I[r], _mm512_mullo_epi32(S, sc));
                }
            }
            __m512i mn[4];
            UNROLL for (int pr = 0; pr < 4; pr++)
                mn[pr] = _mm512_sub_epi16(_mm512_setzero_si512(),
                                          _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(rb + mo + (size_t)pr * 32))));
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dsb + (size_t)s * 64)));
            const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dsb + (size_t)s * 64 + 32)));
            UNROLL for (int r = 0; r < R; r++) {
                __m512i M = _mm512_setzero_si512();
                UNROLL for (int pr = 0; pr < 4; pr++)
                    M = _mm512_dpwssd_epi32(M, mn[pr], bcast4((const int8_t *)&a[r].bsum32[2 * pr]));
                const __m512 da = _mm512_set1_ps(a[r].d);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[r]), _mm512_mul_ps(d, da), acc[r]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, da), acc[r]);
            }
        } else {
            _Alignas(64) int32_t c[KRMAX][16];   /* -32 * bsum[j], broadcast as each sub-block's start */
            UNROLL for (int r = 0; r < R; r++)
                _mm512_store_si512(c[r], _mm512_sub_epi32(_mm512_setzero_si512(),
                    _mm512_slli_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)a[r].bsum)), 5)));
            /* sub-blocks j = 8h + 2k + qq and j + 4 (k + 2) share their loads:
             * the low and high nibbles of one ql group, one qh group */
            for (int hq = 0; hq < 4; hq++) {
                const int h = hq >> 1, qq = hq & 1;
                UNROLL for (int k = 0; k < 2; k++) {
                    const int j = 8 * h + 2 * k + qq;
                    __m512i wl[4], wh[4];
                    UNROLL for (int t = 0; t < 4; t++) {
                        __m512i v = _mm512_loadu_si512(rb + (size_t)(16 * h + 8 * k + 4 * qq + t) * 64);
                        __m512i qh = _mm512_loadu_si512(rb + SPRIG_MM_Q6K_QH + (size_t)(8 * h + 4 * qq + t) * 64);
                        /* bits 2k, 2k+1 (low) and 2k+4, 2k+5 (high) of each qh byte to bits 4, 5 */
                        __m512i hl = k == 0 ? _mm512_slli_epi16(qh, 4) : _mm512_slli_epi16(qh, 2);
                        __m512i hh = k == 0 ? qh : _mm512_srli_epi16(qh, 2);
                        wl[t] = _mm512_ternarylogic_epi32(_mm512_and_si512(v, m4), hl, _mm512_set1_epi8(0x30), 0xF8);
                        wh[t] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), hh,
                                                          _mm512_set1_epi8(0x30), 0xF8);
                    }
                    const __m512i scl = s8x16(rb + SPRIG_MM_Q6K_SC + (size_t)j * 16);
                    const __m512i sch = s8x16(rb + SPRIG_MM_Q6K_SC + (size_t)(j + 4) * 16);
                    UNROLL for (int r = 0; r < R; r++) {
                        const int8_t *q = a[r].q + 16 * j;
                        __m512i Sl = _mm512_set1_epi32(c[r][j]), Sh = _mm512_set1_epi32(c[r][j + 4]);
                        UNROLL for (int t = 0; t < 4; t++) {
                            Sl = dpbusd_b(Sl, wl[t], q + 4 * t);
                            Sh = dpbusd_b(Sh, wh[t], q + 64 + 4 * t);
                        }
                        I[r] = _mm512_add_epi32(I[r], _mm512_add_epi32(_mm512_mullo_epi32(Sl, scl), _mm512_mullo_epi32(Sh, sch)));
                    }
                }
            }
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dsb + (size_t)s * 32)));
            UNROLL for (int r = 0; r < R; r++)
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[r]), _mm512_mul_ps(d, _mm512_set1_ps(a[r].d)), acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) store16(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL, J->n_out, acc[r]);
}

/* Q2_K and Q3_K: rows [r0, r0+R) x ONE panel x super-blocks [s0, s1), rows
 * outer as ktile_r. Element 128h + 32j + l takes bits 2j of qs[32h + l]
 * (qs group 8h + l/4); Q3_K adds 4 * bit 4h + j of hmask[l] (hm group l/4)
 * and starts each sub-block's sum at -4 * bsum. Q2_K's scale and min pairs
 * (one vpmovzxbw per pair) give sc (& 15 of each byte) and the negated
 * mins for vpdpwssd against bsum pairs. */
AI void ktile_r23(const sprig_mm_job *J, int64_t p, int r0, int64_t s0, int64_t s1, const int R, const int type)
{
    const bool q2 = type == SPRIG_MM_Q2_K;
    const int64_t ns = J->n_in / SPRIG_MM_QK_K;
    const size_t rec = q2 ? SPRIG_MM_Q2K_REC : SPRIG_MM_Q3K_REC;
    const int nd = q2 ? 2 : 1;
    const uint8_t *base = J->packed + (size_t)p * J->pstride, *dsb = base + (size_t)ns * rec;
    const sprig_mm_kblock *ak = J->ak + r0;
    const int64_t n = J->n;
    const __m512i m3 = _mm512_set1_epi8(3);

    __m512 acc[KRMAX];
    UNROLL for (int r = 0; r < R; r++)
        acc[r] = s0 == 0 ? _mm512_setzero_ps() : load16(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL, J->n_out);

    for (int64_t s = s0; s < s1; s++) {
        const uint8_t *rb = base + (size_t)s * rec;
        k_prefetch(rb, dsb, s, rec, nd, R, J->pf_far);
        const sprig_mm_kblock *a = &ak[s * n];
        _Alignas(64) int32_t c[KRMAX][16];   /* Q3_K: -4 * bsum[j] */
        if (!q2)
            UNROLL for (int r = 0; r < R; r++)
                _mm512_store_si512(c[r], _mm512_sub_epi32(_mm512_setzero_si512(),
                    _mm512_slli_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)a[r].bsum)), 2)));
        __m512i I[KRMAX];
        UNROLL for (int r = 0; r < R; r++) I[r] = _mm512_setzero_si512();
        for (int hh = 0; hh < 4; hh++) {   /* h, half: sub-blocks 8h + 2j + half */
            const int h = hh >> 1, half = hh & 1;
            for (int j = 0; j < 4; j++) {
                const int i16 = 8 * h + 2 * j + half, b = 4 * h + j;
                __m512i w[4];
                UNROLL for (int t = 0; t < 4; t++) {
                    __m512i v = _mm512_loadu_si512(rb + (size_t)(8 * h + 4 * half + t) * 64);
                    w[t] = _mm512_and_si512(_mm512_srl_epi16(v, _mm_cvtsi32_si128(2 * j)), m3);
                    if (!q2) {   /* hmask bit b of each byte to bit 2 */
                        __m512i hm = _mm512_loadu_si512(rb + SPRIG_MM_Q3K_HM + (size_t)(4 * half + t) * 64);
                        hm = _mm512_srl_epi16(_mm512_sll_epi16(hm, _mm_cvtsi32_si128(b < 2 ? 2 - b : 0)),
                                              _mm_cvtsi32_si128(b > 2 ? b - 2 : 0));
                        w[t] = _mm512_ternarylogic_epi32(w[t], hm, _mm512_set1_epi8(4), 0xF8);
                    }
                }
                __m512i sc;
                if (q2) {
                    __m512i pr = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(rb + SPRIG_MM_Q2K_SC + (size_t)(i16 / 2) * 32)));
                    sc = _mm512_and_si512(i16 & 1 ? _mm512_srli_epi32(pr, 16) : pr, _mm512_set1_epi32(15));
                } else {
                    sc = s8x16(rb + SPRIG_MM_Q3K_SC + (size_t)i16 * 16);
                }
                UNROLL for (int r = 0; r < R; r++) {
                    const int8_t *q = a[r].q + 16 * i16;
                    __m512i S = q2 ? _mm512_setzero_si512() : _mm512_set1_epi32(c[r][i16]);
                    UNROLL for (int t = 0; t < 4; t++) S = dpbusd_b(S, w[t], q + 4 * t);
                    I[r] = _mm512_add_epi32(I[r], _mm512_mullo_epi32(S, sc));
                }
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dsb + (size_t)s * nd * 32)));
        if (q2) {
            __m512i mn[8];   /* negated min pairs (int16) */
            UNROLL for (int pr = 0; pr < 8; pr++)
                mn[pr] = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_srli_epi16(
                    _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(rb + SPRIG_MM_Q2K_SC + (size_t)pr * 32))), 4));
            const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dsb + (size_t)s * 64 + 32)));
            UNROLL for (int r = 0; r < R; r++) {
                __m512i M = _mm512_setzero_si512();
                UNROLL for (int pr = 0; pr < 8; pr++)
                    M = _mm512_dpwssd_epi32(M, mn[pr], bcast4((const int8_t *)&a[r].bsum[2 * pr]));
                const __m512 da = _mm512_set1_ps(a[r].d);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[r]), _mm512_mul_ps(d, da), acc[r]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, da), acc[r]);
            }
        } else {
            UNROLL for (int r = 0; r < R; r++)
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[r]), _mm512_mul_ps(d, _mm512_set1_ps(a[r].d)), acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) store16(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL, J->n_out, acc[r]);
}

/* ---------------------------------------------------------------- float tile */

AI __m512 loadw(int type, const uint8_t *p)
{
    if (type == SPRIG_TYPE_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (type == SPRIG_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Rows [r0, r0+R) x panels [p, p+G) x k in [k0, k1). */
AI void ftile(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1, const int R, const int G,
              const int type)
{
    const int64_t K = J->n_in;
    const size_t ps = J->pstride, kb = type == SPRIG_TYPE_F32 ? 64 : 32;
    const uint8_t *base = J->packed + (size_t)p * ps;
    const float *x = J->x + (size_t)r0 * K;

    __m512 acc[RMAX][GMAX];
    TILE_ACC_INIT(k0 == 0)

    /* One 64-byte line of each panel per step (1 k of F32, 2 of F16/BF16). */
    const int kpl = (int)(64 / kb);
    int64_t k = k0;
    for (; k + kpl <= k1; k += kpl) {
        if (R >= PF_MIN_ROWS / 2)
            UNROLL for (int g = 0; g < G; g++) _mm_prefetch((const char *)base + g * ps + k * kb + PF_DIST, _MM_HINT_T1);
        UNROLL for (int kk = 0; kk < kpl; kk++) {
            __m512 wv[GMAX];
            UNROLL for (int g = 0; g < G; g++) wv[g] = loadw(type, base + g * ps + (k + kk) * kb);
            UNROLL for (int r = 0; r < R; r++) {
                __m512 xv = _mm512_set1_ps(x[r * K + k + kk]);
                UNROLL for (int g = 0; g < G; g++) acc[r][g] = _mm512_fmadd_ps(wv[g], xv, acc[r][g]);
            }
        }
    }
    for (; k < k1; k++) {
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

/* tile_fn: rows [r0, r0+R) x the tile's panels from p x k in [k0, k1) (units
 * of the tile's k: blocks or elements). */
typedef void (*tile_fn)(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1);
/* qtile_fn: the one-panel quantized tile, with its prefetch distance. */
typedef void (*qtile_fn)(const sprig_mm_job *J, int64_t p, int r0, int64_t b0, int64_t b1, size_t dist);

/* Panels per tile (G) for a tile of R rows: quantized G-panel tiles hold
 * 2*R*G accumulators + 2*G weight/scale vectors, float tiles R*G
 * accumulators + G weights, in 32 zmm. */
static const int qg_g[QGRMAX + 1] = { 0, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1 };
static const int f_g[RMAX + 1] = { 0, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2 };

#define QGT(NAME, R, G, Q4) \
    static void NAME##_g_r##R##_g##G(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1) \
    { qtile_g(J, p, r0, k0, k1, R, G, Q4); }
#define QRT(NAME, R, Q4) \
    static void NAME##_r_r##R(const sprig_mm_job *J, int64_t p, int r0, int64_t b0, int64_t b1, size_t dist) \
    { qtile_r(J, p, r0, b0, b1, R, Q4, dist); }
#define FT(NAME, R, G, TY) \
    static void NAME##_r##R##_g##G(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1) \
    { ftile(J, p, r0, k0, k1, R, G, TY); }

/* NAME_gtab[R][i]: the G-panel tile of R rows and 2^i panels (NULL: not
 * instantiated); NAME_rtab[R]: the one-panel tile of R rows. */
#define QSET(NAME, Q4) \
    QGT(NAME, 1, 1, Q4) QGT(NAME, 1, 2, Q4) QGT(NAME, 1, 4, Q4) QGT(NAME, 2, 1, Q4) QGT(NAME, 2, 2, Q4) \
    QGT(NAME, 2, 4, Q4) QGT(NAME, 3, 1, Q4) QGT(NAME, 3, 2, Q4) QGT(NAME, 4, 1, Q4) QGT(NAME, 4, 2, Q4) \
    QGT(NAME, 5, 1, Q4) QGT(NAME, 5, 2, Q4) QGT(NAME, 6, 1, Q4) QGT(NAME, 6, 2, Q4) QGT(NAME, 7, 1, Q4) \
    QGT(NAME, 8, 1, Q4) QGT(NAME, 9, 1, Q4) QGT(NAME, 10, 1, Q4) QGT(NAME, 11, 1, Q4) QGT(NAME, 12, 1, Q4) \
    QRT(NAME, 5, Q4) QRT(NAME, 6, Q4) QRT(NAME, 7, Q4) QRT(NAME, 8, Q4) QRT(NAME, 9, Q4) QRT(NAME, 10, Q4) QRT(NAME, 11, Q4) QRT(NAME, 12, Q4) \
    QRT(NAME, 13, Q4) QRT(NAME, 14, Q4) QRT(NAME, 15, Q4) QRT(NAME, 16, Q4) \
    static const tile_fn NAME##_gtab[QGRMAX + 1][4] = { { NULL }, \
        { NAME##_g_r1_g1, NAME##_g_r1_g2, NAME##_g_r1_g4 }, { NAME##_g_r2_g1, NAME##_g_r2_g2, NAME##_g_r2_g4 }, \
        { NAME##_g_r3_g1, NAME##_g_r3_g2 }, { NAME##_g_r4_g1, NAME##_g_r4_g2 }, { NAME##_g_r5_g1, NAME##_g_r5_g2 }, \
        { NAME##_g_r6_g1, NAME##_g_r6_g2 }, { NAME##_g_r7_g1 }, { NAME##_g_r8_g1 }, { NAME##_g_r9_g1 }, \
        { NAME##_g_r10_g1 }, { NAME##_g_r11_g1 }, { NAME##_g_r12_g1 } }; \
    static const qtile_fn NAME##_rtab[QRMAX + 1] = { NULL, NULL, NULL, NULL, NULL, NAME##_r_r5, \
        NAME##_r_r6, NAME##_r_r7, \
        NAME##_r_r8, NAME##_r_r9, NAME##_r_r10, NAME##_r_r11, NAME##_r_r12, NAME##_r_r13, NAME##_r_r14, \
        NAME##_r_r15, NAME##_r_r16 };

#define FSET(NAME, TY) \
    FT(NAME, 1, 1, TY) FT(NAME, 1, 2, TY) FT(NAME, 1, 4, TY) FT(NAME, 1, 8, TY) \
    FT(NAME, 2, 1, TY) FT(NAME, 2, 2, TY) FT(NAME, 2, 4, TY) FT(NAME, 3, 1, TY) FT(NAME, 3, 2, TY) \
    FT(NAME, 3, 4, TY) FT(NAME, 4, 1, TY) FT(NAME, 4, 2, TY) FT(NAME, 4, 4, TY) FT(NAME, 5, 1, TY) \
    FT(NAME, 5, 2, TY) FT(NAME, 5, 4, TY) FT(NAME, 6, 1, TY) FT(NAME, 6, 2, TY) FT(NAME, 6, 4, TY) \
    FT(NAME, 7, 1, TY) FT(NAME, 7, 2, TY) FT(NAME, 8, 1, TY) FT(NAME, 8, 2, TY) FT(NAME, 9, 1, TY) \
    FT(NAME, 9, 2, TY) FT(NAME, 10, 1, TY) FT(NAME, 10, 2, TY) FT(NAME, 11, 1, TY) FT(NAME, 11, 2, TY) \
    FT(NAME, 12, 1, TY) FT(NAME, 12, 2, TY) \
    static const tile_fn NAME##_tab[RMAX + 1][4] = { { NULL }, \
        { NAME##_r1_g1, NAME##_r1_g2, NAME##_r1_g4, NAME##_r1_g8 }, \
        { NAME##_r2_g1, NAME##_r2_g2, NAME##_r2_g4 }, { NAME##_r3_g1, NAME##_r3_g2, NAME##_r3_g4 }, \
        { NAME##_r4_g1, NAME##_r4_g2, NAME##_r4_g4 }, { NAME##_r5_g1, NAME##_r5_g2, NAME##_r5_g4 }, \
        { NAME##_r6_g1, NAME##_r6_g2, NAME##_r6_g4 }, { NAME##_r7_g1, NAME##_r7_g2 }, { NAME##_r8_g1, NAME##_r8_g2 }, \
        { NAME##_r9_g1, NAME##_r9_g2 }, { NAME##_r10_g1, NAME##_r10_g2 }, { NAME##_r11_g1, NAME##_r11_g2 }, \
        { NAME##_r12_g1, NAME##_r12_g2 } };

/* K-quant tiles of R rows: G panels (R*G <= 8 keeps 3*R*G accumulators in registers). */
/* Panels per K tile for 1, 2, 3-4 rows (-D to measure others). Measured, 1
 * thread, Q4_K 2048 x 8192: n=1 one-panel rows-outer ~360 us against ~565 for
 * 4 panels. Before the one-panel tiles of 2-5 rows prefetched, 2 rows ran
 * better on 4 panels and 3-4 on 2; with the prefetch (NTA, above) one panel
 * takes 0.51-0.54x the time of 4 panels at 2 rows and 0.51-0.69x that of 2
 * panels at 3-4 (Q4_K and Q6_K, 2048 x 16384 and 8192 x 2048, 2 threads,
 * in-process A/B). */
#ifndef KG1
#define KG1 1
#endif
#ifndef KG2
#define KG2 1
#endif
#ifndef KG34
#define KG34 1
#endif
static const int kg_g[KRMAX + 1] = { 0, KG1, KG2, KG34, KG34, 1, 1, 1, 1 };

#define KT(NAME, R, G, TY) \
    static void NAME##_r##R##_g##G(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1) \
    { ktile(J, p, r0, k0, k1, R, G, TY); }
#define KRT(NAME, R, TY) \
    static void NAME##_r##R##_g1(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1) \
    { ktile_r(J, p, r0, k0, k1, R, TY); }
#define KSET(NAME, TY) \
    KRT(NAME, 1, TY) KT(NAME, 1, 2, TY) KT(NAME, 1, 4, TY) KRT(NAME, 2, TY) KT(NAME, 2, 2, TY) \
    KT(NAME, 2, 4, TY) KRT(NAME, 3, TY) KT(NAME, 3, 2, TY) KRT(NAME, 4, TY) KT(NAME, 4, 2, TY) \
    KRT(NAME, 5, TY) KRT(NAME, 6, TY) KRT(NAME, 7, TY) KRT(NAME, 8, TY) \
    static const tile_fn NAME##_tab[KRMAX + 1][4] = { { NULL }, \
        { NAME##_r1_g1, NAME##_r1_g2, NAME##_r1_g4 }, { NAME##_r2_g1, NAME##_r2_g2, NAME##_r2_g4 }, \
        { NAME##_r3_g1, NAME##_r3_g2 }, { NAME##_r4_g1, NAME##_r4_g2 }, { NAME##_r5_g1 }, { NAME##_r6_g1 }, \
        { NAME##_r7_g1 }, { NAME##_r8_g1 } };

/* Q2_K, Q3_K: one-panel tiles for every row count */
static const int k1_g[KRMAX + 1] = { 0, 1, 1, 1, 1, 1, 1, 1, 1 };
#define K23T(NAME, R, TY) \
    static void NAME##_r##R(const sprig_mm_job *J, int64_t p, int r0, int64_t k0, int64_t k1) \
    { ktile_r23(J, p, r0, k0, k1, R, TY); }
#define K23SET(NAME, TY) \
    K23T(NAME, 1, TY) K23T(NAME, 2, TY) K23T(NAME, 3, TY) K23T(NAME, 4, TY) K23T(NAME, 5, TY) \
    K23T(NAME, 6, TY) K23T(NAME, 7, TY) K23T(NAME, 8, TY) \
    static const tile_fn NAME##_tab[KRMAX + 1][4] = { { NULL }, { NAME##_r1 }, { NAME##_r2 }, { NAME##_r3 }, \
        { NAME##_r4 }, { NAME##_r5 }, { NAME##_r6 }, { NAME##_r7 }, { NAME##_r8 } };
K23SET(q2k, SPRIG_MM_Q2_K)
K23SET(q3k, SPRIG_MM_Q3_K)

QSET(q8, false)
QSET(q4, true)
KSET(q4k, SPRIG_MM_Q4_K)
KSET(q5k, SPRIG_MM_Q5_K)
KSET(q6k, SPRIG_MM_Q6_K)
FSET(f32, SPRIG_TYPE_F32)
FSET(f16, SPRIG_TYPE_F16)
FSET(bf16, SPRIG_TYPE_BF16)

static int ilog2(int g) { return g >= 8 ? 3 : g >= 4 ? 2 : g >= 2 ? 1 : 0; }

/* Panels per step of drive(): the smallest tile width any row chunk wants. */
static int gstep_of(const int *gtab, int rmax, int n)
{
    const int chunks = (n + rmax - 1) / rmax;
    int gstep = GMAX;
    for (int c = 0; c < chunks; c++) {
        int R = (int)((int64_t)n * (c + 1) / chunks) - (int)((int64_t)n * c / chunks);
        if (gtab[R] < gstep) gstep = gtab[R];
    }
    return gstep;
}

/* k per range when a tile is run in ranges: ~8 KB of one panel. */
#ifndef KSTEP_BYTES
#define KSTEP_BYTES 8192
#endif

/* G-panel tiles: panels outer, row chunks of nearly equal size (R or R+1
 * rows, R <= rmax) inner. A step covers g panels, the smallest tile width
 * any chunk wants, so every chunk works on the same panels while they are in
 * cache; the tail of the panel range takes narrower tiles. With several
 * chunks, k is cut into ranges of `kstep` and every chunk runs over one range
 * before the next: the weights of a range stay in L1 and the DRAM stream
 * advances evenly instead of only during the first chunk. */
static void drive(const sprig_mm_job *J, const tile_fn (*tab)[4], const int *gtab, int rmax, int64_t kn, int64_t kstep)
{
    const int n = J->n, chunks = (n + rmax - 1) / rmax, gstep = gstep_of(gtab, rmax, n);
    if (chunks == 1) kstep = kn;
    for (int64_t p = J->p0; p < J->p1;) {
        int g = gstep;
        while (g > J->p1 - p) g /= 2;
        for (int64_t k0 = 0; k0 < kn; k0 += kstep) {
            int64_t k1 = kn - k0 < kstep ? kn : k0 + kstep;
            for (int c = 0; c < chunks; c++) {
                int r0 = (int)((int64_t)n * c / chunks), R = (int)((int64_t)n * (c + 1) / chunks) - r0;
                tab[R][ilog2(g)](J, p, r0, k0, k1);
            }
        }
        p += g;
    }
}

/* Quantized weights: up to 4 rows in one G-panel tile; 5 to QRMAX rows in
 * one-panel tiles, one panel at a time (a thread's panels are one sequential
 * stream); QRMAX + 1 to 2 * QRMAX rows (trees of 17-32 nodes) in two
 * one-panel passes over each panel, the second reading it from cache
 * (measured, 2 threads, in-process A/B: 0.84-0.97x the time of the chunks
 * below at 2048 x 16384, 0.95-0.99x at 8192 x 4096); more rows in chunks of
 * up to QGRMAX on G-panel tiles with k in ranges (measured: the one-panel
 * tile loses ~4% to them when it must keep partial sums in y). The threads'
 * split grain stays the G-panel one: a one-panel tile takes any range. */
static void qdrive(const sprig_mm_job *J, const tile_fn (*gtab)[4], const qtile_fn *rtab, int64_t kstep)
{
    const int n = J->n;
    const int64_t nb = J->n_in / SPRIG_QK;
    const size_t dist = J->pf_far ? Q_PF_DIST_FAR : Q_PF_DIST;   /* one-panel tiles' prefetch */
    if (n > QRMAX && n <= 2 * QRMAX) {   /* two one-panel passes per panel, the second from cache */
        const int c0 = (n + 1) / 2;
        for (int64_t p = J->p0; p < J->p1; p++) {
            rtab[c0](J, p, 0, 0, nb, dist);
            rtab[n - c0](J, p, c0, 0, nb, 0);
        }
        return;
    }
    if (n < Q_ONE_MIN || n > QRMAX) {
        drive(J, gtab, qg_g, QGRMAX, nb, kstep);
        return;
    }
    for (int64_t p = J->p0; p < J->p1; p++) rtab[n](J, p, 0, 0, nb, dist);
}

static int tile_panels(int type, int n)
{
    if (n < 1) return 1;
    if (type == SPRIG_TYPE_Q8_0 || type == SPRIG_TYPE_Q4_0) return n < Q_ONE_MIN || n > QRMAX ? gstep_of(qg_g, QGRMAX, n) : 1;
    if (type == SPRIG_MM_Q4_K || type == SPRIG_MM_Q5_K || type == SPRIG_MM_Q6_K) return gstep_of(kg_g, KRMAX, n);
    if (type == SPRIG_MM_Q2_K || type == SPRIG_MM_Q3_K) return 1;
    return gstep_of(f_g, RMAX, n);
}

static void k_q8(const sprig_mm_job *J) { qdrive(J, q8_gtab, q8_rtab, KSTEP_BYTES / 512); }
static void k_q4(const sprig_mm_job *J) { qdrive(J, q4_gtab, q4_rtab, KSTEP_BYTES / 256); }
/* k ranges of ~8 KB of a panel: whole super-blocks */
static void k_q2k(const sprig_mm_job *J) { drive(J, q2k_tab, k1_g, KRMAX, J->n_in / SPRIG_MM_QK_K, KSTEP_BYTES / SPRIG_MM_Q2K_REC); }
static void k_q3k(const sprig_mm_job *J) { drive(J, q3k_tab, k1_g, KRMAX, J->n_in / SPRIG_MM_QK_K, KSTEP_BYTES / SPRIG_MM_Q3K_REC); }
static void k_q4k(const sprig_mm_job *J) { drive(J, q4k_tab, kg_g, KRMAX, J->n_in / SPRIG_MM_QK_K, KSTEP_BYTES / SPRIG_MM_Q4K_REC); }
static void k_q5k(const sprig_mm_job *J) { drive(J, q5k_tab, kg_g, KRMAX, J->n_in / SPRIG_MM_QK_K, KSTEP_BYTES / SPRIG_MM_Q5K_REC); }
static void k_q6k(const sprig_mm_job *J) { drive(J, q6k_tab, kg_g, KRMAX, J->n_in / SPRIG_MM_QK_K, KSTEP_BYTES / SPRIG_MM_Q6K_REC); }
static void k_f32(const sprig_mm_job *J) { drive(J, f32_tab, f_g, RMAX, J->n_in, KSTEP_BYTES / 64); }
static void k_f16(const sprig_mm_job *J) { drive(J, f16_tab, f_g, RMAX, J->n_in, KSTEP_BYTES / 32); }
static void k_bf16(const sprig_mm_job *J) { drive(J, bf16_tab, f_g, RMAX, J->n_in, KSTEP_BYTES / 32); }

/* ---------------------------------------------------------------- activation quantizer */

/* Reduce 16 vectors at once: lane i of the result is the max (or sum) of the
 * 16 lanes of v[i]. A transposing tree (shuffle, shuffle, op per output
 * vector; 15 of them) costs about 3 ops per vector instead of ~9 for a
 * separate horizontal reduction of each. */
AI __m512i red_op(__m512i a, __m512i b, const bool max)
{
    return max ? _mm512_max_epu32(a, b) : _mm512_add_epi32(a, b);
}

AI __m512i reduce16(__m512i v[16], const bool max)
{
    __m512i t[8], w[4], x[2];
    UNROLL for (int i = 0; i < 8; i++)   /* lanes 0-7: v[2i] halves folded, 8-15: v[2i+1] */
        t[i] = red_op(_mm512_shuffle_i32x4(v[2 * i], v[2 * i + 1], 0x44),
                      _mm512_shuffle_i32x4(v[2 * i], v[2 * i + 1], 0xee), max);
    UNROLL for (int i = 0; i < 4; i++)   /* 4 lanes per vector, in 128-bit lane k: v[4i + k] */
        w[i] = red_op(_mm512_shuffle_i32x4(t[2 * i], t[2 * i + 1], 0x88),
                      _mm512_shuffle_i32x4(t[2 * i], t[2 * i + 1], 0xdd), max);
    UNROLL for (int i = 0; i < 2; i++)   /* lane k: [v[8i+k] x2, v[8i+4+k] x2] */
        x[i] = red_op(_mm512_unpacklo_epi64(w[2 * i], w[2 * i + 1]), _mm512_unpackhi_epi64(w[2 * i], w[2 * i + 1]),
                      max);
    __m512i e = _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(x[0]), _mm512_castsi512_ps(x[1]), 0x88));
    __m512i o = _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(x[0]), _mm512_castsi512_ps(x[1]), 0xdd));
    __m512i y = red_op(e, o, max);       /* lane 4k + j holds v[k + 4j] */
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), y);
}

/* The row is taken in chunks of up to QCHUNK blocks and passes, each a stream
 * of independent work the out-of-order core can overlap (one fused pass is a
 * long dependency chain per 16 blocks that does not fit its window):
 *   A: per 16 blocks, the maxima (a transposing reduction), d = amax/127
 *      (through F16) and 127/amax, one vdivps each;
 *   B: per block, q = nearest(x * (127/amax)) stored as int8, q's lanes summed;
 *   C: per 16 blocks, the sums (transposing reduction) and corrections;
 *   D: per block, d and the corrections into the record, read back from
 *      stack arrays written a pass earlier (a narrow load right behind a zmm
 *      store to the same place cannot be forwarded and stalls). */
#define QCHUNK 128

static void quant_row(const float *x, int64_t nb, int64_t stride, sprig_mm_qblock *out)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    _Alignas(64) float idv[QCHUNK], dv[QCHUNK];
    _Alignas(64) int32_t sv[QCHUNK][16], s8v[QCHUNK], s4v[QCHUNK];
    __mmask16 bad[QCHUNK / 16];
    for (int64_t c0 = 0; c0 < nb; c0 += QCHUNK) {
        const int cn = nb - c0 < QCHUNK ? (int)(nb - c0) : QCHUNK;
        const float *xc = x + c0 * SPRIG_QK;
        sprig_mm_qblock *oc = out + c0 * stride;
        /* A */
        for (int g = 0; g < cn; g += 16) {
            const int m = cn - g < 16 ? cn - g : 16;
            const __mmask16 live = (__mmask16)((1u << m) - 1);
            __m512i v[16];
            UNROLL for (int i = 0; i < 16; i++) {   /* (m == 16 ||: keeps full groups branch-free) */
                const float *xb = xc + (g + i) * SPRIG_QK;
                if (m == 16 || i < m) {
                    __m512i a0 = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(xb)), absm);
                    __m512i a1 = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(xb + 16)), absm);
                    v[i] = _mm512_max_epu32(a0, a1);
                } else {
                    v[i] = _mm512_setzero_si512();
                }
            }
            __m512i amv = reduce16(v, true);
            __mmask16 nf = _mm512_cmpge_epu32_mask(amv, _mm512_set1_epi32(0x7f800000)) & live;
            __m512 da = _mm512_div_ps(_mm512_castsi512_ps(amv), _mm512_set1_ps(127.0f));
            __mmask16 ok = _mm512_cmp_ps_mask(da, _mm512_set1_ps(FLT_MIN), _CMP_GE_OQ) & (__mmask16)~nf & live;
            /* q = x * (127 / amax); d = amax / 127 through F16 (rule in matmul.c) */
            _mm512_store_ps(idv + g, _mm512_maskz_div_ps(ok, _mm512_set1_ps(127.0f), _mm512_castsi512_ps(amv)));   /* 0: q = 0 */
            da = _mm512_cvtph_ps(_mm512_cvtps_ph(da, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            _mm512_store_ps(dv + g, _mm512_mask_blend_ps(nf, _mm512_maskz_mov_ps(ok, da), _mm512_set1_ps(NAN)));
            bad[g / 16] = nf;
        }
        /* B */
        for (int i = 0; i < cn; i++) {
            const float *xb = xc + i * SPRIG_QK;
            int8_t *qb = oc[i * stride].q;
            __m512 iv = _mm512_set1_ps(idv[i]);
            __m512i q0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb), iv),
                                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m512i q1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + 16), iv),
                                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm_storeu_si128((__m128i *)qb, _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(qb + 16), _mm512_cvtepi32_epi8(q1));
            _mm512_store_si512(sv[i], _mm512_add_epi32(q0, q1));
        }
        /* C */
        for (int g = 0; g < cn; g += 16) {
            const int m = cn - g < 16 ? cn - g : 16;
            if (bad[g / 16]) {   /* inf/NaN blocks: x * 0 gave NaN, so q must be cleared */
                for (int i = 0; i < m; i++)
                    if ((bad[g / 16] >> i) & 1) {
                        memset(oc[(g + i) * stride].q, 0, SPRIG_QK);
                        memset(sv[g + i], 0, sizeof sv[g + i]);
                    }
            }
            __m512i v[16];
            UNROLL for (int i = 0; i < 16; i++)
                v[i] = m == 16 || i < m ? _mm512_load_si512(sv[g + i]) : _mm512_setzero_si512();
            __m512i sum = reduce16(v, false);
            _mm512_store_si512(s8v + g, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
            _mm512_store_si512(s4v + g, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 3)));
        }
        /* D */
        for (int i = 0; i < cn; i++) {
            sprig_mm_qblock *r = &oc[i * stride];
            r->d = dv[i];
            r->c8 = s8v[i];
            r->c4 = s4v[i];
            r->pad = 0;
        }
    }
}

/* The 256-element form (rule in matmul.c): per record, the max of the 16
 * vectors' absolute bit patterns, d = amax / 127 and 1/d as the scalar rule
 * computes them, q = nearest(x * (1/d)); each vector of 16 q is one bsum
 * group, summed by one transposing reduction. */
static void quant_row_k(const float *x, int64_t ns, int64_t stride, sprig_mm_kblock *out)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    for (int64_t s = 0; s < ns; s++) {
        const float *xb = x + s * SPRIG_MM_QK_K;
        sprig_mm_kblock *r = &out[s * stride];
        __m512i m = _mm512_setzero_si512();
        UNROLL for (int i = 0; i < 16; i++)
            m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(xb + 16 * i)), absm));
        const uint32_t amax = _mm512_reduce_max_epu32(m);
        float fa, da = 0.0f, id = 0.0f;
        memcpy(&fa, &amax, 4);
        if (amax >= 0x7f800000u) {
            da = NAN;   /* inf or NaN in the block: q = 0 */
        } else {
            da = fa / 127.0f;
            if (da >= FLT_MIN) {   /* the 256-element rule (matmul.c): d = 1 / (127/amax) */
                id = 127.0f / fa;
                da = 1.0f / id;
            } else {
                da = 0.0f;
            }
        }
        __m512i v[16];
        const __m512 iv = _mm512_set1_ps(id);
        UNROLL for (int i = 0; i < 16; i++) {
            v[i] = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + 16 * i), iv),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            if (isnan(da)) v[i] = _mm512_setzero_si512();
            _mm_storeu_si128((__m128i *)(r->q + 16 * i), _mm512_cvtepi32_epi8(v[i]));
        }
        __m512i sums = reduce16(v, false);   /* lane j: bsum[j] */
        _mm256_storeu_si256((__m256i *)r->bsum, _mm512_cvtepi32_epi16(sums));
        /* bsum32[j] = lanes 2j + 2j+1 */
        __m512i pair = _mm512_add_epi32(sums, _mm512_srli_epi64(sums, 32));
        _mm_storeu_si128((__m128i *)r->bsum32, _mm512_cvtepi64_epi16(pair));
        r->d = da;
        memset(r->pad, 0, sizeof r->pad);
    }
}

/* ---------------------------------------------------------------- peak loop */

/* 12 independent accumulators (named, so they stay in registers) hide the
 * 4-5 cycle latency of vpdpbusd / vfmadd. */
#define PEAK_BODY(T, OP, W, X)                                                              \
    T a0 = a, a1 = a, a2 = a, a3 = a, a4 = a, a5 = a, a6 = a, a7 = a, a8 = a, a9 = a, a10 = a, a11 = a; \
    for (uint64_t i = 0; i < iters; i++) {                                                  \
        a0 = OP(a0, W, X); a1 = OP(a1, W, X); a2 = OP(a2, W, X); a3 = OP(a3, W, X);          \
        a4 = OP(a4, W, X); a5 = OP(a5, W, X); a6 = OP(a6, W, X); a7 = OP(a7, W, X);          \
        a8 = OP(a8, W, X); a9 = OP(a9, W, X); a10 = OP(a10, W, X); a11 = OP(a11, W, X);      \
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),   \
                         "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));     \
    }                                                                                       \
    __asm__ volatile("" : : "v"(a0), "v"(a1), "v"(a2), "v"(a3), "v"(a4), "v"(a5), "v"(a6),  \
                     "v"(a7), "v"(a8), "v"(a9), "v"(a10), "v"(a11));

static double peak(bool int8, uint64_t iters)
{
    if (int8) {
        __m512i a = _mm512_set1_epi32(1), w = _mm512_set1_epi32(0x01020304), x = _mm512_set1_epi32(0x05060708);
        PEAK_BODY(__m512i, _mm512_dpbusd_epi32, w, x)
        return (double)iters * 12 * 64 * 2;
    }
    __m512 a = _mm512_set1_ps(1.0f), w = _mm512_set1_ps(1.0000001f), x = _mm512_set1_ps(1e-7f);
    PEAK_BODY(__m512, _mm512_fmadd_ps, w, x)
    return (double)iters * 12 * 16 * 2;
}

const struct sprig_mm_family sprig_mm_family_avx512 = {
    .name = "avx512-vnni", .q8_xor = true,
    .f32 = k_f32, .f16 = k_f16, .bf16 = k_bf16, .q8_0 = k_q8, .q4_0 = k_q4,
    .q2_k = k_q2k, .q3_k = k_q3k, .q4_k = k_q4k, .q5_k = k_q5k, .q6_k = k_q6k,
    .quant = quant_row, .quant_k = quant_row_k,
    .peak = peak,
    .tile_panels = tile_panels,
    .rows = &sprig_mm_rows_avx512,   /* matmul-rows-avx512.c */
};
