/*
 * tools/bench_attn — the timing behind `sprig bench attention`: the
 * tree-attention kernel alone, n queries of one random draft tree over a
 * history, from DRAM and (its ceiling) from cache.
 */
#ifndef SPRIG_TOOLS_BENCH_ATTN_H
#define SPRIG_TOOLS_BENCH_ATTN_H

#include "base/err.h"
#include "base/pool.h"

typedef struct sprig_bench_attn_shape {
    int n_head, n_kv_head, hd;
    int ctx;                /* history keys */
    int kv_type;            /* SPRIG_TYPE_F32 or SPRIG_TYPE_F16 */
} sprig_bench_attn_shape;

typedef struct sprig_bench_attn {
    int     n;              /* tree nodes (queries) */
    double  sec_median;     /* per call from DRAM: copies rotated, as a forward over every layer reads them */
    double  sec_cached;     /* per call on one copy of a 512-key history, which stays in cache */
    double  gflops;         /* 4 * hd * n_head * (keys each query sees, summed) / sec_median / 1e9 */
    double  gflops_cached;  /* the same work per key / sec_cached: the kernel's ceiling at this n */
    double  gbs;            /* history K+V bytes / sec_median / 1e9 */
} sprig_bench_attn;

/* Time sprig_attention for each ns[i] (1..SPRIG_TREE_MAX nodes of a random
 * tree, node i's parent drawn among the earlier nodes; the verify's mask:
 * the history and the node's ancestors), calls alternated and reps timed
 * after a warm-up round, from DRAM and from cache (above). */
sprig_status sprig_bench_attention_ns(sprig_pool *pool, const sprig_bench_attn_shape *s, const int *ns, int count,
                                      int reps, sprig_bench_attn *out, sprig_error *err);

#endif
