/*
 * tensor/attention-avx2 — the AVX2/FMA work-item kernel of sprig_attention,
 * for x86 machines without AVX-512.
 *
 * Same scheme as attention-avx512.c's many-rows path, on 8 lanes, and the
 * same per-lane arithmetic as sprig_attention_ref (attention.c), so the
 * output is bit-identical to it:
 *   scores  lanes = rows: qt[d][rows] * broadcast k_j[d], fmadd over d in
 *           order (each lane the reference's fmaf chain), * scale, + mask,
 *           masked max; stored as P[j][rows] (row stride rounded up to 8).
 *   softmax p = exp(s - mx) (sprig_expf_poly on 8 lanes), 0 past a row's limit.
 *   values  lanes = d: for key j in order, per row: sum += p, and
 *           o += p * v_j unless p == 0; 2 rows x 32 dims of accumulators
 *           stay in registers across a V tile. Finally o / sum.
 * f16 rows are converted with vcvtph2ps (identical to sprig_f16_to_f32);
 * int8 and rotated-code rows (tensor/kvrows.h) are decoded per tile of keys
 * as they stream, each element the one product the spec computes.
 */
#include "tensor/attention.h"
#include "tensor/expf-avx2.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))

/* sprig_attn_softcap on 8 lanes. */
AI __m256 softcap8(__m256 s, __m256 c, __m256 inv)
{
    const __m256 e = sprig_exp8(_mm256_mul_ps(_mm256_set1_ps(2.0f), _mm256_mul_ps(s, inv)));
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_mul_ps(c, _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one))));
}

/* Integer lane mask with the first n (0..8) lanes set. */
static inline __m256i lanes(int n)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

/* Convert one f16 row of hd elements to f32. */
static void f16_row(float *dst, const uint16_t *src, int hd)
{
    int d = 0;
    for (; d + 8 <= hd; d += 8)
        _mm256_storeu_ps(dst + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + d))));
    if (d < hd) {
        uint16_t h[8] = { 0 };
        float f[8];
        memcpy(h, src + d, (size_t)(hd - d) * 2);
        _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
        memcpy(dst + d, f, (size_t)(hd - d) * 4);
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
        const __m256 s = _mm256_set1_ps(sprig_f16_to_f32(sprig_kvrows_u16(p + hd)));
        for (; d + 8 <= hd; d += 8) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + d)));
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_cvtepi32_ps(q), s));
        }
        break;
    }
    case SPRIG_KVROWS_T4: {
        const __m256 s = _mm256_set1_ps(sprig_f16_to_f32(sprig_kvrows_u16(p + hd / 2 + 2)));
        const __m256 lo = _mm256_loadu_ps(r->codebook), hi = _mm256_loadu_ps(r->codebook + 8);
        const __m256i sh = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4), m15 = _mm256_set1_epi32(15);
        for (; d + 8 <= hd; d += 8) {
            uint32_t w;
            memcpy(&w, p + d / 2, 4);
            const __m128i b = _mm_cvtsi32_si128((int)w);
            __m256i idx = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(b, b));
            idx = _mm256_and_si256(_mm256_srlv_epi32(idx, sh), m15);
            const __m256 c = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx),
                                              _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(c, s));
        }
        break;
    }
    case SPRIG_KVROWS_T3: {
        const __m256 s = _mm256_set1_ps(sprig_f16_to_f32(sprig_kvrows_u16(p + 3 * hd / 8 + 2)));
        const __m256 cb = _mm256_loadu_ps(r->codebook);
        const __m256i sh = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21), m7 = _mm256_set1_epi32(7);
        for (; d + 8 <= hd; d += 8) {
            const uint8_t *g = p + 3 * (d >> 3);
            const int w = (int)((uint32_t)g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16);
            const __m256i idx = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w), sh), m7);
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_permutevar8x32_ps(cb, idx), s));
        }
        break;
    }
    default:
        break;
    }
    for (; d < hd; d++) dst[d] = sprig_kvrows_elem(r, p, hd, d);
    return dst;
}

/* Slot j of kv head g of rows r, decoded (two-segment rows included). */
static inline const float *fetch(const sprig_kvrows *r, int j, int g, int hd, float *dst)
{
    const sprig_kvrows *s = sprig_kvrows_seg(r, &j);
    return dec_row(s, sprig_kvrows_at(s, j, g), hd, dst);
}

struct item {
    const sprig_attn_args *a;
    sprig_attn_work w;
    int g, nr, rp, jmax, open;     /* rp: rows rounded up to 8 (P and qt row stride) */
    const float *mbase;
    _Alignas(32) int32_t lim[SPRIG_ATTN_ROWS];
    _Alignas(32) int32_t midx[SPRIG_ATTN_ROWS];
    _Alignas(32) float mx[SPRIG_ATTN_ROWS];
    float sum[SPRIG_ATTN_ROWS];
    float *orow[SPRIG_ATTN_ROWS];
};

/* ---------------------------------------------------------------- scores */

