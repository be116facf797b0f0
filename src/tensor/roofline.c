/*
 * tensor/roofline — see roofline.h. Read bandwidth, peak arithmetic and the
 * matmul timing helper behind `sprig bench`.
 *
 * Timing a matmul alone is easy to get wrong: a 4 MB weight fits the 32 MB L3
 * and a repeated call would then run at cache speed, far above what a
 * forward pass over a 1 GB model sees. So the helper rotates through enough
 * separately packed copies (>= 160 MB together) that every call streams its
 * weight from DRAM, alternates the batch sizes call by call (a noisy shared
 * machine then disturbs all of them alike), drops a warm-up round and
 * reports medians.
 */
#include "tensor/roofline.h"

#include "base/mem.h"
#include "base/timer.h"
#include "tensor/matmul-kern.h"
#include "tensor/matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- bandwidth */

struct bw_ctx { const uint64_t *buf; size_t words; uint64_t sink[256]; };

static void bw_task(void *ctx, int ith, int nth)
{
    struct bw_ctx *c = ctx;
    long lo, hi;
    sprig_split((long)(c->words / 8), ith, nth, &lo, &hi);
    const uint64_t *p = c->buf;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    for (long i = lo * 8; i < hi * 8; i += 8) {
        a0 ^= p[i]; a1 ^= p[i + 1]; a2 ^= p[i + 2]; a3 ^= p[i + 3];
        a4 ^= p[i + 4]; a5 ^= p[i + 5]; a6 ^= p[i + 6]; a7 ^= p[i + 7];
    }
    c->sink[ith & 255] = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

/* The buffer is mapped with transparent huge pages, as packed weights are
 * (matmul.c): with 4 KB pages the TLB misses and the prefetcher's stop at
 * every page boundary cost ~10% and the bound would be too low. */
struct sprig_bw_probe {
    uint64_t *buf;
    size_t words, len;
    struct bw_ctx *c;
};

sprig_bw_probe *sprig_bw_probe_create(size_t bytes)
{
    if (!bytes) bytes = (size_t)512 << 20;
    const size_t huge = (size_t)2 << 20;
    if (bytes > ((size_t)1 << 40)) return NULL;
    size_t words = bytes / 64 * 8, len = (words * 8 + huge - 1) & ~(huge - 1);
    if (!words) return NULL;
    sprig_bw_probe *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    b->c = calloc(1, sizeof *b->c);
    if (b->buf == MAP_FAILED || !b->c) {
        if (b->buf != MAP_FAILED) munmap(b->buf, len);
        free(b->c);
        free(b);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(b->buf, len, MADV_HUGEPAGE);
#endif
    for (size_t i = 0; i < words; i++) b->buf[i] = i * 0x9e3779b97f4a7c15ull;   /* touch every page */
    b->words = words;
    b->len = len;
    b->c->buf = b->buf;
    b->c->words = words;
    return b;
}

double sprig_bw_probe_read(sprig_pool *pool, sprig_bw_probe *b)
{
    uint64_t t0 = sprig_time_ns();
    sprig_pool_run(pool, bw_task, b->c, 0);
    double dt = (double)(sprig_time_ns() - t0) * 1e-9;
    return (double)b->words * 8 / dt * 1e-9;
}

void sprig_bw_probe_free(sprig_bw_probe *b)
{
    if (!b) return;
    munmap(b->buf, b->len);
    free(b->c);
    free(b);
}

double sprig_measure_read_bandwidth(sprig_pool *pool, size_t bytes)
{
    sprig_bw_probe *b = sprig_bw_probe_create(bytes);
    if (!b) return -1;
    double best = 0;
    for (int run = 0; run < 6; run++) {
        double gbs = sprig_bw_probe_read(pool, b);
        if (run > 0 && gbs > best) best = gbs;   /* the first pass warms the TLB and the threads */
    }
    sprig_bw_probe_free(b);
    return best;
}

/* ---------------------------------------------------------------- peak */

struct peak_ctx { sprig_mm_peak_fn fn; bool int8; uint64_t iters; double ops[256]; };

static void peak_task(void *ctx, int ith, int nth)
{
    struct peak_ctx *c = ctx;
    SPRIG_UNUSED(nth);
    c->ops[ith & 255] = c->fn(c->int8, c->iters);
}

double sprig_measure_peak_gops(sprig_pool *pool, int type)
{
    bool int8;
    switch (type) {
    case SPRIG_TYPE_Q8_0: case SPRIG_TYPE_Q4_0: int8 = true; break;
    case SPRIG_MM_Q2_K: case SPRIG_MM_Q3_K: case SPRIG_MM_Q4_K: case SPRIG_MM_Q5_K: case SPRIG_MM_Q6_K: int8 = true; break;
    case SPRIG_TYPE_F32: case SPRIG_TYPE_F16: case SPRIG_TYPE_BF16: int8 = false; break;
    default: return -1;
    }
    const struct sprig_mm_family *f = sprig_mm_family_current();
    if (!f || !f->peak) return -1;
    int nth = sprig_pool_size(pool);
    struct peak_ctx *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->fn = f->peak;
    c->int8 = int8;
    /* Calibrate to ~0.1 s per run on one thread, then best of 3 on all. */
    c->iters = 1 << 16;
    for (;;) {
        uint64_t t0 = sprig_time_ns();
        f->peak(int8, c->iters);
        double dt = (double)(sprig_time_ns() - t0) * 1e-9;
        if (dt > 0.02 || c->iters >= ((uint64_t)1 << 34)) {
            c->iters = (uint64_t)((double)c->iters * 0.1 / (dt > 1e-9 ? dt : 1e-9)) + 1;
            break;
        }
        c->iters *= 4;
    }
    double best = 0;
    for (int run = 0; run < 3; run++) {
        uint64_t t0 = sprig_time_ns();
        sprig_pool_run(pool, peak_task, c, nth);
        double dt = (double)(sprig_time_ns() - t0) * 1e-9, ops = 0;
        for (int i = 0; i < nth && i < 256; i++) ops += c->ops[i];
        if (ops / dt > best) best = ops / dt;
    }
    free(c);
    return best * 1e-9;
}

/* ---------------------------------------------------------------- matmul timing */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Where the K-quant blocks keep their f16 scales (d, dmin; 0: none), for
 * types without a quantizer: random blocks with sane scales stand in. */
static const struct { int type; size_t d, dmin; } kscales[] = {
    { SPRIG_MM_Q2_K, offsetof(sprig_kblk_q2_k, d), offsetof(sprig_kblk_q2_k, dmin) },
    { SPRIG_MM_Q3_K, offsetof(sprig_kblk_q3_k, d), 0 },
    { SPRIG_MM_Q4_K, offsetof(sprig_kblk_q4_k, d), offsetof(sprig_kblk_q4_k, dmin) },
    { SPRIG_MM_Q5_K, offsetof(sprig_kblk_q5_k, d), offsetof(sprig_kblk_q5_k, dmin) },
    { SPRIG_MM_Q6_K, offsetof(sprig_kblk_q6_k, d), 0 },
};

static void *make_raw_k(int type, int64_t n_in, int64_t n_out, size_t rb, size_t total)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    for (size_t i = 0; i < sizeof kscales / sizeof kscales[0]; i++) {
        if (kscales[i].type != type) continue;
        uint8_t *raw = sprig_calloc_aligned(total, 1);
        if (!raw) return NULL;
        uint64_t s = 0x2545f4914f6cdd1dull;
        for (size_t j = 0; j < total; j++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            raw[j] = (uint8_t)(s >> 32);
        }
        const sprig_f16 d = sprig_f32_to_f16(0.004f), dmin = sprig_f32_to_f16(0.002f);
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t b = 0; b < n_in / t->blck; b++) {
                uint8_t *blk = raw + (size_t)o * rb + (size_t)b * t->type_size;
                memcpy(blk + kscales[i].d, &d, 2);
                if (kscales[i].dmin) memcpy(blk + kscales[i].dmin, &dmin, 2);
            }
        return raw;
    }
    return NULL;
}

