/*
 * tensor/attention — scaled dot-product attention of n queries against the
 * cached keys/values, under a causal or caller-supplied additive mask.
 *
 * Built for verifying a draft tree: the n queries of a block share the
 * history, so the kernel streams each cached key/value once for all n
 * queries (and the GQA group), not once per query.
 *
 * Exactness contract: the output of query row i is bit-identical to running
 * that query alone against the keys it can see, whatever n is, whatever the
 * thread count, and wherever the visible keys sit among masked ones: scores
 * (sequential fmaf over hd), max, exp, a sequential sum in key order, a
 * sequential V accumulation in key order; masked keys contribute an exact 0
 * (mask -1e9 => exp underflows to 0) and are skipped, never a reordering.
 * attention.c spells the arithmetic out; sprig_attention_ref is the spec and
 * every kernel (AVX-512, AVX2, plain C) equals it bit for bit.
 */
#ifndef SPRIG_TENSOR_ATTENTION_H
#define SPRIG_TENSOR_ATTENTION_H

#include "base/err.h"
#include "base/pool.h"
#include "tensor/kvrows.h"
#include "tensor/types.h"

#define SPRIG_ATTN_MAX_HD    512        /* largest head dimension the kernels take */
#define SPRIG_ATTN_MAX_KEYS  (1 << 24)  /* largest n_keys (int32 index arithmetic) */

typedef struct sprig_attn_args {
    const float *q;        /* [n][n_head*hd], already rotated */
    int n;                 /* queries */
    int n_head, n_kv_head, hd;   /* query head h uses kv head h / (n_head / n_kv_head) */
    const void *k, *v;     /* key/value rows: slot j at k + j*kv_stride elements; [n_keys][n_kv_head*hd] */
    int kv_type;           /* SPRIG_TYPE_F32 or SPRIG_TYPE_F16 */
    int64_t kv_stride;     /* elements between slots (>= n_kv_head*hd) */
    const sprig_kvrows *kr, *vr;   /* or: keys and values as records of any format and
                              layout (tensor/kvrows.h: quantized, paged); when both
                              are set, k, v, kv_type and kv_stride are not read */
    int n_keys;            /* visible slots: history + the n new ones (offset + n) */
    const float *mask;     /* [n][n_keys] additive (0 / -1e9), or NULL = causal:
                              query i sees slots < n_keys - n + i + 1 */
    float scale;           /* usually 1/sqrt(hd) */
    float softcap;         /* > 0: scores soft-capped after the scale, before the mask:
                              s = c * tanh(s / c) as sprig_attn_softcap spells it (gemma2); 0 = none */
    float *out;            /* [n][n_head*hd]; must not overlap q, k, v, mask or scratch */
    float *scratch;        /* sprig_attn_scratch_floats(...) floats */
    size_t scratch_floats; /* optional: the size of scratch in floats. When set, the
                              kernel uses no more threads than fit in it (and
                              sprig_attn_check refuses less than one thread's
                              worth); 0 = trust the caller */
} sprig_attn_args;

/* The soft-cap of a score (the spec every kernel follows lane for lane):
 * c * (1 - 2 / (e + 1)), e = sprig_expf_poly(2 * (s * inv)), inv = 1 / c:
 * tanh through the softmax's own exponential, so SIMD lanes equal it bit
 * for bit; |error| < c * 2^-22 against tanhf. */
float sprig_attn_softcap(float s, float c, float inv);

/* Scratch for a call with at most n queries, n_head heads, n_keys keys and a
 * pool of at most n_threads threads (monotone in every argument). */
size_t sprig_attn_scratch_floats(int n, int n_head, int n_keys, int n_threads);

/* Validate the arguments (shapes, type, stride, pointers); names the field. */
sprig_status sprig_attn_check(const sprig_attn_args *a, sprig_error *err);

/* Attention on the pool. Arguments that fail sprig_attn_check are a caller
 * bug: the call aborts with the message. */
void   sprig_attention(sprig_pool *pool, const sprig_attn_args *a);

/* Plain-C reference, one query at a time (the spec). Same preconditions. */
void   sprig_attention_ref(const sprig_attn_args *a);

/* Which kernel sprig_attention runs: "avx512", "avx2" or "c" (SPRIG_NO_SIMD=1 forces "c").
 * All compute the bits of sprig_attention_ref. */
