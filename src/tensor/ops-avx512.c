/*
 * tensor/ops-avx512 — AVX-512 kernels of the row-wise ops (ops.h).
 *
 * Each kernel computes exactly the bits of the plain-C spec in ops.c: the
 * same float operations in the same order, lane by lane (fmadd where ops.c
 * says fmaf, a true division where it divides), so a run with SPRIG_NO_SIMD=1
 * produces the same tokens. Only ops.c calls these, after checking CPUID.
 */
#include "tensor/ops.h"

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

/* sprig_expf_poly on 16 lanes (see ops.c for the scheme). */
static inline __m512 exp16(__m512 x)
{
    const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), x);          /* 88 < x ? 88 : x */
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

void sprig_swiglu_avx512(float *out, const float *gate, const float *up, int64_t n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {   /* plain stores in the body: masked ones are slow on some cores */
        const __m512 g = _mm512_loadu_ps(gate + i);
        const __m512 e = exp16(_mm512_xor_ps(g, sign));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 u = _mm512_maskz_loadu_ps(m, up + i);
        const __m512 e = exp16(_mm512_xor_ps(g, sign));
        const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, u));
    }
}

/* rmsnorm: the four partial sums of ops.c (lane k sums x[d]^2 over d = k mod 4,
 * in order, in double) for two rows per vector, four rows at a time; the
 * scale and the products as in ops.c. */
void sprig_rmsnorm_avx512(float *out, const float *x, const float *w, int n, int dim, float eps)
{
    const int d4 = dim & ~3;
    for (int r0 = 0; r0 < n; r0 += 4) {
        const int nr = n - r0 < 4 ? n - r0 : 4;
        const float *xr[4];
        for (int r = 0; r < 4; r++) xr[r] = x + (size_t)(r0 + (r < nr ? r : 0)) * (size_t)dim;
        __m512d acc01 = _mm512_setzero_pd(), acc23 = _mm512_setzero_pd();
        for (int d = 0; d < d4; d += 4) {
            const __m256 v01 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(xr[0] + d)), _mm_loadu_ps(xr[1] + d), 1);
            const __m256 v23 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(xr[2] + d)), _mm_loadu_ps(xr[3] + d), 1);
            const __m512d a = _mm512_cvtps_pd(v01), b = _mm512_cvtps_pd(v23);
            acc01 = _mm512_add_pd(acc01, _mm512_mul_pd(a, a));
            acc23 = _mm512_add_pd(acc23, _mm512_mul_pd(b, b));
        }
        double s[8];
        _mm512_storeu_pd(s, acc01);
        double t[8];
        _mm512_storeu_pd(t, acc23);
        for (int r = 0; r < nr; r++) {
            const double *p = r < 2 ? s + 4 * r : t + 4 * (r - 2);
            double s0 = p[0];
            for (int d = d4; d < dim; d++) s0 += (double)xr[r][d] * xr[r][d];
            const double sum = (s0 + p[1]) + (p[2] + p[3]);
            const __m512 scale = _mm512_set1_ps(1.0f / sqrtf((float)(sum / dim) + eps));
            float *o = out + (size_t)(r0 + r) * (size_t)dim;
            int d = 0;
            for (; d + 16 <= dim; d += 16)   /* plain stores: masked ones are slow on some cores */
                _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr[r] + d), scale), _mm512_loadu_ps(w + d)));
            if (d < dim) {
                const __mmask16 m = (__mmask16)((1u << (dim - d)) - 1);
                const __m512 xv = _mm512_maskz_loadu_ps(m, xr[r] + d);
                _mm512_mask_storeu_ps(o + d, m, _mm512_mul_ps(_mm512_mul_ps(xv, scale), _mm512_maskz_loadu_ps(m, w + d)));
            }
        }
    }
}

/* NORM RoPE with the cos/sin table: lane k of a 16-dim chunk belongs to the
 * pair k/2, whose (cos, sin) sit at table floats k & ~1 and k | 1 of the same
 * chunk; x0' = x0*c - x1*s and x1' = x1*c + x0*s as two products and one
 * add or subtract, like ops.c (the sum in the other order: same bits). */
void sprig_rope_apply_norm_avx512(float *x, const float *cs, int n, int n_head, int hd, int n_rot)
{
    const __m512i ic = _mm512_set_epi32(14, 14, 12, 12, 10, 10, 8, 8, 6, 6, 4, 4, 2, 2, 0, 0);
    const __m512i is = _mm512_set_epi32(15, 15, 13, 13, 11, 11, 9, 9, 7, 7, 5, 5, 3, 3, 1, 1);
    const __mmask16 even = 0x5555;
    /* n_rot == hd dividing 16: 16/hd heads per vector, the pattern repeats */
    const bool packed = n_rot == hd && hd <= 16 && 16 % hd == 0;
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i rep = _mm512_and_si512(lane, _mm512_set1_epi32(hd - 1));
    for (int r = 0; r < n; r++) {
        const float *t = cs + (size_t)r * (size_t)n_rot;   /* [n_rot/2][2] */
        float *xr = x + (size_t)r * (size_t)n_head * (size_t)hd;
        if (packed) {
            const __mmask16 tm = (__mmask16)((1u << n_rot) - 1);
            const __m512 tv = _mm512_permutexvar_ps(rep, _mm512_maskz_loadu_ps(tm, t));
            const __m512 c = _mm512_permutexvar_ps(ic, tv), s = _mm512_permutexvar_ps(is, tv);
            const int len = n_head * hd;
            int d = 0;
            for (; d + 16 <= len; d += 16) {
                const __m512 v = _mm512_loadu_ps(xr + d);
                const __m512 a = _mm512_mul_ps(v, c), b = _mm512_mul_ps(_mm512_permute_ps(v, 0xB1), s);
                _mm512_storeu_ps(xr + d, _mm512_mask_sub_ps(_mm512_add_ps(a, b), even, a, b));
            }
            if (d < len) {
                const __mmask16 m = (__mmask16)((1u << (len - d)) - 1);
                const __m512 v = _mm512_maskz_loadu_ps(m, xr + d);
                const __m512 a = _mm512_mul_ps(v, c), b = _mm512_mul_ps(_mm512_permute_ps(v, 0xB1), s);
                _mm512_mask_storeu_ps(xr + d, m, _mm512_mask_sub_ps(_mm512_add_ps(a, b), even, a, b));
            }
            continue;
        }
        for (int h = 0; h < n_head; h++) {
            float *xh = xr + (size_t)h * (size_t)hd;
            for (int d = 0; d < n_rot; d += 16) {
                const __mmask16 m = n_rot - d >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n_rot - d)) - 1);
                const __m512 tv = _mm512_maskz_loadu_ps(m, t + d);
                const __m512 c = _mm512_permutexvar_ps(ic, tv), s = _mm512_permutexvar_ps(is, tv);
                const __m512 v = _mm512_maskz_loadu_ps(m, xh + d);
                const __m512 a = _mm512_mul_ps(v, c), b = _mm512_mul_ps(_mm512_permute_ps(v, 0xB1), s);
                _mm512_mask_storeu_ps(xh + d, m, _mm512_mask_sub_ps(_mm512_add_ps(a, b), even, a, b));
            }
        }
    }
}

void sprig_add_avx512(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
    }
}
