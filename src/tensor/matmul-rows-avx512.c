/*
 * tensor/matmul-rows-avx512 — the raw-row kernels (matmul-rows-avx2.c says
 * why weights are read in place) with 512-bit vectors, for the AVX-512
 * family: the K-quant units of 64 elements per instruction.
 *
 * Q4_K / Q5_K: one 64-byte load holds the nibbles of 128 elements; the low
 * and high nibbles are split and their 256-bit halves regrouped
 * (vshufi64x2) so each vector is 64 consecutive elements, matching a plain
 * 64-byte load of the activations. vpmaddubsw makes int16 pair sums (<=
 * 2 * 31 * 128), vpdpwssd multiplies them by the sub-block scale (int16
 * lanes spread by vpermw) and accumulates int32. Q6_K the same on 64
 * elements of units built with vpternlogd. Each row's 16 lanes are folded
 * to 8 and the shared driver (matmul-rows.h) reduces eight rows at once and
 * runs the float steps; the integer sums are exact, so the bits equal the
 * reference's and the AVX2 kernels'. Q8_0 keeps the AVX2 piece.
 *
 * Measured (Zen 5, 1 thread, in-process, 2048 x 768 Q4_K from DRAM, n = 1):
 * see the closing figures in the model README; the AVX2 pieces ran ~1.6x
 * the packed kernel's time.
 */
#include "tensor/matmul-rows.h"   /* the shared pieces */


/* int16 index vectors for vpermw: sub-block scale j of a 16-entry int16
 * vector spread over the 16 int16 lanes (32 elements, vpmaddubsw pairs) it
 * covers. Q4_K/Q5_K (kact's order): chunk pair c's low nibbles take scales
 * 4c, 4c + 2, its high nibbles 4c + 1, 4c + 3.
 * Q6_K: 8 lanes (16 elements) per scale, four scales 4q .. 4q + 3. */
#define I16(a, b) { a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b }
static const uint16_t k45_idx[4][32] __attribute__((aligned(64))) = { I16(0, 2), I16(1, 3), I16(4, 6), I16(5, 7) };
#undef I16
#define I8(a) { a, a, a, a, a, a, a, a, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, a + 1, \
                a + 2, a + 2, a + 2, a + 2, a + 2, a + 2, a + 2, a + 2, a + 3, a + 3, a + 3, a + 3, a + 3, a + 3, a + 3, a + 3 }
static const uint16_t q6_idx[4][32] __attribute__((aligned(64))) = { I8(0), I8(4), I8(8), I8(12) };
#undef I8

/* 16 int32 lanes folded to 8 (exact) */
AI __m256i fold(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

/* The activation record as the nibble order wants it, built once per block
 * and activation row for all eight weight rows: for c = 0, 1, v[c][0] =
 * elements 128c + 0..31 and 128c + 64..95 (the low nibbles of one 64-byte
 * load of qs), v[c][1] = 128c + 32..63 and 128c + 96..127 (the high ones). */
struct kact { __m512i v[2][2]; const sprig_mm_kblock *a; };

AI void k_prep(const sprig_mm_kblock *a, kact *P)
{
    P->a = a;
    for (int c = 0; c < 2; c++)
        for (int h = 0; h < 2; h++)
            P->v[c][h] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_load_si256((const __m256i *)(a->q + 128 * c + 32 * h))),
                                            _mm256_load_si256((const __m256i *)(a->q + 128 * c + 64 + 32 * h)), 1);
}

