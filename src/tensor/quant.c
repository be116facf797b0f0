/*
 * tensor/quant — see quant.h. Reference quantizers and dequantizers of
 * Q4_1, Q5_0, Q5_1 and the K-quants. Every expression below keeps the
 * operand order of llama.cpp's reference (the build has no FMA contraction,
 * -ffp-contract=off), because the bytes must match: a product w*x*l is
 * (w*x)*l, integers meet floats by conversion, sums run in index order.
 */
#include "tensor/quant.h"
#include "tensor/types.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define QK  SPRIG_QK
#define QKK SPRIG_QK_K
#define GROUP_MAX_EPS 1e-15f    /* below this amax a group is all zeros */

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

/* Round to nearest, ties to even, by adding 1.5 * 2^23 and reading the
 * mantissa: exact for |f| <= 2^22 - 1; outside (or NaN) a defined but
 * meaningless value, as in llama.cpp. No float-to-int conversion, so no UB. */
static inline int nearest_int(float f)
{
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* C's truncating float-to-int for the 32-blocks' (int8_t)(x + 0.5f),
 * defined (0) where the cast would not be (NaN, out of range). */
static inline int trunc_i8(float v) { return v > -129.0f && v < 128.0f ? (int)(int8_t)(int)v : 0; }

static inline float h2f(sprig_f16 h) { return sprig_f16_to_f32(h); }
static inline sprig_f16 f2h(float f) { return sprig_f32_to_f16(f); }

/* The block to quantize: x itself, or, when it holds a NaN or an infinity,
 * a copy in buf (of n floats) with those read as 0. */
static const float *finite_block(const float *x, int n, float *buf)
{
    int i = 0;
    while (i < n && isfinite(x[i])) i++;
    if (i == n) return x;
    for (int j = 0; j < n; j++) buf[j] = isfinite(x[j]) ? x[j] : 0.0f;
    return buf;
}

/* ================================================================ 32-blocks */

void sprig_q4_1_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        float d = h2f(b[i].d), m = h2f(b[i].m);
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = (float)(b[i].qs[j] & 15) * d + m;
            dst[j + QK / 2] = (float)(b[i].qs[j] >> 4) * d + m;
        }
    }
}

/* min/max affine: d = (max - min) / 15, q = trunc((x - min) / d + 0.5) */
void sprig_q4_1_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_block_q4_1 *b = dst;
    float buf[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = finite_block(src + i * QK, QK, buf);
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK; j++) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 15, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f2h(d);
        b[i].m = f2h(min);
        for (int j = 0; j < QK / 2; j++) {
            int q0 = imin(15, trunc_i8((x[j] - min) * id + 0.5f));
            int q1 = imin(15, trunc_i8((x[j + QK / 2] - min) * id + 0.5f));
            b[i].qs[j] = (uint8_t)((unsigned)q0 | ((unsigned)q1 << 4));
        }
    }
}

