/*
 * tensor/attention-avx512 — the AVX-512 work-item kernels of sprig_attention.
 *
 * One item = up to 64 rows (query x head pairs) of one kv head. Per lane it
 * performs exactly the operations of sprig_attention_ref (attention.c), so
 * the output is bit-identical to it; only the lane assignment differs:
 *
 * scores, many rows (> 8): lanes = rows. qt[d][rows] (the item's queries
 *   transposed once) times the broadcast key element k_j[d], fmadd for
 *   d = 0..hd-1 in order: each lane is the reference's fmaf chain. Then
 *   * scale, + mask (gathered per lane), masked max; stored as P[j][rows].
 * scores, few rows (<= 8, e.g. one decoded token): lanes = keys. 16 keys are
 *   transposed in registers to kt[d][keys] and each row's broadcast q[d]
 *   meets 16 keys per fmadd — again one sequential fmaf chain per lane, with
 *   a quarter of the fmadds the row layout would spend on 4 rows. Scores go
 *   to a row-major buffer, exp runs 16 keys per vector, and the
 *   probabilities are transposed into P[j][8].
 * softmax: p = exp(s - mx) (sprig_expf_poly on 16 lanes), 0 past a row's
 *   causal limit.
 * values: lanes = d. For key j in order and each block of 4 rows:
 *   sum_r += p_rj (0 adds nothing), and o_r += p_rj * v_j unless p_rj == 0;
 *   4 rows x 64 dims of accumulators live in registers across a V tile and
 *   are stored to out between tiles (exact). Finally o_r / sum_r.
 * Keys/values are streamed once per item; f16 rows are converted with
 * vcvtph2ps (identical to sprig_f16_to_f32).
 *
 * sprig_attn_small_avx512 (heads of hd <= 16, at the end of the file) has
 * its own layout, described there. Hot loops use plain stores (score rows
 * have slack past their end): masked stores are slow on some cores (Zen 4).
 */
#include "tensor/attention.h"

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))
#define PF_KEYS 64   /* software prefetch distance of the few-rows key stream, in keys */

/* ok ? sprig_expf_poly(s - mx) : 0 on 16 lanes, for a softmax (the scheme is
 * in ops.c). Where ok, s <= mx or one of them is NaN, so x = s - mx is <= 0
 * or NaN and the clamp to 88 changes nothing (the C code keeps NaN as is);
 * lanes not ok may compute anything. The underflow test (x < -87 gives 0)
 * and ok share one final zero-masking. */
AI __m512 exp16_softmax(__m512 s, __m512 mx, __mmask16 ok)
{
    const __m512 x = _mm512_sub_ps(s, mx);
    const __mmask16 keep = _mm512_mask_cmp_ps_mask(ok, x, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ);   /* !(x < -87) */
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
    const __m512 kf = _mm512_add_ps(t, magic);
    const __m512 nf = _mm512_sub_ps(kf, magic);
    __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-0.693359375f), x);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 r2 = _mm512_mul_ps(r, r);
    __m512 y = _mm512_fmadd_ps(p, r2, r);
    y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
    __m512i eb = _mm512_sub_epi32(_mm512_castps_si512(kf), _mm512_set1_epi32(0x4B400000 - 127));
    eb = _mm512_slli_epi32(eb, 23);
    return _mm512_maskz_mul_ps(keep, y, _mm512_castsi512_ps(eb));
}

/* sprig_attn_softcap on 16 lanes: sprig_expf_poly in full (clamp at 88,
 * 0 below -87; NaN kept), then c * (1 - 2 / (e + 1)). */
AI __m512 softcap16(__m512 s, __m512 c, __m512 inv)
{
    __m512 x = _mm512_mul_ps(_mm512_set1_ps(2.0f), _mm512_mul_ps(s, inv));
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ);   /* !(x < -87) */
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), x);
    const __m512 e = exp16_softmax(x, _mm512_setzero_ps(), keep);
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_mul_ps(c, _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one))));
}

static inline __mmask16 tail_mask(int n)
{
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* Convert one f16 row of hd elements to f32. */
static inline void f16_row(float *dst, const uint16_t *src, int hd)
{
    for (int d = 0; d < hd; d += 16) {
        const __mmask16 m = tail_mask(hd - d);
        const __m256i h = _mm256_maskz_loadu_epi16(m, src + d);
        _mm512_mask_storeu_ps(dst + d, m, _mm512_cvtph_ps(h));
    }
}

/* Decode one record of any format (tensor/kvrows.h) to f32: the bits of
 * sprig_kvrows_decode_ref. Returns the row (in place for aligned f32). */
static const float *dec_row(const sprig_kvrows *r, const uint8_t *p, int hd, float *dst)
{
    int d = 0;
    switch (r->fmt) {
    case SPRIG_KVROWS_F32:
        if (((uintptr_t)p & 3) == 0) return (const float *)(const void *)p;
        memcpy(dst, p, (size_t)hd * 4);
        return dst;
    case SPRIG_KVROWS_F16:
        f16_row(dst, (const uint16_t *)(const void *)p, hd);
        return dst;
    case SPRIG_KVROWS_I8: {
        const __m512 s = _mm512_set1_ps(sprig_f16_to_f32(sprig_kvrows_u16(p + hd)));
        for (; d < hd; d += 16) {
            const __mmask16 m = tail_mask(hd - d);
            const __m512i q = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p + d));
            _mm512_mask_storeu_ps(dst + d, m, _mm512_mul_ps(_mm512_cvtepi32_ps(q), s));
        }
        return dst;
    }
    case SPRIG_KVROWS_T4: {   /* hd even */
        const __m512 s = _mm512_set1_ps(sprig_f16_to_f32(sprig_kvrows_u16(p + hd / 2 + 2)));
        const __m512 cb = _mm512_loadu_ps(r->codebook);
        const __m512i sh = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
        const __m512i m15 = _mm512_set1_epi32(15);
        for (; d < hd; d += 16) {
            const __mmask16 m = tail_mask(hd - d);
            const __m128i b = _mm_maskz_loadu_epi8((__mmask16)tail_mask((hd - d) / 2), p + d / 2);
            __m512i idx = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b));
            idx = _mm512_and_si512(_mm512_srlv_epi32(idx, sh), m15);
            _mm512_mask_storeu_ps(dst + d, m, _mm512_mul_ps(_mm512_permutexvar_ps(idx, cb), s));
        }
        return dst;
    }
    case SPRIG_KVROWS_T3: {   /* hd a multiple of 8 */
        const __m512 s = _mm512_set1_ps(sprig_f16_to_f32(sprig_kvrows_u16(p + 3 * hd / 8 + 2)));
        const __m512 cb = _mm512_castps256_ps512(_mm256_loadu_ps(r->codebook));
        const __m512i sh = _mm512_set_epi32(21, 18, 15, 12, 9, 6, 3, 0, 21, 18, 15, 12, 9, 6, 3, 0);
        const __m512i m7 = _mm512_set1_epi32(7);
        for (; d < hd; d += 16) {
            const uint8_t *g = p + 3 * (d >> 3);
            const int w0 = (int)((uint32_t)g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16);
            const int w1 = d + 8 < hd ? (int)((uint32_t)g[3] | (uint32_t)g[4] << 8 | (uint32_t)g[5] << 16) : 0;
            const __m512i w = _mm512_inserti64x4(_mm512_set1_epi32(w0), _mm256_set1_epi32(w1), 1);
            const __m512i idx = _mm512_and_si512(_mm512_srlv_epi32(w, sh), m7);
            _mm512_mask_storeu_ps(dst + d, tail_mask(hd - d), _mm512_mul_ps(_mm512_permutexvar_ps(idx, cb), s));
        }
        return dst;
    }
    default:
        for (; d < hd; d++) dst[d] = sprig_kvrows_elem(r, p, hd, d);
        return dst;
    }
}

