/*
 * tensor/matmul — weight x activations for a batch of n rows (n = 1..64+).
 *
 * y[r][o] = sum_k W[o][k] * x[r][k] for every activation row r, where W is
 * a GGUF matrix with ne = [n_in, n_out] (row-major (n_out, n_in)).
 *
 * Contract (the reason this file exists):
 *  - Each weight tile is read once and applied to all n rows (register
 *    blocking across rows): a batch of 8 costs little more than one row while
 *    decoding is memory-bound. That is what makes verifying a tree cheap.
 *  - Numerics do not depend on n, on which rows are batched together, or on
 *    the thread count: y[r][o] is computed by the same sequence of roundings
 *    whatever else is in the batch. Float weights accumulate
 *    acc = fmaf(W[o][k], x[r][k], acc) for k = 0..n_in-1 in order. Q8_0/Q4_0
 *    weights use activations quantized ONCE per input to int8 blocks of 32
 *    (da = amax/127, q = nearest-even(x * (1/da)); blocks with inf/NaN get
 *    da = NaN, blocks whose da would be below FLT_MIN get da = 0, q = 0), an
 *    exact int32 dot per block, then acc = fmaf((float)isum, dw * da, acc)
 *    block by block. The plain-C reference computes exactly this, so every
 *    SIMD kernel must equal it bit for bit (tests/test-matmul.c checks).
 *    Q4_1/Q5_0/Q5_1 weights take the same activation blocks: an exact int32
 *    isum of the unsigned codes u times q, then Q5_0 adds
 *    fmaf((float)(isum - 16 * sum q), dw * da, acc) and Q4_1/Q5_1 add
 *    fmaf((float)isum, dw * da, acc), then fmaf((float)sum q, m * da, acc)
 *    (details in matmul.c); they run the reference on the raw rows.
 *  - K-quant weights (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: super-blocks of 256,
 *    n_in % 256 == 0) use activations quantized ONCE per input into records
 *    of 256 (same rule over 256 floats, but d = 1 / (127/amax) in F32 as
 *    llama.cpp's q8_K; bsum[j] = sum of q[16j..16j+15]).
 *    Per super-block, two exact int32 sums over the weight's units u
 *    (llama.cpp's dequantize_row_q*_K element order) and activations a:
 *      Q4_K (8 sub-blocks of 32, 6-bit scale sc_j and min m_j, u in 0..15)
 *        I = sum_j sc_j * sum_i u*a     M = sum_j m_j * (bsum[2j] + bsum[2j+1])
 *      Q5_K  the same with u in 0..31
 *      Q6_K (16 sub-blocks of 16, int8 sc_j, u in 0..63)
 *        I = sum_j sc_j * (sum_i u*a - 32 * bsum[j])            no M
 *      Q3_K (16 sub-blocks, sc_j = 6-bit scale - 32, u = low 2 bits +
 *            4 * hmask bit in 0..7)
 *        I = sum_j sc_j * (sum_i u*a - 4 * bsum[j])             no M
 *      Q2_K (16 sub-blocks, sc_j = scales[j] & 15, m_j = scales[j] >> 4,
 *            u in 0..3)
 *        I = sum_j sc_j * sum_i u*a     M = sum_j m_j * bsum[j]
 *    then, super-block by super-block: acc = fmaf((float)I, d * da, acc),
 *    and for Q2_K/Q4_K/Q5_K acc = fmaf((float)(-M), dmin * da, acc) (d, dmin:
 *    the block's f16 scales as float, da the activation record's scale; each
 *    product one float multiply). |I|, |M| < 2^28 (bounds in matmul.c). This
 *    mirrors llama.cpp's q8_K scheme, so results track llama.cpp closely,
 *    and like every type here a row's bits depend neither on n nor threads.
 *    A kernel family may lack a K type: its weights then run the plain-C
 *    reference on the raw rows (slow but exact).
 *  - Kernels (AVX-512 VNNI, AVX2, reference) are chosen once at run time
 *    from CPUID; SPRIG_NO_SIMD=1 forces the reference. sprig_weight_init packs
 *    a copy of the weight for the family selected at that moment and the
 *    weight keeps using that family: after sprig_kernels_force(), initialise
 *    the weights again to run them with the new family.
 *  - No allocation per call: the caller provides the activation scratch.
 *  - Bad shapes/types given to sprig_weight_init are errors naming the
 *    weight; misuse of sprig_matmul (n_in != act k, scratch too small, more
 *    than 16 weights) is a broken invariant and aborts via SPRIG_ASSERT.
 */
