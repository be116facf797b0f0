/*
 * tensor/matmul-avx2 — AVX2 + FMA + F16C matmul kernels and activation
 * quantizer, for CPUs without AVX-512; called only after CPUID.
 *
 * Same packed panels as the AVX-512 family (16 columns; here two ymm halves of
 * 8): each weight vector is loaded once and applied to every row of a tile.
 *
 * Quantized: AVX2 has no u8 x s8 dot without saturation, so
 *  - Q8_0 (packed signed): vpsignb moves the weight's sign onto the activation
 *    and vpmaddubsw multiplies |w| (u8, <= 128) by it: pairs <= 2*128*127 =
 *    32512 never saturate; vpmaddwd with ones widens to int32. Exact.
 *  - Q4_0: nibbles (0..15) x activation via vpmaddubsw, summed in int16 over
 *    the whole block (<= 8 * 2*15*127 = 30480, exact), widened once, plus the
 *    -8*sum(a) correction.
 * then acc = fma(cvt(isum), dw * da, acc) per block, as the reference does.
 *  - K-quants (Q2_K..Q6_K): units (u8) x activations through vpmaddubsw,
 *    int16 sums per sub-block (bounds in "K-quant tiles"), vpmaddwd with the
 *    sub-block scales, int32 I and M per super-block, then the two fmaf of
 *    the contract in matmul.h.
 *
 * Tiles (16 ymm registers; shapes chosen by measurement, Zen 5 with AVX2
 * forced, 2048 x 8192, 2 threads):
 *  - one row (decode): whole panels, both halves per activation broadcast;
 *    Q8_0/Q4_0 four panels at a time (four weight streams per thread),
 *    K-quants one panel, both halves in one pass except Q3_K.
 *  - Q8_0/Q4_0, 2..6 rows: half a panel (8 columns) x R rows, R float sums
 *    + R int sums + weight, |w|, a temporary and ones = 2R + 4 <= 16; more
 *    rows in chunks of up to 6; k walked in 8 KB ranges of panel so every
 *    chunk and half finds the range in L1 (partial sums wait in y), and the
 *    next range prefetched line by line spread over all passes of this one
 *    (a first-pass-only prefetch left the DRAM idle for three quarters of
 *    the passes at 8 rows). Float sums kept in memory instead (to allow 8-10
 *    rows) measured 10-15% slower.
 *  - K-quants, 2..4 rows (chunks of up to 4 above; Q2_K/Q3_K at every row
 *    count): one panel, halves outer, int16 and int32 sums of each row in
 *    registers, the float sums in L1 (touched once per super-block and
 *    half).
 *  - Q5_K/Q6_K from 5 rows, Q4_K from 12 rows (from 10 where a panel is
 *    larger than L1) under the far scheme, from 3 and 4 rows under near
 *    (ku_min) (ktile_u): each super-block's units unpacked
 *    once into 4 KB of L1, then chunks of up to 6 rows on them; measured on
 *    Zen 4 (in-process A/B, 2 threads, against the chunked tile): from L2
 *    Q6_K 0.81x the time at 16 rows, Q5_K 0.82x; `bench forward --prefetch
 *    both` A/B (llama-1b, 11 reps): Q5_K_M T(8) 0.77x, T(16) 0.72x.
 *  - F16/BF16/F32: G panels x R rows (G = 4, 2, 1 for 1, 2, 3-6 rows), one
 *    broadcast live at a time: 2RG sums + 2G weights + 1 <= 16.
 * GCC reassociates a chain of integer adds into a tree and then spills the
 * partial products; PIN() keeps each running sum in its register (before
 * it, every quantized tile of 3+ rows spilled; n = 16 Q8_0 +14%, Q4_0 +60%).
 *
 * Ceilings (sprig_measure_ceiling_gops: the kernel itself on one panel and
 * 1-8 rows that stay in L1; bench matmul/forward print it). The AVX2 int8
 * peak is the vpmaddubsw issue rate: 32 u8 x s8 products per instruction,
 * two per cycle on Zen 3/4/5 (7.0 per ns per core here = 448 G ops/s).
 *  - Q8_0 needs two multiply-port instructions per 32 products and row
 *    (vpmaddubsw and the widening vpmaddwd; no int16 sum of two 32512 pairs
 *    fits), so its scheme caps at half the int8 peak; with vpsignb, vpaddd
 *    and the per-block vcvtdq2ps/vmulps/vfmadd on the same ports the kernel
 *    measures 166 G ops/s per core from L1 = 37% of peak (74% of that cap).
 *    What bounds it is the vector ALU count, not the multiply ports alone:
 *    a microbenchmark of the step alone (6 rows, 8 weight vectors from L1,
 *    Zen 5, one core) runs vpbroadcastd + vpsignb + vpmaddubsw + vpmaddwd +
 *    vpaddd at 0.306 ns per row and 32 products; without the vpsignb 0.25,
 *    a 16-column step sharing each broadcast between two weight vectors
 *    0.31 (so the broadcast load is free), vpmaddubsw + vpaddw alone 0.18.
 *    Four ALU instructions per 32 products and row are the floor of an
 *    exact Q8_0 dot here: the sign must move per row (the activation is
 *    broadcast, the weights' signs differ per column), u8 = w ^ 0x80 pairs
 *    reach 2 * 255 * 127 and saturate, and no two 32512 pair sums share an
 *    int16. The kernel's ceiling (per-block epilogue, |w| per tile, the
 *    prefetch) is 84-92% of that step rate (209 G ops/s per core).
 *  - Q4_0 and Q4_K: one vpmaddubsw per 32 products (nibbles <= 15 let eight
 *    pair sums share an int16 before one vpmaddwd per 32 elements): 250 G
 *    ops/s per core = 56% of peak; the rest is the unit extraction (vpand,
 *    vpsrlw) and the broadcasts.
 *  - Q6_K: 6-bit units allow two groups per int16 sum, plus the high-bit
 *    merge: 165 per core, 37%.
 *  - F16: vcvtph2ps + vfmadd: 92 G ops/s per core = 83% of the FMA peak.
 * On Zen 4 (EPYC 9004, the same instructions at 256 bits; 459 G ops/s of
 * vpmaddubsw per core) the same ceilings read, per core: Q8_0 125-131 G
 * ops/s (27-28%), Q4_0 212-230 (46-50%), Q4_K 227-238 (50-52%), Q5_K
 * 189 (41%, the unpacked tile), Q6_K 163-166 (36%), F16 106 (90% of the
 * FMA peak); best of three `bench matmul` runs each, the host shared. A
 * microbenchmark of the inner step alone (vpbroadcastd from L1,
 * vpmaddubsw, vpaddw; 8 chains) runs at the full two per cycle, and one
 * 32-byte weight load per 4-6 such steps costs little more; two loads per
 * step (a 128-bit broadcast and a 256-bit load) halve it. So the K-quant
 * ceilings are set by what surrounds that step: the unit extraction, the
 * vpmaddwd per 8 (Q4_K), 4 (Q5_K) or 2 (Q6_K) groups on the same
 * multiply ports, and the per-super-block float epilogue.
 * Prefetch: the scheme of the job (matmul.h: near, as measured on Zen 5,
 * or far, T1 into L2, for Zen 4 and unnamed CPUs); distances below.
 * The goals of `sprig bench forward` are shares of these (the forward of a
 * mixed file such as Q4_K_M against its types' ceilings weighted by work).
 */
#include "tensor/matmul.h"
#include "tensor/matmul-kern.h"
#include "tensor/types.h"

#include <float.h>
#include <limits.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

#define RMAX 6
#ifndef FRUN
#define FRUN 6
#endif
#define GMAX 4
#ifndef QRUN
#define QRUN 6
#endif
#define QHMAX 6
#ifndef Q_RANGE
#define Q_RANGE 8192
#endif
/* One-row Q8_0/Q4_0 tiles (decode): Q1_G panels at a time, each panel's
 * stream prefetched Q1_PF_DIST bytes ahead with the NTA hint. Measured (Zen
 * 5, AVX2 forced, 2 threads, `bench decode`, 4 alternated rounds): four
 * panels (four quant and four scale streams per thread, as the AVX-512
 * decode tile) took llama-1b Q8_0 from 28-32 to 21-23 ms/token (76-83% ->
 * 96-107% of the paired read) and Q4_0 from 18.1-18.9 to 15.2-15.9; two
 * panels gained half of that; at four panels 1024 bytes ahead beat 512,
 * 2048, 4096 (the best distance for one panel) and 8192, and NTA beat T0 by
 * ~3%; spreading the lines between the block's steps did not gain. */