/* Random GGUF-layout data for an n_out x n_in matrix of `type`. */
static void *make_raw(int type, int64_t n_in, int64_t n_out, size_t *rb)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    size_t total;
    if (!t || !sprig_row_bytes(type, n_in, rb) || sprig_mul_ovf(*rb, (size_t)n_out, &total)) return NULL;
    if (!t->from_f32) return make_raw_k(type, n_in, n_out, *rb, total);
    uint8_t *raw = sprig_calloc_aligned(total, 1);
    float *row = malloc((size_t)n_in * sizeof(float));
    if (!raw || !row) { sprig_free_aligned(raw); free(row); return NULL; }
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (int64_t o = 0; o < n_out; o++) {
        for (int64_t k = 0; k < n_in; k++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            row[k] = (float)((double)(s >> 11) * (1.0 / 9007199254740992.0) - 0.5);
        }
        t->from_f32(row, raw + (size_t)o * *rb, n_in);
    }
    free(row);
    return raw;
}

/* ---------------------------------------------------------------- ceiling */

/* The family's kernel for a weight type (table, not switch). */
/* n_in: one panel of weights plus 8 rows of activations in a 32 KB L1
 * (float rows are read as floats: 8 KB; Q8_0 17 KB + 12 KB; Q6_K 13 + 10). */