const char *sprig_attention_kernel(void);

/* Tests and benchmarks: force "c", "avx2" or "avx512" (if the CPU has it), or NULL to
 * go back to the automatic choice. Returns false when the kernel cannot run. */
bool sprig_attention_use_kernel(const char *name);

/* Calls smaller than `fmas` scalar multiply-adds (2*n*n_head*n_keys*hd) run
 * on the calling thread alone (default 5e4, two or three microseconds); tests
 * set 0 to exercise the pool on small shapes, a negative value restores the
 * default. */
void sprig_attention_set_parallel_threshold(double fmas);

/* Internal: one work item — rows [r0, r0+nr) (1 <= nr <= SPRIG_ATTN_ROWS) of
 * kv head g, where row r is query r / group of head g*group + r % group. The
 * work slot of the calling thread is carved up by sprig_attn_work_split.
 * Kernels live in attention*.c; only attention.c calls them. */
#define SPRIG_ATTN_ROWS 64   /* rows per work item (query x head pairs of one kv head) */
#define SPRIG_ATTN_KB   16   /* f16 / quantized keys converted per step */
#define SPRIG_ATTN_TV   32   /* keys per V tile */

typedef struct sprig_attn_work {
    float *sc;      /* [n_keys][rp] scores, then probabilities (rp = nr rounded up to 16) */
    float *qt;      /* [hd][rp] the item's queries, transposed */
    float *kb;      /* [SPRIG_ATTN_KB][hd] f16 / quantized keys decoded to f32 */
    float *vb;      /* [SPRIG_ATTN_TV][hd] f16 / quantized values decoded to f32 */
    float *dummy;   /* [SPRIG_ATTN_MAX_HD] sink for padding rows */
} sprig_attn_work;

/* Floats of one thread's slot for items of up to rp rows and n_keys keys. */
static inline size_t sprig_attn_slot_floats(size_t rp, size_t n_keys)
{
    return rp * n_keys + (size_t)SPRIG_ATTN_MAX_HD * rp
         + (size_t)(SPRIG_ATTN_KB + SPRIG_ATTN_TV + 1) * SPRIG_ATTN_MAX_HD;
}

/* Carve a slot (64-byte aligned, sized by sprig_attn_slot_floats) into its parts. */
static inline void sprig_attn_work_split(float *slot, size_t rp, size_t n_keys, sprig_attn_work *w)
{
    w->sc = slot;
    w->qt = w->sc + rp * n_keys;
    w->kb = w->qt + (size_t)SPRIG_ATTN_MAX_HD * rp;
    w->vb = w->kb + (size_t)SPRIG_ATTN_KB * SPRIG_ATTN_MAX_HD;
    w->dummy = w->vb + (size_t)SPRIG_ATTN_TV * SPRIG_ATTN_MAX_HD;
}

void sprig_attn_item_avx512(const sprig_attn_args *a, int g, int r0, int nr, float *slot);
void sprig_attn_item_avx2(const sprig_attn_args *a, int g, int r0, int nr, float *slot);

/* Internal: the small-head path (hd <= 16, e.g. 8). The query heads are taken
 * in chunks of G consecutive kv heads (G*hd <= 32 floats of a key row, so two
 * vector loads fetch a key's whole chunk); a work item is (chunk, block of
 * query rows). Scores use lanes = (query row, head of the chunk) with the
 * chunk's heads padded to HP lanes (a power of two); the value accumulation
 * uses lanes = (d, head) with the head minor, so one broadcast of a row's HP
 * probabilities serves every output vector of that row. */
typedef struct sprig_attn_small {
    int G;     /* kv heads per chunk (divides n_kv_head) */
    int Hc;    /* query heads per chunk = G * group (<= 16) */
    int HP;    /* Hc rounded up to a power of two */
    int NW;    /* output vectors per row: hd*HP/16 rounded up to 1, 2, 4 or 8 */
    int rp;    /* rows_cap of the call: the slot layout (sprig_attn_work_split) */
    int ni;    /* most query rows per item (ni*HP <= rp) */
} sprig_attn_small;

/* Rows [i0, i0+ni) of chunk c (query heads c*Hc .. c*Hc+Hc-1). */
void sprig_attn_small_avx512(const sprig_attn_args *a, const sprig_attn_small *p, int c, int i0, int ni, float *slot);

#endif