#ifndef Q1_PF_DIST
#define Q1_PF_DIST 1024
#endif
#ifndef Q1_G
#define Q1_G 4
#endif
#define Q1_GMAX 4
_Static_assert(Q1_G >= 1 && Q1_G <= Q1_GMAX, "one-row Q8_0/Q4_0 tile: 1..Q1_GMAX panels");
#ifndef Q1_PF_HINT
#define Q1_PF_HINT _MM_HINT_NTA
#endif
#ifndef Q_PF
#define Q_PF 1
#endif
/* The far prefetch scheme (matmul.h; Zen 4 and CPUs the table does not
 * name): the T1 hint, and for Q8_0/Q4_0 one row Q1_PF_DIST_FAR ahead, more
 * rows in Q_RANGE_FAR ranges (a range ahead). Measured on Zen 4 (EPYC
 * 9004, 2 threads, in-process A/B over 16 DRAM-resident ffn_gate tensors
 * of llama-1b, 2048 x 8192, medians of 40 paired calls, against near):
 * one-row Q8_0 0.75-0.82x the time (1 KB NTA -> 4 KB T1), Q4_0 0.90x;
 * 4-16 rows of Q8_0 0.81x / 0.91x / 0.95x at n = 4 / 8 / 16 (T0 over 8 KB
 * ranges -> T1 over 16 KB). */
#ifndef Q1_PF_DIST_FAR
#define Q1_PF_DIST_FAR 4096
#endif
#ifndef Q_RANGE_FAR
#define Q_RANGE_FAR 16384
#endif
/* One prefetch of a weight line under the job's scheme: far with T1 (into
 * L2), near with the tile's own hint. */
#define PF(p, far, NEAR_HINT) \
    ((far) ? _mm_prefetch((const char *)(p), _MM_HINT_T1) : _mm_prefetch((const char *)(p), NEAR_HINT))
/* Pins a running sum in a register at this point: without it GCC
 * reassociates the integer sums of a block into a tree and spills the
 * partial products (measured: every tile of 3+ rows spilled). */
#define PIN(v) __asm__("" : "+x"(v))

AI __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Load 8 columns starting at col (zeros past the right edge of y). */
AI __m256 load8(const float *y, int64_t col, int64_t n_out)
{
    int64_t rem = n_out - col;
    if (rem >= 8) return _mm256_loadu_ps(y + col);
    float t[8] = { 0 };
    if (rem > 0) memcpy(t, y + col, (size_t)rem * sizeof(float));
    return _mm256_loadu_ps(t);
}

/* Store 8 columns starting at col (partial at the right edge of y). */
AI void store8(float *y, int64_t col, int64_t n_out, __m256 v)
{
    int64_t rem = n_out - col;
    if (rem >= 8) {
        _mm256_storeu_ps(y + col, v);
    } else if (rem > 0) {
        float t[8];
        _mm256_storeu_ps(t, v);
        memcpy(y + col, t, (size_t)rem * sizeof(float));
    }
}

/* ---------------------------------------------------------------- quantized tile (one panel) */

AI void qtile(const sprig_mm_job *J, int64_t p, const int G, const bool q4)
{
    const int64_t nb = J->n_in / SPRIG_QK;
    const size_t qsb = q4 ? 256 : 512;
    const sprig_mm_qblock *aq = J->aq;   /* one row: aq[b] */
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(15);
    const bool far = J->pf_far;
    const size_t pfd = far ? Q1_PF_DIST_FAR : Q1_PF_DIST;
    const uint8_t *base[Q1_GMAX], *wd[Q1_GMAX];
    __m256 acc[Q1_GMAX][2];
    UNROLL for (int g = 0; g < G; g++) {
        base[g] = J->packed + (size_t)(p + g) * J->pstride;
        wd[g] = base[g] + (size_t)nb * qsb;
        acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    }

    for (int64_t b = 0; b < nb; b++) {
        const __m256 da = _mm256_set1_ps(aq[b].d);
        UNROLL for (int g = 0; g < G; g++) {
            const uint8_t *qb = base[g] + (size_t)b * qsb;
            if (Q1_PF_DIST) {   /* each panel's stream pfd bytes ahead, its scales as far */
                UNROLL for (size_t l = 0; l < qsb; l += 64) PF(qb + pfd + l, far, Q1_PF_HINT);
                if (!(b & 1)) {
                    int64_t bb = b + (int64_t)(pfd / qsb);
                    _mm_prefetch(bb < nb ? (const char *)wd[g] + bb * 32 : (const char *)wd[g] + J->pstride + (bb - nb) * 32,
                                 _MM_HINT_T0);
                }
            }
            UNROLL for (int h = 0; h < 2; h++) {
                __m256i ia;
                if (!q4) {
                    ia = _mm256_setzero_si256();
                    UNROLL for (int j = 0; j < 8; j++) {
                        __m256i w = _mm256_loadu_si256((const __m256i *)(qb + j * 64 + h * 32));
                        __m256i t = _mm256_sign_epi8(bcast4(aq[b].q + j * 4), w);
                        t = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), t), ones);
                        ia = _mm256_add_epi32(ia, t);
                    }
                } else {
                    __m256i s16 = _mm256_setzero_si256();
                    UNROLL for (int t = 0; t < 4; t++) {
                        __m256i v = _mm256_loadu_si256((const __m256i *)(qb + t * 64 + h * 32));
                        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                        const int8_t *a = aq[b].q + t * 4;
                        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo, bcast4(a)));
                        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi, bcast4(a + 16)));
                    }
                    ia = _mm256_add_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(aq[b].c4));
                }
                __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wd[g] + b * 32 + h * 16)));
                acc[g][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia), _mm256_mul_ps(dw, da), acc[g][h]);
            }
        }
    }
    UNROLL for (int g = 0; g < G; g++) {
        store8(J->y, (p + g) * SPRIG_MM_PANEL, J->n_out, acc[g][0]);
        store8(J->y, (p + g) * SPRIG_MM_PANEL + 8, J->n_out, acc[g][1]);
    }
}

/* Half a panel (8 columns, h) x R rows, Q8_0 or Q4_0: acc[R] + ia[R] + the
 * weight, |w| (Q8_0) or the nibbles, a temporary and ones: 2R + 4 <= 16. */
AI void qhalf(const sprig_mm_job *J, int64_t p, const int h, int r0, const int R, const bool q4, int64_t b0, int64_t b1,
              int pq, int pp, int64_t pdist)
{
    const int64_t nb = J->n_in / SPRIG_QK;
    const size_t qsb = q4 ? 256 : 512;
    const uint8_t *base = J->packed + (size_t)p * J->pstride + h * 32;
    const uint8_t *wd = J->packed + (size_t)p * J->pstride + (size_t)nb * qsb + h * 16;
    const sprig_mm_qblock *aq = J->aq + r0;
    const int64_t n = J->n;
    const __m256i ones = _mm256_set1_epi16(1);
    const bool far = J->pf_far;

    __m256 acc[QHMAX];   /* zero, or the partial sums an earlier k range left in y */
    UNROLL for (int r = 0; r < R; r++)
        acc[r] = b0 == 0 ? _mm256_setzero_ps() : load8(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL + h * 8, J->n_out);

    /* prefetch, spread over the passes: pass pq of pp over this k range
     * requests the lines l = pq (mod pp) of the block one range ahead in the
     * panel's byte stream (quants, then scales, then the next panel), so the
     * DRAM requests of a range are in flight through all its passes instead
     * of bursting in the first (one core keeps only so many misses open) */
    const uint8_t *pbase = J->packed + (size_t)p * J->pstride;
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *qb = base + (size_t)b * qsb;
        const sprig_mm_qblock *ab = aq + b * n;
        __m256i ia[QHMAX];
        const char *nx = (const char *)pbase + (size_t)(b + pdist) * qsb;   /* the block ahead */
        if (pp) {
            if (q4) for (int l = pq; l < (int)(qsb / 64); l += pp) PF(nx + 64 * l, far, _MM_HINT_T0);
            if (pq == 0 && !(b & 1)) {
                int64_t bb = b + pdist;
                PF(bb < nb ? (const char *)pbase + (size_t)nb * qsb + bb * 32
                           : (const char *)pbase + J->pstride + (size_t)nb * qsb + (bb - nb) * 32, far, _MM_HINT_T0);
            }
        }
        if (!q4) {
            UNROLL for (int j = 0; j < 8; j++) {
                /* this pass's lines of the block ahead (pq + pp * k), one
                 * every other step (back to back at the block's start
                 * measured 3-5% slower at 4-8 rows, in-process A/B) */
                if (pp && (j & 1) == 0) {
                    const int l = pq + pp * (j / 2);
                    if (l < 8) PF(nx + 64 * l, far, _MM_HINT_T0);
                }
                const __m256i w = _mm256_loadu_si256((const __m256i *)(qb + j * 64));
                const __m256i aw = _mm256_abs_epi8(w);
                UNROLL for (int r = 0; r < R; r++) {
                    __m256i t = _mm256_sign_epi8(bcast4(ab[r].q + j * 4), w);
                    t = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, t), ones);
                    ia[r] = j ? _mm256_add_epi32(ia[r], t) : t;
                    PIN(ia[r]);
                }
            }
        } else {
            const __m256i m4 = _mm256_set1_epi8(15);
            __m256i s16[QHMAX];
            UNROLL for (int t = 0; t < 4; t++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(qb + t * 64));
                const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                UNROLL for (int r = 0; r < R; r++) {
                    const int8_t *a = ab[r].q + t * 4;
                    __m256i x = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(a)), _mm256_maddubs_epi16(hi, bcast4(a + 16)));
                    s16[r] = t ? _mm256_add_epi16(s16[r], x) : x;
                    PIN(s16[r]);
                }
            }
            UNROLL for (int r = 0; r < R; r++)
                ia[r] = _mm256_add_epi32(_mm256_madd_epi16(s16[r], ones), _mm256_set1_epi32(ab[r].c4));
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wd + b * 32)));
        UNROLL for (int r = 0; r < R; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[r]), _mm256_mul_ps(dw, _mm256_broadcast_ss(&ab[r].d)), acc[r]);
    }
    UNROLL for (int r = 0; r < R; r++)
        store8(J->y + (size_t)(r0 + r) * J->n_out, p * SPRIG_MM_PANEL + h * 8, J->n_out, acc[r]);
}

