/*
 * tensor/matmul-rows — the driver the raw-row kernel files share
 * (matmul-rows-avx2.c, matmul-rows-avx512.c): eight output rows at a time
 * against up to four activation rows (each weight block decoded once for
 * them), the block sums of the eight rows reduced into one vector per
 * activation row and the float steps of matmul.h's contract run eight
 * outputs per vector. Included by a kernel file after it defines, for its
 * ISA, the dot pieces that give R activation rows' int32 lane vectors of
 * one weight row's block:
 *   kact, k_prep(const sprig_mm_kblock *a, kact *P)   the activation record
 *       as its dot pieces want it, prepared once for the eight rows
 *   void k45_dots(blk, const kact *P, int R, bool q5, __m256i *v, __m128i *mv)
 *   void q6k_dots(blk, const kact *P, int R, __m256i *v)
 *   __m256i q8_dot(blk, const sprig_mm_qblock *a)
 * (lanes summing to the block's exact int sum; mv: lanes summing to M).
 * Included twice: first for the pieces both files share (Q4_K / Q5_K scales,
 * the Q8_0 block), then, after the file's own pieces (a struct kact and the
 * K-quant dots), for the driver; SPRIG_MM_ROWS_DEFINE(name) then makes the
 * family's table. Not a public header: the static inline functions it
 * defines take the ISA of the file that includes it.
 */
#ifndef SPRIG_TENSOR_MATMUL_ROWS_H
#define SPRIG_TENSOR_MATMUL_ROWS_H

#include "tensor/matmul-kern.h"
#include "tensor/types.h"

#include <immintrin.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* The pieces both files share: Q4_K / Q5_K's scales, the Q8_0 block (AVX2). */

/* Each file's form of a K activation record for its dots (it defines struct kact and
 * k_prep, k45_dots, q6k_dots before including this header again) */
typedef struct kact kact;

/* Q4_K / Q5_K's 6-bit scales and mins (12 bytes) as bytes sc[0..7], m[0..7]
 * of one 128-bit vector (llama.cpp's block layout; k4_scale_min in matmul.c):
 * with the 32-bit words u0..u2 of the 12 bytes, the four words are
 * u0 & 0x3f.., (u2 & 0x0f..) | ((u0 >> 6) & 0x03..) << 4, u1 & 0x3f..,
 * ((u2 >> 4) & 0x0f..) | ((u1 >> 6) & 0x03..) << 4. */
AI __m128i k45_scales(const uint8_t *s)
{
    const __m128i u = _mm_loadu_si128((const __m128i *)s);   /* 12 bytes and 4 of qh/qs after them */
    const __m128i a = _mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0));   /* u0 u2 u1 u2 */
    const __m128i b = _mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0));   /* u0 u0 u1 u1 */
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                     _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i hi = _mm_and_si128(_mm_slli_epi32(_mm_srli_epi32(b, 6), 4), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm_or_si128(lo, hi);
}

/* Q8_0 block: lanes summing to sum w*a (|w| via vpsignb onto a; activation records of 48 bytes) */
AI __m256i q8_dot(const uint8_t *blk, const sprig_mm_qblock *a)
{
    const __m256i w = _mm256_loadu_si256((const __m256i *)(blk + 2));
    const __m256i av = _mm256_loadu_si256((const __m256i *)a->q);   /* records of 48 bytes */
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(av, w));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

#elif !defined(SPRIG_TENSOR_MATMUL_ROWS_DRIVER)
/* Included the second time, after the file's own pieces: the driver. */
#define SPRIG_TENSOR_MATMUL_ROWS_DRIVER

/* The sums of eight rows' lane vectors, reduced as the rows come (so few
 * vectors stay live): pairs t[p] = hadd(v[2p], v[2p+1]); then lane i of
 * hsum_fin is the sum of row i's lanes (exact int32). */