/* Slot j of kv head g of rows r, decoded (two-segment rows included). */
static inline const float *fetch(const sprig_kvrows *r, int j, int g, int hd, float *dst)
{
    const sprig_kvrows *s = sprig_kvrows_seg(r, &j);
    return dec_row(s, sprig_kvrows_at(s, j, g), hd, dst);
}

/* Number of leading entries of row[0..lim) equal to +-0 (NaN counts as non-zero). */
static int zero_prefix(const float *row, int lim)
{
    for (int j = 0; j < lim; j += 16) {
        const __mmask16 m = tail_mask(lim - j);
        const __m512 x = _mm512_maskz_loadu_ps(m, row + j);
        const __mmask16 nz = _mm512_mask_cmp_ps_mask(m, x, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        if (nz) return j + (int)__builtin_ctz((unsigned)nz);
    }
    return lim;
}

struct item {
    const sprig_attn_args *a;
    sprig_attn_work w;
    int g, nr, rp, jmax, open;
    bool kplain;                   /* keys are contiguous f32/f16 rows (read in place) */
    bool kgather;                  /* keys are I8/T4/T3 records decoded by column gathers (qcols) */
    const float *mbase;            /* mask row of the item's first query */
    float *P;                      /* [jmax][pstride] probabilities */
    int pstride;
    _Alignas(64) int32_t lim[SPRIG_ATTN_ROWS];
    _Alignas(64) int32_t midx[SPRIG_ATTN_ROWS];
    _Alignas(64) float sum[SPRIG_ATTN_ROWS];
    _Alignas(64) float mx[SPRIG_ATTN_ROWS];
    float *orow[SPRIG_ATTN_ROWS];
};

/* ---------------------------------------------------------------- scores, many rows */

/* lanes = rows: NV row vectors against KK keys at a time; scores to P[j][rp],
 * row maxima to it->mx. */
AI void scores_rows(struct item *it, const int NV, const int KK)
{
    const sprig_attn_args *a = it->a;
    const int hd = a->hd, rp = it->rp, jmax = it->jmax;
    const __m512 scale = _mm512_set1_ps(a->scale);
    const bool capped = a->softcap > 0;
    const __m512 cap = _mm512_set1_ps(a->softcap), cap_inv = _mm512_set1_ps(capped ? 1.0f / a->softcap : 0.0f);
    __m512 mx[4];
    __m512i lv[4], mi[4];
    __mmask16 live[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
        mx[v] = _mm512_set1_ps(-INFINITY);
        lv[v] = _mm512_load_si512(it->lim + 16 * v);
        mi[v] = _mm512_load_si512(it->midx + 16 * v);
        live[v] = tail_mask(it->nr - 16 * v);
    }
    for (int j0 = 0; j0 < jmax; j0 += KK) {
        const int kn = jmax - j0 < KK ? jmax - j0 : KK;
        const float *kp[8] = { 0 };
#pragma GCC unroll 8
        for (int kk = 0; kk < KK; kk++) {
            if (kk < kn) {
                sprig_kvrows_prefetch(a->kr, j0 + kk + PF_KEYS, it->g, jmax);
                kp[kk] = fetch(a->kr, j0 + kk, it->g, hd, it->w.kb + kk * hd);
            }
            else kp[kk] = kp[0];
        }
        __m512 acc[8][4];
#pragma GCC unroll 8
        for (int kk = 0; kk < 8; kk++)
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[kk][v] = _mm512_setzero_ps();
        const float *qt = it->w.qt;
        for (int d = 0; d < hd; d++, qt += rp) {
            __m512 qv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) qv[v] = _mm512_load_ps(qt + 16 * v);
#pragma GCC unroll 8
            for (int kk = 0; kk < KK; kk++) {
                const __m512 kd = _mm512_set1_ps(kp[kk][d]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[kk][v] = _mm512_fmadd_ps(qv[v], kd, acc[kk][v]);
            }
        }
#pragma GCC unroll 8
        for (int kk = 0; kk < KK; kk++) {
            if (kk >= kn) break;
            const int j = j0 + kk;
            const __m512i jv = _mm512_set1_epi32(j);
            float *sj = it->P + (size_t)j * (size_t)rp;
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                __m512 s = _mm512_mul_ps(acc[kk][v], scale);
                if (capped) s = softcap16(s, cap, cap_inv);
                if (it->mbase && j >= it->open) {
                    const __m512 m = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live[v],
                                                              _mm512_add_epi32(mi[v], jv), it->mbase, 4);
                    s = _mm512_add_ps(s, m);
                }
                _mm512_store_ps(sj + 16 * v, s);
                const __mmask16 ok = _mm512_cmpgt_epi32_mask(lv[v], jv);
                mx[v] = _mm512_mask_max_ps(mx[v], ok, s, mx[v]);
            }
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) _mm512_store_ps(it->mx + 16 * v, mx[v]);
}

/* lanes = rows: p = exp(s - mx) in place, 0 past each row's limit. */
AI void softmax_rows(struct item *it, const int NV)
{
    const int rp = it->rp, jmax = it->jmax;
    __m512 mx[4];
    __m512i lv[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
        mx[v] = _mm512_load_ps(it->mx + 16 * v);
        lv[v] = _mm512_load_si512(it->lim + 16 * v);
    }
    float *sj = it->P;
    for (int j = 0; j < jmax; j++, sj += rp) {
        const __m512i jv = _mm512_set1_epi32(j);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __m512 s = _mm512_load_ps(sj + 16 * v);
            const __mmask16 ok = _mm512_cmpgt_epi32_mask(lv[v], jv);
            _mm512_store_ps(sj + 16 * v, exp16_softmax(s, mx[v], ok));
        }
    }
}

/* ---------------------------------------------------------------- scores, few rows */

/* In-register 16x16 transpose: r[k] = row k in, r[d] = column d out. */
AI void transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        t[4 * g + 0] = _mm512_unpacklo_ps(r[4 * g + 0], r[4 * g + 1]);
        t[4 * g + 1] = _mm512_unpackhi_ps(r[4 * g + 0], r[4 * g + 1]);
        t[4 * g + 2] = _mm512_unpacklo_ps(r[4 * g + 2], r[4 * g + 3]);
        t[4 * g + 3] = _mm512_unpackhi_ps(r[4 * g + 2], r[4 * g + 3]);
        /* u[4g+e]: per 128-bit lane L, element 4L+e of rows 4g..4g+3 */
        u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[4 * g + 0]), _mm512_castps_pd(t[4 * g + 2])));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[4 * g + 0]), _mm512_castps_pd(t[4 * g + 2])));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[4 * g + 1]), _mm512_castps_pd(t[4 * g + 3])));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[4 * g + 1]), _mm512_castps_pd(t[4 * g + 3])));
    }
#pragma GCC unroll 4
    for (int e = 0; e < 4; e++) {   /* 4x4 transpose of 128-bit lanes across the groups */
        const __m512 x0 = _mm512_shuffle_f32x4(u[0 + e], u[4 + e], 0x44);
        const __m512 x1 = _mm512_shuffle_f32x4(u[0 + e], u[4 + e], 0xEE);
        const __m512 x2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
        const __m512 x3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
        r[0 + e] = _mm512_shuffle_f32x4(x0, x2, 0x88);
        r[4 + e] = _mm512_shuffle_f32x4(x0, x2, 0xDD);
        r[8 + e] = _mm512_shuffle_f32x4(x1, x3, 0x88);
        r[12 + e] = _mm512_shuffle_f32x4(x1, x3, 0xDD);
    }
}

