/*
 * tensor/matmul-kern — the private interface between the matmul driver
 * (matmul.c: packing, activation quantization, threading, reference) and the
 * SIMD kernel families (matmul-avx512.c, matmul-avx2.c). Not for other modules.
 *
 * Packed weight layout (built by matmul.c, read by the kernels). Output
 * columns are cut into panels of SPRIG_MM_PANEL = 16 (one zmm of f32 / int32
 * lanes); the last panel is zero-padded. Panel p starts at
 * packed + p * sprig_mm_panel_bytes(type, n_in) (a multiple of 64) and holds:
 *   F32   float    w[n_in][16]                 w[k][c] = W[16p+c][k]
 *   F16   uint16   w[n_in][16]
 *   BF16  uint16   w[n_in][16]
 *   Q8_0  uint8    qs[nb][8][16][4]            qs[b][j][c][i] = q of W[16p+c][32b+4j+i]
 *                                              (XOR 0x80 when the family's q8_xor is set)
 *         uint16   d[nb][16]                   f16 block scales, after all the qs
 *   Q4_0  uint8    qs[nb][4][16][4]            = raw GGUF byte qs[4t+i] of column c:
 *                                              low nibble is k = 4t+i, high is k = 16+4t+i
 *         uint16   d[nb][16]
 * with nb = n_in / 32. So a 64-byte load is 16 columns x 4 consecutive k.
 *
 * Quantized activations (built once per sprig_act) are 48-byte records, one
 * per (block b, row r), block-major: rec[b][r] holds the int8 q[32], the
 * float scale d and the offset corrections c8 = -128 * sum(q) (for
 * u8 = q ^ 0x80 weights) and c4 = -8 * sum(q) (for Q4_0 nibbles), so the exact
 * int32 dot is c + sum(u8 * s8). Every field of every row of a tile then sits
 * at a constant offset from one pointer per block, and a quantizer writes
 * each block's record whole.
 */
#ifndef SPRIG_TENSOR_MATMUL_KERN_H
#define SPRIG_TENSOR_MATMUL_KERN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define SPRIG_MM_PANEL 16

typedef struct sprig_mm_qblock {
    int8_t  q[32];
    float   d;
    int32_t c8, c4;
    int32_t pad;
} sprig_mm_qblock;
_Static_assert(sizeof(sprig_mm_qblock) == 48, "activation record is 48 bytes");

/* One kernel call: rows [0, n) of the activations times panels [p0, p1) of one weight. */
typedef struct sprig_mm_job {
    int            type;
    int64_t        n_in, n_out;
    const uint8_t *packed;     /* panel 0 */
    size_t         pstride;    /* bytes per panel */
    int            n;          /* activation rows */
    const float   *x;          /* [n][n_in] float activations (float weights) */
    const sprig_mm_qblock *aq; /* [nb][n] quantized activations */
    float         *y;          /* [n][n_out] */
    int64_t        p0, p1;     /* panel range */
} sprig_mm_job;

typedef void (*sprig_mm_kernel_fn)(const sprig_mm_job *job);

/* Quantize one activation row of k = 32 * nb floats (rule in matmul.c); block b
 * goes to out[b * stride]. */
typedef void (*sprig_mm_quant_fn)(const float *x, int64_t nb, int64_t stride, sprig_mm_qblock *out);

/* A register-only loop of `iters` iterations for peak measurements: int8 dot
 * products (int8 = true) or fp32 FMAs; returns the arithmetic ops done (a
 * multiply-add counts 2). */
typedef double (*sprig_mm_peak_fn)(bool int8, uint64_t iters);

struct sprig_mm_family {
    const char *name;            /* "avx512-vnni", "avx2" */
    bool q8_xor;                 /* Q8_0 packed as q ^ 0x80 */
    sprig_mm_kernel_fn f32, f16, bf16, q8_0, q4_0;
    sprig_mm_quant_fn quant;
    sprig_mm_peak_fn peak;
    /* Panels one tile of n activation rows covers for weights of `type`: the
     * threads split a matmul at multiples of it, so tiles stay whole. */
    int (*tile_panels)(int type, int n);
};

extern const struct sprig_mm_family sprig_mm_family_avx512;
extern const struct sprig_mm_family sprig_mm_family_avx2;

/* The family new weights are packed for (NULL: reference), and the best one
 * the CPU has whatever SPRIG_NO_SIMD or forcing says (NULL: none). */
const struct sprig_mm_family *sprig_mm_family_current(void);
const struct sprig_mm_family *sprig_mm_family_best(void);

/* Bytes per panel of the packed layout (multiple of 64); 0 for other types. */
size_t sprig_mm_panel_bytes(int type, int64_t n_in);

/* The scalar block quantizer (the spec the SIMD quantizers must equal); also
 * fills c8 and c4. */
void sprig_mm_quant_block_ref(const float *x, sprig_mm_qblock *out);

#endif
