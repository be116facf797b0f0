/*
 * tensor/types — the tensor type table and the scalar conversions.
 *
 * Type ids are ggml's (GGUF files are shared with the ecosystem), append-only.
 * The table knows every ggml type's block size and bytes per block, so a GGUF
 * with, say, IQ2_XS tensors is validated exactly and then refused by name.
 * `can_compute` marks the types sprig reads: they have reference row
 * conversions here (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the
 * K-quants Q2_K..Q6_K); whether a matmul kernel exists for one is the matmul
 * side's own per-type table, which refuses the others by name.
 * Block layouts are llama.cpp's and are pinned by static asserts
 * (ggml's nibble/bit orders; "h" = high bits):
 *   Q8_0: | f16 d | i8 qs[32] |                        x[j] = d * qs[j]
 *   Q4_0: | f16 d | u8 qs[16] |                        x[j] = d * ((qs[j] & 15) - 8),
 *                                                       x[j+16] = d * ((qs[j] >> 4) - 8)
 *   Q4_1: | f16 d | f16 m | u8 qs[16] |                x[j] = d * q + m  (q: nibbles as Q4_0)
 *   Q5_0: | f16 d | u8 qh[4] | u8 qs[16] |             x[j] = d * (q - 16), bit 4 of q[j] in qh bit j
 *   Q5_1: | f16 d | f16 m | u8 qh[4] | u8 qs[16] |     x[j] = d * q + m
 * K-quants: super-blocks of SPRIG_QK_K = 256 in 16 sub-blocks of 16 or 8 of 32,
 * each with its own 4/6/8-bit scale (and min) under a f16 super-scale:
 *   Q2_K (84):  | u8 scales[16] (lo nibble scale, hi nibble min) | u8 qs[64] | f16 d | f16 dmin |
 *               x = d * sc * q - dmin * m, 2-bit q
 *   Q3_K (110): | u8 hmask[32] | u8 qs[64] | u8 scales[12] (16 x 6-bit, biased by 32) | f16 d |
 *               x = d * (sc - 32) * (q - 4 if the hmask bit is clear else q), 2+1-bit q
 *   Q4_K (144): | f16 d | f16 dmin | u8 scales[12] (8 x 6-bit scale + 8 x 6-bit min) | u8 qs[128] |
 *               x = d * sc * q - dmin * m, 4-bit q, 8 sub-blocks of 32
 *   Q5_K (176): Q4_K's fields then u8 qh[32] (bit 4 of each q)
 *   Q6_K (210): | u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d |
 *               x = d * scales[s] * (q - 32), 4+2-bit q, 16 sub-blocks of 16
 * The row conversions here are the plain-C reference (the spec). The
 * quantizers produce the same bytes as llama.cpp's reference quantizers
 * (quantize_row_*_ref, no importance matrix; the same float operations in
 * the same order, ties to even). Non-finite inputs: llama.cpp leaves them
 * undefined; here every block that holds one is quantized as if each NaN or
 * infinity were 0 (finite values keep llama.cpp's bytes).
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
    SPRIG_TYPE_Q4_1 = 3,
    SPRIG_TYPE_Q5_0 = 6,
    SPRIG_TYPE_Q5_1 = 7,
    SPRIG_TYPE_Q8_0 = 8,
    SPRIG_TYPE_Q2_K = 10,
    SPRIG_TYPE_Q3_K = 11,
    SPRIG_TYPE_Q4_K = 12,
    SPRIG_TYPE_Q5_K = 13,
    SPRIG_TYPE_Q6_K = 14,
    SPRIG_TYPE_BF16 = 30,
    SPRIG_TYPE_COUNT = 42     /* one past the highest ggml id the table knows */
};

#define SPRIG_QK 32    /* block size of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 */
#define SPRIG_QK_K 256 /* super-block size of the K-quants */

typedef uint16_t sprig_f16;
typedef uint16_t sprig_bf16;