/* ---------------------------------------------------------------- K-quant tiles (one panel) */

/*
 * One panel (16 columns, two halves of 8 = two ymm of 8 int32 lanes, one
 * lane per column holding 4 consecutive raw bytes of it) times R activation
 * rows, super-block by super-block; per half and row, the exact int32 sums
 * I and M of the contract in matmul.h, then the same two fmaf as the
 * reference. Sub-block by sub-block: units u (u8) x broadcast activations
 * (s8, |a| <= 127) through vpmaddubsw into int16 pairs summed in int16 over
 * the sub-block's groups of 4, then vpmaddwd with the sub-block scale
 * (int16, the same in both halves of a lane) into int32. No step ever
 * saturates or wraps (vpmaddubsw saturates its pair sums; vpaddw wraps):
 *   type  u max  pair <= 2*u*127  groups per int16 sum  int16 sum bound
 *   Q2_K    3        762               4 (16 elements)       3048
 *   Q3_K    7       1778               4                     7112
 *   Q4_K   15       3810               8 (32 elements)      30480
 *   Q5_K   31       7874               4 (half a sub-block) 31496
 *   Q6_K   63      16002               2 (half a sub-block) 32004
 * all <= 32767. vpmaddwd of such a sum with a scale (|sc| <= 128) is exact
 * in int32, and the int32 totals are bounded in matmul.c (Q6_K's split
 * sum sc*(u.a) - 32 * sum sc*bsum: 262e6 and 133e6). The offsets of Q3_K
 * (4) and Q6_K (32) come in through sum_j sc_j * bsum[j], the mins of
 * Q2_K/Q4_K/Q5_K as M: scale or min pairs of two adjacent sub-blocks, as
 * int16 pairs per lane, vpmaddwd against the broadcast bsum pair
 * (|m * bsum| <= 63 * 4064, |sc * bsum| <= 128 * 2032 per product).
 */

#define KRMAX 6
#ifndef K_PF_DIST
#define K_PF_DIST 4096
#endif
/* NTA (into L1) rather than T1: one row (decode) measured 0.74-0.89x the
 * time on Q4_K and Q6_K (Zen 5 with AVX2 forced, in-process A/B over
 * DRAM-resident copies, 2048 x 16384 and 8192 x 2048); 2-16 rows the same.
 * (Q8_0's one-row and batched tiles measured no gain from it.) */
#ifndef K_PF_HINT
#define K_PF_HINT _MM_HINT_NTA
#endif
/* The far scheme (matmul.h): T1, K_PF_DIST_FAR ahead. Measured on Zen 4
 * (EPYC 9004, 2 threads, in-process A/B over 16 DRAM-resident tensors of
 * llama-1b Q4_K_M / Q5_K_M, medians of 30-40 paired calls) against 4 KB
 * NTA: one row Q4_K 0.47-0.49x the time, Q5_K 0.62x, Q6_K 0.53x; Q4_K
 * 4 / 8 / 16 rows 0.64x / 0.73x / 0.87x; 16 KB measured 5-10% behind 32 KB
 * at one row, 64 KB no better. */
#ifndef K_PF_DIST_FAR
#define K_PF_DIST_FAR 32768
#endif
#ifndef KRUN
#define KRUN 4
#endif
/* Far scheme, by type (bit kt). K_SPREAD: a tile that passes over its panel
 * several times (row chunks x halves) prefetches the next panel spread over
 * all passes (line l in pass l mod passes) instead of kd ahead in the first
 * pass only; measured on Zen 4 (in-process A/B over 16 DRAM-resident
 * ffn_gate tensors, 2 threads): Q4_K 4 / 8 / 16 rows 0.85-0.93x the time,
 * Q5_K 0.82x / 0.92x / 0.98x; Q6_K 1.00-1.04x, so not Q6_K. K_SPLIT: one
 * row prefetches a record's lines spread over its sub-blocks instead of
 * at once: Q6_K 0.82-0.98x, Q5_K 0.95-0.96x, Q4_K 1.02-1.04x (so not Q4_K). */
#ifndef K_SPREAD
#define K_SPREAD ((1 << KT_Q4) | (1 << KT_Q5))
#endif
#ifndef K_SPLIT
#define K_SPLIT ((1 << KT_Q5) | (1 << KT_Q6))
#endif

enum { KT_Q2, KT_Q3, KT_Q4, KT_Q5, KT_Q6 };

/* 8 columns' bytes p[0..7] as 8 int32 lanes of two equal int16 (u8 or s8). */
AI __m256i sc_dup_u8(const uint8_t *p)
{
    __m128i x = _mm_loadl_epi64((const __m128i *)p);
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(x, x));
}
AI __m256i sc_dup_s8(const uint8_t *p)
{
    __m128i x = _mm_loadl_epi64((const __m128i *)p);
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(x, x));
}
/* Two rows of 8 column bytes (sub-blocks j, j+1) as int16 pairs (s8) per lane. */
AI __m256i sc_pair_s8(const uint8_t *pj, const uint8_t *pj1)
{
    __m128i a = _mm_loadl_epi64((const __m128i *)pj), b = _mm_loadl_epi64((const __m128i *)pj1);
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
}
AI __m256i bcast_pair(const int16_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
/* Bits (b, b+1, ...) of every byte moved to bit t by a 16-bit shift; callers
 * mask to the bits that stay inside their byte (|b - t| small enough). */
AI __m256i bits_to(__m256i v, const int b, const int t)
{
    return b > t ? _mm256_srli_epi16(v, b - t) : b < t ? _mm256_slli_epi16(v, t - b) : v;
}

/* The f16 scales of super-block s, half h: d (e = 0) or dmin (e = 1), 8 floats. */
AI __m256 kscale(const uint8_t *wd, int64_t s, int nd, int e, int h)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wd + ((size_t)s * nd + e) * 32 + h * 16)));
}

/* The units (u8) of Q4_K/Q5_K sub-block j, group tt (elements 32j + 4tt ..
 * 32j + 4tt + 3) of the half at byte ho (0 or 32) of record w: nibble j & 1
 * of groups 8(j / 2) .. 8(j / 2) + 7; Q5_K's fifth bit: bit j of qh group tt. */
AI __m256i ku32(const uint8_t *w, const int j, const int tt, const int ho, const int kt)
{
    const __m256i m15 = _mm256_set1_epi8(15), m16 = _mm256_set1_epi8(16);
    __m256i v = _mm256_loadu_si256((const __m256i *)(w + (8 * (j / 2) + tt) * 64 + ho));
    __m256i u = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(v, 4) : v, m15);
    if (kt == KT_Q5) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(w + SPRIG_MM_Q5K_QH + tt * 64 + ho));
        u = _mm256_or_si256(u, _mm256_and_si256(bits_to(q, j, 4), m16));
    }
    return u;
}

/* The units of Q2_K/Q3_K/Q6_K sub-block j = 8h' + 2f + lh (16 elements),
 * group tt4 (elements 16j + 4tt4 .. + 3), half at byte ho, likewise. */
AI __m256i ku16(const uint8_t *w, const int j, const int tt4, const int ho, const int kt)
{
    const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4), m15 = _mm256_set1_epi8(15),
                  m48 = _mm256_set1_epi8(48);
    const int hp = j / 8, f = (j % 8) / 2, lh = j & 1;
    __m256i u;
    if (kt == KT_Q6) {
        /* ql group 16h' + 8(f & 1) + 4lh + tt4, nibble f >> 1; qh group
         * 8h' + 4lh + tt4, bits 2f, 2f+1 */
        __m256i v = _mm256_loadu_si256((const __m256i *)(w + (16 * hp + 8 * (f & 1) + 4 * lh + tt4) * 64 + ho));
        __m256i q = _mm256_loadu_si256((const __m256i *)(w + SPRIG_MM_Q6K_QH + (8 * hp + 4 * lh + tt4) * 64 + ho));
        u = _mm256_and_si256(f >> 1 ? _mm256_srli_epi16(v, 4) : v, m15);
        u = _mm256_or_si256(u, _mm256_and_si256(bits_to(q, 2 * f, 4), m48));
    } else {
        /* qs group 8h' + 4lh + tt4, bits 2f, 2f+1; Q3_K: hmask group
         * 4lh + tt4, bit 4h' + f */
        __m256i v = _mm256_loadu_si256((const __m256i *)(w + (8 * hp + 4 * lh + tt4) * 64 + ho));
        u = _mm256_and_si256(bits_to(v, 2 * f, 0), m3);
        if (kt == KT_Q3) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(w + SPRIG_MM_Q3K_HM + (4 * lh + tt4) * 64 + ho));
            u = _mm256_or_si256(u, _mm256_and_si256(bits_to(q, 4 * hp + f, 2), m4));
        }
    }
    return u;
}

