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
 * K-quant weights (super-blocks of 256, ns = n_in / 256): a panel holds ns
 * super-block records of fixed size (below), then the f16 scales of every
 * super-block: d[ns][16] (Q3_K, Q6_K) or dd[ns][2][16] (d, then dmin: Q2_K,
 * Q4_K, Q5_K), padded to a multiple of 64. In a record, every raw byte array
 * A of the GGUF block (len bytes) becomes A'[len/4][16][4] with
 * A'[t][c][i] = A[4t+i] of column c (the raw bits, so element order is
 * llama.cpp's; one 64-byte load = 16 columns x 4 raw bytes), and the
 * sub-block scales are unpacked to bytes, 16 columns contiguous (16 bytes =
 * one vpmovzxbd/vpmovsxbd to 16 int32 lanes, or two halves of 8 for AVX2):
 *   Q2_K  qs[16][16][4] @0      raw qs
 *         sc[8][16][2]  @1024   raw scales bytes: sc[p][c][e] = scales[2p+e]
 *                               (low nibble scale, high nibble min of sub-block 2p+e)
 *                               record 1280 bytes (raw 16 x 84 = 1344 with d, dmin)
 *   Q3_K  qs[16][16][4] @0      raw qs
 *         hm[8][16][4]  @1024   raw hmask
 *         sc[16][16]    @1536   int8 scale - 32 of sub-block j (16 elements)
 *                               record 1792 (+3.6% with d over raw 16 x 110)
 *   Q4_K  qs[32][16][4] @0      raw qs
 *         sc[8][16]     @2048   uint8 6-bit scale of sub-block j (32 elements)
 *         m[4][16][2]   @2176   uint8 6-bit min: m[p][c][e] = min of sub-block 2p+e
 *                               record 2304 (+2.8% over raw 16 x 144)
 *   Q5_K  qs[32][16][4] @0      raw qs
 *         qh[8][16][4]  @2048   raw qh
 *         sc[8][16]     @2560   as Q4_K
 *         m[4][16][2]   @2688   as Q4_K
 *                               record 2816 (+2.3% over raw 16 x 176)
 *   Q6_K  ql[32][16][4] @0      raw ql
 *         qh[16][16][4] @2048   raw qh
 *         sc[16][16]    @3072   int8 raw scale of sub-block j (16 elements)
 *                               record 3328 (0% over raw 16 x 210)
 * The min pairs (and Q2_K's scale pairs) widen with one vpmovzxbw into 16
 * int32 lanes of two int16 each, ready for vpdpwssd / vpmaddwd against a
 * broadcast pair of activation block sums. Columns of the zero-padded last
 * panel have all-zero records and scales (their outputs are never stored).
 * The layout is the same for every family (AVX-512: 16 lanes; AVX2: two
 * halves of 8), and so are the 256-element activation records, so a family
 * may borrow another's K-quant kernel: an AVX2 kernel for a type the AVX-512
 * family lacks can sit in the AVX-512 family's slot (a kernel must take any
 * panel range [p0, p1); tile_panels only sets the split's grain).
 *
 * Quantized activations (built once per sprig_act) are 48-byte records, one
 * per (block b, row r), block-major: rec[b][r] holds the int8 q[32], the
 * float scale d and the offset corrections c8 = -128 * sum(q) (for
 * u8 = q ^ 0x80 weights) and c4 = -8 * sum(q) (for Q4_0 nibbles), so the exact
 * int32 dot is c + sum(u8 * s8). Every field of every row of a tile then sits
 * at a constant offset from one pointer per block, and a quantizer writes
 * each block's record whole.
 *
 * K-quant weights use a second form built from the same rows (lazily, once
 * per sprig_act): 320-byte records of 256 elements, one per (super-block s,
 * row r), block-major rec[s][r], quantized by the same rule over 256 floats,
 * with the sums of q over each 16 (bsum) and each 32 (bsum32) elements. The
 * numerics contract of the K types is in matmul.h.
 */
#ifndef SPRIG_TENSOR_MATMUL_KERN_H
#define SPRIG_TENSOR_MATMUL_KERN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define SPRIG_MM_PANEL 16

struct sprig_weight;

typedef struct sprig_mm_qblock {
    int8_t  q[32];
    float   d;
    int32_t c8, c4;
    int32_t pad;
} sprig_mm_qblock;
_Static_assert(sizeof(sprig_mm_qblock) == 48, "activation record is 48 bytes");

#define SPRIG_MM_QK_K 256   /* elements of a K-quant super-block */

typedef struct sprig_mm_kblock {
    int8_t  q[SPRIG_MM_QK_K];
    float   d;
    int16_t bsum[16];       /* bsum[j] = sum of q[16j .. 16j+15] (|.| <= 2032) */
    int16_t bsum32[8];      /* bsum32[j] = bsum[2j] + bsum[2j+1] (|.| <= 4064) */
    uint8_t pad[12];
} sprig_mm_kblock;
_Static_assert(sizeof(sprig_mm_kblock) == 320, "K activation record is 320 bytes (5 x 64)");

/* The ggml type ids of the K-quants (ggml's numbering). */
enum { SPRIG_MM_Q2_K = 10, SPRIG_MM_Q3_K = 11, SPRIG_MM_Q4_K = 12, SPRIG_MM_Q5_K = 13, SPRIG_MM_Q6_K = 14 };

/* The raw GGUF K-quant blocks (llama.cpp's block_q*_K; f16 stored as uint16). */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } sprig_kblk_q2_k;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } sprig_kblk_q3_k;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } sprig_kblk_q4_k;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } sprig_kblk_q5_k;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } sprig_kblk_q6_k;
_Static_assert(sizeof(sprig_kblk_q2_k) == 84, "q2_K block is 84 bytes");
_Static_assert(sizeof(sprig_kblk_q3_k) == 110, "q3_K block is 110 bytes");
_Static_assert(sizeof(sprig_kblk_q4_k) == 144, "q4_K block is 144 bytes");
_Static_assert(sizeof(sprig_kblk_q5_k) == 176, "q5_K block is 176 bytes");
_Static_assert(sizeof(sprig_kblk_q6_k) == 210, "q6_K block is 210 bytes");