/* Quantized key columns without a transpose: 16 keys' records are fetched
 * by 32-bit gathers (one word holds 8 dims of T4 / T3 codes, 4 of int8),
 * each dim's codes unpacked lane-wise (lanes = keys) and decoded with the
 * spec's one product (C[c] * s or q * s), so r[e] holds exactly the values
 * sprig_kvrows_decode_ref gives. Used for I8 / T4 / T3 records of hd a
 * multiple of 16 (any layout: the 16 record addresses are 64-bit). */
struct qcols {
    __m512i lo, hi;          /* record addresses of keys 0-7 and 8-15 (64-bit) */
    __mmask8 mlo, mhi;       /* live keys */
    __m512 s;                /* per-key scale (I8) / rescale (T4, T3); 0 past kn */
    __m512 cb;               /* the codebook (T4: 16 entries; T3: 8, repeated) */
    int fmt;
};

AI __m512i gather16(const struct qcols *q, int off)
{
    const __m512i o = _mm512_set1_epi64(off);
    const __m256i a = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), q->mlo, _mm512_add_epi64(q->lo, o), NULL, 1);
    const __m256i b = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), q->mhi, _mm512_add_epi64(q->hi, o), NULL, 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

static void qcols_init(const struct item *it, int j, int kn, struct qcols *q)
{
    const sprig_kvrows *kr = it->a->kr;
    const int hd = it->a->hd;
    _Alignas(64) int64_t addr[16];
    for (int k = 0; k < 16; k++) {
        int jj = j + (k < kn ? k : 0);
        const sprig_kvrows *s = sprig_kvrows_seg(kr, &jj);
        addr[k] = (int64_t)(intptr_t)sprig_kvrows_at(s, jj, it->g);
    }
    q->lo = _mm512_load_si512(addr);
    q->hi = _mm512_load_si512(addr + 8);
    const __mmask16 live = tail_mask(kn);
    q->mlo = (__mmask8)(live & 0xFF);
    q->mhi = (__mmask8)(live >> 8);
    q->fmt = kr->fmt;
    const int sidecar = kr->fmt == SPRIG_KVROWS_I8 ? hd : kr->fmt == SPRIG_KVROWS_T4 ? hd / 2 + 2 : 3 * hd / 8 + 2;
    const __m512i w = _mm512_and_si512(gather16(q, sidecar), _mm512_set1_epi32(0xFFFF));
    q->s = _mm512_maskz_mov_ps(live, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w)));
    q->cb = kr->fmt == SPRIG_KVROWS_T4 ? _mm512_loadu_ps(kr->codebook)
          : kr->fmt == SPRIG_KVROWS_T3 ? _mm512_broadcast_f32x8(_mm256_loadu_ps(kr->codebook)) : _mm512_setzero_ps();
}

AI void qcols_get(const struct qcols *q, __m512 r[16], int d0)
{
    if (q->fmt == SPRIG_KVROWS_I8) {
#pragma GCC unroll 4
        for (int w = 0; w < 4; w++) {
            const __m512i x = gather16(q, d0 + 4 * w);
#pragma GCC unroll 4
            for (int e = 0; e < 4; e++) {
                const __m512i c = _mm512_srai_epi32(_mm512_slli_epi32(x, 24 - 8 * e), 24);
                r[4 * w + e] = _mm512_mul_ps(_mm512_cvtepi32_ps(c), q->s);
            }
        }
    } else {
        const int bits = q->fmt == SPRIG_KVROWS_T4 ? 4 : 3;
        const __m512i mask = _mm512_set1_epi32((1 << bits) - 1);
#pragma GCC unroll 2
        for (int w = 0; w < 2; w++) {
            const int dd = d0 + 8 * w;
            const __m512i x = gather16(q, bits == 4 ? dd / 2 : 3 * (dd / 8));
#pragma GCC unroll 8
            for (int e = 0; e < 8; e++) {
                const __m512i c = _mm512_and_si512(_mm512_srli_epi32(x, (unsigned)(bits * e)), mask);
                r[8 * w + e] = _mm512_mul_ps(_mm512_permutexvar_ps(c, q->cb), q->s);
            }
        }
    }
}

/* Load keys [j, j + kn) (kn <= 16), dims [d0, d0 + 16) of the item's kv
 * head and transpose them: r[e] = dim d0+e of the 16 keys (0 past kn or hd). */
AI void key_columns(const struct item *it, __m512 r[16], int j, int kn, int d0)
{
    const sprig_attn_args *a = it->a;
    const sprig_kvrows *kr = a->kr;
    const int hd = a->hd;
    const __mmask16 dm = tail_mask(hd - d0);
    if (!it->kplain) {   /* rows decoded by scores_few into kb[16][hd] */
        const float *b = it->w.kb + d0;
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) r[k] = k >= kn ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(dm, b + (size_t)k * (size_t)hd);
        transpose16(r);
        return;
    }
    const bool f16 = kr->fmt == SPRIG_KVROWS_F16;
    const size_t es = f16 ? 2 : 4, rs = (size_t)kr->stride;
    const char *b = (const char *)sprig_kvrows_at(kr, j, it->g) + (size_t)d0 * es;
    const int pf = a->n_keys - j - PF_KEYS;          /* keys k < pf have a row PF_KEYS ahead */
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) {
        if (k < pf && k < kn) _mm_prefetch(b + (size_t)(k + PF_KEYS) * rs, _MM_HINT_T0);
        r[k] = k >= kn ? _mm512_setzero_ps()
             : f16 ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(dm, b + (size_t)k * rs))
                   : _mm512_maskz_loadu_ps(dm, b + (size_t)k * rs);
    }
    transpose16(r);
}

/* Transpose 4 rows of 16 keys (s[r] = keys j..j+kn of row r) into
 * P[j+k][rbase..rbase+3], P with row stride ps floats. */
