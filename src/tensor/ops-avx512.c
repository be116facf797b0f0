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
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 u = _mm512_maskz_loadu_ps(m, up + i);
        const __m512 e = exp16(_mm512_xor_ps(g, sign));
        const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, u));
    }
}