/* Q4_K/Q5_K sub-block j (32 elements) of halves h0 .. h0+H-1 of record w:
 * I[r][hh] += sc_j * (u . a) for rows as[0 .. R-1]. Sub-block j = 2g + hi:
 * nibble hi of groups 8g .. 8g+7; Q5_K's fifth bit: bit j of the qh group tt. */
AI void ksub32(const uint8_t *w, const sprig_mm_kblock *as, const int h0, const int H, const int j, const int R,
               const int kt, __m256i I[][2])
{
    __m256i sc[2], s16[KRMAX][2];
    UNROLL for (int hh = 0; hh < H; hh++) {
        sc[hh] = sc_dup_u8(w + (kt == KT_Q4 ? SPRIG_MM_Q4K_SC : SPRIG_MM_Q5K_SC) + (h0 + hh) * 8 + j * 16);
        UNROLL for (int r = 0; r < R; r++) s16[r][hh] = _mm256_setzero_si256();
    }
    UNROLL for (int tt = 0; tt < 8; tt++) {
        __m256i u[2];
        UNROLL for (int hh = 0; hh < H; hh++) u[hh] = ku32(w, j, tt, (h0 + hh) * 32, kt);
        UNROLL for (int r = 0; r < R; r++) {
            const __m256i a = bcast4(as[r].q + 32 * j + 4 * tt);
            UNROLL for (int hh = 0; hh < H; hh++) {
                s16[r][hh] = _mm256_add_epi16(s16[r][hh], _mm256_maddubs_epi16(u[hh], a));
                PIN(s16[r][hh]);
            }
        }
        if (kt == KT_Q5 ? (tt & 3) == 3 : tt == 7) {
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int hh = 0; hh < H; hh++) {
                I[r][hh] = _mm256_add_epi32(I[r][hh], _mm256_madd_epi16(s16[r][hh], sc[hh]));
                PIN(I[r][hh]);
                s16[r][hh] = _mm256_setzero_si256();
            }
        }
    }
}

/* Q2_K/Q3_K/Q6_K sub-block j (16 elements), likewise: j = 8h' + 2f + lh
 * holds elements 128h' + 32f + 16lh + 4tt4 + i, tt4 = 0..3. */
AI void ksub16(const uint8_t *w, const sprig_mm_kblock *as, const int h0, const int H, const int j, const int R,
               const int kt, __m256i I[][2])
{
    const int lh = j & 1;
    __m256i sc[2], s16[KRMAX][2];
    UNROLL for (int hh = 0; hh < H; hh++) {
        const int ho = (h0 + hh) * 32;
        if (kt == KT_Q2) {
            /* low nibble of byte e = j & 1 of the column's pair j / 2 */
            __m128i x = _mm_and_si128(_mm_loadu_si128((const __m128i *)(w + SPRIG_MM_Q2K_SC + (j / 2) * 32 + ho / 2)),
                                      _mm_set1_epi8(15));
            x = _mm_shuffle_epi8(x, lh ? _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15)
                                       : _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14));
            sc[hh] = _mm256_cvtepu8_epi16(x);
        } else {
            sc[hh] = sc_dup_s8(w + (kt == KT_Q3 ? SPRIG_MM_Q3K_SC : SPRIG_MM_Q6K_SC) + j * 16 + ho / 4);
        }
        UNROLL for (int r = 0; r < R; r++) s16[r][hh] = _mm256_setzero_si256();
    }
    UNROLL for (int tt4 = 0; tt4 < 4; tt4++) {
        __m256i u[2];
        UNROLL for (int hh = 0; hh < H; hh++) u[hh] = ku16(w, j, tt4, (h0 + hh) * 32, kt);
        UNROLL for (int r = 0; r < R; r++) {
            const __m256i a = bcast4(as[r].q + 16 * j + 4 * tt4);
            UNROLL for (int hh = 0; hh < H; hh++) {
                s16[r][hh] = _mm256_add_epi16(s16[r][hh], _mm256_maddubs_epi16(u[hh], a));
                PIN(s16[r][hh]);
            }
        }
        if (kt != KT_Q6 ? tt4 == 3 : (tt4 & 1) == 1) {
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int hh = 0; hh < H; hh++) {
                I[r][hh] = _mm256_add_epi32(I[r][hh], _mm256_madd_epi16(s16[r][hh], sc[hh]));
                PIN(I[r][hh]);
                s16[r][hh] = _mm256_setzero_si256();
            }
        }
    }
}

/* Step i (0..15) of a 16-element sub-block walk in which the sub-blocks
 * j = 8h' + 2f + lh sharing a byte group come one after another: h', lh,
 * then f = 0, 2, 1, 3 (f and f + 2 are the low and high nibbles of one
 * Q6_K ql group; all four f share a qh / qs / hmask group). */
AI int k16_shared_order(const int i)
{
    static const int f_of[4] = { 0, 2, 1, 3 };
    return (i & 8) | f_of[i & 3] << 1 | (i >> 2 & 1);
}

/* Running float sums in memory: am[r][16] per row, halves of 8. */
#define ACC_GET(r, h) _mm256_load_ps(&am[r][(h) * 8])
#define ACC(r, h, v) _mm256_store_ps(&am[r][(h) * 8], (v))
/* The floats of super-block s (record w, f16 scales wd), half h, rows
 * as[0 .. R-1] from their int sums I[r] (consumed): the offset term of
 * Q3_K/Q6_K into I, then am[r][8h ..] += I * (d * da) and, for Q2_K, Q4_K
 * and Q5_K, -= M * (dmin * da) (the contract in matmul.h). */
AI void kfinish(const uint8_t *w, const uint8_t *wd, int64_t s, const int h, const sprig_mm_kblock *as, const int R,
                const int kt, __m256i *I, float (*am)[16])
{
    const int nd = kt == KT_Q3 || kt == KT_Q6 ? 1 : 2;
    if (kt == KT_Q3 || kt == KT_Q6) {
        /* I -= off * sum_j sc_j * bsum[j] (off 4 or 32) */
        const uint8_t *scp = w + (kt == KT_Q3 ? SPRIG_MM_Q3K_SC : SPRIG_MM_Q6K_SC) + h * 8;
        __m256i C[KRMAX];
        UNROLL for (int r = 0; r < R; r++) C[r] = _mm256_setzero_si256();
        UNROLL for (int k = 0; k < 8; k++) {
            __m256i pr = sc_pair_s8(scp + 2 * k * 16, scp + (2 * k + 1) * 16);
            UNROLL for (int r = 0; r < R; r++)
                C[r] = _mm256_add_epi32(C[r], _mm256_madd_epi16(pr, bcast_pair(as[r].bsum + 2 * k)));
        }
        UNROLL for (int r = 0; r < R; r++) I[r] = _mm256_sub_epi32(I[r], _mm256_slli_epi32(C[r], kt == KT_Q3 ? 2 : 5));
    }
    const __m256 d = kscale(wd, s, nd, 0, h);
    UNROLL for (int r = 0; r < R; r++)
        ACC(r, h, _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[r]), _mm256_mul_ps(d, _mm256_set1_ps(as[r].d)), ACC_GET(r, h)));
    if (nd == 2) {
        /* M: min pairs (of sub-blocks of 32: Q4_K/Q5_K; of 16: Q2_K) */
        __m256i M[KRMAX];
        UNROLL for (int r = 0; r < R; r++) M[r] = _mm256_setzero_si256();
        const int np = kt == KT_Q2 ? 8 : 4;
        UNROLL for (int k = 0; k < np; k++) {
            __m256i pr;
            if (kt == KT_Q2)
                pr = _mm256_srli_epi16(
                    _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + SPRIG_MM_Q2K_SC + k * 32 + h * 16))), 4);
            else
                pr = _mm256_cvtepu8_epi16(_mm_loadu_si128(
                    (const __m128i *)(w + (kt == KT_Q4 ? SPRIG_MM_Q4K_M : SPRIG_MM_Q5K_M) + k * 32 + h * 16)));
            UNROLL for (int r = 0; r < R; r++) {
                const int16_t *bs = kt == KT_Q2 ? as[r].bsum : as[r].bsum32;
                M[r] = _mm256_add_epi32(M[r], _mm256_madd_epi16(pr, bcast_pair(bs + 2 * k)));
            }
        }
        const __m256 dm = kscale(wd, s, nd, 1, h);
        UNROLL for (int r = 0; r < R; r++)
            ACC(r, h, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), M[r])),
                                      _mm256_mul_ps(dm, _mm256_set1_ps(as[r].d)), ACC_GET(r, h)));
    }
}