AI void store_rows4(float *P, size_t ps, const __m512 s[4], int j, int kn, int rbase)
{
    const __m512 t0 = _mm512_unpacklo_ps(s[0], s[1]), t1 = _mm512_unpackhi_ps(s[0], s[1]);
    const __m512 t2 = _mm512_unpacklo_ps(s[2], s[3]), t3 = _mm512_unpackhi_ps(s[2], s[3]);
    __m512 u[4];
    u[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    u[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    u[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    u[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    float *base = P + (size_t)j * ps + rbase;
    /* u[e] lane L holds key 4L+e (the lane index must be an immediate) */
#define STORE_LANE(L) \
    for (int e = 0; e < 4; e++) \
        if (4 * (L) + e < kn) _mm_store_ps(base + (size_t)(4 * (L) + e) * ps, _mm512_extractf32x4_ps(u[e], (L)));
    STORE_LANE(0)
    STORE_LANE(1)
    STORE_LANE(2)
    STORE_LANE(3)
#undef STORE_LANE
}

/* lanes = keys, for items of at most NR (4 or 8) rows: scores to the
 * row-major buffer S[r][n_keys], row maxima to it->mx. */
AI void scores_few(struct item *it, float *S, const int NR)
{
    const sprig_attn_args *a = it->a;
    const int hd = a->hd, rp = it->rp, jmax = it->jmax;
    const size_t nk = (size_t)a->n_keys;
    const __m512 scale = _mm512_set1_ps(a->scale);
    const bool capped = a->softcap > 0;
    const __m512 cap = _mm512_set1_ps(a->softcap), cap_inv = _mm512_set1_ps(capped ? 1.0f / a->softcap : 0.0f);
    __m512 mx[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) mx[r] = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < jmax; j += 16) {
        const int kn = jmax - j < 16 ? jmax - j : 16;
        __m512 acc[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_ps();
        struct qcols qc;
        if (it->kgather) {
            for (int k = 0; k < kn; k++) sprig_kvrows_prefetch(a->kr, j + k + PF_KEYS, it->g, jmax);
            qcols_init(it, j, kn, &qc);
        } else if (!it->kplain)
            for (int k = 0; k < kn; k++) {
                sprig_kvrows_prefetch(a->kr, j + k + PF_KEYS, it->g, jmax);
                float *dst = it->w.kb + (size_t)k * (size_t)hd;
                const float *src = fetch(a->kr, j + k, it->g, hd, dst);
                if (src != dst) memcpy(dst, src, (size_t)hd * sizeof(float));
            }
        for (int d0 = 0; d0 < hd; d0 += 16) {
            __m512 kc[16];
            if (it->kgather) qcols_get(&qc, kc, d0);
            else key_columns(it, kc, j, kn, d0);
            const float *qt = it->w.qt + (size_t)d0 * (size_t)rp;
#pragma GCC unroll 16
            for (int e = 0; e < 16; e++) {
                if (d0 + e >= hd) break;
#pragma GCC unroll 8
                for (int r = 0; r < NR; r++)
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(qt[(size_t)e * (size_t)rp + r]), kc[e], acc[r]);
            }
        }
        const __mmask16 km = tail_mask(kn);
#pragma GCC unroll 8
        for (int r = 0; r < NR; r++) {
            if (r >= it->nr) break;
            __m512 s = _mm512_mul_ps(acc[r], scale);
            if (capped) s = softcap16(s, cap, cap_inv);
            if (it->mbase && j + kn > it->open)
                s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(km, it->mbase + it->midx[r] + j));
            mx[r] = _mm512_mask_max_ps(mx[r], tail_mask(it->lim[r] - j), s, mx[r]);
            if (kn == 16) _mm512_storeu_ps(S + (size_t)r * nk + j, s);   /* masked stores are slow on some cores */
            else _mm512_mask_storeu_ps(S + (size_t)r * nk + j, km, s);
        }
    }
    for (int r = 0; r < NR; r++) it->mx[r] = r < it->nr ? _mm512_reduce_max_ps(mx[r]) : -INFINITY;
}

/* lanes = keys: p = exp(s - mx) for rows [0, NR), transposed into P[j][8]. */
static void softmax_few(struct item *it, const float *S, int NR)
{
    const int jmax = it->jmax;
    const size_t nk = (size_t)it->a->n_keys;
    for (int rb = 0; rb < NR; rb += 4) {
        __m512 mx[4];
        for (int r = 0; r < 4; r++) mx[r] = _mm512_set1_ps(it->mx[rb + r]);
        for (int j = 0; j < jmax; j += 16) {
            const int kn = jmax - j < 16 ? jmax - j : 16;
            __m512 p[4];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                const int row = rb + r;
                if (row >= it->nr) { p[r] = _mm512_setzero_ps(); continue; }
                const __m512 s = _mm512_maskz_loadu_ps(tail_mask(kn), S + (size_t)row * nk + j);
                p[r] = exp16_softmax(s, mx[r], tail_mask(it->lim[row] - j));
            }
            store_rows4(it->P, 8, p, j, kn, rb);
        }
    }
}

/* ---------------------------------------------------------------- values */

#define RB 4   /* rows per register block */

/* For keys [j0, j1) of a V tile: o_r[c0 .. c0+16*NC) += p_rj * v_j[...];
 * on the first column chunk also sum_r += p_rj. */
AI void pv_chunk(struct item *it, const float *const *vp, int j0, int j1, int c0, __mmask16 last, const int NC)
{
    const size_t ps = (size_t)it->pstride;
    const __m128 zero = _mm_setzero_ps();
    for (int rb = 0; rb < it->nr; rb += RB) {
        float *o[RB];
        __m512 acc[RB][4];
#pragma GCC unroll 4
        for (int r = 0; r < RB; r++) {
            o[r] = it->orow[rb + r] + c0;
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                acc[r][c] = c < NC ? _mm512_maskz_loadu_ps(c == NC - 1 ? last : (__mmask16)0xFFFF, o[r] + 16 * c)
                                   : _mm512_setzero_ps();
        }
        __m128 sum = _mm_load_ps(it->sum + rb);
        const float *pj = it->P + (size_t)j0 * ps + rb;
        for (int j = j0; j < j1; j++, pj += ps) {
            const __m128 p4 = _mm_load_ps(pj);
            if (c0 == 0) sum = _mm_add_ps(sum, p4);
            const __mmask8 nz = _mm_cmp_ps_mask(p4, zero, _CMP_NEQ_UQ);
            if (!nz) continue;
            const float *v = vp[j - j0] + c0;
            __m512 vv[4];
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                vv[c] = _mm512_maskz_loadu_ps(c == NC - 1 ? last : (__mmask16)0xFFFF, v + 16 * c);
            if (nz == 0xF) {
#pragma GCC unroll 4
                for (int r = 0; r < RB; r++) {
                    const __m512 pb = _mm512_set1_ps(pj[r]);
#pragma GCC unroll 4
                    for (int c = 0; c < NC; c++) acc[r][c] = _mm512_fmadd_ps(pb, vv[c], acc[r][c]);
                }
            } else {
#pragma GCC unroll 4
                for (int r = 0; r < RB; r++) {
                    if (!(nz >> r & 1)) continue;
                    const __m512 pb = _mm512_set1_ps(pj[r]);
#pragma GCC unroll 4
                    for (int c = 0; c < NC; c++) acc[r][c] = _mm512_fmadd_ps(pb, vv[c], acc[r][c]);
                }
            }
        }
        if (c0 == 0) _mm_store_ps(it->sum + rb, sum);
#pragma GCC unroll 4
        for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                _mm512_mask_storeu_ps(o[r] + 16 * c, c == NC - 1 ? last : (__mmask16)0xFFFF, acc[r][c]);
    }
}

static void values(struct item *it)
{
    const sprig_attn_args *a = it->a;
    const int hd = a->hd, jmax = it->jmax;
    for (int r = 0; r < it->nr; r++)
        for (int d = 0; d < hd; d += 16) _mm512_mask_storeu_ps(it->orow[r] + d, tail_mask(hd - d), _mm512_setzero_ps());
    for (int r = 0; r < SPRIG_ATTN_ROWS; r++) it->sum[r] = 0.0f;
    const float *vp[SPRIG_ATTN_TV];
    for (int j0 = 0; j0 < jmax; j0 += SPRIG_ATTN_TV) {
        const int j1 = jmax - j0 < SPRIG_ATTN_TV ? jmax : j0 + SPRIG_ATTN_TV;
        for (int j = j0; j < j1; j++) {
            sprig_kvrows_prefetch(a->vr, j + 2 * SPRIG_ATTN_TV, it->g, jmax);
            vp[j - j0] = fetch(a->vr, j, it->g, hd, it->w.vb + (j - j0) * hd);
        }
        for (int c0 = 0; c0 < hd; c0 += 64) {
            const int cw = hd - c0 < 64 ? hd - c0 : 64;
            const int nc = (cw + 15) / 16;
            const __mmask16 last = tail_mask(cw - 16 * (nc - 1));
            switch (nc) {
            case 1: pv_chunk(it, vp, j0, j1, c0, last, 1); break;
            case 2: pv_chunk(it, vp, j0, j1, c0, last, 2); break;
            case 3: pv_chunk(it, vp, j0, j1, c0, last, 3); break;
            default: pv_chunk(it, vp, j0, j1, c0, last, 4); break;
            }
        }
    }
    for (int r = 0; r < it->nr; r++) {
        const __m512 s = _mm512_set1_ps(it->sum[r]);
        float *o = it->orow[r];
        for (int d = 0; d < hd; d += 16) {
            const __mmask16 m = tail_mask(hd - d);
            _mm512_mask_storeu_ps(o + d, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, o + d), s));
        }
    }
}

/* ---------------------------------------------------------------- item */