void sprig_q5_0_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        float d = h2f(b[i].d);
        uint32_t qh;
        memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < QK / 2; j++) {
            int h0 = (int)((qh >> j) << 4) & 0x10, h1 = (int)(qh >> (j + 12)) & 0x10;
            dst[j] = (float)(((b[i].qs[j] & 15) | h0) - 16) * d;
            dst[j + QK / 2] = (float)(((b[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

/* symmetric: the value of largest magnitude maps to -16 */
void sprig_q5_0_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_block_q5_0 *b = dst;
    float buf[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = finite_block(src + i * QK, QK, buf);
        float amax = 0, max = 0;
        for (int j = 0; j < QK; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -16, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f2h(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; j++) {
            int q0 = (uint8_t)imin(31, trunc_i8(x[j] * id + 16.5f));
            int q1 = (uint8_t)imin(31, trunc_i8(x[j + QK / 2] * id + 16.5f));
            b[i].qs[j] = (uint8_t)((q0 & 15) | ((q1 & 15) << 4));
            qh |= (uint32_t)((q0 & 0x10) >> 4) << j;
            qh |= (uint32_t)((q1 & 0x10) >> 4) << (j + QK / 2);
        }
        memcpy(b[i].qh, &qh, 4);
    }
}

void sprig_q5_1_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        float d = h2f(b[i].d), m = h2f(b[i].m);
        uint32_t qh;
        memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < QK / 2; j++) {
            int h0 = (int)((qh >> j) << 4) & 0x10, h1 = (int)(qh >> (j + 12)) & 0x10;
            dst[j] = (float)((b[i].qs[j] & 15) | h0) * d + m;
            dst[j + QK / 2] = (float)((b[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

void sprig_q5_1_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_block_q5_1 *b = dst;
    float buf[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = finite_block(src + i * QK, QK, buf);
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK; j++) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 31, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = f2h(d);
        b[i].m = f2h(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; j++) {
            int q0 = trunc_i8((x[j] - min) * id + 0.5f) & 0xFF;
            int q1 = trunc_i8((x[j + QK / 2] - min) * id + 0.5f) & 0xFF;
            b[i].qs[j] = (uint8_t)((q0 & 15) | ((q1 & 15) << 4));
            qh |= (uint32_t)((q0 & 0x10) >> 4) << j;
            qh |= (uint32_t)((q1 & 0x10) >> 4) << (j + QK / 2);
        }
        memcpy(b[i].qh, &qh, 4);
    }
}

/* ================================================================ scale searches */

/* Scale and min for n values quantized to 0..nmax as x ~ scale * L + min
 * (min <= 0; returned as -min in *the_min): start from the min/max grid,
 * then try nstep + 1 grids (nmax + rmin + rdelta * is levels over the range)
 * and keep the weighted least-squares fit with the smallest weighted error
 * (absolute when use_mad, else squared). L gets the chosen levels. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                           float rmin, float rdelta, int nstep, int use_mad)
{
    uint8_t Laux[32];   /* [n], n <= 32 */
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)imax(0, imin(nmax, nearest_int(iscale * (x[i] - min))));
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = imax(0, imin(nmax, nearest_int(iscale * (x[i] - min))));
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * (float)Laux[i] + this_min - x[i];
            diff = use_mad ? fabsf(diff) : diff * diff;
            err += w[i] * diff;
        }
        if (err < best_error) {
            memcpy(L, Laux, (size_t)n);
            best_error = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

/* The largest |x[i]| (first on ties) and, in *max, that x[i] with its sign. */
static float absmax_signed(int n, const float *x, float *max)
{
    float amax = 0;
    *max = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            *max = x[i];
        }
    }
    return amax;
}

/* Symmetric scale for n values quantized to -nmax..nmax-1 (stored + nmax in
 * L), weights x^2: the value of largest magnitude maps to -nmax, then 18
 * nearby scales (nmax +- 0.1 .. 0.9) are tried and the best least-squares
 * fit kept. */
static float fit_scale_sym(int n, int nmax, const float *x, int8_t *L)
{
    float max;
    const float amax = absmax_signed(n, x, &max);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i]))));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q3_K's symmetric fit: start from amax -> -nmax, then up to 5 passes of
 * moving single levels while the weighted (x^2) fit improves. L gets
 * levels + nmax. */
