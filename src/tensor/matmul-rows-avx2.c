/*
 * tensor/matmul-rows-avx2 — matmul kernels that read a weight in its GGUF
 * row layout, straight from the mapped file (no packed copy).
 *
 * Why: a mixture-of-experts file is mostly experts (Qwen3-30B-A3B: 128 per
 * layer, 8 read per token). Packing them would copy the whole file into
 * anonymous memory at load; read in place, a run's resident set is the
 * experts it touched, and a file larger than memory pages in what routing
 * asks for. The packed kernels stay for everything else: they batch 16
 * columns per vector without horizontal sums.
 *
 * Numerics: exactly the contract of matmul.h (the reference's sums): the
 * integer sums of a block are exact in any order, so each output row's
 * int32 block sums are formed per row (vpmaddubsw units x activations into
 * int16 pairs, vpmaddwd with the sub-block scales into int32 lanes) and
 * eight rows' lane vectors are reduced together by a hadd tree into one
 * vector of eight sums; the float steps then run eight outputs per vector
 * in the reference's order: acc = fma(cvt(isum), dw * da, acc) block by
 * block (K-quants: then fma(cvt(-M), dmin * da, acc)). Bounds: Q4_K units
 * <= 15, Q5_K <= 31, Q6_K <= 63, Q8_0 |w| <= 128 (vpsignb moves the sign to
 * the activation): a vpmaddubsw pair is at most 2 * 63 * 128 = 16128, never
 * saturating.
 *
 * Shape: the driver's job names panels [p0, p1) of 16 output rows; here
 * J->packed is the first raw row and J->pstride the bytes per row. Eight
 * output rows at a time against up to four activation rows at once: a
 * block's units and scales are decoded once for all of them (the tokens a
 * verify routes to one expert share its decode, as the packed kernels'
 * panels share theirs); rows past n_out repeat the last row and are not
 * stored. Compiled with AVX2 flags; the AVX-512
 * family uses these too (a family may borrow another's kernel).
 */
#include "tensor/matmul-rows.h"   /* the shared pieces */


/* Control bytes for vpshufb that spread scale byte b into every int16 lane
 * (low byte; the high byte zeroed), one table row per b. */
#define SPREAD(b) { b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, \
                    b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80 }
static const uint8_t spread_u8[8][32] __attribute__((aligned(32))) = {
    SPREAD(0), SPREAD(1), SPREAD(2), SPREAD(3), SPREAD(4), SPREAD(5), SPREAD(6), SPREAD(7),
};
#undef SPREAD
/* Q6_K: signed scale byte j into the high byte of the int16 lanes of the low
 * 128-bit lane and byte j + 1 into those of the high lane (then >> 8 with
 * sign), for j = 0, 2, .., 14. */
#define PAIR(j) { 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, 0x80, j, \
                  0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1, 0x80, j + 1 }
static const uint8_t pair_s8[8][32] __attribute__((aligned(32))) = {
    PAIR(0), PAIR(2), PAIR(4), PAIR(6), PAIR(8), PAIR(10), PAIR(12), PAIR(14),
};
#undef PAIR

/* Q4_K / Q5_K super-block against R activation rows (the units and scales
 * decoded once for all of them): v[r] lanes summing to row r's I, mv[r]
 * lanes summing to its M. */
/* The activation record as the dot pieces take it (here: as it is). */
struct kact { const sprig_mm_kblock *a; };
AI void k_prep(const sprig_mm_kblock *a, kact *P) { P->a = a; }