#ifndef SPRIG_TENSOR_MATMUL_H
#define SPRIG_TENSOR_MATMUL_H

#include "base/err.h"
#include "base/pool.h"
#include "tensor/types.h"

/* The kernels' speed revision: bump it when a change alters how fast some
 * kernel runs (tile shapes, prefetch), so that costs measured with the
 * earlier kernels (tree auto's cached T(n) profiles, spec/profile) are
 * measured again instead of reused. */
#define SPRIG_MM_SPEED_REV 7

/* A weight matrix prepared for the kernels. */
typedef struct sprig_weight {
    int      type;         /* storage type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K */
    int64_t  n_in;         /* K = ne[0] */
    int64_t  n_out;        /* N = ne[1] */
    const void *raw;       /* GGUF rows (usually a view into the mmap): row o at raw + o*row_bytes */
    size_t   row_bytes;
    void    *packed;       /* kernel-specific layout, owned; NULL when the reference path runs */
    size_t   packed_bytes;
    int      kernel;       /* which kernel family packed it (internal) */
    bool     mapped;       /* the family's raw-row kernel reads `raw` in place (no packed copy) */
} sprig_weight;

/* Prepare `w` over raw GGUF data (kept as a view, not copied) and build the
 * packed layout for the selected kernels. Fails with a message naming `name`
 * for unsupported types or shapes. */
sprig_status sprig_weight_init(sprig_weight *w, const char *name, int type, const void *raw,
                               int64_t n_in, int64_t n_out, sprig_error *err);
void sprig_weight_free(sprig_weight *w);

/* The same, but the weight stays in its GGUF rows (a view of the mapped
 * file, never copied) where the kernel family has a raw-row kernel for the
 * type (matmul-rows-avx2.c: Q8_0, Q4_K, Q5_K, Q6_K); other types are packed
 * as sprig_weight_init does. Same numerics either way. For weights of which
 * a forward reads a few (experts): resident memory is what was touched. */
bool sprig_weight_maps(int type);   /* whether sprig_weight_init_mapped keeps `type` in place now */
sprig_status sprig_weight_init_mapped(sprig_weight *w, const char *name, int type, const void *raw,
                                      int64_t n_in, int64_t n_out, sprig_error *err);

/* Dequantize row o of W into out[n_in] (embedding lookup). */
void sprig_weight_row_f32(const sprig_weight *w, int64_t o, float *out);

/* Activations shared by several matmuls (Q, K, V read the same normed x).
 * The int8 form is built on first use by a quantized weight and reused. */
typedef struct sprig_act {
    const float *x;        /* [n][k] row-major, row stride k */
    int      n;
    int64_t  k;
    void    *scratch;      /* sprig_act_scratch_bytes(max_n, max_k) bytes, 64-aligned */
    size_t   scratch_bytes;
    bool     q8_ready;     /* internal: the 32-block form is built */
    bool     qk_ready;     /* internal: the 256-element form is built */
} sprig_act;

size_t sprig_act_scratch_bytes(int max_n, int64_t max_k);
void   sprig_act_init(sprig_act *a, const float *x, int n, int64_t k, void *scratch, size_t scratch_bytes);

/* y[i] ([a->n][w[i]->n_out]) = a->x W[i]^T for m (1..16) weights that share
 * the input, as ONE pool dispatch (output columns of all m split across
 * threads; a second, short dispatch first quantizes the rows when a weight is
 * quantized and the act has not been quantized yet). All w[i]->n_in must
 * equal a->k. */
