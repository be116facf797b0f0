/*
 * tensor/expf-avx2.h — sprig_expf_poly (ops.c) on 8 lanes, for the AVX2
 * kernel files (attention-avx2.c's softmax, ops-avx2.c's SwiGLU), which are
 * the only files built with AVX2/FMA enabled and so the only ones that may
 * include this. One copy, so every AVX2 kernel's exponential has the spec's
 * bits lane by lane: the same operations in the same order, fmadd where the
 * spec says fmaf, +0 below -87, the input clamped to 88 above (NaN stays).
 */
#ifndef SPRIG_TENSOR_EXPF_AVX2_H
#define SPRIG_TENSOR_EXPF_AVX2_H

#include <immintrin.h>

static inline __attribute__((always_inline)) __m256 sprig_exp8(__m256 x)
{
    const __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);   /* all ones: the result is +0 */
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);                                /* 88 < x ? 88 : x */
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
    const __m256 kf = _mm256_add_ps(t, magic);
    const __m256 nf = _mm256_sub_ps(kf, magic);
    __m256 r = _mm256_fmadd_ps(nf, _mm256_set1_ps(-0.693359375f), x);
    r = _mm256_fmadd_ps(nf, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 r2 = _mm256_mul_ps(r, r);
    __m256 y = _mm256_fmadd_ps(p, r2, r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    __m256i eb = _mm256_sub_epi32(_mm256_castps_si256(kf), _mm256_set1_epi32(0x4B400000 - 127));
    eb = _mm256_slli_epi32(eb, 23);
    return _mm256_andnot_ps(zero, _mm256_mul_ps(y, _mm256_castsi256_ps(eb)));
}

#endif