/* Packed K-quant super-block records (layout above): bytes and offsets. */
enum {
    SPRIG_MM_Q2K_REC = 1280, SPRIG_MM_Q2K_SC = 1024,
    SPRIG_MM_Q3K_REC = 1792, SPRIG_MM_Q3K_HM = 1024, SPRIG_MM_Q3K_SC = 1536,
    SPRIG_MM_Q4K_REC = 2304, SPRIG_MM_Q4K_SC = 2048, SPRIG_MM_Q4K_M = 2176,
    SPRIG_MM_Q5K_REC = 2816, SPRIG_MM_Q5K_QH = 2048, SPRIG_MM_Q5K_SC = 2560, SPRIG_MM_Q5K_M = 2688,
    SPRIG_MM_Q6K_REC = 3328, SPRIG_MM_Q6K_QH = 2048, SPRIG_MM_Q6K_SC = 3072,
};

/* One kernel call: rows [0, n) of the activations times panels [p0, p1) of one weight. */
typedef struct sprig_mm_job {
    int            type;
    int64_t        n_in, n_out;
    const uint8_t *packed;     /* panel 0 */
    size_t         pstride;    /* bytes per panel */
    int            n;          /* activation rows */
    const float   *x;          /* [n][n_in] float activations (float weights) */
    const sprig_mm_qblock *aq; /* [nb][n] quantized activations (Q8_0, Q4_0) */
    const sprig_mm_kblock *ak; /* [ns][n] 256-element quantized activations (K types) */
    float         *y;          /* [n][n_out] */
    int64_t        p0, p1;     /* panel range */
    bool           pf_far;     /* prefetch scheme (matmul.h): far (T1, into L2) or near (NTA) */
} sprig_mm_job;

typedef void (*sprig_mm_kernel_fn)(const sprig_mm_job *job);

/* Kernels on a weight's raw GGUF rows (a weight mapped, not packed:
 * sprig_weight_init_mapped): the same job, with packed = the first raw row
 * and pstride = the bytes per row; panels [p0, p1) name output rows
 * [16 p0, min(16 p1, n_out)). NULL: that type is packed as usual. */
struct sprig_mm_rows {
    sprig_mm_kernel_fn q8_0, q4_k, q5_k, q6_k;
};
extern const struct sprig_mm_rows sprig_mm_rows_avx2, sprig_mm_rows_avx512;

/* Quantize one activation row of k = 32 * nb floats (rule in matmul.c); block b
 * goes to out[b * stride]. */
typedef void (*sprig_mm_quant_fn)(const float *x, int64_t nb, int64_t stride, sprig_mm_qblock *out);
/* The same for the 256-element form: ns super-blocks, record s to out[s * stride]. */
typedef void (*sprig_mm_kquant_fn)(const float *x, int64_t ns, int64_t stride, sprig_mm_kblock *out);

/* A register-only loop of `iters` iterations for peak measurements: int8 dot
 * products (int8 = true) or fp32 FMAs; returns the arithmetic ops done (a
 * multiply-add counts 2). */
typedef double (*sprig_mm_peak_fn)(bool int8, uint64_t iters);

struct sprig_mm_family {
    const char *name;            /* "avx512-vnni", "avx2" */
    bool q8_xor;                 /* Q8_0 packed as q ^ 0x80 */
    sprig_mm_kernel_fn f32, f16, bf16, q8_0, q4_0;
    /* K-quants; NULL: weights of that type are not packed for this family
     * and run the plain-C reference on their raw rows. */
    sprig_mm_kernel_fn q2_k, q3_k, q4_k, q5_k, q6_k;
    /* Q4_1, Q5_0, Q5_1 (llama-quantize's fallbacks for rows that are not
     * multiples of 256); NULL as above. */
    sprig_mm_kernel_fn q4_1, q5_0, q5_1;
    sprig_mm_quant_fn quant;
    sprig_mm_kquant_fn quant_k;  /* NULL: the scalar rule */
    sprig_mm_peak_fn peak;
    /* Panels one tile of n activation rows covers for weights of `type`: the
     * threads split a matmul at multiples of it, so tiles stay whole. */
    int (*tile_panels)(int type, int n);
    const struct sprig_mm_rows *rows;   /* raw-row kernels (NULL: none) */
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
/* The same rule over 256 floats; also fills bsum and bsum32 (pad = 0). */
void sprig_mm_kquant_block_ref(const float *x, sprig_mm_kblock *out);

/* Pack all panels of `w` (raw rows, type, shape set) into dst of
 * sprig_mm_panel_bytes(type, n_in) * panels bytes; exposed for the layout
 * tests. q8_xor as the family says. */
void sprig_mm_pack(const struct sprig_weight *w, void *dst, bool q8_xor);

#endif