void sprig_matmul(sprig_pool *pool, sprig_act *a, int m, const sprig_weight *const *w, float *const *y);
/* The same for rows x[n][k] given directly (a sprig_act made over scratch). */
void sprig_matmul_rows(sprig_pool *pool, const float *x, int n, int64_t k, void *scratch, size_t scratch_bytes, int m,
                       const sprig_weight *const *w, float *const *y);

/* sprig_matmul, telling it the m_next weights the caller multiplies next
 * (with an activation of the same row count): a thread with no more work in
 * this matmul prefetches the head of its share of those, so the next matmul
 * starts from cache while the ops between the two run. */
void sprig_matmul_then(sprig_pool *pool, sprig_act *a, int m, const sprig_weight *const *w, float *const *y,
                       int m_next, const sprig_weight *const *next);

/* The plain-C reference on the raw GGUF rows (the spec; used by tests and SPRIG_NO_SIMD). */
void sprig_matmul_ref(const sprig_weight *w, const float *x, int n, float *y);

/* Name of the selected kernel family ("avx512-vnni", "avx2", "reference"). */
const char *sprig_kernels_name(void);
/* The families built into the library ("reference avx2 avx512-vnni"), or
 * (cpu) only those this CPU runs; static strings, same order. */
const char *sprig_kernels_compiled(bool cpu);
/* Force a family for tests/benchmarks: "reference", "avx2", "avx512" (or
 * "auto": back to the CPUID choice); false if unavailable. Affects weights
 * initialised afterwards only. */
bool sprig_kernels_force(const char *family);

/* The highest kernel level the environment allows (SPRIG_NO_SIMD=1,
 * SPRIG_KERNELS=reference|avx2|avx512|auto); every dispatcher picks the best
 * the CPU has at or below it. */
enum { SPRIG_KERNELS_REF = 0, SPRIG_KERNELS_AVX2 = 1, SPRIG_KERNELS_AVX512 = 2 };
int sprig_kernels_cap(void);
/* The level a family name means ("reference"/"ref"/"c", "avx2",
 * "avx512"/"avx512-vnni"); -1 when unknown. */
int sprig_kernels_level(const char *name);

/* CPU features found by CPUID (family and model as Intel's and AMD's
 * manuals combine the base and extended fields; 0 where CPUID is absent). */
struct sprig_cpu_features {
    bool avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16;
    char vendor[13];       /* "AuthenticAMD", "GenuineIntel", ...; "" if unknown */
    unsigned family, model;
};
const struct sprig_cpu_features *sprig_cpu_features(void);

/* How the SIMD kernels prefetch their weight streams from DRAM, chosen per
 * CPU by a table in cpu.c (SPRIG_PREFETCH=near|far|auto overrides it, for
 * comparing the two on one machine). Only speed depends on it, never a bit
 * of any result.
 *  - near: a few KB ahead with the NTA hint (into L1); measured best on
 *    Zen 5, whose cores keep enough L1 misses open for that to stream;
 *  - far: 16-34 KB ahead with the T1 hint (into L2); measured on Zen 4
 *    (AMD family 19h), where near left decode at half the DRAM bandwidth:
 *    one L1 holds too few lines in flight while the kernel computes. The
 *    default for CPUs the table does not name (Zen 3's L1 is Zen 4's;
 *    Intel's guides prefetch into L2). */
enum { SPRIG_PF_NEAR = 0, SPRIG_PF_FAR = 1 };
int         sprig_prefetch_scheme(void);
const char *sprig_prefetch_name(void);     /* "near" or "far" */
/* What chose it: "cpu table: ...", "default", or "SPRIG_PREFETCH". */
const char *sprig_prefetch_why(void);
/* Use `scheme` from now on (tests run every tile under both); -1: back to
 * the CPU's (or SPRIG_PREFETCH's) choice. */
void        sprig_prefetch_force(int scheme);

#endif
