/*
 * bench/bench-matmul — the matmul kernels under their roofs.
 *
 * Prints the machine's read bandwidth and peak int8 / fp32 rates, then for
 * each weight type and shape the time per call for batch sizes 1..64, the
 * arithmetic rate, the bandwidth the n = 1 call achieved (and its share of
 * the measured bandwidth) and T(n)/T(1), the cost of verifying n tokens
 * relative to decoding one. Batch sizes are alternated call by call over
 * DRAM-resident weight copies; medians of --reps calls.
 *
 * Build (outside the Makefile, after `make`):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -pthread -o build/bench-matmul \
 *      bench/bench-matmul.c build/libsprig.a -lm
 * Run:
 *   build/bench-matmul [--threads 2] [--reps 21] [--types q8_0,q4_0,f16,bf16,f32]
 *                      [--shapes 2048x2048,2048x8192 | llama1b] [--ns 1,2,4,8,16,32,64]
 *                      [--kernels avx512|avx2|reference]
 * A shape KxN is n_in x n_out (2048x8192 = the FFN up projection). `llama1b`
 * is the matmul set of one llama-1b forward, with a total per batch size.
 */
#include "base/pool.h"
#include "tensor/matmul.h"
#include "tensor/roofline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shape { const char *name; int64_t k, n; int count; };

/* The matmuls of one llama-1b forward (dim 2048, 16 layers, 8 kv heads of 64,
 * ffn 8192, vocab 32000) as sprig issues them: Q/K/V fused into one dispatch,
 * gate/up fused, every row producing logits (tree verification). */
static const struct shape llama1b[] = {
    { "qkv", 2048, 3072, 16 }, { "o", 2048, 2048, 16 }, { "gate+up", 2048, 16384, 16 }, { "down", 8192, 2048, 16 },
    { "output", 2048, 32000, 1 },
};

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 4096) return -1;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

int main(int argc, char **argv)
{
    int threads = 2, reps = 21;
    const char *types = "q8_0,q4_0,f16,bf16,f32", *shapes = "2048x2048,2048x8192", *nss = "1,2,4,8,16,32,64";
    const char *kern = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "bench-matmul: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--types")) types = v;
        else if (!strcmp(a, "--shapes")) shapes = v;
        else if (!strcmp(a, "--ns")) nss = v;
        else if (!strcmp(a, "--kernels")) kern = v;
        else { fprintf(stderr, "bench-matmul: unknown option %s\n", a); return 2; }
        i++;
    }
    if (threads < 1 || threads > 256 || reps < 1) { fprintf(stderr, "bench-matmul: bad --threads/--reps\n"); return 2; }
    if (kern && !sprig_kernels_force(kern)) { fprintf(stderr, "bench-matmul: kernels '%s' unavailable\n", kern); return 2; }
    int ns[16];
    int nn = parse_list(nss, ns, 16);
    if (nn < 1 || ns[0] != 1) { fprintf(stderr, "bench-matmul: --ns must start with 1\n"); return 2; }

    struct shape sh[16];
    int nsh = 0;
    if (!strcmp(shapes, "llama1b")) {
        for (size_t i = 0; i < sizeof llama1b / sizeof *llama1b; i++) sh[nsh++] = llama1b[i];
    } else {
        const char *s = shapes;
        while (*s && nsh < 16) {
            long long k, n;
            int used;
            if (sscanf(s, "%lldx%lld%n", &k, &n, &used) != 2) { fprintf(stderr, "bench-matmul: bad --shapes\n"); return 2; }
            sh[nsh++] = (struct shape){ "", k, n, 1 };
            s += used;
            if (*s == ',') s++;
        }
    }

    sprig_error err;
    sprig_pool *pool = sprig_pool_create(threads, &err);
    if (!pool) { fprintf(stderr, "bench-matmul: %s\n", err.msg); return 1; }
    double bw = sprig_measure_read_bandwidth(pool, 0);
    printf("kernels %s, %d threads\n", sprig_kernels_name(), threads);
    printf("read bandwidth %.1f GB/s; peak int8 %.0f GOP/s, fp32 FMA %.0f GFLOP/s\n", bw,
           sprig_measure_peak_gops(pool, SPRIG_TYPE_Q8_0), sprig_measure_peak_gops(pool, SPRIG_TYPE_F32));

    char tl[256];
    snprintf(tl, sizeof tl, "%s", types);
    for (char *tok = strtok(tl, ","); tok; tok = strtok(NULL, ",")) {
        int type = sprig_type_from_name(tok);
        if (type < 0) { fprintf(stderr, "bench-matmul: unknown type %s\n", tok); return 2; }
        double total[16] = { 0 };
        for (int s = 0; s < nsh; s++) {
            sprig_bench_mm r[16];
            sprig_bench_mm_info info;
            if (sprig_bench_matmul_ns(pool, type, sh[s].k, sh[s].n, ns, nn, reps, r, &info, &err)) {
                fprintf(stderr, "bench-matmul: %s\n", err.msg);
                return 1;
            }
            printf("\n%-5s %s %lldx%lld (%.2f MB): n=1 %.1f GB/s = %.0f%% of a paired read (%.1f GB/s)\n", tok,
                   sh[s].name, (long long)sh[s].k, (long long)sh[s].n, (double)info.weight_bytes / 1e6, r[0].gbs,
                   100.0 * r[0].gbs / info.read_gbs, info.read_gbs);
            printf("   n   us/call   min us    GOP/s   T(n)/T(1)\n");
            for (int i = 0; i < nn; i++) {
                printf("%4d  %8.1f  %7.1f  %7.1f   %6.3f\n", r[i].n, r[i].sec_median * 1e6, r[i].sec_min * 1e6,
                       r[i].gops, r[i].sec_median / r[0].sec_median);
                total[i] += r[i].sec_median * sh[s].count;
            }
            fflush(stdout);
        }
        if (nsh > 1) {
            printf("\n%-5s all shapes x their counts (medians):\n   n   ms total   T(n)/T(1)\n", tok);
            for (int i = 0; i < nn; i++) printf("%4d  %9.2f   %6.3f\n", ns[i], total[i] * 1e3, total[i] / total[0]);
        }
    }
    sprig_pool_free(pool);
    return 0;
}