/* One panel p, rows r0 .. r0+R-1, weight type kt. */
AI void ktile(const sprig_mm_job *J, int64_t p, int r0, const int R, const int kt)
{
    static const size_t recs[5] = { SPRIG_MM_Q2K_REC, SPRIG_MM_Q3K_REC, SPRIG_MM_Q4K_REC, SPRIG_MM_Q5K_REC,
                                    SPRIG_MM_Q6K_REC };
    const size_t rec = recs[kt];
    const int nd = kt == KT_Q3 || kt == KT_Q6 ? 1 : 2;
    const int64_t ns = J->n_in / SPRIG_MM_QK_K, n = J->n;
    const uint8_t *base = J->packed + (size_t)p * J->pstride;
    const uint8_t *wd = base + (size_t)ns * rec;
    const bool far = J->pf_far;
    const size_t kd = far ? K_PF_DIST_FAR : K_PF_DIST;
    /* the float sums are touched once per super-block and half: in memory
     * (L1), so the sub-block loop has the registers for its int sums */
    float am[KRMAX][16] __attribute__((aligned(32)));
    memset(am, 0, sizeof am);

    /* halves h0 .. h0+H-1 of the panel in one pass: both for one row
     * (each activation broadcast serves 16 columns, and the panel is
     * streamed once instead of twice; measured n = 1, in-process A/B over
     * DRAM-resident copies, 2 threads: Q4_K +12%, Q6_K 0.84-0.97x the
     * time, Q5_K 0.77-0.91x; Q3_K 0.99-1.08x, so it keeps one half per
     * pass), one at a time for more rows. Halves outer: a super-block's
     * broadcasts are then not common to two halves, which GCC hoisted and
     * spilled. */
    const int H = R == 1 && kt != KT_Q3 ? 2 : 1;
    /* Far scheme, Q4_K/Q5_K, several passes over the panel (row chunks x
     * halves): the next panel's prefetch is spread over all of them, so the
     * DRAM is busy the whole time the panel is computed; the chunk index
     * from r0 = floor(n c / chunks) is ceil(r0 chunks / n). */
    const int chunks = (int)((n + KRUN - 1) / KRUN), npass = chunks * (2 / H);
    const int chunk = (int)(((int64_t)r0 * chunks + n - 1) / n);
    const bool spread = far && npass > 1 && (K_SPREAD >> kt & 1);
    const bool split = far && R == 1 && (K_SPLIT >> kt & 1);
    for (int h0 = 0; h0 < 2; h0 += H) {
        const int pass = chunk * (2 / H) + h0 / H;
        for (int64_t s = 0; s < ns; s++) {
            const uint8_t *w = base + (size_t)s * rec;
            const sprig_mm_kblock *as = J->ak + s * n + r0;   /* row r: as[r] */
            if (spread) {
                /* every pass over this panel prefetches its share of the
                 * next panel's lines (line l in pass l mod npass) */
                const uint8_t *nx = w + J->pstride;
                for (size_t l = (size_t)pass * 64; l < rec; l += (size_t)npass * 64) PF(nx + l, true, K_PF_HINT);
                if (pass == 0) PF(wd + J->pstride + s * nd * 32, true, K_PF_HINT);
            } else if (split) {
                /* in the sub-block loop below */
            } else if (h0 == 0 && r0 == 0 && K_PF_DIST) {
                /* the first pass over a panel prefetches the record stream
                 * kd bytes ahead (into the next panel at the end)
                 * and the f16 scales as far ahead (spreading the next
                 * panel's lines over every pass, as Q8_0 does, measured
                 * Q6_K -10-15% at 4-8 rows, Q4_K no better) */
                for (size_t l = 0; l < rec; l += 64) PF(w + kd + l, far, K_PF_HINT);
                PF(wd + (s + (int64_t)(kd / rec)) * nd * 32, far, K_PF_HINT);
            }
            __m256i I[KRMAX][2];
            UNROLL for (int r = 0; r < R; r++) I[r][0] = I[r][1] = _mm256_setzero_si256();
            /* one row: sub-blocks fully unrolled (constant shifts and
             * offsets; measured +10-45% at n = 1); more rows: a loop (fully
             * unrolled they measured at about half the speed) */
            if (kt == KT_Q4 || kt == KT_Q5) {
                UNROLL for (int j = 0; j < 8; j++) {
                    if (split) {
                        const size_t nl = rec / 64;
                        for (size_t l = nl * j / 8; l < nl * (j + 1) / 8; l++) PF(w + kd + l * 64, true, 0);
                        if (j == 0) PF(wd + (s + (int64_t)(kd / rec)) * nd * 32, far, K_PF_HINT);
                    }
                    ksub32(w, as, h0, H, j, R, kt, I);
                }
            } else {
                /* one row: sub-blocks j = 8h' + 2f + lh in the order h',
                 * lh, f = 0, 2, 1, 3, so the two that take the low and
                 * high nibbles of the same ql bytes (Q6_K), and the four
                 * that take bits of the same qh / qs / hmask bytes, follow
                 * each other; in j order GCC loaded a group once and kept
                 * it (spilled to the stack) through four sub-blocks until
                 * its other nibble was due. The int32 sums are exact, so
                 * the order changes no bit. Measured (Zen 5, AVX2, one
                 * row, in-process A/B): Q6_K 0.89-0.95x the time from DRAM
                 * (2 threads) and from L2, Q3_K 0.88-0.95x, Q2_K the same;
                 * `bench forward --prefetch both` with the scheme choosing
                 * the order, llama-1b Q6_K T(1) 0.96-1.00x, Q4_K_M
                 * 0.99-1.00x. Two to four rows keep j order (0.97-1.02x). */
                UNROLL for (int i = 0; i < 16; i++) {
                    if (split) {
                        const size_t nl = rec / 64;
                        for (size_t l = nl * i / 16; l < nl * (i + 1) / 16; l++) PF(w + kd + l * 64, true, 0);
                        if (i == 0) PF(wd + (s + (int64_t)(kd / rec)) * nd * 32, far, K_PF_HINT);
                    }
                    ksub16(w, as, h0, H, R == 1 ? k16_shared_order(i) : i, R, kt, I);
                }
            }
            UNROLL for (int hh = 0; hh < H; hh++) {
                __m256i Ih[KRMAX];
                UNROLL for (int r = 0; r < R; r++) Ih[r] = I[r][hh];
                kfinish(w, wd, s, h0 + hh, as, R, kt, Ih, am);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *yr = J->y + (size_t)(r0 + r) * J->n_out;
        store8(yr, p * SPRIG_MM_PANEL, J->n_out, ACC_GET(r, 0));
        store8(yr, p * SPRIG_MM_PANEL + 8, J->n_out, ACC_GET(r, 1));
    }
#undef ACC
#undef ACC_GET
}

/* ---------------------------------------------------------------- K-quant tiles from unpacked units */

/*
 * Q4_K/Q5_K/Q6_K, ku_min rows and more: each super-block of the panel is
 * unpacked once into its units (u8, 64 groups of 4 elements x 16 columns,
 * element order; 4 KB, in L1) and every chunk of KU_R rows and each half
 * runs on them: a vpmaddubsw, a vpaddw and the broadcast per 32 products
 * and row, the unit extraction paid once per super-block instead of once
 * per chunk and half. Same int16 sums per group count, same int32 I and M,
 * the same kfinish: the bits of ktile.
 */
#ifndef KU_R
#define KU_R 6
#endif
/* Rows from which each type takes ktile_u (none for Q2_K/Q3_K): [0] for a
 * panel that stays in L1 between the chunked tile's passes (KU_L1 bytes or
 * less), [1] for a larger one. Q4_K's units are one vpand or vpsrlw away
 * from its bytes, so re-extracting them per chunk costs less than storing
 * and reloading them while the panel sits in L1. Measured on Zen 4
 * (in-process A/B over 12 DRAM-resident copies, 2 threads, time of ktile_u
 * / the chunked tile): Q4_K 2048 x 8192 (18 KB panels) at 8 / 12 / 16 /
 * 20 / 24 / 32 / 64 rows 1.14 / 1.05-1.07 / 1.03-1.04 / 1.03 / 0.97-0.99 /
 * 0.97 / 0.92;
 * 8192 x 2048 (74 KB panels) at 8 / 10 / 12 / 16 rows 1.05 / 0.98 / 0.95 /
 * 0.94. In the forward ktile_u did better than that: `bench forward
 * --prefetch both` A/B (llama-1b Q4_K_M, 11 reps, 3-4 runs) of these
 * thresholds against ktile_u from 8 rows everywhere: T(8) 0.90-0.98x
 * (median 0.95x) the time with 24 here, T(16) 0.98-1.06x (median 1.04x), so
 * the small-panel threshold is 12 (T(8) 0.94-0.96x, the same path from 12).
 * Q5_K and Q6_K: ktile_u 0.70-0.94 at 8 and 16 rows in both shapes. With
 * the far scheme ktile_u spreads its prefetch over the sub-block steps
 * (ktile_u below): `bench forward --prefetch both` A/B against at once,
 * llama-1b Q4_K_M T(8) 0.96-0.98x, T(16) 0.94-1.03x (median 0.97x),
 * Q5_K_M T(8) 0.92x / 0.96x. */
#ifndef KU_L1
#define KU_L1 24576
#endif
static const int ku_min[2][5][2] = {
    /* near scheme (Zen 5): ktile_u from fewer rows. In-process A/B there (12 DRAM-resident copies, 2
     * threads, 2048 x 8192 and 8192 x 2048, ktile_u / the chunked tile):
     * Q4_K 3 / 4 / 5 / 6 / 8 rows 0.95-1.07 / 0.93-0.96 / 0.85-0.88 /
     * 0.88-0.90 / 0.91-0.92; Q5_K 3 / 4 rows 0.72-1.00 / 0.84-0.86; Q6_K
     * 0.87-0.91 / 0.84-0.90; at 2 rows 0.93-1.09 for all three, so not
     * there. (The far scheme on that CPU measured the same way: Q4_K 5 / 8
     * rows 0.83-0.92 / 0.78-0.90; the thresholds follow the scheme because
     * the scheme is what the CPU table picks.) */
    [SPRIG_PF_NEAR] = { [KT_Q2] = { INT_MAX, INT_MAX }, [KT_Q3] = { INT_MAX, INT_MAX },
                        [KT_Q4] = { 4, 4 }, [KT_Q5] = { 3, 3 }, [KT_Q6] = { 3, 3 } },
    /* far scheme (Zen 4 and CPUs the table does not name), as measured above */
    [SPRIG_PF_FAR] = { [KT_Q2] = { INT_MAX, INT_MAX }, [KT_Q3] = { INT_MAX, INT_MAX },
                       [KT_Q4] = { 12, 10 }, [KT_Q5] = { 5, 5 }, [KT_Q6] = { 5, 5 } },
};
#define KU_ROWS 64
_Static_assert(KU_R >= 1 && KU_R <= KRMAX, "unpacked K tile: 1..KRMAX rows per chunk");

/* The units of record w (type kt) into ub[g * 64 + column * 4 + i] for
 * element 4g + i. */
AI void k_unpack(const uint8_t *w, const int kt, uint8_t *ub)
{
    if (kt == KT_Q6) {
        UNROLL for (int j = 0; j < 16; j++) UNROLL for (int t = 0; t < 4; t++) UNROLL for (int h = 0; h < 2; h++)
            _mm256_store_si256((__m256i *)(ub + (4 * j + t) * 64 + h * 32), ku16(w, j, t, h * 32, kt));
    } else {
        UNROLL for (int j = 0; j < 8; j++) UNROLL for (int t = 0; t < 8; t++) UNROLL for (int h = 0; h < 2; h++)
            _mm256_store_si256((__m256i *)(ub + (8 * j + t) * 64 + h * 32), ku32(w, j, t, h * 32, kt));
    }
}

/* Rows as[0 .. R-1] x both halves of super-block s from its units ub; the
 * lines [l0, l1) of pf (none when pf is NULL) prefetched spread over the
 * sub-block steps. */
AI void ku_rows(const uint8_t *ub, const uint8_t *w, const uint8_t *wd, int64_t s, const sprig_mm_kblock *as,
                const int R, const int kt, float (*am)[16], const uint8_t *pf, int l0, int l1)
{
    /* sub-blocks, groups per sub-block, groups per int16 sum (bounds above) */
    const int nsb = kt == KT_Q6 ? 16 : 8, ng = 64 / nsb, gpi = kt == KT_Q4 ? 8 : kt == KT_Q5 ? 4 : 2;
    const size_t sco = kt == KT_Q6 ? SPRIG_MM_Q6K_SC : kt == KT_Q4 ? SPRIG_MM_Q4K_SC : SPRIG_MM_Q5K_SC;
#pragma GCC unroll 1
    for (int h = 0; h < 2; h++) {   /* a loop: unrolled, GCC hoists the shared broadcasts and spills */
        __m256i I[KRMAX];
        UNROLL for (int r = 0; r < R; r++) I[r] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int j = 0; j < nsb; j++) {
            if (pf) {
                const int k = h * nsb + j, n = l1 - l0;
                for (int l = l0 + n * k / (2 * nsb); l < l0 + n * (k + 1) / (2 * nsb); l++) PF(pf + l * 64, true, 0);
            }
            const __m256i sc = kt == KT_Q6 ? sc_dup_s8(w + sco + j * 16 + h * 8) : sc_dup_u8(w + sco + j * 16 + h * 8);
            const uint8_t *uj = ub + (size_t)j * ng * 64 + h * 32;
            const int8_t *aj = as[0].q + 4 * j * ng;
            __m256i s16[KRMAX];
            UNROLL for (int r = 0; r < R; r++) s16[r] = _mm256_setzero_si256();
            UNROLL for (int t = 0; t < ng; t++) {
                const __m256i u = _mm256_load_si256((const __m256i *)(uj + t * 64));
                UNROLL for (int r = 0; r < R; r++) {
                    const __m256i a = bcast4(aj + (size_t)r * sizeof(sprig_mm_kblock) + 4 * t);
                    s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(u, a));
                    PIN(s16[r]);
                }
                if ((t + 1) % gpi == 0) {
                    UNROLL for (int r = 0; r < R; r++) {
                        I[r] = _mm256_add_epi32(I[r], _mm256_madd_epi16(s16[r], sc));
                        PIN(I[r]);
                        s16[r] = _mm256_setzero_si256();
                    }
                }
            }
        }
        kfinish(w, wd, s, h, as, R, kt, I, am);
    }
}