AI void k45_dots(const uint8_t *blk, const kact *P, const int R, const bool q5, __m256i *v, __m128i *mv)
{
    const size_t qs_off = q5 ? offsetof(sprig_kblk_q5_k, qs) : offsetof(sprig_kblk_q4_k, qs);
    const __m128i sm = k45_scales(blk + (q5 ? offsetof(sprig_kblk_q5_k, scales) : offsetof(sprig_kblk_q4_k, scales)));
    /* M = sum_j m_j * bsum32_j: eight int16 products summed in pairs */
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    UNROLL for (int r = 0; r < R; r++) {
        mv[r] = _mm_madd_epi16(m16, _mm_loadu_si128((const __m128i *)P[r].a->bsum32));
        v[r] = _mm256_setzero_si256();
    }
    const __m256i scb = _mm256_broadcastsi128_si256(sm);
    const __m256i lo4 = _mm256_set1_epi8(15);
    __m256i hb = _mm256_setzero_si256();
    if (q5) hb = _mm256_loadu_si256((const __m256i *)(blk + offsetof(sprig_kblk_q5_k, qh)));
    UNROLL for (int g = 0; g < 4; g++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + qs_off + 32 * g));
        __m256i ul = _mm256_and_si256(q, lo4), uh = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4);
        if (q5) {
            const __m256i one = _mm256_set1_epi8(1);
            ul = _mm256_or_si256(ul, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * g), one), 4));
            uh = _mm256_or_si256(uh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * g + 1), one), 4));
        }
        const __m256i sl = _mm256_shuffle_epi8(scb, _mm256_load_si256((const __m256i *)spread_u8[2 * g]));
        const __m256i sh = _mm256_shuffle_epi8(scb, _mm256_load_si256((const __m256i *)spread_u8[2 * g + 1]));
        UNROLL for (int r = 0; r < R; r++) {
            const __m256i al = _mm256_load_si256((const __m256i *)(P[r].a->q + 64 * g));
            const __m256i ah = _mm256_load_si256((const __m256i *)(P[r].a->q + 64 * g + 32));
            const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(ul, al), sl);
            const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(uh, ah), sh);
            v[r] = _mm256_add_epi32(v[r], _mm256_add_epi32(pl, ph));
        }
    }
}

/* Q6_K super-block against R activation rows: v[r] lanes summing to
 * I = sum_j sc_j * (sum u*a - 32 * bsum_j) */
AI void q6k_dots(const uint8_t *blk, const kact *P, const int R, __m256i *v)
{
    const uint8_t *ql = blk + offsetof(sprig_kblk_q6_k, ql), *qh = blk + offsetof(sprig_kblk_q6_k, qh);
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)(blk + offsetof(sprig_kblk_q6_k, scales)));
    const __m256i lo4 = _mm256_set1_epi8(15), lo2 = _mm256_set1_epi8(3);
    const __m256i scb = _mm256_broadcastsi128_si256(sc8);
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    /* the offset: 32 * sum_j sc_j * bsum_j, subtracted */
    UNROLL for (int r = 0; r < R; r++)
        v[r] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                _mm256_slli_epi32(_mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)P[r].a->bsum)), 5));
    UNROLL for (int h = 0; h < 2; h++) {
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 64 * h + 32));
        const __m256i hh = _mm256_loadu_si256((const __m256i *)(qh + 32 * h));
        const __m256i u[4] = {
            _mm256_or_si256(_mm256_and_si256(l0, lo4), _mm256_slli_epi16(_mm256_and_si256(hh, lo2), 4)),
            _mm256_or_si256(_mm256_and_si256(l1, lo4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 2), lo2), 4)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), lo4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 4), lo2), 4)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), lo4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 6), lo2), 4)),
        };
        UNROLL for (int t = 0; t < 4; t++) {   /* elements 128h + 32t .. +31: sub-blocks 8h + 2t (low lane), 8h + 2t + 1 (high) */
            const __m256i sc = _mm256_srai_epi16(_mm256_shuffle_epi8(scb, _mm256_load_si256((const __m256i *)pair_s8[4 * h + t])), 8);
            UNROLL for (int r = 0; r < R; r++) {
                const __m256i av = _mm256_load_si256((const __m256i *)(P[r].a->q + 128 * h + 32 * t));
                v[r] = _mm256_add_epi32(v[r], _mm256_madd_epi16(_mm256_maddubs_epi16(u[t], av), sc));
            }
        }
    }
}

#include "tensor/matmul-rows.h"   /* the driver */

SPRIG_MM_ROWS_DEFINE(sprig_mm_rows_avx2)