AI __m256i hsum_fin(const __m256i t[4])
{
    const __m256i u0 = _mm256_hadd_epi32(t[0], t[1]), u1 = _mm256_hadd_epi32(t[2], t[3]);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* the same for 128-bit lane vectors: lane i of the result sums row i's four lanes */
AI __m256i hsum_fin128(const __m128i t[4])
{
    return _mm256_set_m128i(_mm_hadd_epi32(t[2], t[3]), _mm_hadd_epi32(t[0], t[1]));
}

/* The 32-bit words at byte `off` of eight rows' blocks (one gather; idx:
 * the rows' byte offsets from w0), and the f16 values in their low / high
 * halves as floats. */
AI __m256i word8(const uint8_t *w0, size_t off, __m256i idx)
{
    return _mm256_i32gather_epi32((const int *)(const void *)(w0 + off), idx, 1);
}
AI __m256 f16_lo(__m256i v)
{
    const __m256i p = _mm256_packus_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), v);
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(p, _MM_SHUFFLE(3, 1, 2, 0))));
}
AI __m256 f16_hi(__m256i v)
{
    const __m256i p = _mm256_packus_epi32(_mm256_srli_epi32(v, 16), v);
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(p, _MM_SHUFFLE(3, 1, 2, 0))));
}

#ifndef ROWS_PF_BYTES
#define ROWS_PF_BYTES 8192   /* measured on Zen 5 (4096 and 16384 slower) */
#endif
enum { R_Q4K, R_Q5K, R_Q6K, R_Q8 };

/* Output rows [o0, o0 + 8) (those below n_out stored) against activation
 * rows [r0, r0 + R), R <= 4: each block of the eight weight rows is decoded
 * once for the R rows (a token batch routed to one expert shares it). The
 * float steps of each activation row run in the reference's order, so the
 * bits do not depend on R. */
