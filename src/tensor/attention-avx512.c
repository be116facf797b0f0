/*
 * tensor/attention-avx512 — the AVX-512 work-item kernel of sprig_attention.
 *
 * One item = up to 64 rows (query x head pairs) of one kv head. Per lane it
 * performs exactly the operations of sprig_attention_ref (attention.c):
 *   scores  lanes = rows: qt[d][rows] (the item's queries transposed once)
 *           times the broadcast key element k_j[d], fmadd for d = 0..hd-1 in
 *           order — each lane is the reference's sequential fmaf chain; then
 *           * scale, + mask (gathered per lane), masked max.
 *   softmax lanes = rows: p = exp(s - mx) (sprig_expf_poly on 16 lanes),
 *           p = 0 past a row's causal limit, sum += p in key order.
 *   values  lanes = d: o_r += p_rj * v_j for j in key order, skipped when
 *           p_rj == 0; the accumulators live in registers for 4 rows x 64
 *           dims, are stored back to out between V tiles (exact), and are
 *           divided by the row's sum at the end.
 * Keys are streamed once per item; f16 keys/values are converted with
 * vcvtph2ps (identical to sprig_f16_to_f32). Several keys are in flight in
 * the score loop so the fmadd chains overlap.
 */
#include "tensor/attention.h"

#include <immintrin.h>
#include <math.h>

#define AI static inline __attribute__((always_inline))

/* sprig_expf_poly on 16 lanes (the scheme is in ops.c). */
AI __m512 exp16(__m512 x)
{
    const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), x);
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
    return _mm512_maskz_mul_ps((__mmask16)~zero, y, _mm512_castsi512_ps(eb));
}

static inline __mmask16 tail_mask(int n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1); }

/* Convert one f16 row of hd elements to f32. */
static inline void f16_row(float *dst, const uint16_t *src, int hd)
{
    for (int d = 0; d < hd; d += 16) {
        const __mmask16 m = tail_mask(hd - d);
        const __m256i h = _mm256_maskz_loadu_epi16(m, src + d);
        _mm512_mask_storeu_ps(dst + d, m, _mm512_cvtph_ps(h));
    }
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
    const float *mbase;            /* mask row of the item's first query */
    _Alignas(64) int32_t lim[SPRIG_ATTN_ROWS];
    _Alignas(64) int32_t midx[SPRIG_ATTN_ROWS];
    _Alignas(64) float sum[SPRIG_ATTN_ROWS];
    float *orow[SPRIG_ATTN_ROWS];
};

/* ---------------------------------------------------------------- scores */