typedef struct { sprig_f16 d; int8_t qs[SPRIG_QK]; } sprig_block_q8_0;
typedef struct { sprig_f16 d; uint8_t qs[SPRIG_QK / 2]; } sprig_block_q4_0;
typedef struct { sprig_f16 d, m; uint8_t qs[SPRIG_QK / 2]; } sprig_block_q4_1;
typedef struct { sprig_f16 d; uint8_t qh[4]; uint8_t qs[SPRIG_QK / 2]; } sprig_block_q5_0;
typedef struct { sprig_f16 d, m; uint8_t qh[4]; uint8_t qs[SPRIG_QK / 2]; } sprig_block_q5_1;
_Static_assert(sizeof(sprig_block_q8_0) == 34, "q8_0 block is 34 bytes");
_Static_assert(sizeof(sprig_block_q4_0) == 18, "q4_0 block is 18 bytes");
_Static_assert(sizeof(sprig_block_q4_1) == 20, "q4_1 block is 20 bytes");
_Static_assert(sizeof(sprig_block_q5_0) == 22, "q5_0 block is 22 bytes");
_Static_assert(sizeof(sprig_block_q5_1) == 24, "q5_1 block is 24 bytes");

typedef struct {
    uint8_t scales[SPRIG_QK_K / 16];    /* [16] low nibble: scale, high nibble: min */
    uint8_t qs[SPRIG_QK_K / 4];         /* [64] 2-bit quants */
    sprig_f16 d, dmin;
} sprig_block_q2_k;
typedef struct {
    uint8_t hmask[SPRIG_QK_K / 8];      /* [32] high bit of each quant */
    uint8_t qs[SPRIG_QK_K / 4];         /* [64] low 2 bits */
    uint8_t scales[12];                 /* 16 x 6-bit scales */
    sprig_f16 d;
} sprig_block_q3_k;
typedef struct {
    sprig_f16 d, dmin;
    uint8_t scales[12];                 /* 8 x 6-bit scales and 8 x 6-bit mins */
    uint8_t qs[SPRIG_QK_K / 2];         /* [128] 4-bit quants */
} sprig_block_q4_k;
typedef struct {
    sprig_f16 d, dmin;
    uint8_t scales[12];
    uint8_t qh[SPRIG_QK_K / 8];         /* [32] bit 4 of each quant */
    uint8_t qs[SPRIG_QK_K / 2];         /* [128] low 4 bits */
} sprig_block_q5_k;
typedef struct {
    uint8_t ql[SPRIG_QK_K / 2];         /* [128] low 4 bits */
    uint8_t qh[SPRIG_QK_K / 4];         /* [64] high 2 bits */
    int8_t scales[SPRIG_QK_K / 16];     /* [16] 8-bit scales */
    sprig_f16 d;
} sprig_block_q6_k;
_Static_assert(sizeof(sprig_block_q2_k) == 84, "q2_K block is 84 bytes");
_Static_assert(sizeof(sprig_block_q3_k) == 110, "q3_K block is 110 bytes");
_Static_assert(sizeof(sprig_block_q4_k) == 144, "q4_K block is 144 bytes");
_Static_assert(sizeof(sprig_block_q5_k) == 176, "q5_K block is 176 bytes");
_Static_assert(sizeof(sprig_block_q6_k) == 210, "q6_K block is 210 bytes");

typedef void (*sprig_to_f32_fn)(const void *src, float *dst, int64_t n);
typedef void (*sprig_from_f32_fn)(const float *src, void *dst, int64_t n);

struct sprig_type_traits {
    const char *name;        /* ggml's name: "f32", "q8_0", ... ; NULL = id unused/removed */
    int64_t blck;            /* elements per block */
    size_t  type_size;       /* bytes per block */
    bool    can_compute;     /* sprig reads it: to_f32 and from_f32 exist (matmul kernels: see matmul.c) */
    sprig_to_f32_fn   to_f32;    /* reference dequantize (NULL unless can_compute) */
    sprig_from_f32_fn from_f32;  /* reference quantize   (NULL unless can_compute) */
    bool    kquant;          /* a K-quant: super-blocks of SPRIG_QK_K with sub-block scales */
};

/* NULL when the id is out of range or not a type ggml defines. */
const struct sprig_type_traits *sprig_type_traits(int type);
const char *sprig_type_name(int type);          /* "?" when unknown */
int sprig_type_from_name(const char *name);     /* -1 when unknown; case-insensitive */

/* The names of the types sprig reads (can_compute), for messages. */
const char *sprig_type_readable_names(void);
/* Can sprig write this type (a reference from_f32 exists)? */
bool sprig_type_quantizable(int type);
/* Is it one of the K-quants (Q2_K..Q8_K)? */
bool sprig_type_is_kquant(int type);

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
