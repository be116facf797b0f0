/*
 * tensor/quant — reference row conversions of the llama.cpp block types
 * beyond Q8_0/Q4_0: Q4_1, Q5_0, Q5_1 (blocks of 32) and the K-quants Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K (super-blocks of 256). Block layouts: types.h.
 *
 * They are the spec for sprig's kernels and what `sprig mkmodel` writes, so
 * the quantizers reproduce llama.cpp's reference quantizers (no importance
 * matrix) byte for byte: the same scale searches (weighted least squares
 * over a few trial scales, 6-bit packed sub-block scales, ...), the same
 * float operations in the same order, and its round-to-nearest (the
 * 1.5 * 2^23 add, ties to even). Checked against bytes llama.cpp wrote, in
 * tests/test-quant.c. The dequantizers compute what llama.cpp's
 * dequantize_row_* compute, bit for bit.
 *
 * Non-finite inputs (llama.cpp asserts or writes garbage): a block holding
 * a NaN or an infinity is quantized as if each of them were 0. Finite
 * values of any size give llama.cpp's bytes. n is a multiple of the block
 * size (the callers check; the table's row-size helpers say so).
 */
#ifndef SPRIG_TENSOR_QUANT_H
#define SPRIG_TENSOR_QUANT_H

#include <stdint.h>

void sprig_q4_1_to_f32(const void *src, float *dst, int64_t n);
void sprig_q4_1_from_f32(const float *src, void *dst, int64_t n);
void sprig_q5_0_to_f32(const void *src, float *dst, int64_t n);
void sprig_q5_0_from_f32(const float *src, void *dst, int64_t n);
void sprig_q5_1_to_f32(const void *src, float *dst, int64_t n);
void sprig_q5_1_from_f32(const float *src, void *dst, int64_t n);

void sprig_q2_k_to_f32(const void *src, float *dst, int64_t n);
void sprig_q2_k_from_f32(const float *src, void *dst, int64_t n);
void sprig_q3_k_to_f32(const void *src, float *dst, int64_t n);
void sprig_q3_k_from_f32(const float *src, void *dst, int64_t n);
void sprig_q4_k_to_f32(const void *src, float *dst, int64_t n);
void sprig_q4_k_from_f32(const float *src, void *dst, int64_t n);
void sprig_q5_k_to_f32(const void *src, float *dst, int64_t n);
void sprig_q5_k_from_f32(const float *src, void *dst, int64_t n);
void sprig_q6_k_to_f32(const void *src, float *dst, int64_t n);
void sprig_q6_k_from_f32(const float *src, void *dst, int64_t n);

/* A Q4_K / Q5_K sub-block's 6-bit scale and min (j in 0..7) from the 12
 * packed bytes: j < 4 in the low 6 bits of bytes j and j + 4, j >= 4 split
 * over a nibble of byte j + 4 and the top 2 bits of bytes j - 4 and j. */
static inline void sprig_k4_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

#endif