/* Scores of NV row vectors against KK keys at a time; leaves the row maxima in mxo. */
AI void scores(struct item *it, __m512 *mxo, const int NV, const int KK)
{
    const sprig_attn_args *a = it->a;
    const int hd = a->hd, rp = it->rp, jmax = it->jmax;
    const int64_t koff = (int64_t)it->g * hd;
    const __m512 scale = _mm512_set1_ps(a->scale);
    __m512 mx[4];
    __m512i lv[4], mi[4];
    __mmask16 live[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        mx[v] = _mm512_set1_ps(-INFINITY);
        lv[v] = _mm512_load_si512(it->lim + 16 * v);
        mi[v] = _mm512_load_si512(it->midx + 16 * v);
        live[v] = tail_mask(it->nr - 16 * v);
    }
    for (int j0 = 0; j0 < jmax; j0 += KK) {
        const int kn = jmax - j0 < KK ? jmax - j0 : KK;
        const float *kp[8];
#pragma GCC unroll 8
        for (int kk = 0; kk < KK; kk++) {
            const int j = j0 + (kk < kn ? kk : 0);
            if (a->kv_type == SPRIG_TYPE_F16) {
                if (kk < kn) f16_row(it->w.kb + kk * hd, (const uint16_t *)a->k + j * a->kv_stride + koff, hd);
                kp[kk] = it->w.kb + (kk < kn ? kk : 0) * hd;
            } else {
                kp[kk] = (const float *)a->k + j * a->kv_stride + koff;
            }
        }
        __m512 acc[8][4];
#pragma GCC unroll 8
        for (int kk = 0; kk < KK; kk++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[kk][v] = _mm512_setzero_ps();
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
            float *sj = it->w.sc + (size_t)j * (size_t)rp;
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                __m512 s = _mm512_mul_ps(acc[kk][v], scale);
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
    for (int v = 0; v < NV; v++) mxo[v] = mx[v];
}

/* ---------------------------------------------------------------- softmax */

AI void softmax(struct item *it, const __m512 *mx, const int NV)
{
    const int rp = it->rp, jmax = it->jmax;
    __m512 sum[4];
    __m512i lv[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        sum[v] = _mm512_setzero_ps();
        lv[v] = _mm512_load_si512(it->lim + 16 * v);
    }
    float *sj = it->w.sc;
    for (int j = 0; j < jmax; j++, sj += rp) {
        const __m512i jv = _mm512_set1_epi32(j);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __m512 s = _mm512_load_ps(sj + 16 * v);
            const __mmask16 ok = _mm512_cmpgt_epi32_mask(lv[v], jv);
            const __m512 p = _mm512_maskz_mov_ps(ok, exp16(_mm512_sub_ps(s, mx[v])));
            sum[v] = _mm512_add_ps(sum[v], p);
            _mm512_store_ps(sj + 16 * v, p);
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) _mm512_store_ps(it->sum + 16 * v, sum[v]);
}

/* ---------------------------------------------------------------- values */

#define RB 4   /* rows per register block */

/* o_r[c0 .. c0+16*NC) += p_rj * v_j[...] for keys [j0, j1) of a V tile. */
AI void pv_chunk(struct item *it, const float *const *vp, int j0, int j1, int c0, __mmask16 last, const int NC)
{
    const int rp = it->rp;
    for (int rb = 0; rb < it->nr; rb += RB) {
        float *o[RB];
        __m512 acc[RB][4];
#pragma GCC unroll 4
        for (int r = 0; r < RB; r++) {
            o[r] = it->orow[rb + r] + c0;
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                acc[r][c] = _mm512_maskz_loadu_ps(c == NC - 1 ? last : (__mmask16)0xFFFF, o[r] + 16 * c);
        }
        const float *pj = it->w.sc + (size_t)j0 * (size_t)rp + rb;
        for (int j = j0; j < j1; j++, pj += rp) {
            const float *v = vp[j - j0] + c0;
            __m512 vv[4];
#pragma GCC unroll 4
            for (int c = 0; c < NC; c++)
                vv[c] = _mm512_maskz_loadu_ps(c == NC - 1 ? last : (__mmask16)0xFFFF, v + 16 * c);
#pragma GCC unroll 4
            for (int r = 0; r < RB; r++) {
                const float p = pj[r];
                if (p == 0.0f) continue;
                const __m512 pb = _mm512_set1_ps(p);
#pragma GCC unroll 4
                for (int c = 0; c < NC; c++) acc[r][c] = _mm512_fmadd_ps(pb, vv[c], acc[r][c]);
            }
        }
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
    const int64_t voff = (int64_t)it->g * hd;
    for (int r = 0; r < it->nr; r++)
        for (int d = 0; d < hd; d += 16) _mm512_mask_storeu_ps(it->orow[r] + d, tail_mask(hd - d), _mm512_setzero_ps());
    const float *vp[SPRIG_ATTN_TV];
    for (int j0 = 0; j0 < jmax; j0 += SPRIG_ATTN_TV) {
        const int j1 = jmax - j0 < SPRIG_ATTN_TV ? jmax : j0 + SPRIG_ATTN_TV;
        for (int j = j0; j < j1; j++) {
            if (a->kv_type == SPRIG_TYPE_F16) {
                float *dst = it->w.vb + (j - j0) * hd;
                f16_row(dst, (const uint16_t *)a->v + j * a->kv_stride + voff, hd);
                vp[j - j0] = dst;
            } else {
                vp[j - j0] = (const float *)a->v + j * a->kv_stride + voff;
            }
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
    sprig_attn_work_split(slot, (size_t)it.rp, (size_t)nk, &it.w);
    const int i_first = r0 / group, i_last = (r0 + nr - 1) / group;
    it.jmax = 0;
    for (int r = 0; r < it.rp; r++) {
        float *qt = it.w.qt + r;
        if (r < nr) {
            const int R = r0 + r, i = R / group, h = g * group + R % group;
            it.lim[r] = a->mask ? nk : nk - n + i + 1;
            it.midx[r] = (i - i_first) * nk;
            it.orow[r] = a->out + i * qd + (int64_t)h * hd;
            const float *q = a->q + i * qd + (int64_t)h * hd;
            for (int d = 0; d < hd; d++) qt[(size_t)d * (size_t)it.rp] = q[d];
            if (it.lim[r] > it.jmax) it.jmax = it.lim[r];
        } else {
            it.lim[r] = 0;
            it.midx[r] = 0;
            it.orow[r] = it.w.dummy;
            for (int d = 0; d < hd; d++) qt[(size_t)d * (size_t)it.rp] = 0.0f;
        }
    }
    it.mbase = a->mask ? a->mask + (int64_t)i_first * nk : NULL;
    it.open = nk;
    if (a->mask)
        for (int i = i_first; i <= i_last && it.open > 0; i++) {
            const int z = zero_prefix(a->mask + (int64_t)i * nk, it.open);
            if (z < it.open) it.open = z;
        }

    __m512 mx[4];
    switch (it.rp / 16) {
    case 1: scores(&it, mx, 1, 8); softmax(&it, mx, 1); break;
    case 2: scores(&it, mx, 2, 6); softmax(&it, mx, 2); break;
    case 3: scores(&it, mx, 3, 4); softmax(&it, mx, 3); break;
    default: scores(&it, mx, 4, 4); softmax(&it, mx, 4); break;
    }
    values(&it);
}