typedef void (*ku_fn)(const uint8_t *ub, const uint8_t *w, const uint8_t *wd, int64_t s, const sprig_mm_kblock *as,
                      float (*am)[16], const uint8_t *pf, int l0, int l1);

/* One panel p, every row (KU_ROWS at a time), weight type kt. */
AI void ktile_u(const sprig_mm_job *J, int64_t p, const int kt, const ku_fn *rows)
{
    const size_t rec = kt == KT_Q6 ? SPRIG_MM_Q6K_REC : kt == KT_Q4 ? SPRIG_MM_Q4K_REC : SPRIG_MM_Q5K_REC;
    const int nd = kt == KT_Q6 ? 1 : 2;
    const int64_t ns = J->n_in / SPRIG_MM_QK_K, n = J->n;
    const uint8_t *base = J->packed + (size_t)p * J->pstride;
    const uint8_t *wd = base + (size_t)ns * rec;
    const bool far = J->pf_far;
    const size_t kd = far ? K_PF_DIST_FAR : K_PF_DIST;
    uint8_t ub[64 * 64] __attribute__((aligned(32)));
    float am[KU_ROWS][16] __attribute__((aligned(32)));
    for (int64_t rb0 = 0; rb0 < n; rb0 += KU_ROWS) {
        const int RB = (int)(n - rb0 < KU_ROWS ? n - rb0 : KU_ROWS), chunks = (RB + KU_R - 1) / KU_R;
        memset(am, 0, sizeof(float) * 16 * (size_t)RB);
        for (int64_t s = 0; s < ns; s++) {
            const uint8_t *w = base + (size_t)s * rec;
            /* one pass over the weights (the first row block): the record
             * stream kd ahead, near at once, far spread over the chunks'
             * sub-block steps (measured on Zen 4, in-process A/B over 12
             * DRAM-resident 2048 x 8192 copies, 2 threads, against at once:
             * Q6_K 5 / 8 / 16 rows 0.94x / 0.97-0.98x / 0.96x the time,
             * Q5_K 8 / 16 rows 0.94-0.97x / 0.95x, Q4_K 16 rows 0.99-1.00x) */
            const bool spread = far && rb0 == 0;
            if (rb0 == 0) {
                if (!spread)
                    for (size_t l = 0; l < rec; l += 64) PF(w + kd + l, far, K_PF_HINT);
                PF(wd + (s + (int64_t)(kd / rec)) * nd * 32, far, K_PF_HINT);
            }
            k_unpack(w, kt, ub);
            const sprig_mm_kblock *as = J->ak + s * n + rb0;
            const int nl = (int)(rec / 64);
            for (int c = 0; c < chunks; c++) {
                const int c0 = RB * c / chunks, R = RB * (c + 1) / chunks - c0;
                rows[R](ub, w, wd, s, as + c0, am + c0, spread ? w + kd : NULL, nl * c / chunks, nl * (c + 1) / chunks);
            }
        }
        for (int r = 0; r < RB; r++) {
            float *yr = J->y + (size_t)(rb0 + r) * J->n_out;
            store8(yr, p * SPRIG_MM_PANEL, J->n_out, _mm256_load_ps(&am[r][0]));
            store8(yr, p * SPRIG_MM_PANEL + 8, J->n_out, _mm256_load_ps(&am[r][8]));
        }
    }
}

/* ---------------------------------------------------------------- float tile */