AI void rows8(const sprig_mm_job *J, int64_t o0, const int kind, const int r0, const int R)
{
    const uint8_t *w[8];
    int32_t ix[8];
    for (int j = 0; j < 8; j++) {
        const int64_t o = o0 + j < J->n_out ? o0 + j : J->n_out - 1;
        w[j] = J->packed + (size_t)o * J->pstride;
        ix[j] = (int32_t)((o - o0) * (int64_t)J->pstride);   /* < 8 rows of < 2^27 bytes */
    }
    const __m256i idx = _mm256_loadu_si256((const __m256i *)ix);
    const bool kq = kind != R_Q8;
    const size_t bsz = kind == R_Q4K ? sizeof(sprig_kblk_q4_k) : kind == R_Q5K ? sizeof(sprig_kblk_q5_k)
                     : kind == R_Q6K ? sizeof(sprig_kblk_q6_k) : 34;
    const int64_t nb = kq ? J->n_in / SPRIG_MM_QK_K : J->n_in / 32;
    const int n = J->n;
    /* prefetch whole groups of eight rows at least ROWS_PF_BYTES ahead */
    const size_t g8 = 8 * J->pstride, pf = (ROWS_PF_BYTES + g8 - 1) / g8 * g8;
    __m256 acc[4];
    UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *bw[8];
        UNROLL for (int j = 0; j < 8; j++) bw[j] = w[j] + (size_t)b * bsz;
        if (r0 == 0)   /* the next eight rows' block, a group ahead (the rows are contiguous) */
            for (size_t l = 0; l < bsz; l += 64)
                UNROLL for (int j = 0; j < 8; j++) _mm_prefetch((const char *)bw[j] + pf + l, _MM_HINT_T0);
        __m256i t[4];
        if (kind == R_Q8) {
            const __m256 dw = f16_lo(word8(bw[0], 0, idx));
            UNROLL for (int r = 0; r < R; r++) {
                const sprig_mm_qblock *a = &J->aq[b * n + r0 + r];
                UNROLL for (int p = 0; p < 4; p++) t[p] = _mm256_hadd_epi32(q8_dot(bw[2 * p], a), q8_dot(bw[2 * p + 1], a));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum_fin(t)), _mm256_mul_ps(dw, _mm256_set1_ps(a->d)), acc[r]);
            }
            continue;
        }
        kact P[4];
        UNROLL for (int r = 0; r < R; r++) k_prep(&J->ak[b * n + r0 + r], &P[r]);
        __m256i v[8][4];
        if (kind == R_Q6K) {
            UNROLL for (int j = 0; j < 8; j++) q6k_dots(bw[j], P, R, v[j]);
            /* d is the block's last two bytes: the word ending there */
            const __m256 dw = f16_hi(word8(bw[0], offsetof(sprig_kblk_q6_k, d) - 2, idx));
            UNROLL for (int r = 0; r < R; r++) {
                UNROLL for (int p = 0; p < 4; p++) t[p] = _mm256_hadd_epi32(v[2 * p][r], v[2 * p + 1][r]);
                const __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(P[r].a->d));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum_fin(t)), dd, acc[r]);
            }
            continue;
        }
        __m128i m[8][4];
        UNROLL for (int j = 0; j < 8; j++) k45_dots(bw[j], P, R, kind == R_Q5K, v[j], m[j]);
        /* d and dmin lead both block types */
        const __m256i ddm = word8(bw[0], 0, idx);
        const __m256 dw = f16_lo(ddm), mw = f16_hi(ddm);
        UNROLL for (int r = 0; r < R; r++) {
            __m128i mt[4];
            UNROLL for (int p = 0; p < 4; p++) {
                t[p] = _mm256_hadd_epi32(v[2 * p][r], v[2 * p + 1][r]);
                mt[p] = _mm_hadd_epi32(m[2 * p][r], m[2 * p + 1][r]);
            }
            const __m256 da = _mm256_set1_ps(P[r].a->d);
            const __m256 dd = _mm256_mul_ps(dw, da), dm = _mm256_mul_ps(mw, da);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum_fin(t)), dd, acc[r]);
            const __m256i nm = _mm256_sub_epi32(_mm256_setzero_si256(), hsum_fin128(mt));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(nm), dm, acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float *y = J->y + (int64_t)(r0 + r) * J->n_out + o0;
        if (o0 + 8 <= J->n_out) {
            _mm256_storeu_ps(y, acc[r]);
        } else {
            float tmp[8];
            _mm256_storeu_ps(tmp, acc[r]);
            memcpy(y, tmp, sizeof(float) * (size_t)(J->n_out - o0));
        }
    }
}

/* Activation rows four at a time, then the remaining one to three in one pass */
AI void rows_drive(const sprig_mm_job *J, const int kind)
{
    const int64_t e = J->p1 * 16 < J->n_out ? J->p1 * 16 : J->n_out;
    for (int64_t o = J->p0 * 16; o < e; o += 8) {
        int r = 0;
        for (; r + 4 <= J->n; r += 4) rows8(J, o, kind, r, 4);
        switch (J->n - r) {   /* R must be a constant for the unrolled dots */
        case 3: rows8(J, o, kind, r, 3); break;
        case 2: rows8(J, o, kind, r, 2); break;
        case 1: rows8(J, o, kind, r, 1); break;
        default: break;
        }
    }
}

/* The kernels of one file, as the family's table of raw-row kernels */
#define SPRIG_MM_ROWS_DEFINE(NAME)                                        \
    static void r_q4k(const sprig_mm_job *J) { rows_drive(J, R_Q4K); }   \
    static void r_q5k(const sprig_mm_job *J) { rows_drive(J, R_Q5K); }   \
    static void r_q6k(const sprig_mm_job *J) { rows_drive(J, R_Q6K); }   \
    static void r_q8(const sprig_mm_job *J) { rows_drive(J, R_Q8); }      \
    const struct sprig_mm_rows NAME = { .q8_0 = r_q8, .q4_k = r_q4k, .q5_k = r_q5k, .q6_k = r_q6k };

#endif