static const struct { int type; size_t off; int64_t n_in; } kern_of[] = {
    { SPRIG_TYPE_F32, offsetof(struct sprig_mm_family, f32), 256 },
    { SPRIG_TYPE_F16, offsetof(struct sprig_mm_family, f16), 256 },
    { SPRIG_TYPE_BF16, offsetof(struct sprig_mm_family, bf16), 256 },
    { SPRIG_TYPE_Q8_0, offsetof(struct sprig_mm_family, q8_0), 1024 },
    { SPRIG_TYPE_Q4_0, offsetof(struct sprig_mm_family, q4_0), 1024 },
    { SPRIG_MM_Q2_K, offsetof(struct sprig_mm_family, q2_k), 1024 },
    { SPRIG_MM_Q3_K, offsetof(struct sprig_mm_family, q3_k), 1024 },
    { SPRIG_MM_Q4_K, offsetof(struct sprig_mm_family, q4_k), 1024 },
    { SPRIG_MM_Q5_K, offsetof(struct sprig_mm_family, q5_k), 1024 },
    { SPRIG_MM_Q6_K, offsetof(struct sprig_mm_family, q6_k), 1024 },
};

#define CEIL_IN_MAX 1024
#define CEIL_PANELS 1
#define CEIL_ROWS 8

struct ceil_ctx {
    sprig_mm_kernel_fn fn;
    sprig_mm_job job;            /* y per thread below */
    uint64_t iters;
    float *y[256];
    double ops[256];
};

static void ceil_task(void *ctx, int ith, int nth)
{
    struct ceil_ctx *c = ctx;
    SPRIG_UNUSED(nth);
    sprig_mm_job j = c->job;
    j.y = c->y[ith & 255];
    for (uint64_t i = 0; i < c->iters; i++) c->fn(&j);
    c->ops[ith & 255] = 2.0 * (double)c->iters * (double)j.n * (double)j.n_in * (double)j.n_out;
}