AI __m256 loadw(int type, const uint8_t *p)
{
    if (type == SPRIG_TYPE_F32) return _mm256_loadu_ps((const float *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (type == SPRIG_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

AI void ftile(const sprig_mm_job *J, int64_t p, int r0, const int R, const int G, const int type)
{
    const int64_t K = J->n_in;
    const size_t ps = J->pstride, kb = type == SPRIG_TYPE_F32 ? 64 : 32, hb = kb / 2;
    const uint8_t *base = J->packed + (size_t)p * ps;
    const float *x = J->x + (size_t)r0 * K;

    __m256 acc[RMAX][GMAX][2];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int g = 0; g < G; g++)
        acc[r][g][0] = acc[r][g][1] = _mm256_setzero_ps();

    for (int64_t k = 0; k < K; k++) {
        __m256 w[GMAX][2];
        UNROLL for (int g = 0; g < G; g++) UNROLL for (int h = 0; h < 2; h++)
            w[g][h] = loadw(type, base + g * ps + k * kb + h * hb);
        /* one broadcast live at a time: 2*R*G sums + 2*G weights + 1 */
        UNROLL for (int r = 0; r < R; r++) {
            const __m256 xv = _mm256_broadcast_ss(x + r * K + k);
            UNROLL for (int g = 0; g < G; g++) UNROLL for (int h = 0; h < 2; h++)
                acc[r][g][h] = _mm256_fmadd_ps(w[g][h], xv, acc[r][g][h]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *yr = J->y + (size_t)(r0 + r) * J->n_out;
        UNROLL for (int g = 0; g < G; g++) {
            store8(yr, (p + g) * SPRIG_MM_PANEL, J->n_out, acc[r][g][0]);
            store8(yr, (p + g) * SPRIG_MM_PANEL + 8, J->n_out, acc[r][g][1]);
        }
    }
}

/* ---------------------------------------------------------------- instantiation and drivers */

typedef void (*tile_fn)(const sprig_mm_job *J, int64_t p, int r0);

/* one row: one panel (NAME_r1) or Q1_G panels (NAME_r1_g) */
#define QT(NAME, Q4) \
    static void NAME##_r1(const sprig_mm_job *J, int64_t p, int r0) { (void)r0; qtile(J, p, 1, Q4); } \
    static void NAME##_r1_g(const sprig_mm_job *J, int64_t p, int r0) { (void)r0; qtile(J, p, Q1_G, Q4); }
#define FT(NAME, R, G, TY) \
    static void NAME##_r##R##_g##G(const sprig_mm_job *J, int64_t p, int r0) { ftile(J, p, r0, R, G, TY); }

QT(q8, false)
QT(q4, true)
/* Ranged tiles: blocks [b0, b1) of one panel, both halves. */
typedef void (*rtile_fn)(const sprig_mm_job *J, int64_t p, int r0, int64_t b0, int64_t b1, int pq, int pp, int64_t pdist);
#define QH(NAME, R, Q4) \
    static void NAME##_h##R(const sprig_mm_job *J, int64_t p, int r0, int64_t b0, int64_t b1, int pq, int pp, int64_t pdist) \
    { qhalf(J, p, 0, r0, R, Q4, b0, b1, 2 * pq, pp, pdist); qhalf(J, p, 1, r0, R, Q4, b0, b1, 2 * pq + 1, pp, pdist); }
QH(q8, 2, false) QH(q8, 3, false) QH(q8, 4, false) QH(q8, 5, false) QH(q8, 6, false)
QH(q4, 2, true) QH(q4, 3, true) QH(q4, 4, true) QH(q4, 5, true) QH(q4, 6, true)
static const rtile_fn q8_tab[QHMAX + 1] = { NULL, NULL, q8_h2, q8_h3, q8_h4, q8_h5, q8_h6 };
static const rtile_fn q4_tab[QHMAX + 1] = { NULL, NULL, q4_h2, q4_h3, q4_h4, q4_h5, q4_h6 };

/* Panels per float tile for R rows: 2*R*G accumulators + R broadcasts + 1 weight <= 16. */
static const int f_g[RMAX + 1] = { 0, 4, 2, 1, 1, 1, 1 };

#define FSET(NAME, TY) \
    FT(NAME, 1, 4, TY) FT(NAME, 2, 2, TY) FT(NAME, 1, 1, TY) FT(NAME, 2, 1, TY) FT(NAME, 3, 1, TY) \
    FT(NAME, 4, 1, TY) FT(NAME, 5, 1, TY) FT(NAME, 6, 1, TY) \
    static const tile_fn NAME##_big[RMAX + 1] = { NULL, NAME##_r1_g4, NAME##_r2_g2, NAME##_r3_g1, NAME##_r4_g1, \
                                                  NAME##_r5_g1, NAME##_r6_g1 }; \
    static const tile_fn NAME##_one[RMAX + 1] = { NULL, NAME##_r1_g1, NAME##_r2_g1, NAME##_r3_g1, NAME##_r4_g1, \
                                                  NAME##_r5_g1, NAME##_r6_g1 };

FSET(f32, SPRIG_TYPE_F32)
FSET(f16, SPRIG_TYPE_F16)
FSET(bf16, SPRIG_TYPE_BF16)

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

static void drive(const sprig_mm_job *J, const tile_fn *big, const tile_fn *one, const int *gtab, int rmax)
{
    const int n = J->n, chunks = (n + rmax - 1) / rmax, gstep = gstep_of(gtab, rmax, n);
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


#define KT(NAME, R, KT_) \
    static void NAME##_r##R(const sprig_mm_job *J, int64_t p, int r0) { ktile(J, p, r0, R, KT_); }
#define KSET(NAME, KT_) \
    KT(NAME, 1, KT_) KT(NAME, 2, KT_) KT(NAME, 3, KT_) KT(NAME, 4, KT_) KT(NAME, 5, KT_) KT(NAME, 6, KT_) \
    static const tile_fn NAME##_tab[7] = { NULL, NAME##_r1, NAME##_r2, NAME##_r3, NAME##_r4, NAME##_r5, NAME##_r6 };
KSET(q2k, KT_Q2)
KSET(q3k, KT_Q3)
KSET(q4k, KT_Q4)
KSET(q5k, KT_Q5)
KSET(q6k, KT_Q6)
#define KU(NAME, R, KT_) \
    static void NAME##_u##R(const uint8_t *ub, const uint8_t *w, const uint8_t *wd, int64_t s, \
                            const sprig_mm_kblock *as, float (*am)[16], const uint8_t *pf, int l0, int l1) \
    { ku_rows(ub, w, wd, s, as, R, KT_, am, pf, l0, l1); }
#define KUSET(NAME, KT_) \
    KU(NAME, 1, KT_) KU(NAME, 2, KT_) KU(NAME, 3, KT_) KU(NAME, 4, KT_) KU(NAME, 5, KT_) KU(NAME, 6, KT_) \
    static const ku_fn NAME##_utab[KRMAX + 1] = { NULL, NAME##_u1, NAME##_u2, NAME##_u3, NAME##_u4, NAME##_u5, NAME##_u6 }; \
    static void NAME##_unp(const sprig_mm_job *J, int64_t p, int r0) { (void)r0; ktile_u(J, p, KT_, NAME##_utab); }
KUSET(q4k, KT_Q4)
KUSET(q5k, KT_Q5)
KUSET(q6k, KT_Q6)
/* One-panel tiles of up to KRMAX rows (K-quant weights). Measured (Zen 5,
 * AVX2 forced, 4096 x 2048, one thread): chunks of up to 4 rows beat 2 or 3
 * by 0-10% from 8 rows up for Q2_K..Q5_K; cutting k into ranges with the
 * partial sums in y (so a range's weights stay in L1 for every chunk) lost
 * 15-40%: the activations of a panel's chunks are the bigger stream. */
static const int k_g[7] = { 0, 1, 1, 1, 1, 1, 1 };

static int tile_panels(int type, int n)
{
    if (n < 1 || type == SPRIG_TYPE_Q8_0 || type == SPRIG_TYPE_Q4_0 || (type >= SPRIG_MM_Q2_K && type <= SPRIG_MM_Q6_K))
        return 1;
    return gstep_of(f_g, FRUN, n);
}

/* Q8_0/Q4_0: one row on Q1_G whole panels at a time (the rest one by one;
 * a panel's bits do not depend on its neighbours); more rows in chunks of
 * up to QRUN, k walked in ranges of Q_RANGE bytes of panel, every chunk and
 * half over a range while its weights are in L1 (partial sums wait in y). */
static void drive_q(const sprig_mm_job *J, tile_fn one, tile_fn one_g, const rtile_fn *tab, int64_t qsb)
{
    const int n = J->n, chunks = (n + QRUN - 1) / QRUN;
    const int64_t range = J->pf_far ? Q_RANGE_FAR : Q_RANGE;
    const int64_t nb = J->n_in / SPRIG_QK, kb = range / qsb > 0 ? range / qsb : 1;
    if (n == 1) {
        int64_t p = J->p0;
        for (; p + Q1_G <= J->p1; p += Q1_G) one_g(J, p, 0);
        for (; p < J->p1; p++) one(J, p, 0);
        return;
    }
    for (int64_t p = J->p0; p < J->p1; p++) {
        for (int64_t b0 = 0; b0 < nb; b0 += kb) {
            int64_t b1 = b0 + kb < nb ? b0 + kb : nb;
            for (int c = 0; c < chunks; c++) {
                int r0 = (int)((int64_t)n * c / chunks), R = (int)((int64_t)n * (c + 1) / chunks) - r0;
                /* R >= 2: n / chunks > QRUN / 2 once chunks >= 2 */
                tab[R](J, p, r0, b0, b1, c, Q_PF ? 2 * chunks : 0, kb);
            }
        }
    }
}
static void k_q8(const sprig_mm_job *J) { drive_q(J, q8_r1, q8_r1_g, q8_tab, 512); }
static void k_q4(const sprig_mm_job *J) { drive_q(J, q4_r1, q4_r1_g, q4_tab, 256); }
static void k_q2k(const sprig_mm_job *J) { drive(J, q2k_tab, q2k_tab, k_g, KRUN); }
static void k_q3k(const sprig_mm_job *J) { drive(J, q3k_tab, q3k_tab, k_g, KRUN); }
/* Q4_K/Q5_K/Q6_K: from ku_min[scheme][kt] rows every panel's units unpacked once (ktile_u). */
static void drive_k(const sprig_mm_job *J, const tile_fn *tab, tile_fn unp, int kt)
{
    if (J->n >= ku_min[J->pf_far ? SPRIG_PF_FAR : SPRIG_PF_NEAR][kt][J->pstride > KU_L1]) {
        for (int64_t p = J->p0; p < J->p1; p++) unp(J, p, 0);
        return;
    }
    drive(J, tab, tab, k_g, KRUN);
}
static void k_q4k(const sprig_mm_job *J) { drive_k(J, q4k_tab, q4k_unp, KT_Q4); }
static void k_q5k(const sprig_mm_job *J) { drive_k(J, q5k_tab, q5k_unp, KT_Q5); }
static void k_q6k(const sprig_mm_job *J) { drive_k(J, q6k_tab, q6k_unp, KT_Q6); }
static void k_f32(const sprig_mm_job *J) { drive(J, f32_big, f32_one, f_g, FRUN); }
static void k_f16(const sprig_mm_job *J) { drive(J, f16_big, f16_one, f_g, FRUN); }
static void k_bf16(const sprig_mm_job *J) { drive(J, bf16_big, bf16_one, f_g, FRUN); }

/* ---------------------------------------------------------------- activation quantizer */

/* The largest of 8 uint32 lanes (the |x| bit patterns: the amax rule). */
AI uint32_t hmax_epu32(__m256i m)
{
    __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0x4e));
    m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0xb1));
    return (uint32_t)_mm_cvtsi128_si32(m4);
}

/* The sum of 8 int32 lanes. */
AI int32_t hsum_epi32(__m256i v)
{
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    return _mm_cvtsi128_si32(s4);
}

static void quant_row(const float *x, int64_t nb, int64_t stride, sprig_mm_qblock *out)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * SPRIG_QK;
        sprig_mm_qblock *rec = &out[b * stride];
        int8_t *qb = rec->q;
        __m256 xv[4];
        __m256i m = _mm256_setzero_si256();
        for (int i = 0; i < 4; i++) {
            xv[i] = _mm256_loadu_ps(xb + 8 * i);
            m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(xv[i]), absm));
        }
        uint32_t amax = hmax_epu32(m);
        float fa, da;
        memcpy(&fa, &amax, 4);
        da = fa / 127.0f;
        if (amax >= 0x7f800000u || !(da >= FLT_MIN)) {
            memset(rec, 0, sizeof *rec);
            rec->d = amax >= 0x7f800000u ? NAN : 0.0f;
            continue;
        }
        __m256 id = _mm256_set1_ps(127.0f / fa);
        da = _cvtsh_ss(_cvtss_sh(da, _MM_FROUND_TO_NEAREST_INT));   /* the F16 scale (rule in matmul.c) */
        __m256i qi[4], sum = _mm256_setzero_si256();
        for (int i = 0; i < 4; i++) {
            __m256 v = _mm256_round_ps(_mm256_mul_ps(xv[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            qi[i] = _mm256_cvttps_epi32(v);
            sum = _mm256_add_epi32(sum, qi[i]);
        }
        __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
        _mm256_storeu_si256((__m256i *)qb, _mm256_permutevar8x32_epi32(p8, perm));
        int32_t s = hsum_epi32(sum);
        rec->d = da;
        rec->c8 = -128 * s;
        rec->c4 = -8 * s;
        rec->pad = 0;
    }
}

/* The 256-element form (the same rule over 256 floats, matmul.c): q, d and
 * the sums of q per 16 (bsum) and per 32 (bsum32); pad = 0. */
static void kquant_row(const float *x, int64_t ns, int64_t stride, sprig_mm_kblock *out)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t sb = 0; sb < ns; sb++) {
        const float *xb = x + sb * SPRIG_MM_QK_K;
        sprig_mm_kblock *rec = &out[sb * stride];
        __m256i m = _mm256_setzero_si256();
        for (int i = 0; i < 32; i++)
            m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(xb + 8 * i)), absm));
        uint32_t amax = hmax_epu32(m);
        float fa, da;
        memcpy(&fa, &amax, 4);
        da = fa / 127.0f;
        memset(rec, 0, sizeof *rec);
        if (amax >= 0x7f800000u || !(da >= FLT_MIN)) {
            rec->d = amax >= 0x7f800000u ? NAN : 0.0f;
            continue;
        }
        const float idf = 127.0f / fa;   /* the 256-element rule (matmul.c): d = 1 / (127/amax) */
        da = 1.0f / idf;
        const __m256 id = _mm256_set1_ps(idf);
        for (int k = 0; k < 8; k++) {   /* 32 elements: q, then bsum[2k], bsum[2k+1] */
            __m256i qi[4];
            for (int i = 0; i < 4; i++) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xb + 32 * k + 8 * i), id);
                qi[i] = _mm256_cvttps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            }
            __m256i p8 = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3])), perm);
            _mm256_storeu_si256((__m256i *)(rec->q + 32 * k), p8);
            /* lanes: sums of 4 consecutive q; two hadds leave the sum of
             * lanes 0-3 (elements 0-15) in lane 0 and of 4-7 in lane 4 */
            __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, p8), ones16);
            s = _mm256_hadd_epi32(s, s);
            s = _mm256_hadd_epi32(s, s);
            int lo = _mm256_cvtsi256_si32(s), hi = _mm256_extract_epi32(s, 4);
            rec->bsum[2 * k] = (int16_t)lo;
            rec->bsum[2 * k + 1] = (int16_t)hi;
            rec->bsum32[k] = (int16_t)(lo + hi);
        }
        rec->d = da;
    }
}