void sprig_attn_item_avx512(const sprig_attn_args *a, int g, int r0, int nr, float *slot)
{
    struct item it;
    const int n = a->n, hd = a->hd, nk = a->n_keys, group = a->n_head / a->n_kv_head;
    const int64_t qd = (int64_t)a->n_head * hd;
    it.a = a;
    it.g = g;
    it.nr = nr;
    it.rp = (nr + 15) & ~15;
    {   /* one format for every key (no second segment in another format) */
        const int f = a->kr->fmt;
        it.kgather = (f == SPRIG_KVROWS_I8 || f == SPRIG_KVROWS_T4 || f == SPRIG_KVROWS_T3) && hd % 16 == 0 &&
                     (!a->kr->next || (a->kr->next->fmt == f && a->kr->next->codebook == a->kr->codebook));
    }
    it.kplain = a->kr->base && !a->kr->ring_cap && !a->kr->next && (a->kr->fmt == SPRIG_KVROWS_F16 ||
                                (a->kr->fmt == SPRIG_KVROWS_F32 && ((uintptr_t)a->kr->base & 3) == 0 && a->kr->stride % 4 == 0 &&
                                 a->kr->head_bytes % 4 == 0));
    sprig_attn_work_split(slot, (size_t)it.rp, (size_t)nk, &it.w);
    const int i_first = r0 / group, i_last = (r0 + nr - 1) / group;
    it.jmax = 0;
    for (int r = 0; r < SPRIG_ATTN_ROWS; r++) {
        if (r < nr) {
            const int R = r0 + r, i = R / group, h = g * group + R % group;
            it.lim[r] = a->mask ? nk : nk - n + i + 1;
            it.midx[r] = (i - i_first) * nk;
            it.orow[r] = a->out + i * qd + (int64_t)h * hd;
            const float *q = a->q + i * qd + (int64_t)h * hd;
            for (int d = 0; d < hd; d++) it.w.qt[(size_t)d * (size_t)it.rp + r] = q[d];
            if (it.lim[r] > it.jmax) it.jmax = it.lim[r];
        } else {
            it.lim[r] = 0;
            it.midx[r] = 0;
            it.orow[r] = it.w.dummy;
            if (r < it.rp)
                for (int d = 0; d < hd; d++) it.w.qt[(size_t)d * (size_t)it.rp + r] = 0.0f;
        }
    }
    it.mbase = a->mask ? a->mask + (int64_t)i_first * nk : NULL;
    it.open = nk;
    if (a->mask)
        for (int i = i_first; i <= i_last && it.open > 0; i++) {
            const int z = zero_prefix(a->mask + (int64_t)i * nk, it.open);
            if (z < it.open) it.open = z;
        }

    if (nr <= 8) {
        /* sc (16 * n_keys floats) = P [n_keys][8], then S [8][n_keys] */
        it.P = it.w.sc;
        it.pstride = 8;
        float *S = it.w.sc + (size_t)8 * (size_t)nk;
        if (nr <= 4) { scores_few(&it, S, 4); softmax_few(&it, S, 4); }
        else { scores_few(&it, S, 8); softmax_few(&it, S, 8); }
    } else {
        it.P = it.w.sc;
        it.pstride = it.rp;
        switch (it.rp / 16) {
        case 1: scores_rows(&it, 1, 8); softmax_rows(&it, 1); break;
        case 2: scores_rows(&it, 2, 6); softmax_rows(&it, 2); break;
        case 3: scores_rows(&it, 3, 4); softmax_rows(&it, 3); break;
        default: scores_rows(&it, 4, 4); softmax_rows(&it, 4); break;
        }
    }
    values(&it);
}

/* ================================================================ small heads
 *
 * sprig_attn_small_avx512: one item = query rows [i0, i0+ni) x the Hc heads
 * of chunk c (kv heads c*G .. c*G+G-1, whose G*hd <= 32 elements of a key or
 * value row are fetched with two masked loads). Per lane, exactly the
 * reference's operations again:
 *
 * scores: lanes = (row i, head hl) at p = i*HP + hl, Ls such lanes per key
 *   (padded; lanes of no real (row, head) are dead: limit 0). For key j and
 *   d = 0..hd-1 in order, k_d[p] = key j's element (hl/group)*hd + d, one
 *   vpermt2ps from the two loads, and acc[p] = fmadd(q[p][d], k_d[p], acc[p]):
 *   each lane is the reference's fmaf chain. Then * scale, + mask, masked
 *   max; stored as S[j][Ls].
 * softmax: p = exp(s - mx) lane-wise, 0 past a row's limit, in place.
 * values: lanes = (d, hl) at e = d*HP + hl, NW vectors per row. For key j
 *   in order: v_w = the value element each lane needs (one vpermt2ps per w,
 *   shared by the rows), the row's HP probabilities broadcast across the
 *   vector (HP divides 16), sum += p (0 adds nothing) and o += p * v where
 *   p != 0 (masked fmadd: a skipped key leaves o untouched). At the end
 *   o / sum, reordered to the output's (head, d) layout with one gather.
 */

#define SS_MAXD 16   /* largest head dimension of the path */

struct sitem {
    const sprig_attn_args *a;
    int hd, group, G, Hc, HP, Ls, Qs, ni, jmax, open, NW;
    int64_t seg;                   /* element offset of the chunk in a key row */
    __mmask16 m0, m1;              /* load masks of the chunk's two halves */
    const float *mbase;            /* mask row of the item's first query, or NULL */
    float *S;                      /* [jmax][Ls] scores, then probabilities */
    float *qt;                     /* [hd][Qs] queries, lane p = i*HP + hl */
    float *out0;                   /* output of row i0, head c*Hc */
    _Alignas(64) int32_t kidx[SS_MAXD][16];   /* score lane -> chunk element, per d */
    _Alignas(64) int32_t vidx[8][16];         /* value lane -> chunk element, per vector */
    _Alignas(64) int32_t oidx[SS_MAXD * 16];  /* output (hl, d) -> value lane */
    _Alignas(64) int32_t lim[64];
    _Alignas(64) int32_t midx[64];
    _Alignas(64) float mx[64];
};

/* The chunk's elements of row j: x0 = [0, 16), x1 = [16, 32) (0 past G*hd). */
AI void ss_load(const struct sitem *s, const void *base, int j, __m512 *x0, __m512 *x1)
{
    const sprig_attn_args *a = s->a;
    const int64_t off = (int64_t)j * a->kv_stride + s->seg;
    if (a->kv_type == SPRIG_TYPE_F16) {
        const uint16_t *p = (const uint16_t *)base + off;
        *x0 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(s->m0, p));
        *x1 = s->m1 ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(s->m1, p + 16)) : _mm512_setzero_ps();
    } else {
        const float *p = (const float *)base + off;
        *x0 = _mm512_maskz_loadu_ps(s->m0, p);
        *x1 = s->m1 ? _mm512_maskz_loadu_ps(s->m1, p + 16) : _mm512_setzero_ps();
    }
}