double sprig_measure_ceiling_gops(sprig_pool *pool, int type, int *rows)
{
    const struct sprig_mm_family *f = sprig_mm_family_current();
    sprig_mm_kernel_fn fn = NULL;
    int64_t n_in = 0;
    for (size_t i = 0; f && i < sizeof kern_of / sizeof kern_of[0]; i++)
        if (kern_of[i].type == type) {
            memcpy(&fn, (const char *)f + kern_of[i].off, sizeof fn);
            n_in = kern_of[i].n_in;
        }
    if (!fn) return -1;
    const int64_t n_out = CEIL_PANELS * SPRIG_MM_PANEL;
    const int nth = sprig_pool_size(pool);
    size_t rb;
    void *raw = make_raw(type, n_in, n_out, &rb);
    struct ceil_ctx *c = calloc(1, sizeof *c);
    float *x = malloc((size_t)CEIL_ROWS * n_in * sizeof(float));
    sprig_mm_qblock *aq = sprig_calloc_aligned((size_t)CEIL_ROWS * (n_in / 32), sizeof *aq);
    sprig_mm_kblock *ak = sprig_calloc_aligned((size_t)CEIL_ROWS * (n_in / SPRIG_MM_QK_K), sizeof *ak);
    sprig_weight w;
    bool have_w = raw && sprig_weight_init(&w, "ceiling", type, raw, n_in, n_out, NULL) == SPRIG_OK;
    double best = -1;
    bool ok = have_w && w.packed && c && x && aq && ak;
    for (int t = 0; ok && t < nth && t < 256; t++)
        ok = (c->y[t] = sprig_calloc_aligned((size_t)CEIL_ROWS * n_out, sizeof(float))) != NULL;
    if (ok) {
        for (int64_t i = 0; i < CEIL_ROWS * n_in; i++) x[i] = (float)((int)(i * 2654435761u % 2001) - 1000) * 1e-3f;
        for (int r = 0; r < CEIL_ROWS; r++) {   /* block-major records, as matmul.c lays them out */
            for (int64_t b = 0; b < n_in / 32; b++) sprig_mm_quant_block_ref(x + r * n_in + b * 32, &aq[b * CEIL_ROWS + r]);
            for (int64_t b = 0; b < n_in / SPRIG_MM_QK_K; b++)
                sprig_mm_kquant_block_ref(x + r * n_in + b * SPRIG_MM_QK_K, &ak[b * CEIL_ROWS + r]);
        }
        c->fn = fn;
        c->job = (sprig_mm_job){ .type = type, .n_in = n_in, .n_out = n_out, .packed = w.packed,
                                 .pstride = sprig_mm_panel_bytes(type, n_in), .x = x, .aq = aq, .ak = ak,
                                 .p0 = 0, .p1 = CEIL_PANELS };
        /* every row count a tile takes, 1..CEIL_ROWS, under both prefetch
         * schemes (they choose different tiles for some row counts, e.g.
         * the unpacked K tile from fewer rows under near; the prefetch
         * itself does nothing from L1): the best one is the ceiling, so a
         * dispatch that trades L1 speed for DRAM overlap does not lower
         * it; ~0.05 s per count after a calibration on one thread */
        for (int k = 0; k < 2 * CEIL_ROWS; k++) {
            const int n = k % CEIL_ROWS + 1;
            c->job.pf_far = k >= CEIL_ROWS;
            c->job.n = n;
            c->job.y = c->y[0];
            c->iters = 64;
            for (;;) {
                uint64_t t0 = sprig_time_ns();
                for (uint64_t i = 0; i < c->iters; i++) fn(&c->job);
                double dt = (double)(sprig_time_ns() - t0) * 1e-9;
                if (dt > 0.005 || c->iters >= ((uint64_t)1 << 30)) {
                    c->iters = (uint64_t)((double)c->iters * 0.05 / (dt > 1e-9 ? dt : 1e-9)) + 1;
                    break;
                }
                c->iters *= 4;
            }
            for (int run = 0; run < 2; run++) {
                uint64_t t0 = sprig_time_ns();
                sprig_pool_run(pool, ceil_task, c, nth);
                double dt = (double)(sprig_time_ns() - t0) * 1e-9, ops = 0;
                for (int i = 0; i < nth && i < 256; i++) ops += c->ops[i];
                if (ops / dt * 1e-9 > best) {
                    best = ops / dt * 1e-9;
                    if (rows) *rows = n;
                }
            }
        }
    }
    for (int t = 0; c && t < nth && t < 256; t++) sprig_free_aligned(c->y[t]);
    if (have_w) sprig_weight_free(&w);
    sprig_free_aligned(raw);
    sprig_free_aligned(aq);
    sprig_free_aligned(ak);
    free(x);
    free(c);
    return best;
}

/* Anonymous mapping advised to use huge pages (as packed weights are). */
static void *huge_map(size_t bytes, size_t *len)
{
    const size_t huge = (size_t)2 << 20;
    *len = (bytes + huge - 1) & ~(huge - 1);
    void *p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, *len, MADV_HUGEPAGE);
#endif
    return p;
}

