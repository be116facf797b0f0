/*
 * tools/bench_attn.c — see bench_attn.h. The masks are the verify's own
 * (spec/tree), the data seeded (base/rng); enough separately allocated
 * copies of the history (>= 160 MB together) are rotated that every timed
 * call reads its keys and values from DRAM, as a forward over all layers
 * does; the ceiling repeats one 512-key copy, which stays in cache.
 */
#include "bench_attn.h"
#include "cli.h"

#include "base/mem.h"
#include "base/rng.h"
#include "base/timer.h"
#include "spec/tree.h"
#include "tensor/attention.h"
#include "tensor/types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CACHED_CTX 512

/* The additive mask [n][ctx + n] of a random n-node tree; returns the keys
 * the queries see, summed over them (negative on error). */
static double tree_mask(float *mask, int n, int ctx, uint64_t seed, sprig_error *err)
{
    sprig_tree t;
    sprig_rng r;
    sprig_rng_seed(&r, seed);
    sprig_tree_root(&t, 0);
    for (int i = 1; i < n; i++)
        if (sprig_tree_push_child(&t, (int)(sprig_rng_u64(&r) % (uint64_t)i), 0, NULL, err)) return -1;
    if (sprig_tree_mask_with_history(&t, ctx, -1e9f, mask, err)) return -1;
    double keys = 0;
    for (size_t j = 0; j < (size_t)n * (size_t)(ctx + n); j++) keys += mask[j] == 0.0f;
    return keys;
}

