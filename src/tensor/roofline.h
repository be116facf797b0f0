/*
 * tensor/roofline — what this machine can do, and what the matmul does.
 *
 * Decoding one token is a stream over every weight, so its floor is
 * weight bytes / read bandwidth; verifying n drafted tokens costs little more
 * only while the int8/fp32 arithmetic stays under its peak. These
 * measurements give `sprig bench` both roofs and the matmul's place under
 * them:
 *   - read bandwidth: all threads stream a buffer much larger than the L3,
 *     best of a few passes;
 *   - peak: a register-only loop of the kernels' instruction (vpdpbusd or
 *     vpmaddubsw, or vfmadd for float weights) on all threads;
 *   - ceiling: the exact kernel itself from L1 (what its instruction mix
 *     allows: AVX2's exact int8 dot needs two multiply-port ops per 32
 *     products, so it cannot pass half the int8 peak);
 *   - matmul timing: one shape, several batch sizes, alternated call by call
 *     over enough packed copies of the weight that every call reads it from
 *     DRAM (as a forward pass over a whole model does); medians reported,
 *     with a streaming read of the same bytes timed in between as the
 *     bandwidth bound of that moment (the host's bandwidth drifts with its
 *     other tenants, so a bound measured once is not comparable).
 * All of them allocate, spin the CPUs for a while and are not for hot paths.
 */
#ifndef SPRIG_TENSOR_ROOFLINE_H
#define SPRIG_TENSOR_ROOFLINE_H

#include "base/err.h"
#include "base/pool.h"

/* GB/s (1e9 bytes) of a multi-threaded streaming read of `bytes` (0: 512 MiB);
 * negative when the buffer cannot be allocated. */
double sprig_measure_read_bandwidth(sprig_pool *pool, size_t bytes);

/* A reusable read probe: one buffer (huge pages, touched), read in full by
 * every pool thread each time; for pairing a bandwidth reading with each
 * measured operation when the host's bandwidth drifts. */
typedef struct sprig_bw_probe sprig_bw_probe;
sprig_bw_probe *sprig_bw_probe_create(size_t bytes);          /* 0: 512 MiB; NULL on failure */
double          sprig_bw_probe_read(sprig_pool *pool, sprig_bw_probe *b);   /* GB/s of one pass */
void            sprig_bw_probe_free(sprig_bw_probe *b);

/* Peak arithmetic in G ops/s (a multiply-add counts 2) on all pool threads:
 * int8 dot products for Q8_0/Q4_0, fp32 FMA for F32/F16/BF16, with the best
 * kernel family of the CPU; negative for other types or without SIMD. */
double sprig_measure_peak_gops(sprig_pool *pool, int type);

/* The ceiling of the exact kernel for `type` (current family) in G ops/s on
 * all pool threads: the family's own kernel on a weight and activations
 * that stay in L1 (one panel, 1..8 rows), best row count (to *rows when not
 * NULL). Memory costs nothing there, so this is what the kernel's
 * instructions allow: the block dot's own ceiling, which the matmul from
 * DRAM is measured against. Negative without a SIMD kernel for the type. */
double sprig_measure_ceiling_gops(sprig_pool *pool, int type, int *rows);

typedef struct sprig_bench_mm {
    int     n;              /* batch rows */
    double  sec_median;     /* per call, activation quantization included */
    double  sec_min;
    double  gops;           /* 2 * n * n_in * n_out / sec_median / 1e9 */
    double  gbs;            /* weight bytes (as the kernels read them) / sec_median / 1e9 */
} sprig_bench_mm;

/* What one shape's run found besides the per-batch figures. */
typedef struct sprig_bench_mm_info {
    size_t  weight_bytes;   /* bytes one call reads (the packed copy, or the raw rows) */
    double  read_gbs;       /* a plain streaming read of weight_bytes from DRAM, timed
                             * between the calls (same threads, same moments): the
                             * bandwidth bound for n = 1 under the same conditions */
} sprig_bench_mm_info;

/* Time y = x W^T for one weight shape (random data of `type`) and each batch
 * size ns[i], interleaving the batch sizes (and the paired read) call by call;
 * reps timed calls per size after one warm-up round. out[i] gets the figures
 * of ns[i]; info (may be NULL) the rest. */
sprig_status sprig_bench_matmul_ns(sprig_pool *pool, int type, int64_t n_in, int64_t n_out, const int *ns,
                                   int count, int reps, sprig_bench_mm *out, sprig_bench_mm_info *info,
                                   sprig_error *err);

/* Median seconds per call for one batch size; negative on error. */
double sprig_bench_matmul(sprig_pool *pool, int type, int64_t n_in, int64_t n_out, int n, int reps);

#endif