/* Scores and row maxima, NZ = Ls/16 vectors per key (1 when Ls < 16), KU keys at a time. */
AI void ss_scores(struct sitem *s, const int NZ, const int KU)
{
    const sprig_attn_args *a = s->a;
    const int hd = s->hd, Ls = s->Ls, Qs = s->Qs, jmax = s->jmax;
    const __m512 scale = _mm512_set1_ps(a->scale);
    const bool capped = a->softcap > 0;
    const __m512 cap = _mm512_set1_ps(a->softcap), cap_inv = _mm512_set1_ps(capped ? 1.0f / a->softcap : 0.0f);
    __m512 mx[4];
    __m512i lv[4], mi[4];
    __mmask16 live[4];
#pragma GCC unroll 4
    for (int z = 0; z < NZ; z++) {
        mx[z] = _mm512_set1_ps(-INFINITY);
        lv[z] = _mm512_load_si512(s->lim + 16 * z);
        mi[z] = _mm512_load_si512(s->midx + 16 * z);
        live[z] = _mm512_cmpgt_epi32_mask(lv[z], _mm512_setzero_si512());
    }
    for (int j0 = 0; j0 < jmax; j0 += KU) {
        const int kn = jmax - j0 < KU ? jmax - j0 : KU;
        __m512 k0[8], k1[8], acc[8][4];
#pragma GCC unroll 8
        for (int u = 0; u < KU; u++) {
            ss_load(s, a->k, j0 + (u < kn ? u : 0), &k0[u], &k1[u]);
#pragma GCC unroll 4
            for (int z = 0; z < NZ; z++) acc[u][z] = _mm512_setzero_ps();
        }
        const float *qt = s->qt;
        for (int d = 0; d < hd; d++, qt += Qs) {
            const __m512i idx = _mm512_load_si512(s->kidx[d]);
            __m512 q[4];
#pragma GCC unroll 4
            for (int z = 0; z < NZ; z++) q[z] = _mm512_load_ps(qt + 16 * z);
#pragma GCC unroll 8
            for (int u = 0; u < KU; u++) {
                const __m512 kd = _mm512_permutex2var_ps(k0[u], idx, k1[u]);
#pragma GCC unroll 4
                for (int z = 0; z < NZ; z++) acc[u][z] = _mm512_fmadd_ps(q[z], kd, acc[u][z]);
            }
        }
#pragma GCC unroll 8
        for (int u = 0; u < KU; u++) {
            if (u >= kn) break;
            const int j = j0 + u;
            const __m512i jv = _mm512_set1_epi32(j);
            float *sj = s->S + (size_t)j * (size_t)Ls;
#pragma GCC unroll 4
            for (int z = 0; z < NZ; z++) {
                __m512 sc = _mm512_mul_ps(acc[u][z], scale);
                if (capped) sc = softcap16(sc, cap, cap_inv);
                if (s->mbase && j >= s->open)
                    sc = _mm512_add_ps(sc, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live[z],
                                                                    _mm512_add_epi32(mi[z], jv), s->mbase, 4));
                /* NZ == 1: lanes past Ls spill into the next key's slots (rewritten next) or
                 * the slack past jmax*Ls (sc holds >= 16 floats more): no masked store */
                _mm512_storeu_ps(sj + 16 * z, sc);
                mx[z] = _mm512_mask_max_ps(mx[z], _mm512_cmpgt_epi32_mask(lv[z], jv), sc, mx[z]);
            }
        }
    }
#pragma GCC unroll 4
    for (int z = 0; z < NZ; z++) _mm512_store_ps(s->mx + 16 * z, mx[z]);
}

/* Scores of items with Ls < 16 lanes per key (one query row, say): E = 16/Ls
 * keys share a vector, lane l = e*Ls + p. A block of E keys is four vector
 * rows (E = 2 keys x the chunk's two halves, or E = 4 keys x one); per group
 * of D dims they are regrouped into U0 (the first E/2 keys) and U1 (the
 * rest), lane (ek, g, dd) = key ek's element g*hd + dg*D + dd, and
 * k_d = vpermt2ps(U0, kix[dd], U1) then meets the lane's fmadd chain exactly
 * as in ss_scores, with 1/E of its permutes and fmadds per key. Needs the
 * chunk's G kv heads to be a power of two with (E/2)*G dividing 16. */
AI void ss_scores_packed(struct sitem *s, const int E)
{
    enum { KU = 4 };                 /* blocks of E keys in flight */
    const sprig_attn_args *a = s->a;
    const int hd = s->hd, jmax = s->jmax, G = s->G, HP = s->HP;
    const int Ls = 16 / E, Ek = E / 2, D = 16 / (Ek * G), ndg = (hd + D - 1) / D;
    const unsigned lsh = (unsigned)__builtin_ctz((unsigned)Ls), dsh = (unsigned)__builtin_ctz((unsigned)D);
    const unsigned gsh = (unsigned)__builtin_ctz((unsigned)G);
    const bool f16 = a->kv_type == SPRIG_TYPE_F16;
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i D1 = _mm512_set1_epi32(D - 1);
    /* U lanes: u = (ek*G + g)*D + dd <- source element ek*16 + g*hd + dg*D + dd */
    __m512i uidx[SS_MAXD];
    {
        const __m512i dd = _mm512_and_si512(lane, D1);
        const __m512i g = _mm512_and_si512(_mm512_srli_epi32(lane, dsh), _mm512_set1_epi32(G - 1));
        const __m512i ek = _mm512_srli_epi32(lane, dsh + gsh);
        const __m512i base = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(ek, 4), _mm512_mullo_epi32(g, _mm512_set1_epi32(hd))), dd);
        for (int dg = 0; dg < ndg; dg++)
            uidx[dg] = _mm512_maskz_add_epi32(_mm512_cmplt_epi32_mask(dd, _mm512_set1_epi32(hd - dg * D)), base,
                                              _mm512_set1_epi32(dg * D));
    }
    /* score lanes: l = e*Ls + p, e = kgi*Ek + ek, head hl = p % HP of kv head gq
     * <- U_kgi lane (ek*G + gq)*D + dd */
    _Alignas(64) int32_t gq[16];
    for (int hl = 0, g = 0, t = 0; hl < 16; hl++) {
        gq[hl] = hl < s->Hc ? g : 0;
        if (++t == s->group) { t = 0; g++; }
    }
    __m512i kix[16];
    {
        const __m512i e = _mm512_srli_epi32(lane, lsh), p = _mm512_and_si512(lane, _mm512_set1_epi32(Ls - 1));
        const __m512i hl = _mm512_and_si512(p, _mm512_set1_epi32(HP - 1));
        const __m512i g = _mm512_permutexvar_epi32(hl, _mm512_load_si512(gq));
        const __m512i kgi = _mm512_srli_epi32(e, (unsigned)__builtin_ctz((unsigned)Ek));
        const __m512i ek = _mm512_and_si512(e, _mm512_set1_epi32(Ek - 1));
        const __m512i base = _mm512_add_epi32(_mm512_slli_epi32(kgi, 4),
                                              _mm512_slli_epi32(_mm512_add_epi32(_mm512_slli_epi32(ek, gsh), g), dsh));
        for (int dd = 0; dd < D; dd++) kix[dd] = _mm512_add_epi32(base, _mm512_set1_epi32(dd));
    }
    /* per-lane limits, mask offsets and key offsets (lane l is key j + eo) */
    const __m512i pos = _mm512_and_si512(lane, _mm512_set1_epi32(Ls - 1)), eo = _mm512_srli_epi32(lane, lsh);
    const __m512i lv = _mm512_permutexvar_epi32(pos, _mm512_load_si512(s->lim));
    const __m512i mi = _mm512_add_epi32(_mm512_permutexvar_epi32(pos, _mm512_load_si512(s->midx)), eo);
    const __mmask16 live = _mm512_cmpgt_epi32_mask(lv, _mm512_setzero_si512());
    const __m512 scale = _mm512_set1_ps(a->scale);
    const bool capped = a->softcap > 0;
    const __m512 cap = _mm512_set1_ps(a->softcap), cap_inv = _mm512_set1_ps(capped ? 1.0f / a->softcap : 0.0f);
    __m512 mx = _mm512_set1_ps(-INFINITY);
    _Alignas(64) float kbuf[KU][4][16];   /* f16 rows converted */
    const size_t rs = (size_t)a->kv_stride;
    for (int j0 = 0; j0 < jmax; j0 += KU * E) {
        /* src[b][0..3]: the four vector rows of block b (keys past jmax repeat the last one) */
        const float *src[KU][4];
#pragma GCC unroll 4
        for (int b = 0; b < KU; b++)
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                int j = j0 + b * E + (E == 2 ? r >> 1 : r), half = E == 2 ? r & 1 : 0;
                if (j >= jmax) j = jmax - 1;
                const size_t off = (size_t)j * rs + (size_t)s->seg + (size_t)half * 16;
                if (f16) {
                    _mm512_store_ps(kbuf[b][r], _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(half ? s->m1 : s->m0,
                                                                                         (const uint16_t *)a->k + off)));
                    src[b][r] = kbuf[b][r];
                } else {
                    src[b][r] = (const float *)a->k + off;
                }
            }
        const __mmask16 m1 = E == 2 ? s->m1 : s->m0;   /* mask of rows 1 and 3 */
        __m512 acc[KU];