/* Row vectors [v0, v0 + NV) against KK keys at a time. */
AI void scores_block(struct item *it, int v0, const int NV, const int KK)
{
    const sprig_attn_args *a = it->a;
    const int hd = a->hd, rp = it->rp, jmax = it->jmax;
    const __m256 scale = _mm256_set1_ps(a->scale);
    const bool capped = a->softcap > 0;
    const __m256 cap = _mm256_set1_ps(a->softcap), cap_inv = _mm256_set1_ps(capped ? 1.0f / a->softcap : 0.0f);
    __m256 mx[4];
    __m256i lv[4], mi[4], live[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
        const int vv = v < NV ? v0 + v : v0;
        mx[v] = _mm256_load_ps(it->mx + 8 * vv);
        lv[v] = _mm256_load_si256((const __m256i *)(it->lim + 8 * vv));
        mi[v] = _mm256_load_si256((const __m256i *)(it->midx + 8 * vv));
        live[v] = lanes(it->nr - 8 * vv);
    }
    for (int j0 = 0; j0 < jmax; j0 += KK) {
        const int kn = jmax - j0 < KK ? jmax - j0 : KK;
        const float *kp[4] = { 0 };
#pragma GCC unroll 4
        for (int kk = 0; kk < KK; kk++) {
            if (kk < kn) {
                sprig_kvrows_prefetch(a->kr, j0 + kk + 64, it->g, jmax);
                kp[kk] = fetch(a->kr, j0 + kk, it->g, hd, it->w.kb + kk * hd);
            }
            else kp[kk] = kp[0];
        }
        __m256 acc[4][4];
#pragma GCC unroll 4
        for (int kk = 0; kk < 4; kk++)
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) acc[kk][v] = _mm256_setzero_ps();
        const float *qt = it->w.qt + 8 * v0;
        for (int d = 0; d < hd; d++, qt += rp) {
            __m256 qv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) qv[v] = _mm256_load_ps(qt + 8 * v);
#pragma GCC unroll 4
            for (int kk = 0; kk < KK; kk++) {
                const __m256 kd = _mm256_broadcast_ss(kp[kk] + d);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[kk][v] = _mm256_fmadd_ps(qv[v], kd, acc[kk][v]);
            }
        }
#pragma GCC unroll 4
        for (int kk = 0; kk < KK; kk++) {
            if (kk >= kn) break;
            const int j = j0 + kk;
            const __m256i jv = _mm256_set1_epi32(j);
            float *sj = it->w.sc + (size_t)j * (size_t)rp + 8 * v0;
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                __m256 s = _mm256_mul_ps(acc[kk][v], scale);
                if (capped) s = softcap8(s, cap, cap_inv);
                if (it->mbase && j >= it->open) {
                    const __m256 m = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), it->mbase, _mm256_add_epi32(mi[v], jv),
                                                              _mm256_castsi256_ps(live[v]), 4);
                    s = _mm256_add_ps(s, m);
                }
                _mm256_store_ps(sj + 8 * v, s);
                const __m256 ok = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lv[v], jv));
                mx[v] = _mm256_blendv_ps(mx[v], _mm256_max_ps(s, mx[v]), ok);
            }
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) _mm256_store_ps(it->mx + 8 * (v0 + v), mx[v]);
}

static void scores(struct item *it)
{
    const int nv = it->rp / 8;
    for (int v0 = 0; v0 < nv; v0 += 4)   /* up to 32 rows per pass over the keys */
        switch (nv - v0 < 4 ? nv - v0 : 4) {
        case 1: scores_block(it, v0, 1, 4); break;
        case 2: scores_block(it, v0, 2, 4); break;
        case 3: scores_block(it, v0, 3, 2); break;
        default: scores_block(it, v0, 4, 2); break;
        }
}

/* ---------------------------------------------------------------- softmax */

static void softmax(struct item *it)
{
    const int rp = it->rp, jmax = it->jmax, nv = rp / 8;
    for (int v = 0; v < nv; v++) {
        const __m256 mx = _mm256_load_ps(it->mx + 8 * v);
        const __m256i lv = _mm256_load_si256((const __m256i *)(it->lim + 8 * v));
        float *sj = it->w.sc + 8 * v;
        for (int j = 0; j < jmax; j++, sj += rp) {
            const __m256 ok = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lv, _mm256_set1_epi32(j)));
            _mm256_store_ps(sj, _mm256_and_ps(ok, sprig_exp8(_mm256_sub_ps(_mm256_load_ps(sj), mx))));
        }
    }
}

/* ---------------------------------------------------------------- values */

#define RB 2   /* rows per register block */