sprig_status sprig_bench_matmul_ns(sprig_pool *pool, int type, int64_t n_in, int64_t n_out, const int *ns,
                                   int count, int reps, sprig_bench_mm *out, sprig_bench_mm_info *info,
                                   sprig_error *err)
{
    if (!ns || !out || count < 1 || count > 64 || reps < 1 || reps > 100000)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "bench matmul: count %d (1..64) or reps %d (1..100000) out of range",
                         count, reps);
    int max_n = 0;
    for (int i = 0; i < count; i++) {
        if (ns[i] < 1 || ns[i] > 4096)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "bench matmul: batch size %d out of range (1..4096)", ns[i]);
        if (ns[i] > max_n) max_n = ns[i];
    }
    size_t rb;
    void *raw = make_raw(type, n_in, n_out, &rb);
    if (!raw)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "bench matmul: cannot make a %s [%lld, %lld] weight",
                         sprig_type_name(type), (long long)n_in, (long long)n_out);
    sprig_status st = SPRIG_OK;
    sprig_weight first;
    if ((st = sprig_weight_init(&first, "bench", type, raw, n_in, n_out, err))) {
        sprig_free_aligned(raw);
        return st;
    }
    bool packed = first.packed != NULL;
    size_t wbytes = packed ? first.packed_bytes : rb * (size_t)n_out;
    sprig_weight_free(&first);
    size_t target = (size_t)160 << 20;
    int copies = (int)((target + wbytes - 1) / wbytes);
    if (copies < 2) copies = 2;
    if (copies > 512) copies = 512;

    sprig_weight *w = calloc((size_t)copies, sizeof *w);
    void **raws = calloc((size_t)copies, sizeof *raws);
    float *x = malloc((size_t)max_n * (size_t)n_in * sizeof(float));
    float *y = sprig_calloc_aligned((size_t)max_n * (size_t)n_out, sizeof(float));
    size_t sb = sprig_act_scratch_bytes(max_n, n_in);
    void *scratch = sprig_calloc_aligned(sb, 1);
    double *t = malloc((size_t)(count + 1) * (size_t)reps * sizeof(double));
    size_t rstride = (wbytes + 4095) & ~(size_t)4095, rlen = 0;
    uint8_t *rbuf = NULL;
    struct bw_ctx *rc = calloc(1, sizeof *rc);
    int made = 0;
    if (!sprig_mul_ovf(rstride, (size_t)copies, &rlen)) rbuf = huge_map(rlen, &rlen);
    if (!w || !raws || !x || !y || !scratch || !t || !rbuf || !rc) {
        st = sprig_err(err, SPRIG_E_NOMEM, "bench matmul: out of memory");
        goto done;
    }
    for (size_t i = 0; i < (size_t)max_n * (size_t)n_in; i++) x[i] = (float)((int)(i * 2654435761u % 2001) - 1000) * 1e-3f;
    for (; made < copies; made++) {
        raws[made] = raw;
        if (!packed && made > 0) {   /* reference kernels read the raw rows: copy those instead */
            raws[made] = sprig_calloc_aligned(wbytes, 1);
            if (!raws[made]) { st = sprig_err(err, SPRIG_E_NOMEM, "bench matmul: out of memory"); goto done; }
            memcpy(raws[made], raw, wbytes);
        }
        if ((st = sprig_weight_init(&w[made], "bench", type, raws[made], n_in, n_out, err))) {
            if (raws[made] != raw) sprig_free_aligned(raws[made]);
            goto done;
        }
    }
    for (size_t i = 0; i < rlen; i += 4096) rbuf[i] = (uint8_t)i;
    int next = 0;
    for (int rep = -1; rep < reps; rep++) {
        {   /* the paired streaming read, from its own copies */
            rc->buf = (const uint64_t *)(rbuf + (size_t)next * rstride);
            rc->words = wbytes / 64 * 8;
            uint64_t t0 = sprig_time_ns();
            sprig_pool_run(pool, bw_task, rc, 0);
            double dt = (double)(sprig_time_ns() - t0) * 1e-9;
            if (rep >= 0) t[(size_t)count * reps + rep] = dt;
        }
        for (int i = 0; i < count; i++) {
            sprig_act a;
            sprig_act_init(&a, x, ns[i], n_in, scratch, sb);
            const sprig_weight *ws[1] = { &w[next] };
            float *ys[1] = { y };
            next = (next + 1) % copies;
            uint64_t t0 = sprig_time_ns();
            sprig_matmul(pool, &a, 1, ws, ys);
            double dt = (double)(sprig_time_ns() - t0) * 1e-9;
            if (rep >= 0) t[(size_t)i * reps + rep] = dt;
        }
    }
    for (int i = 0; i <= count; i++) {
        double *ti = t + (size_t)i * reps;
        qsort(ti, (size_t)reps, sizeof *ti, cmp_double);
        double med = reps % 2 ? ti[reps / 2] : 0.5 * (ti[reps / 2 - 1] + ti[reps / 2]);
        if (i == count) {
            if (info) info->read_gbs = (double)(wbytes / 64 * 64) / med * 1e-9;
            break;
        }
        out[i].n = ns[i];
        out[i].sec_median = med;
        out[i].sec_min = ti[0];
        out[i].gops = 2.0 * ns[i] * (double)n_in * (double)n_out / med * 1e-9;
        out[i].gbs = (double)wbytes / med * 1e-9;
    }
    if (info) info->weight_bytes = wbytes;
done:
    if (rbuf) munmap(rbuf, rlen);
    free(rc);
    for (int i = 0; i < made; i++) {
        sprig_weight_free(&w[i]);
        if (raws[i] != raw) sprig_free_aligned(raws[i]);
    }
    free(w);
    free(raws);
    free(x);
    sprig_free_aligned(y);
    sprig_free_aligned(scratch);
    free(t);
    sprig_free_aligned(raw);
    return st;
}

double sprig_bench_matmul(sprig_pool *pool, int type, int64_t n_in, int64_t n_out, int n, int reps)
{
    sprig_bench_mm r;
    if (sprig_bench_matmul_ns(pool, type, n_in, n_out, &n, 1, reps, &r, NULL, NULL)) return -1;
    return r.sec_median;
}