#pragma GCC unroll 4
        for (int b = 0; b < KU; b++) acc[b] = _mm512_setzero_ps();
        const float *qt = s->qt;
        for (int dg = 0; dg < ndg; dg++) {
            __m512 u0[KU], u1[KU];
#pragma GCC unroll 4
            for (int b = 0; b < KU; b++) {
                u0[b] = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(s->m0, src[b][0]), uidx[dg], _mm512_maskz_loadu_ps(m1, src[b][1]));
                u1[b] = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(s->m0, src[b][2]), uidx[dg], _mm512_maskz_loadu_ps(m1, src[b][3]));
            }
            const int dn = hd - dg * D < D ? hd - dg * D : D;
            for (int dd = 0; dd < dn; dd++, qt += 16) {
                const __m512 q = _mm512_load_ps(qt);
#pragma GCC unroll 4
                for (int b = 0; b < KU; b++)
                    acc[b] = _mm512_fmadd_ps(q, _mm512_permutex2var_ps(u0[b], kix[dd], u1[b]), acc[b]);
            }
        }
#pragma GCC unroll 4
        for (int b = 0; b < KU; b++) {
            const int j = j0 + b * E;
            if (j >= jmax) break;
            const __m512i jv = _mm512_add_epi32(_mm512_set1_epi32(j), eo);
            __m512 sc = _mm512_mul_ps(acc[b], scale);
            if (capped) sc = softcap16(sc, cap, cap_inv);
            if (s->mbase && j + E > s->open)
                sc = _mm512_add_ps(sc, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live & _mm512_cmplt_epi32_mask(jv, _mm512_set1_epi32(jmax)),
                                                                _mm512_add_epi32(mi, _mm512_set1_epi32(j)), s->mbase, 4));
            _mm512_storeu_ps(s->S + (size_t)j * (size_t)Ls, sc);   /* past jmax*Ls: slack, never read */
            mx = _mm512_mask_max_ps(mx, _mm512_cmpgt_epi32_mask(lv, jv), sc, mx);
        }
    }
    /* lanes p, p + Ls, ... hold maxima over different keys: combine (order-free) */
    if (E >= 4) mx = _mm512_max_ps(mx, _mm512_shuffle_f32x4(mx, mx, 0xB1));
    mx = _mm512_max_ps(mx, _mm512_shuffle_f32x4(mx, mx, 0x4E));
    _mm512_store_ps(s->mx, mx);
}

/* p = exp(s - mx) in place, 0 past each lane's limit. */
static void ss_softmax(struct sitem *s)
{
    const int Ls = s->Ls, jmax = s->jmax;
    if (Ls >= 16) {
        for (int z = 0; z < Ls / 16; z++) {
            const __m512 mx = _mm512_load_ps(s->mx + 16 * z);
            const __m512i lv = _mm512_load_si512(s->lim + 16 * z);
            float *sj = s->S + 16 * z;
            for (int j = 0; j < jmax; j++, sj += Ls) {
                const __mmask16 ok = _mm512_cmpgt_epi32_mask(lv, _mm512_set1_epi32(j));
                _mm512_storeu_ps(sj, exp16_softmax(_mm512_loadu_ps(sj), mx, ok));
            }
        }
        return;
    }
    /* Ls divides 16: a vector holds 16/Ls consecutive keys */
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const int sh = __builtin_ctz((unsigned)Ls);
    const __m512i pos = _mm512_and_si512(lane, _mm512_set1_epi32(Ls - 1));
    const __m512i jofs = _mm512_srli_epi32(lane, (unsigned)sh);
    const __m512 mx = _mm512_permutexvar_ps(pos, _mm512_load_ps(s->mx));
    const __m512i lv = _mm512_permutexvar_epi32(pos, _mm512_load_si512(s->lim));
    const int total = jmax * Ls;   /* the buffer has >= 16 floats of slack past it */
    for (int f = 0; f < total; f += 16) {
        const __m512i jv = _mm512_add_epi32(_mm512_set1_epi32(f >> sh), jofs);
        const __mmask16 ok = _mm512_cmpgt_epi32_mask(lv, jv);
        const __m512 x = _mm512_loadu_ps(s->S + f);
        _mm512_storeu_ps(s->S + f, exp16_softmax(x, mx, ok));
    }
}

/* HP consecutive floats repeated across the vector (HP divides 16). */
AI __m512 ss_bcast(const float *p, const int HP)
{
    if (HP == 1) return _mm512_set1_ps(*p);
    if (HP == 2) {
        double d;
        memcpy(&d, p, sizeof d);
        return _mm512_castpd_ps(_mm512_set1_pd(d));
    }
    if (HP == 4) return _mm512_broadcast_f32x4(_mm_loadu_ps(p));
    if (HP == 8) return _mm512_broadcast_f32x8(_mm256_loadu_ps(p));
    return _mm512_loadu_ps(p);
}

/* Values for every row of the item, VRB rows at a time (one: the item has a
 * single row), then o / sum in the output layout. */