/* Keys [j0, j1) of a V tile, dims [c0, c0 + 8*NC) (the last vector masked by lm). */
AI void pv_chunk(struct item *it, const float *const *vp, int j0, int j1, int c0, __m256i lm, const int NC)
{
    const size_t rp = (size_t)it->rp;
    for (int rb = 0; rb < it->nr; rb += RB) {
        float *o[RB];
        __m256 acc[RB][4];
#pragma GCC unroll 2
        for (int r = 0; r < RB; r++) {
            o[r] = it->orow[rb + r] + c0;
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                acc[r][c] = c < NC - 1 ? _mm256_loadu_ps(o[r] + 8 * c)
                          : c == NC - 1 ? _mm256_maskload_ps(o[r] + 8 * c, lm) : _mm256_setzero_ps();
        }
        float s0 = it->sum[rb], s1 = it->sum[rb + 1];
        const float *pj = it->w.sc + (size_t)j0 * rp + rb;
        for (int j = j0; j < j1; j++, pj += rp) {
            const float p0 = pj[0], p1 = pj[1];
            if (c0 == 0) { s0 += p0; s1 += p1; }
            if (p0 == 0.0f && p1 == 0.0f) continue;
            const float *v = vp[j - j0] + c0;
            __m256 vv[4];
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                vv[c] = c < NC - 1 ? _mm256_loadu_ps(v + 8 * c) : _mm256_maskload_ps(v + 8 * c, lm);
            if (p0 != 0.0f) {
                const __m256 pb = _mm256_set1_ps(p0);
#pragma GCC unroll 4
                for (int c = 0; c < NC; c++) acc[0][c] = _mm256_fmadd_ps(pb, vv[c], acc[0][c]);
            }
            if (p1 != 0.0f) {
                const __m256 pb = _mm256_set1_ps(p1);
#pragma GCC unroll 4
                for (int c = 0; c < NC; c++) acc[1][c] = _mm256_fmadd_ps(pb, vv[c], acc[1][c]);
            }
        }
        if (c0 == 0) { it->sum[rb] = s0; it->sum[rb + 1] = s1; }
#pragma GCC unroll 2
        for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++) {
                if (c < NC - 1) _mm256_storeu_ps(o[r] + 8 * c, acc[r][c]);
                else _mm256_maskstore_ps(o[r] + 8 * c, lm, acc[r][c]);
            }
    }
}

static void values(struct item *it)
{
    const sprig_attn_args *a = it->a;
    const int hd = a->hd, jmax = it->jmax;
    for (int r = 0; r < it->nr; r++) memset(it->orow[r], 0, (size_t)hd * sizeof(float));
    for (int r = 0; r < SPRIG_ATTN_ROWS; r++) it->sum[r] = 0.0f;
    const float *vp[SPRIG_ATTN_TV];
    for (int j0 = 0; j0 < jmax; j0 += SPRIG_ATTN_TV) {
        const int j1 = jmax - j0 < SPRIG_ATTN_TV ? jmax : j0 + SPRIG_ATTN_TV;
        for (int j = j0; j < j1; j++) {
            sprig_kvrows_prefetch(a->vr, j + 2 * SPRIG_ATTN_TV, it->g, jmax);
            vp[j - j0] = fetch(a->vr, j, it->g, hd, it->w.vb + (j - j0) * hd);
        }
        for (int c0 = 0; c0 < hd; c0 += 32) {
            const int cw = hd - c0 < 32 ? hd - c0 : 32;
            const int nc = (cw + 7) / 8;
            const __m256i lm = lanes(cw - 8 * (nc - 1));
            switch (nc) {
            case 1: pv_chunk(it, vp, j0, j1, c0, lm, 1); break;
            case 2: pv_chunk(it, vp, j0, j1, c0, lm, 2); break;
            case 3: pv_chunk(it, vp, j0, j1, c0, lm, 3); break;
            default: pv_chunk(it, vp, j0, j1, c0, lm, 4); break;
            }
        }
    }
    for (int r = 0; r < it->nr; r++) {
        const float s = it->sum[r];
        float *o = it->orow[r];
        for (int d = 0; d < hd; d++) o[d] = o[d] / s;
    }
}

/* ---------------------------------------------------------------- item */

static int zero_prefix(const float *row, int lim)
{
    for (int j = 0; j < lim; j++)
        if (!(row[j] == 0.0f)) return j;
    return lim;
}

void sprig_attn_item_avx2(const sprig_attn_args *a, int g, int r0, int nr, float *slot)
{
    struct item it;
    const int n = a->n, hd = a->hd, nk = a->n_keys, group = a->n_head / a->n_kv_head;
    const int64_t qd = (int64_t)a->n_head * hd;
    it.a = a;
    it.g = g;
    it.nr = nr;
    it.rp = (nr + 7) & ~7;
    /* the slot is carved for rows rounded to 16; a stride of 8 fits inside it */
    sprig_attn_work_split(slot, (size_t)((nr + 15) & ~15), (size_t)nk, &it.w);
    const int i_first = r0 / group, i_last = (r0 + nr - 1) / group;
    it.jmax = 0;
    for (int r = 0; r < SPRIG_ATTN_ROWS; r++) {
        it.mx[r] = -INFINITY;
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
    scores(&it);
    softmax(&it);
    values(&it);
}