static float fit_scale_q3(int n, int nmax, const float *x, int8_t *L)
{
    float max;
    const float amax = absmax_signed(n, x, &max);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * (float)L[i] * (float)L[i];
            int nl = imax(-nmax, imin(nmax - 1, nearest_int(x[i] * sl2 / slx)));
            if (nl == L[i]) continue;
            slx += w * x[i] * (float)nl;
            sl2 += w * (float)nl * (float)nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Pack 2-bit levels L[256] the K-quant way: byte j/4 + l of each 128-half
 * holds L[j+l], L[j+l+32], L[j+l+64], L[j+l+96] in bits 0-1, 2-3, 4-5, 6-7. */
static void pack_2bit(const uint8_t *L, uint8_t *qs)
{
    for (int j = 0; j < QKK; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* ================================================================ Q2_K */

void sprig_q2_k_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q2_k *b = src;
    for (int64_t i = 0; i < n / QKK; i++) {
        const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
        const uint8_t *q = b[i].qs;
        int is = 0;
        for (int h = 0; h < QKK; h += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int half = 0; half < 2; half++) {
                    uint8_t sc = b[i].scales[is++];
                    float dl = d * (float)(sc & 0xF), ml = dmin * (float)(sc >> 4);
                    for (int l = 0; l < 16; l++) *dst++ = dl * (float)((q[l + 16 * half] >> shift) & 3) - ml;
                }
    }
}

static void q2_k_block(const float *x, sprig_block_q2_k *y)
{
    uint8_t L[QKK];
    float w[16], mins[QKK / 16], scales[QKK / 16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QKK / 16; j++) {
        for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
        scales[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
        float iscale = 15.f / max_scale;
        for (int j = 0; j < QKK / 16; j++) y->scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
        y->d = f2h(max_scale / 15.f);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = f2h(0.f);
    }
    if (max_min > 0) {
        float iscale = 15.f / max_min;
        for (int j = 0; j < QKK / 16; j++) y->scales[j] |= (uint8_t)((unsigned)nearest_int(iscale * mins[j]) << 4);
        y->dmin = f2h(max_min / 15.f);
    } else {
        y->dmin = f2h(0.f);
    }
    for (int j = 0; j < QKK / 16; j++) {
        const float d = h2f(y->d) * (float)(y->scales[j] & 0xF);
        if (d == 0) continue;
        const float dm = h2f(y->dmin) * (float)(y->scales[j] >> 4);
        for (int l = 0; l < 16; l++) L[16 * j + l] = (uint8_t)imax(0, imin(3, nearest_int((x[16 * j + l] + dm) / d)));
    }
    pack_2bit(L, y->qs);
}

void sprig_q2_k_from_f32(const float *src, void *dst, int64_t n)
{
    float buf[QKK];
    for (int64_t i = 0; i < n / QKK; i++) q2_k_block(finite_block(src + i * QKK, QKK, buf), (sprig_block_q2_k *)dst + i);
}

/* ================================================================ Q3_K */

/* The 16 6-bit scales of a Q3_K block (biased by 32): low nibbles in bytes
 * 0..7 (j < 8 low half, j >= 8 high half), top 2 bits in bytes 8..11. */
static int q3_scale(const uint8_t *s, int j)
{
    int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (int)(int8_t)((lo | (hi << 4)) - 32);
}

void sprig_q3_k_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q3_k *b = src;
    for (int64_t i = 0; i < n / QKK; i++) {
        const float d = h2f(b[i].d);
        const uint8_t *q = b[i].qs, *hm = b[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int h = 0; h < QKK; h += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1))
                for (int half = 0; half < 2; half++) {
                    float dl = d * (float)q3_scale(b[i].scales, is++);
                    for (int l = 0; l < 16; l++) {
                        int k = l + 16 * half;
                        *dst++ = dl * (float)(((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4));
                    }
                }
    }
}

static void q3_k_block(const float *x, sprig_block_q3_k *y)
{
    int8_t L[QKK];
    float scales[QKK / 16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QKK / 16; j++) {
        scales[j] = fit_scale_q3(16, 4, x + 16 * j, L + 16 * j);
        float a = fabsf(scales[j]);
        if (a > amax) {
            amax = a;
            max_scale = scales[j];
        }
    }
    memset(y->scales, 0, sizeof y->scales);
    if (max_scale != 0) {
        float iscale = -32.f / max_scale;
        for (int j = 0; j < QKK / 16; j++) {
            int l = (int8_t)nearest_int(iscale * scales[j]);
            l = imax(-32, imin(31, l)) + 32;
            if (j < 8) y->scales[j] = (uint8_t)(l & 0xF);
            else y->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
            y->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y->d = f2h(1 / iscale);
    } else {
        y->d = f2h(0.f);
    }
    for (int j = 0; j < QKK / 16; j++) {
        float d = h2f(y->d) * (float)q3_scale(y->scales, j);
        if (d == 0) continue;
        for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t)(imax(-4, imin(3, nearest_int(x[16 * j + l] / d))) + 4);
    }
    /* high bit of quant j: hmask byte j % 32, bit j / 32 */
    memset(y->hmask, 0, sizeof y->hmask);
    uint8_t Lu[QKK];
    for (int j = 0; j < QKK; j++) {
        int l = L[j];
        if (l > 3) {
            y->hmask[j % 32] |= (uint8_t)(1 << (j / 32));
            l -= 4;
        }
        Lu[j] = (uint8_t)l;
    }
    pack_2bit(Lu, y->qs);
}

void sprig_q3_k_from_f32(const float *src, void *dst, int64_t n)
{
    float buf[QKK];
    for (int64_t i = 0; i < n / QKK; i++) q3_k_block(finite_block(src + i * QKK, QKK, buf), (sprig_block_q3_k *)dst + i);
}

/* ================================================================ Q4_K / Q5_K */

/* The shared part of Q4_K and Q5_K: 8 sub-blocks of 32 fitted with
 * fit_scale_min (weights rms + |x|), scales and mins to 6 bits under f16
 * super-scales, then every value re-quantized against the stored scales.
 * Fills d, dmin, scales[12] and L[256] (0..nmax). */
static void k4_scales(const float *x, int nmax, float rmin, int nstep, sprig_f16 *dd, sprig_f16 *dmin, uint8_t *sc12,
                      uint8_t *L)
{
    float w[32], mins[QKK / 32], scales[QKK / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QKK / 32; j++) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = fit_scale_min(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QKK / 32; j++) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        if (ls > 63) ls = 63;
        if (lm > 63) lm = 63;
        if (j < 4) {
            sc12[j] = ls;
            sc12[j + 4] = lm;
        } else {
            sc12[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            sc12[j - 4] |= (uint8_t)((ls >> 4) << 6);
            sc12[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *dd = f2h(max_scale / 63.f);
    *dmin = f2h(max_min / 63.f);
    for (int j = 0; j < QKK / 32; j++) {
        uint8_t sc, m;
        sprig_k4_scale_min(j, sc12, &sc, &m);
        const float d = h2f(*dd) * (float)sc;
        if (d == 0) continue;
        const float dm = h2f(*dmin) * (float)m;
        for (int l = 0; l < 32; l++) L[32 * j + l] = (uint8_t)imax(0, imin(nmax, nearest_int((x[32 * j + l] + dm) / d)));
    }
}

void sprig_q4_k_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q4_k *b = src;
    for (int64_t i = 0; i < n / QKK; i++) {
        const float d = h2f(b[i].d), min = h2f(b[i].dmin);
        const uint8_t *q = b[i].qs;
        for (int j = 0; j < QKK / 32; j += 2, q += 32) {
            uint8_t sc, m;
            sprig_k4_scale_min(j, b[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            sprig_k4_scale_min(j + 1, b[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; l++) *dst++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *dst++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

static void q4_k_block(const float *x, sprig_block_q4_k *y)
{
    uint8_t L[QKK];
    k4_scales(x, 15, -1.f, 20, &y->d, &y->dmin, y->scales, L);
    for (int j = 0; j < QKK; j += 64)
        for (int l = 0; l < 32; l++) y->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

void sprig_q4_k_from_f32(const float *src, void *dst, int64_t n)
{
    float buf[QKK];
    for (int64_t i = 0; i < n / QKK; i++) q4_k_block(finite_block(src + i * QKK, QKK, buf), (sprig_block_q4_k *)dst + i);
}

void sprig_q5_k_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q5_k *b = src;
    for (int64_t i = 0; i < n / QKK; i++) {
        const float d = h2f(b[i].d), min = h2f(b[i].dmin);
        const uint8_t *ql = b[i].qs, *qh = b[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < QKK / 32; j += 2, ql += 32, u1 = (uint8_t)(u1 << 2), u2 = (uint8_t)(u2 << 2)) {
            uint8_t sc, m;
            sprig_k4_scale_min(j, b[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            sprig_k4_scale_min(j + 1, b[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; l++) *dst++ = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *dst++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

static void q5_k_block(const float *x, sprig_block_q5_k *y)
{
    uint8_t L[QKK];
    k4_scales(x, 31, -0.5f, 15, &y->d, &y->dmin, y->scales, L);
    memset(y->qh, 0, sizeof y->qh);
    /* 64-value group g: low nibbles of L[64g + l] and L[64g + l + 32] in
     * qs[32g + l]; their bit 4 in qh[l], bits 2g and 2g + 1 */
    for (int g = 0; g < QKK / 64; g++)
        for (int l = 0; l < 32; l++) {
            int l1 = L[64 * g + l], l2 = L[64 * g + l + 32];
            if (l1 > 15) {
                l1 -= 16;
                y->qh[l] |= (uint8_t)(1 << (2 * g));
            }
            if (l2 > 15) {
                l2 -= 16;
                y->qh[l] |= (uint8_t)(2 << (2 * g));
            }
            y->qs[32 * g + l] = (uint8_t)(l1 | (l2 << 4));
        }
}

void sprig_q5_k_from_f32(const float *src, void *dst, int64_t n)
{
    float buf[QKK];
    for (int64_t i = 0; i < n / QKK; i++) q5_k_block(finite_block(src + i * QKK, QKK, buf), (sprig_block_q5_k *)dst + i);
}

/* ================================================================ Q6_K */

void sprig_q6_k_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q6_k *b = src;
    for (int64_t i = 0; i < n / QKK; i++) {
        const float d = h2f(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        const int8_t *sc = b[i].scales;
        for (int h = 0; h < QKK; h += 128, ql += 64, qh += 32, sc += 8, dst += 128)
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l] = d * (float)sc[is] * (float)q1;
                dst[l + 32] = d * (float)sc[is + 2] * (float)q2;
                dst[l + 64] = d * (float)sc[is + 4] * (float)q3;
                dst[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
    }
}

static void q6_k_block(const float *x, sprig_block_q6_k *y)
{
    int8_t L[QKK];
    float scales[QKK / 16];
    float max_scale = 0, max_abs = 0;
    for (int ib = 0; ib < QKK / 16; ib++) {
        scales[ib] = fit_scale_sym(16, 32, x + 16 * ib, L + 16 * ib);
        float a = fabsf(scales[ib]);
        if (a > max_abs) {
            max_abs = a;
            max_scale = scales[ib];
        }
    }
    if (max_abs < GROUP_MAX_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    float iscale = -128.f / max_scale;
    y->d = f2h(1 / iscale);
    for (int ib = 0; ib < QKK / 16; ib++) y->scales[ib] = (int8_t)imin(127, nearest_int(iscale * scales[ib]));
    for (int j = 0; j < QKK / 16; j++) {
        float d = h2f(y->d) * (float)y->scales[j];
        if (d == 0) continue;
        for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t)(imax(-32, imin(31, nearest_int(x[16 * j + l] / d))) + 32);
    }
    /* 128-value half h: low nibbles of L[h+l], L[h+l+64] in ql[64h'+l],
     * of L[h+l+32], L[h+l+96] in ql[64h'+l+32]; the top 2 bits of all four
     * in qh[32h'+l] */
    uint8_t *ql = y->ql, *qh = y->qh;
    for (int j = 0; j < QKK; j += 128, ql += 64, qh += 32)
        for (int l = 0; l < 32; l++) {
            uint8_t a = (uint8_t)L[j + l], b = (uint8_t)L[j + l + 32], c = (uint8_t)L[j + l + 64], e = (uint8_t)L[j + l + 96];
            ql[l] = (uint8_t)((a & 0xF) | ((c & 0xF) << 4));
            ql[l + 32] = (uint8_t)((b & 0xF) | ((e & 0xF) << 4));
            qh[l] = (uint8_t)((a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6));
        }
}

void sprig_q6_k_from_f32(const float *src, void *dst, int64_t n)
{
    float buf[QKK];
    for (int64_t i = 0; i < n / QKK; i++) q6_k_block(finite_block(src + i * QKK, QKK, buf), (sprig_block_q6_k *)dst + i);
}