AI void ss_values(struct sitem *s, const int HP, const int NW, const bool one)
{
    const int VRB = one ? 1 : NW <= 2 ? 8 : NW == 4 ? 4 : 2;   /* rows per register block */
    const sprig_attn_args *a = s->a;
    const int jmax = s->jmax, Ls = s->Ls, hd = s->hd, nout = s->Hc * hd;
    const int64_t qd = (int64_t)a->n_head * hd;
    const __m512 zero = _mm512_setzero_ps();
    _Alignas(64) float tmp[8 * 16];
    for (int rb = 0; rb < s->ni; rb += VRB) {
        const int nr = s->ni - rb < VRB ? s->ni - rb : VRB;
        __m512 acc[8][8], sum[8];
#pragma GCC unroll 8
        for (int r = 0; r < VRB; r++) {
            sum[r] = zero;
#pragma GCC unroll 8
            for (int w = 0; w < NW; w++) acc[r][w] = zero;
        }
        const float *pj = s->S + (size_t)rb * (size_t)HP;
        for (int j = 0; j < jmax; j++, pj += Ls) {
            __m512 v0, v1, vv[8];
            ss_load(s, a->v, j, &v0, &v1);
#pragma GCC unroll 8
            for (int w = 0; w < NW; w++) vv[w] = _mm512_permutex2var_ps(v0, _mm512_load_si512(s->vidx[w]), v1);
#pragma GCC unroll 8
            for (int r = 0; r < VRB; r++) {
                if (r >= nr) break;
                const __m512 pb = ss_bcast(pj + r * HP, HP);
                const __mmask16 nz = _mm512_cmp_ps_mask(pb, zero, _CMP_NEQ_UQ);
                sum[r] = _mm512_add_ps(sum[r], pb);
#pragma GCC unroll 8
                for (int w = 0; w < NW; w++) acc[r][w] = _mm512_mask3_fmadd_ps(pb, vv[w], acc[r][w], nz);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < VRB; r++) {
            if (r >= nr) break;
#pragma GCC unroll 8
            for (int w = 0; w < NW; w++) _mm512_store_ps(tmp + 16 * w, _mm512_div_ps(acc[r][w], sum[r]));
            float *o = s->out0 + (int64_t)(rb + r) * qd;
            for (int e = 0; e < nout; e += 16) {
                const __mmask16 m = tail_mask(nout - e);
                const __m512i ix = _mm512_load_si512(s->oidx + e);
                const __m512 v = _mm512_mask_i32gather_ps(zero, m, ix, tmp, 4);
                if (m == 0xFFFF) _mm512_storeu_ps(o + e, v);
                else _mm512_mask_storeu_ps(o + e, m, v);
            }
        }
    }
}

void sprig_attn_small_avx512(const sprig_attn_args *a, const sprig_attn_small *p, int c, int i0, int ni, float *slot)
{
    struct sitem s;
    const int n = a->n, hd = a->hd, nk = a->n_keys, HP = p->HP, Hc = p->Hc, group = a->n_head / a->n_kv_head;
    const int hs = __builtin_ctz((unsigned)HP);
    const int64_t qd = (int64_t)a->n_head * hd;
    s.a = a;
    s.hd = hd;
    s.group = group;
    s.G = p->G;
    s.Hc = Hc;
    s.HP = HP;
    s.NW = p->NW;
    s.ni = ni;
    const int lanes = ni * HP;
    s.Ls = lanes >= 16 ? (lanes + 15) & ~15 : lanes <= 1 ? 1 : 1 << (32 - __builtin_clz((unsigned)lanes - 1));
    s.Qs = s.Ls < 16 ? 16 : s.Ls;
    s.seg = (int64_t)c * p->G * hd;
    s.m0 = tail_mask(p->G * hd);
    s.m1 = tail_mask(p->G * hd - 16);
    sprig_attn_work w;
    sprig_attn_work_split(slot, (size_t)p->rp, (size_t)nk, &w);
    s.S = w.sc;
    s.qt = w.qt;
    s.out0 = a->out + i0 * qd + (int64_t)c * Hc * hd;
    s.jmax = a->mask ? nk : nk - n + i0 + ni;

    /* kb[hl] = first element of head hl's kv head within the chunk row */
    _Alignas(64) int32_t kb[16];
    for (int hl = 0, g = 0, t = 0; hl < 16; hl++) {
        kb[hl] = hl < Hc ? g * hd : 0;
        if (++t == group) { t = 0; g++; }
    }
    const __m512i kbv = _mm512_load_si512(kb);
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i hmask = _mm512_set1_epi32(HP - 1);
    const __m512i Hcv = _mm512_set1_epi32(Hc);

    /* score lanes p = i*HP + hl: limits, mask offsets, queries (gathered per d) */
    const float *qbase = a->q + i0 * qd + (int64_t)c * Hc * hd;
    const int Qz = s.Qs / 16;
    __m512i qix[4];
    __mmask16 qreal[4];
    for (int z = 0; z < 4; z++) {
        const __m512i l = _mm512_add_epi32(lane, _mm512_set1_epi32(16 * z));
        const __m512i i = _mm512_srli_epi32(l, (unsigned)hs), hl = _mm512_and_si512(l, hmask);
        const __mmask16 real = _mm512_cmplt_epi32_mask(l, _mm512_set1_epi32(lanes)) & _mm512_cmplt_epi32_mask(hl, Hcv);
        /* the queries repeat every Ls lanes when Ls < 16 (packed scores read all 16) */
        const __m512i lq = s.Ls < 16 ? _mm512_and_si512(l, _mm512_set1_epi32(s.Ls - 1)) : l;
        const __m512i iq = _mm512_srli_epi32(lq, (unsigned)hs), hq = _mm512_and_si512(lq, hmask);
        const __mmask16 realq = _mm512_cmplt_epi32_mask(lq, _mm512_set1_epi32(lanes)) & _mm512_cmplt_epi32_mask(hq, Hcv);
        const __m512i lim = a->mask ? _mm512_set1_epi32(nk)
                                    : _mm512_add_epi32(i, _mm512_set1_epi32(nk - n + i0 + 1));
        _mm512_store_si512(s.lim + 16 * z, _mm512_maskz_mov_epi32(real, lim));
        _mm512_store_si512(s.midx + 16 * z, _mm512_maskz_mullo_epi32(real, i, _mm512_set1_epi32(nk)));
        qix[z] = _mm512_add_epi32(_mm512_mullo_epi32(iq, _mm512_set1_epi32((int)qd)), _mm512_mullo_epi32(hq, _mm512_set1_epi32(hd)));
        qreal[z] = realq;
    }
    for (int d = 0; d < hd; d++) {
        float *qr = s.qt + (size_t)d * (size_t)s.Qs;
        for (int z = 0; z < Qz; z++)
            _mm512_store_ps(qr + 16 * z, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), qreal[z],
                                                                  _mm512_add_epi32(qix[z], _mm512_set1_epi32(d)), qbase, 4));
        /* score lane p needs element kb[p % HP] + d of the key chunk */
        _mm512_store_si512(s.kidx[d], _mm512_add_epi32(_mm512_permutexvar_epi32(_mm512_and_si512(lane, hmask), kbv),
                                                       _mm512_set1_epi32(d)));
    }
    /* value lanes e = d*HP + hl */
    for (int wv = 0; wv < s.NW; wv++) {
        const __m512i e = _mm512_add_epi32(lane, _mm512_set1_epi32(16 * wv));
        const __m512i d = _mm512_srli_epi32(e, (unsigned)hs), hl = _mm512_and_si512(e, hmask);
        const __mmask16 real = _mm512_cmplt_epi32_mask(d, _mm512_set1_epi32(hd)) & _mm512_cmplt_epi32_mask(hl, Hcv);
        _mm512_store_si512(s.vidx[wv], _mm512_maskz_add_epi32(real, _mm512_permutexvar_epi32(hl, kbv), d));
    }
    /* output (hl, d) at hl*hd + d comes from value lane d*HP + hl */
    const __m512i dstep = _mm512_mullo_epi32(lane, _mm512_set1_epi32(HP));
    for (int hl = 0; hl < Hc; hl++)
        _mm512_mask_storeu_epi32(s.oidx + hl * hd, tail_mask(hd), _mm512_add_epi32(dstep, _mm512_set1_epi32(hl)));

    s.mbase = a->mask ? a->mask + (int64_t)i0 * nk : NULL;
    s.open = nk;
    if (a->mask)
        for (int i = i0; i < i0 + ni && s.open > 0; i++) {
            const int z = zero_prefix(a->mask + (int64_t)i * nk, s.open);
            if (z < s.open) s.open = z;
        }

    const int E = 16 / s.Ls, G = p->G;
    if (s.Ls < 16 && (E == 2 || (E == 4 && G * hd <= 16)) && (G & (G - 1)) == 0 && E / 2 * G <= 16) {
        if (E == 2) ss_scores_packed(&s, 2);
        else ss_scores_packed(&s, 4);
    } else switch (s.Ls <= 16 ? 1 : s.Ls / 16) {
    case 1: ss_scores(&s, 1, 8); break;
    case 2: ss_scores(&s, 2, 4); break;
    case 3: ss_scores(&s, 3, 2); break;
    default: ss_scores(&s, 4, 2); break;
    }
    ss_softmax(&s);
#define SS_V(hp, nw) case hp * 16 + nw: \
        if (ni == 1) ss_values(&s, hp, nw, true); else ss_values(&s, hp, nw, false); break;
    switch (HP * 16 + s.NW) {
    SS_V(1, 1)
    SS_V(2, 1) SS_V(2, 2)
    SS_V(4, 1) SS_V(4, 2) SS_V(4, 4)
    SS_V(8, 1) SS_V(8, 2) SS_V(8, 4) SS_V(8, 8)
    SS_V(16, 1) SS_V(16, 2) SS_V(16, 4) SS_V(16, 8)
    default: SPRIG_ASSERT(!"attention: unplanned small-head shape");
    }
#undef SS_V
}
