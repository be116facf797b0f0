/*
 * tensor/ops-avx2 — AVX2 kernels of the row-wise ops (ops.h) for CPUs
 * without AVX-512 (Zen 2/3, Intel client parts), or with SPRIG_KERNELS=avx2.
 *
 * Only SwiGLU so far: in an 8-row llama-1b forward on the AVX2 family the
 * plain-C loop was ~2% of the samples (per element one exp, a division and
 * two products), the other row-wise ops (rmsnorm, RoPE, add) under 0.3%
 * each, so they stay in plain C here.
 *
 * Each kernel computes exactly the bits of the plain-C spec in ops.c: the
 * same float operations in the same order, lane by lane (fmadd where ops.c
 * says fmaf, a true division where it divides), as ops-avx512.c does. Only
 * ops.c calls these, after checking CPUID.
 */
#include "tensor/ops.h"
#include "tensor/expf-avx2.h"

#include <immintrin.h>

/* out[i] = gate[i] / (1 + exp(-gate[i])) * up[i]; out may alias gate. */
void sprig_swiglu_avx2(float *out, const float *gate, const float *up, int64_t n)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = sprig_exp8(_mm256_xor_ps(g, sign));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    if (i < n) {   /* the tail through a zero-padded lane block, so no load or store passes n */
        float g8[8] = { 0 }, u8[8] = { 0 }, o8[8];
        for (int64_t k = i; k < n; k++) { g8[k - i] = gate[k]; u8[k - i] = up[k]; }
        const __m256 g = _mm256_loadu_ps(g8);
        const __m256 e = sprig_exp8(_mm256_xor_ps(g, sign));
        _mm256_storeu_ps(o8, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(u8)));
        for (int64_t k = i; k < n; k++) out[k] = o8[k - i];
    }
}
