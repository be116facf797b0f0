/*
 * tensor/types — the tensor type table and the scalar conversions.
 *
 * Type ids are ggml's (GGUF files are shared with the ecosystem), append-only.
 * The table knows every ggml type's block size and bytes per block, so a GGUF
 * with, say, Q4_K tensors is validated exactly and then refused by name;
 * `can_compute` marks the types sprig has kernels for (F32, F16, BF16, Q8_0,
 * Q4_0). Block layouts are llama.cpp's and are pinned by static asserts:
 *   Q8_0: | f16 d | i8 qs[32] |          x[j] = d * qs[j]
 *   Q4_0: | f16 d | u8 qs[16] |          x[j] = d * ((qs[j] & 15) - 8),
 *                                         x[j+16] = d * ((qs[j] >> 4) - 8)
 * The row conversions here are the plain-C reference (the spec).
 */
#ifndef SPRIG_TENSOR_TYPES_H
#define SPRIG_TENSOR_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum sprig_type {
    SPRIG_TYPE_F32  = 0,
    SPRIG_TYPE_F16  = 1,
    SPRIG_TYPE_Q4_0 = 2,
    SPRIG_TYPE_Q8_0 = 8,
    SPRIG_TYPE_BF16 = 30,
    SPRIG_TYPE_COUNT = 42     /* one past the highest ggml id the table knows */
};

#define SPRIG_QK 32   /* block size of Q8_0 and Q4_0 */

typedef uint16_t sprig_f16;
typedef uint16_t sprig_bf16;

typedef struct { sprig_f16 d; int8_t qs[SPRIG_QK]; } sprig_block_q8_0;
typedef struct { sprig_f16 d; uint8_t qs[SPRIG_QK / 2]; } sprig_block_q4_0;
_Static_assert(sizeof(sprig_block_q8_0) == 34, "q8_0 block is 34 bytes");
_Static_assert(sizeof(sprig_block_q4_0) == 18, "q4_0 block is 18 bytes");

typedef void (*sprig_to_f32_fn)(const void *src, float *dst, int64_t n);
typedef void (*sprig_from_f32_fn)(const float *src, void *dst, int64_t n);

struct sprig_type_traits {
    const char *name;        /* ggml's name: "f32", "q8_0", ... ; NULL = id unused/removed */
    int64_t blck;            /* elements per block */
    size_t  type_size;       /* bytes per block */
    bool    can_compute;     /* sprig has kernels for it */
    sprig_to_f32_fn   to_f32;    /* reference dequantize (NULL unless can_compute) */
    sprig_from_f32_fn from_f32;  /* reference quantize   (NULL unless can_compute) */
};

/* NULL when the id is out of range or not a type ggml defines. */
const struct sprig_type_traits *sprig_type_traits(int type);
const char *sprig_type_name(int type);          /* "?" when unknown */
int sprig_type_from_name(const char *name);     /* -1 when unknown; case-insensitive */

/* Bytes of a row of n elements; false when n is not a multiple of the block or overflows. */
bool sprig_row_bytes(int type, int64_t n, size_t *out);

/* Scalar conversions, exact and identical to the hardware instructions
 * (F16C vcvtph2ps / vcvtps2ph with round-to-nearest-even). */
float     sprig_f16_to_f32(sprig_f16 h);
sprig_f16 sprig_f32_to_f16(float f);
static inline float sprig_bf16_to_f32(sprig_bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
sprig_bf16 sprig_f32_to_bf16(float f);   /* round-to-nearest-even, NaN kept quiet */

#endif