sprig_status sprig_bench_attention_ns(sprig_pool *pool, const sprig_bench_attn_shape *sh, const int *ns, int count,
                                      int reps, sprig_bench_attn *out, sprig_error *err)
{
    if (!sh || !ns || !out || count < 1 || count > 64 || reps < 1 || reps > 100000)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "bench attention: count %d (1..64) or reps %d (1..100000) out of range",
                         count, reps);
    if (sh->hd < 1 || sh->hd > SPRIG_ATTN_MAX_HD || sh->n_kv_head < 1 || sh->n_head < sh->n_kv_head ||
        sh->n_head % sh->n_kv_head || sh->n_head > 1024 || sh->ctx < 1 || sh->ctx > (1 << 20) ||
        (sh->kv_type != SPRIG_TYPE_F32 && sh->kv_type != SPRIG_TYPE_F16))
        return sprig_err(err, SPRIG_E_INVALID_ARG,
                         "bench attention: shape heads %d / kv heads %d / hd %d / ctx %d / kv type out of range",
                         sh->n_head, sh->n_kv_head, sh->hd, sh->ctx);
    int max_n = 0;
    for (int i = 0; i < count; i++) {
        if (ns[i] < 1 || ns[i] > SPRIG_TREE_MAX)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "bench attention: tree size %d out of range (1..%d)", ns[i],
                             SPRIG_TREE_MAX);
        if (ns[i] > max_n) max_n = ns[i];
    }
    const size_t es = sh->kv_type == SPRIG_TYPE_F16 ? 2 : 4;
    const int64_t row = (int64_t)sh->n_kv_head * sh->hd, qrow = (int64_t)sh->n_head * sh->hd;
    const int nk_max = sh->ctx + max_n, nk_all = nk_max > CACHED_CTX + max_n ? nk_max : CACHED_CTX + max_n;
    /* one copy: K then V, nk_all slots each (the history or the cached one, whichever is longer) */
    const size_t copy = (size_t)2 * (size_t)nk_all * (size_t)row * es;
    int copies = (int)(((size_t)160 << 20) / copy) + 1;
    if (copies < 2) copies = 2;
    if (copies > 256) copies = 256;
    const int nth = sprig_pool_size(pool);
    uint8_t **kv = calloc((size_t)copies, sizeof *kv);
    float *q = malloc((size_t)max_n * (size_t)qrow * sizeof(float));
    float *o = malloc((size_t)max_n * (size_t)qrow * sizeof(float));
    float *mask = malloc((size_t)max_n * (size_t)nk_all * sizeof(float));
    size_t sn = sprig_attn_scratch_floats(max_n, sh->n_head, nk_all, nth);
    float *scratch = sprig_calloc_aligned(sn, sizeof(float));
    double *t = malloc((size_t)count * 2 * (size_t)reps * sizeof(double));
    double *keys = calloc((size_t)count * 2, sizeof(double));
    sprig_status st = SPRIG_OK;
    bool ok = kv && q && o && mask && scratch && t && keys;
    for (int c = 0; ok && c < copies; c++) ok = (kv[c] = sprig_calloc_aligned(copy, 1)) != NULL;
    if (!ok) {
        st = sprig_err(err, SPRIG_E_NOMEM, "bench attention: out of memory");
        goto done;
    }
    {   /* random keys/values (small magnitudes, so scores spread), random queries */
        sprig_rng r;
        sprig_rng_seed(&r, 0x9e3779b97f4a7c15ull);
        for (int c = 0; c < copies; c++)
            for (size_t i = 0; i < copy / es; i++) {
                float v = (float)(sprig_rng_uniform(&r) - 0.5);
                if (es == 2) ((sprig_f16 *)kv[c])[i] = sprig_f32_to_f16(v);
                else ((float *)kv[c])[i] = v;
            }
        for (size_t i = 0; i < (size_t)max_n * (size_t)qrow; i++) q[i] = (float)(sprig_rng_uniform(&r) - 0.5);
    }
    int next = 0;
    for (int rep = -1; rep < reps; rep++) {
        for (int i = 0; i < count; i++) {
            const int n = ns[i];
            for (int cached = 0; cached < 2; cached++) {
                const int ctx = cached ? CACHED_CTX : sh->ctx;
                double kk = tree_mask(mask, n, ctx, 0x5eed + (uint64_t)n, err);
                if (kk < 0) { st = SPRIG_E_INVALID_ARG; goto done; }
                keys[i * 2 + cached] = kk;
                const uint8_t *base = kv[cached ? 0 : next];
                if (!cached) next = (next + 1) % copies;
                sprig_attn_args a = {
                    .q = q, .n = n, .n_head = sh->n_head, .n_kv_head = sh->n_kv_head, .hd = sh->hd,
                    .k = base, .v = base + (size_t)nk_all * (size_t)row * es, .kv_type = sh->kv_type,
                    .kv_stride = row, .n_keys = ctx + n, .mask = mask, .scale = 1.0f / sqrtf((float)sh->hd), .out = o,
                    .scratch = scratch, .scratch_floats = sn,
                };
                if ((st = sprig_attn_check(&a, err))) goto done;
                if (cached) sprig_attention(pool, &a);   /* bring the small copy into cache */
                uint64_t t0 = sprig_time_ns();
                sprig_attention(pool, &a);
                double dt = (double)(sprig_time_ns() - t0) * 1e-9;
                if (rep >= 0) t[((size_t)i * 2 + (size_t)cached) * (size_t)reps + (size_t)rep] = dt;
            }
        }
    }
    for (int i = 0; i < count; i++) {
        double med[2];
        for (int c = 0; c < 2; c++) med[c] = cli_median(t + ((size_t)i * 2 + (size_t)c) * (size_t)reps, reps);
        const double per_key = 4.0 * sh->hd * sh->n_head;   /* QK and PV multiply-adds, 2 ops each */
        out[i].n = ns[i];
        out[i].sec_median = med[0];
        out[i].sec_cached = med[1];
        out[i].gflops = per_key * keys[i * 2] / med[0] * 1e-9;
        out[i].gflops_cached = per_key * keys[i * 2 + 1] / med[1] * 1e-9;
        out[i].gbs = 2.0 * (double)(sh->ctx + ns[i]) * (double)row * (double)es / med[0] * 1e-9;
    }
done:
    for (int c = 0; kv && c < copies; c++) sprig_free_aligned(kv[c]);
    free(kv);
    free(q);
    free(o);
    free(mask);
    sprig_free_aligned(scratch);
    free(t);
    free(keys);
    return st;
}