/* R activation rows against one block, its units and scales decoded once */
AI void k45_dots(const uint8_t *blk, const kact *P, const int R, const bool q5, __m256i *v, __m128i *mv)
{
    const size_t qs_off = q5 ? offsetof(sprig_kblk_q5_k, qs) : offsetof(sprig_kblk_q4_k, qs);
    const __m128i sm = k45_scales(blk + (q5 ? offsetof(sprig_kblk_q5_k, scales) : offsetof(sprig_kblk_q4_k, scales)));
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    UNROLL for (int r = 0; r < R; r++) mv[r] = _mm_madd_epi16(m16, _mm_loadu_si128((const __m128i *)P[r].a->bsum32));
    const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));   /* int16 sc0..7 (m0..7 unused) */
    const __m512i lo4 = _mm512_set1_epi8(15);
    __m512i hb = _mm512_setzero_si512();
    if (q5) hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk + offsetof(sprig_kblk_q5_k, qh))));
    __m512i acc[4];
    UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_si512();
    UNROLL for (int c = 0; c < 2; c++) {   /* chunks 2c (low 256 bits), 2c + 1 (high) */
        const __m512i q = _mm512_loadu_si512((const void *)(blk + qs_off + 64 * c));
        __m512i lo = _mm512_and_si512(q, lo4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), lo4);
        if (q5) {   /* qh bit 2g of byte l is element 64g + l's fifth bit, bit 2g+1 element 64g + 32 + l's */
            const __m512i one = _mm512_set1_epi8(1);
            const __m512i sl = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * c)), _mm256_set1_epi16((short)(4 * c + 2)), 1);
            const __m512i sh = _mm512_add_epi16(sl, _mm512_set1_epi16(1));
            lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sl), one), 4));
            hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, sh), one), 4));
        }
        /* int16 lanes 0-15 / 16-31: sub-blocks 4c, 4c+2 (lo) and 4c+1, 4c+3 (hi) */
        const __m512i sl = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)k45_idx[2 * c]), sc16);
        const __m512i sh = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)k45_idx[2 * c + 1]), sc16);
        UNROLL for (int r = 0; r < R; r++) {
            acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(lo, P[r].v[c][0]), sl);
            acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(hi, P[r].v[c][1]), sh);
        }
    }
    UNROLL for (int r = 0; r < R; r++) v[r] = fold(acc[r]);
}

AI void q6k_dots(const uint8_t *blk, const kact *P, const int R, __m256i *v)
{
    const uint8_t *ql = blk + offsetof(sprig_kblk_q6_k, ql), *qh = blk + offsetof(sprig_kblk_q6_k, qh);
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)(blk + offsetof(sprig_kblk_q6_k, scales)));
    const __m256i sc16y = _mm256_cvtepi8_epi16(sc8);
    const __m512i sc16 = _mm512_castsi256_si512(sc16y);
    const __m512i lo4 = _mm512_set1_epi8(15), hi2 = _mm512_set1_epi8(0x30);
    /* the offset: 32 * sum_j sc_j * bsum_j, subtracted */
    __m512i acc[4];
    UNROLL for (int r = 0; r < R; r++)
        acc[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(
                     _mm256_madd_epi16(sc16y, _mm256_loadu_si256((const __m256i *)P[r].a->bsum)), 5))), _mm256_setzero_si256(), 1);
    /* the qh shifts: low 256 bits by 0 / 4, high by 2 / 6 (then << 4 folded into the 0x30 mask) */
    const __m512i s_a = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    const __m512i s_b = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    UNROLL for (int h = 0; h < 2; h++) {
        const __m512i L = _mm512_loadu_si512((const void *)(ql + 64 * h));   /* l0 | l1 */
        const __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qh + 32 * h)));
        /* A: (L & 15) | ((H >> s) & 3) << 4 = elements 128h + 0..63; B: the high nibbles, 128h + 64..127 */
        const __m512i ha = _mm512_slli_epi16(_mm512_srlv_epi16(H, s_a), 4);
        const __m512i hb = _mm512_slli_epi16(_mm512_srlv_epi16(H, s_b), 4);
        const __m512i A = _mm512_ternarylogic_epi32(L, lo4, _mm512_and_si512(ha, hi2), 0xEA);   /* (L & lo4) | x */
        const __m512i B = _mm512_ternarylogic_epi32(_mm512_srli_epi16(L, 4), lo4, _mm512_and_si512(hb, hi2), 0xEA);
        const __m512i sa = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)q6_idx[2 * h]), sc16);
        const __m512i sb = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)q6_idx[2 * h + 1]), sc16);
        UNROLL for (int r = 0; r < R; r++) {
            const sprig_mm_kblock *a = P[r].a;
            acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(A, _mm512_load_si512((const void *)(a->q + 128 * h))), sa);
            acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(B, _mm512_load_si512((const void *)(a->q + 128 * h + 64))), sb);
        }
    }
    UNROLL for (int r = 0; r < R; r++) v[r] = fold(acc[r]);
}

#include "tensor/matmul-rows.h"   /* the driver */

SPRIG_MM_ROWS_DEFINE(sprig_mm_rows_avx512)