/* ---------------------------------------------------------------- peak loop */

/* 10 named chains (they stay in registers). int8: vpmaddubsw (32 multiply-
 * adds) of each chain's own bytes, so no two steps share operands (a step
 * add(v, maddubs(w, x)) had one vpmaddubsw per iteration after CSE and
 * measured the adds: 1.55x the real rate on Zen 5); fp32: FMA. */
#define PEAK_BODY(T, STEP)                                                                  \
    T a0 = a, a1 = a, a2 = a, a3 = a, a4 = a, a5 = a, a6 = a, a7 = a, a8 = a, a9 = a;       \
    for (uint64_t i = 0; i < iters; i++) {                                                  \
        a0 = STEP(a0); a1 = STEP(a1); a2 = STEP(a2); a3 = STEP(a3); a4 = STEP(a4);          \
        a5 = STEP(a5); a6 = STEP(a6); a7 = STEP(a7); a8 = STEP(a8); a9 = STEP(a9);          \
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5),   \
                         "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(w));                  \
    }                                                                                       \
    __asm__ volatile("" : : "x"(a0), "x"(a1), "x"(a2), "x"(a3), "x"(a4), "x"(a5), "x"(a6),  \
                     "x"(a7), "x"(a8), "x"(a9));

static double peak(bool int8, uint64_t iters)
{
    if (int8) {
        __m256i a = _mm256_set1_epi8(1), w = _mm256_setzero_si256();
        const __m256i x = _mm256_set1_epi8(1);
#define STEP_I8(v) _mm256_maddubs_epi16(v, x)
        PEAK_BODY(__m256i, STEP_I8)
#undef STEP_I8
        return (double)iters * 10 * 32 * 2;
    }
    __m256 a = _mm256_set1_ps(1.0f), w = _mm256_set1_ps(1.0000001f);
    const __m256 x = _mm256_set1_ps(1e-7f);
#define STEP_F(v) _mm256_fmadd_ps(v, w, x)
    PEAK_BODY(__m256, STEP_F)
#undef STEP_F
    return (double)iters * 10 * 8 * 2;
}

const struct sprig_mm_family sprig_mm_family_avx2 = {
    .name = "avx2", .q8_xor = false,
    .f32 = k_f32, .f16 = k_f16, .bf16 = k_bf16, .q8_0 = k_q8, .q4_0 = k_q4,
    .q2_k = k_q2k, .q3_k = k_q3k, .q4_k = k_q4k, .q5_k = k_q5k, .q6_k = k_q6k,
    .quant = quant_row,
    .quant_k = kquant_row,
    .peak = peak,
    .tile_panels = tile_panels,
    .rows = &sprig_mm_rows_avx2,   /* matmul-rows-avx2.c */
};
