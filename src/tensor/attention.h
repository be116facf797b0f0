/*
 * tensor/attention — scaled dot-product attention of n queries against the
 * cached keys/values, under a causal or caller-supplied additive mask.
 *
 * Built for verifying a draft tree: the n queries of a block share the
 * history, so the kernel streams each cached key/value once for all n
 * queries (and the GQA group), not once per query.
 *
 * Exactness contract: the output of query row i is bit-identical to running
 * that query alone against the keys it can see, whatever n is and whatever
 * the thread count: scores in key order, max, exp, a sequential sum in key
 * order, a sequential V accumulation in key order; masked keys contribute an
 * exact 0 (mask -1e9 => exp underflows to 0), never a reordering.
 */
#ifndef SPRIG_TENSOR_ATTENTION_H
#define SPRIG_TENSOR_ATTENTION_H

#include "base/pool.h"
#include "tensor/types.h"

typedef struct sprig_attn_args {
    const float *q;        /* [n][n_head*hd], already rotated */
    int n;                 /* queries */
    int n_head, n_kv_head, hd;   /* query head h uses kv head h / (n_head / n_kv_head) */
    const void *k, *v;     /* key/value rows: slot j at k + j*kv_stride elements; [n_keys][n_kv_head*hd] */
    int kv_type;           /* SPRIG_TYPE_F32 or SPRIG_TYPE_F16 */
    int64_t kv_stride;     /* elements between slots (>= n_kv_head*hd) */
    int n_keys;            /* visible slots: history + the n new ones (offset + n) */
    const float *mask;     /* [n][n_keys] additive (0 / -1e9), or NULL = causal:
                              query i sees slots < n_keys - n + i + 1 */
    float scale;           /* usually 1/sqrt(hd) */
    float *out;            /* [n][n_head*hd] */
    float *scratch;        /* sprig_attn_scratch_floats(...) floats */
} sprig_attn_args;

size_t sprig_attn_scratch_floats(int n, int n_head, int n_keys, int n_threads);
void   sprig_attention(sprig_pool *pool, const sprig_attn_args *a);
/* Plain-C reference, one query at a time (the spec). */
void   sprig_attention_ref(const sprig_attn_args *a);

#endif
