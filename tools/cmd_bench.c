/*
 * tools/cmd_bench.c — `sprig bench <what>`: speed, measured, side by side.
 *
 *   decode   tokens/s of plain decoding, the weight bytes one token reads,
 *            the machine's measured read bandwidth and the ratio of the two
 *            (how close decoding runs to its memory roof)
 *   forward  T(n)/T(1) of one batched forward of n tokens at a context of
 *            64: the cost of verifying n draft nodes relative to decoding
 *            one token; with the arithmetic rate, its share of the measured
 *            peak, and the bandwidth reached. Every row's logits by default
 *            (what a verify needs); --logits last computes only the last
 *            row's, as a prompt chunk does (what other engines' prompt
 *            benchmarks time)
 *   spec     configurations (plain, chains, linear, runner-up and dynamic trees) alternated
 *            (A B C D A B C D ..., the first round discarded): median tok/s,
 *            emitted per verify, acceptance and the ratios
 *   matmul   the kernel alone: one weight shape, batch sizes alternated
 *   attention  the tree-attention kernel alone: n queries of a random draft
 *            tree over a history, from DRAM and (its ceiling) from cache
 *   tokenize encode and decode speed of a GGUF's tokenizer on 1 MiB of
 *            English or mixed-script text (tools/bench_tokenize.c)
 *   grammar   constrained decoding: the vocabulary trie, a schema's compile time,
 *            decode with and without the grammar alternated (tools/bench_grammar.c)
 *
 * The machine is shared and noisy, so every figure is a median over
 * alternated repetitions after a warm-up, and ratios are taken inside one
 * run. --json prints one JSON object on stdout instead of the table.
 */
#include "cli.h"
#include "sprig.h"
#include "base/pool.h"
#include "base/rng.h"
#include "base/timer.h"
#include "model/model.h"
#include "model/moe.h"
#include "bench_attn.h"
#include "tensor/attention.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "tensor/roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NS 16

static bool parse_ns(const char *s, int *ns, int *count)
{
    *count = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 4096 || *count == MAX_NS) return false;
        ns[(*count)++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return false;
    }
    return *count > 0;
}

struct common {
    const char *model;
    int threads;
    bool json;
    int reps;
    int kv_mode;                /* enum sprig_kv_mode; 0 = f32 (the default) */
};

/* Parse the flags every bench shares; returns 1 consumed-with-value, 0 consumed, -1 not ours, -2 error. */
static int common_flag(const char *cmd, struct common *c, const char *a, const char *val)
{
    long long v;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!val) goto missing; c->model = val; return 1; }
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (!val) goto missing;
        if (!cli_parse_int(cmd, a, val, 1, 256, &v)) return -2;
        c->threads = (int)v;
        return 1;
    }
    if (!strcmp(a, "--reps")) {
        if (!val) goto missing;
        if (!cli_parse_int(cmd, a, val, 1, 100000, &v)) return -2;
        c->reps = (int)v;
        return 1;
    }
    if (!strcmp(a, "--json")) { c->json = true; return 0; }
    return -1;
missing:
    fprintf(stderr, "sprig %s: %s: missing value\n", cmd, a);
    return -2;
}

/* --kv-type for the benches that own a forward context (decode, forward); same returns as common_flag. */
static int kv_flag(const char *cmd, struct common *c, const char *a, const char *val)
{
    if (strcmp(a, "--kv-type")) return -1;
    const int m = sprig_kv_mode_from_name(val);
    if (m < 0) { fprintf(stderr, "sprig %s: --kv-type: '%s' is not a KV cache type (%s)\n", cmd, val ? val : "", sprig_kv_mode_list()); return -2; }
    c->kv_mode = m;
    return 1;
}

static int weight_type_of(const sprig_model *m) { return m->layers[0].wq.type; }

/* A model's ceiling: each matrix type's kernel from L1
 * (sprig_measure_ceiling_gops), weighted by the type's share of one token's
 * matmul work: total ops / sum over types of (ops / ceiling). `desc` gets
 * "q4_k 71%, q6_k 29%". Negative when a type has no SIMD kernel. */
static double model_ceiling(sprig_pool *pool, const sprig_model *m, char *desc, size_t desc_len)
{
    enum { MAXT = 8 };
    int types[MAXT];
    double ops[MAXT] = { 0 }, total = 0, time = 0;
    int nt = 0;
    const sprig_weight *w[8];
    for (int l = -1; l < m->hp.n_layer; l++) {
        int nw = 0;
        if (l < 0) w[nw++] = &m->output;
        else {
            const struct sprig_layer *L = &m->layers[l];
            const sprig_weight *lw[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
            for (size_t i = 0; i < sizeof lw / sizeof lw[0]; i++) w[nw++] = lw[i];
        }
        for (int i = 0; i < nw; i++) {
            int t = 0;
            while (t < nt && types[t] != w[i]->type) t++;
            if (t == nt) {
                if (nt == MAXT) return -1;
                types[nt++] = w[i]->type;
            }
            ops[t] += 2.0 * (double)w[i]->n_in * (double)w[i]->n_out;
        }
    }
    size_t off = 0;
    for (int t = 0; t < nt; t++) total += ops[t];
    for (int t = 0; t < nt; t++) {
        double c = sprig_measure_ceiling_gops(pool, types[t], NULL);
        if (c <= 0) return -1;
        time += ops[t] / c;
        if (off < desc_len)
            off += (size_t)snprintf(desc + off, desc_len - off, "%s%s %.0f%%", t ? ", " : "", sprig_type_name(types[t]),
                                    100 * ops[t] / total);
    }
    return time > 0 ? total / time : -1;
}

/* The kernel's own ceiling line (sprig_measure_ceiling_gops). */
static void print_ceiling(int type, double ceil, int rows, double peak)
{
    if (ceil > 0)
        printf("ceiling    %.1f G ops/s measured: the exact %s kernel from L1 (best at %d rows), %.0f%% of peak\n", ceil,
               sprig_type_name(type), rows, peak > 0 ? 100 * ceil / peak : 0);
}

/* Load the model and make a pool and a forward context; prints and returns false on failure. */
static bool open_all(const char *cmd, const struct common *c, int n_ctx, int n_batch, sprig_model **m, sprig_pool **pool,
                     sprig_ctx **ctx)
{
    sprig_error err = { 0 };
    *m = NULL;
    *pool = NULL;
    *ctx = NULL;
    struct sprig_ctx_params cp = { .n_ctx = n_ctx, .n_batch = n_batch, .kv_mode = c->kv_mode };
    if (sprig_model_load(c->model, m, &err) || !(*pool = sprig_pool_create(c->threads, &err)) ||
        sprig_ctx_create(*m, *pool, &cp, ctx, &err)) {
        fprintf(stderr, "sprig %s: %s\n", cmd, err.msg);
        sprig_pool_free(*pool);
        sprig_model_free(*m);
        return false;
    }
    return true;
}

static void close_all(sprig_model *m, sprig_pool *pool, sprig_ctx *ctx)
{
    sprig_ctx_free(ctx);
    sprig_pool_free(pool);
    sprig_model_free(m);
}

/* ---------------------------------------------------------------- decode */

static int bench_decode(int argc, char **argv)
{
    const char *C = "bench decode";
    struct common c = { .threads = 0, .reps = 1 };
    long long n_tok = 64, depth = 0, v;
    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = common_flag(C, &c, argv[i], val);
        if (r == -1) r = kv_flag(C, &c, argv[i], val);
        if (r == -2) return 2;
        if (r >= 0) { i += r; continue; }
        if (!strcmp(argv[i], "-n")) {
            if (!val || !cli_parse_int(C, "-n", val, 4, 100000, &v)) return 2;
            n_tok = v;
            i++;
        } else if (!strcmp(argv[i], "--ctx")) {
            if (!val || !cli_parse_int(C, "--ctx", val, 0, 1 << 22, &v)) return 2;
            depth = v;
            i++;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: sprig bench decode -m FILE [-t N] [-n TOKENS] [--ctx DEPTH] [--reps R] [--kv-type MODE] [--json]\n"
                   "  --ctx DEPTH  decode after DEPTH tokens of context (random ids, prefilled untimed; default 0)\n");
            return 0;
        } else {
            fprintf(stderr, "sprig %s: unknown option '%s'\n", C, argv[i]);
            return 2;
        }
    }
    if (!c.model) { fprintf(stderr, "sprig %s: -m FILE is required\n", C); return 2; }
    sprig_error err = { 0 };
    sprig_model *m;
    sprig_pool *pool;
    sprig_ctx *ctx;
    if (!open_all(C, &c, (int)(depth + n_tok) + 32, 64, &m, &pool, &ctx)) return 1;
    int V = m->hp.n_vocab;
    float *logits = malloc(sizeof(float) * (size_t)V);
    int32_t *ctx_ids = malloc(sizeof(int32_t) * (size_t)(depth + 1));
    if (ctx_ids) {   /* the context: random ids (the same every rep) */
        sprig_rng rng;
        sprig_rng_seed(&rng, 1234);
        for (long long i = 0; i < depth; i++) ctx_ids[i] = (int32_t)(sprig_rng_u64(&rng) % (uint64_t)V);
    }
    size_t cap = (size_t)n_tok * (size_t)c.reps;
    double *ms = malloc(sizeof(double) * cap), *gbs = malloc(sizeof(double) * cap), *ratio = malloc(sizeof(double) * cap);
    double bytes = (double)m->weight_bytes + (double)m->tok_embd.row_bytes;
    /* Each token is paired with a read of a 256 MiB probe on the same threads
     * just before it: the host's bandwidth drifts (other tenants), so the
     * fair bound for a token is the bandwidth of that moment. */
    sprig_bw_probe *probe = sprig_bw_probe_create((size_t)256 << 20);
    int n_ms = 0, rc = probe && logits && ms && gbs && ratio && ctx_ids ? 0 : 1;
    double sum_ms = 0;   /* for the mean: tokens / time, as engines that time a whole run report */
    if (rc) fprintf(stderr, "sprig %s: out of memory\n", C);
    if (!rc) sprig_bw_probe_read(pool, probe);   /* warm the probe's TLB */
    for (int rep = 0; rep < c.reps && !rc; rep++) {
        sprig_kv_clear(sprig_ctx_kv(ctx));
        int32_t t = sprig_tokenizer_bos(m->tok) >= 0 ? sprig_tokenizer_bos(m->tok) : 0;
        if (depth && sprig_prefill(ctx, ctx_ids, (int)depth, NULL, NULL, &err)) {
            fprintf(stderr, "sprig %s: %s\n", C, err.msg);
            rc = 1;
            break;
        }
        for (int i = 0; i < n_tok; i++) {
            double bw = sprig_bw_probe_read(pool, probe);
            double t0 = sprig_time_ms();
            struct sprig_fwd f = { .n = 1, .tokens = &t, .n_out = 1, .logits = logits };
            if (sprig_forward(ctx, &f, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; break; }
            t = sprig_argmax(logits, V);
            double dt = sprig_time_ms() - t0;
            if (i >= 2) {        /* the first tokens warm caches and threads */
                ms[n_ms] = dt;
                sum_ms += dt;
                gbs[n_ms] = bw;
                ratio[n_ms] = bytes / (dt * 1e-3) / 1e9 / bw;
                n_ms++;
            }
        }
    }
    if (!rc) {
        double med = cli_median(ms, n_ms), med_bw = cli_median(gbs, n_ms), med_ratio = cli_median(ratio, n_ms);
        double tok_s = 1e3 / med;
        double achieved = bytes * tok_s / 1e9;
        double bound = med_bw * 1e9 / bytes;
        struct sprig_model_info mi;
        sprig_model_get_info(m, &mi);
        if (c.json) {
            printf("{\"bench\":\"decode\",\"model\":\"%s\",\"weight_type\":\"%s\",\"n_params\":%lld,\"threads\":%d,\"kernels\":\"%s\",\"prefetch\":\"%s\","
                   "\"kv_type\":\"%s\",\"context\":%lld,\"tokens\":%d,\"ms_per_token_median\":%.4f,\"ms_per_token_mean\":%.4f,\"tok_s\":%.3f,\"weight_bytes_per_token\":%.0f,"
                   "\"achieved_gb_s\":%.3f,\"measured_read_gb_s\":%.3f,\"bound_tok_s\":%.3f,\"fraction_of_bound\":%.4f}\n",
                   c.model, sprig_type_name(weight_type_of(m)), (long long)mi.n_params, sprig_pool_size(pool), mi.kernels, sprig_prefetch_name(), sprig_kv_mode_name(c.kv_mode), depth, n_ms, med, n_ms ? sum_ms / n_ms : 0,
                   tok_s, bytes, achieved, med_bw, bound, med_ratio);
        } else {
            printf("model            %s (%s, %.1fM params, %s weights)\n", c.model, mi.arch, (double)mi.n_params / 1e6,
                   sprig_type_name(weight_type_of(m)));
            printf("threads          %d (kernels %s, prefetch %s: %s)\n", sprig_pool_size(pool), mi.kernels, sprig_prefetch_name(),
                   sprig_prefetch_why());
            printf("decode           %.3f ms/token median over %d tokens after %lld of context = %.2f tok/s\n", med, n_ms,
                   depth, tok_s);
            printf("weight bytes     %.1f MB per token\n", bytes / 1e6);
            printf("achieved         %.2f GB/s (median token)\n", achieved);
            printf("measured read    %.2f GB/s (median of a read paired with each token)\n", med_bw);
            printf("bandwidth bound  %.2f tok/s\n", bound);
            printf("ratio            %.1f%% of the bound (median of the per-token paired ratios)\n", 100 * med_ratio);
        }
    }
    sprig_bw_probe_free(probe);
    free(ms);
    free(gbs);
    free(ratio);
    free(ctx_ids);
    free(logits);
    close_all(m, pool, ctx);
    return rc;
}

/* ---------------------------------------------------------------- forward */

static int bench_forward(int argc, char **argv)
{
    const char *C = "bench forward";
    struct common c = { .threads = 0, .reps = 7 };
    int ns[MAX_NS] = { 1, 2, 4, 8, 16, 32, 64 }, n_ns = 7;
    long long ctx_len = 64, v;
    bool last_only = false;
    /* --prefetch near|far|both: the kernels' prefetch scheme; both
     * alternates the two rep by rep in this process (rows for each, and
     * far/near per n as the median of the reps' paired ratios) */
    int schemes[2] = { -1, -1 }, n_sch = 1;
    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = common_flag(C, &c, argv[i], val);
        if (r == -1) r = kv_flag(C, &c, argv[i], val);
        if (r == -2) return 2;
        if (r >= 0) { i += r; continue; }
        if (!strcmp(argv[i], "--prefetch")) {
            if (val && !strcmp(val, "near")) schemes[0] = SPRIG_PF_NEAR;
            else if (val && !strcmp(val, "far")) schemes[0] = SPRIG_PF_FAR;
            else if (val && !strcmp(val, "both")) { schemes[0] = SPRIG_PF_NEAR; schemes[1] = SPRIG_PF_FAR; n_sch = 2; }
            else { fprintf(stderr, "sprig %s: --prefetch: want near, far or both\n", C); return 2; }
            i++;
        } else if (!strcmp(argv[i], "--ctx")) {
            if (!val || !cli_parse_int(C, "--ctx", val, 1, 1 << 20, &v)) return 2;
            ctx_len = v;
            i++;
        } else if (!strcmp(argv[i], "--logits")) {
            if (val && (!strcmp(val, "last") || !strcmp(val, "all"))) last_only = !strcmp(val, "last");
            else { fprintf(stderr, "sprig %s: --logits: want last or all\n", C); return 2; }
            i++;
        } else if (!strcmp(argv[i], "--ns")) {
            if (!val || !parse_ns(val, ns, &n_ns)) { fprintf(stderr, "sprig %s: --ns: want a list like 1,2,4,8\n", C); return 2; }
            i++;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: sprig bench forward -m FILE [-t N] [--ctx 64] [--ns 1,2,4,8,16,32,64] [--logits all|last]\n"
                   "                           [--kv-type MODE] [--prefetch near|far|both] [--reps R] [--json]\n");
            return 0;
        } else {
            fprintf(stderr, "sprig %s: unknown option '%s'\n", C, argv[i]);
            return 2;
        }
    }
    if (!c.model) { fprintf(stderr, "sprig %s: -m FILE is required\n", C); return 2; }
    int n_max = 1;
    for (int i = 0; i < n_ns; i++) if (ns[i] > n_max) n_max = ns[i];
    sprig_error err = { 0 };
    sprig_model *m;
    sprig_pool *pool;
    sprig_ctx *ctx;
    if (!open_all(C, &c, (int)ctx_len + n_max + 8, n_max, &m, &pool, &ctx)) return 1;
    if (n_max > 1 && sprig_ctx_speculative(ctx, n_max, &err)) {   /* each timed block is dropped again (a hybrid replays) */
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        close_all(m, pool, ctx);
        return 1;
    }
    int V = m->hp.n_vocab;
    float *logits = malloc(sizeof(float) * (size_t)V * (size_t)n_max);
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(ctx_len + n_max));
    for (int64_t i = 0; i < ctx_len + n_max; i++) toks[i] = (int32_t)((i * 7919 + 13) % V);
    int rc = 0;
    for (int64_t done = 0; done < ctx_len && !rc;) {       /* the history */
        int chunk = (int)(ctx_len - done < n_max ? ctx_len - done : n_max);
        struct sprig_fwd f = { .n = chunk, .tokens = toks + done };
        if (sprig_forward(ctx, &f, &err)) rc = 1;
        done += chunk;
    }
    /* t[(s * n_ns + j) * reps + rep]: scheme s, batch ns[j] */
    double *t = calloc((size_t)n_sch * (size_t)n_ns * (size_t)c.reps, sizeof(double));
    /* mixture of experts: what a forward of ns[j] rows read from its experts (the same every rep: the same tokens) */
    double ex_layer[MAX_NS] = { 0 }, ex_mb[MAX_NS] = { 0 };
    for (int rep = -1; rep < c.reps && !rc; rep++) {        /* rep -1 is the warm-up */
        for (int si = 0; si < n_sch && !rc; si++) {
            const int s = (si + (rep < 0 ? 0 : rep)) % n_sch;  /* the schemes' order alternates too */
            if (schemes[s] >= 0) sprig_prefetch_force(schemes[s]);
            for (int j = 0; j < n_ns && !rc; j++) {
                int n = ns[(j + (rep < 0 ? 0 : rep)) % n_ns];      /* rotate the order each rep */
                int jj = (j + (rep < 0 ? 0 : rep)) % n_ns;
                struct sprig_moe_counters m0, m1;
                sprig_ctx_moe_counters(ctx, &m0);
                double t0 = sprig_time_ms();
                struct sprig_fwd f = { .n = n, .tokens = toks + ctx_len, .n_out = last_only ? 1 : n, .logits = logits };
                if (sprig_forward(ctx, &f, &err) || sprig_ctx_trim(ctx, n, &err)) { rc = 1; break; }
                double dt = sprig_time_ms() - t0;
                sprig_ctx_moe_counters(ctx, &m1);
                if (m1.layer_runs > m0.layer_runs) {
                    ex_layer[jj] = (double)(m1.experts - m0.experts) / (double)(m1.layer_runs - m0.layer_runs);
                    ex_mb[jj] = (double)(m1.bytes - m0.bytes) / 1e6;
                }
                if (rep >= 0) t[((size_t)s * n_ns + jj) * c.reps + rep] = dt;
            }
        }
    }
    if (rc) fprintf(stderr, "sprig %s: %s\n", C, err.msg);
    if (schemes[0] >= 0) sprig_prefetch_force(schemes[n_sch - 1]);   /* the ceiling below: the last scheme's */
    int wt = weight_type_of(m);
    double peak = rc ? 0 : sprig_measure_peak_gops(pool, wt);
    char cmix[160] = "";
    double ceil = rc ? 0 : model_ceiling(pool, m, cmix, sizeof cmix);
    double bw = rc ? 0 : sprig_measure_read_bandwidth(pool, 0);
    /* matmul work per token: every matrix the forward multiplies (2 ops per weight) */
    double ops_tok = 0, ops_head = 0;     /* the output head's share: n rows, or 1 with --logits last */
    {
        const struct sprig_hparams *hp = &m->hp;
        double qd = (double)hp->n_head * hp->head_dim, kvd = (double)hp->n_kv_head * hp->head_dim;
        /* the FFN a token runs: the dense one, or its K experts (plus a shared expert, and gemma4's dense MLP beside them) */
        const double ff = hp->n_expert ? (double)hp->n_expert_used * hp->n_ff_exp + hp->n_ff_shexp +
                                             (m->layers[0].ffn_pre_norm2 ? hp->n_ff : 0)
                                       : hp->n_ff;
        ops_tok = 2.0 * hp->n_layer * ((double)hp->dim * (qd + 2 * kvd) + qd * hp->dim + 3.0 * hp->dim * ff)
                + 2.0 * hp->dim * hp->n_vocab;
        ops_head = 2.0 * hp->dim * hp->n_vocab;
    }
    double meds[2][MAX_NS] = { { 0 } }, t1s[2] = { 0 }, pair[MAX_NS] = { 0 };
    for (int s = 0; s < n_sch && !rc; s++) {
        for (int j = 0; j < n_ns; j++) meds[s][j] = cli_median(t + ((size_t)s * n_ns + j) * c.reps, c.reps);
        for (int j = 0; j < n_ns; j++) if (ns[j] == 1) t1s[s] = meds[s][j];
        if (t1s[s] <= 0 && n_ns) t1s[s] = meds[s][0] / ns[0];
    }
    if (n_sch == 2 && !rc) {   /* far / near per n: the median of the reps' ratios (each rep ran both) */
        double *q = malloc(sizeof(double) * (size_t)c.reps);
        for (int j = 0; q && j < n_ns; j++) {
            for (int r = 0; r < c.reps; r++) q[r] = t[((size_t)n_ns + j) * c.reps + r] / t[(size_t)j * c.reps + r];
            pair[j] = cli_median(q, c.reps);
        }
        free(q);
    }
    struct sprig_model_info mi;
    sprig_model_get_info(m, &mi);
    double bytes = (double)m->weight_bytes;
    /* experts: the bytes a forward reads are the dense weights plus the experts its rows chose, not the K of E
     * a single token averages (weight_bytes' count) */
    const bool moe = m->hp.n_expert > 0;
    double dense_bytes = bytes;
    for (int l = 0; moe && l < m->hp.n_layer; l++) {
        const struct sprig_layer *L = &m->layers[l];
        for (int e = 0; L->exp_down && e < m->hp.n_expert; e++)
            dense_bytes -= (double)sprig_moe_expert_bytes(L, e) * m->hp.n_expert_used / m->hp.n_expert;
    }
#define FWD_BYTES(j) (moe ? dense_bytes + ex_mb[j] * 1e6 : bytes)
    if (!rc) {
        if (c.json) {
            printf("{\"bench\":\"forward\",\"model\":\"%s\",\"weight_type\":\"%s\",\"n_params\":%lld,\"threads\":%d,\"kernels\":\"%s\",\"prefetch\":\"%s\","
                   "\"ctx\":%lld,\"logits\":\"%s\",\"kv_type\":\"%s\",\"reps\":%d,\"peak_gops\":%.2f,\"ceiling_gops\":%.2f,\"ceiling_mix\":\"%s\","
                   "\"measured_read_gb_s\":%.3f,\"rows\":[",
                   c.model, sprig_type_name(wt), (long long)mi.n_params, sprig_pool_size(pool), mi.kernels,
                   n_sch == 2 ? "both" : sprig_prefetch_name(), ctx_len,
                   last_only ? "last" : "all", sprig_kv_mode_name(c.kv_mode), c.reps, peak, ceil, cmix, bw);
            for (int s = 0; s < n_sch; s++)
                for (int j = 0; j < n_ns; j++) {
                    const double *med = meds[s];
                    double gops = (ops_tok * ns[j] - (last_only ? ops_head * (ns[j] - 1) : 0)) / (med[j] * 1e-3) / 1e9;
                    printf("%s{\"n\":%d,", s || j ? "," : "", ns[j]);
                    if (n_sch == 2) printf("\"prefetch\":\"%s\",", s ? "far" : "near");
                    if (n_sch == 2 && s) printf("\"far_over_near\":%.4f,", pair[j]);
                    printf("\"ms\":%.4f,\"ratio\":%.4f,\"gops\":%.3f,\"fraction_of_peak\":%.4f,\"fraction_of_ceiling\":%.4f,\"gb_s\":%.3f",
                           med[j], med[j] / t1s[s], gops, peak > 0 ? gops / peak : 0, ceil > 0 ? gops / ceil : 0,
                           FWD_BYTES(j) / (med[j] * 1e-3) / 1e9);
                    if (moe) printf(",\"experts_per_layer\":%.3f,\"weight_mb\":%.3f", ex_layer[j], FWD_BYTES(j) / 1e6);
                    printf("}");
                }
            printf("]}\n");
        } else {
            if (n_sch == 2)
                printf("model      %s (%s, %.1fM params, %s weights), %d threads, kernels %s, prefetch near and far alternated\n",
                       c.model, mi.arch, (double)mi.n_params / 1e6, sprig_type_name(wt), sprig_pool_size(pool), mi.kernels);
            else
                printf("model      %s (%s, %.1fM params, %s weights), %d threads, kernels %s, prefetch %s (%s)\n", c.model,
                       mi.arch, (double)mi.n_params / 1e6, sprig_type_name(wt), sprig_pool_size(pool), mi.kernels,
                       sprig_prefetch_name(), schemes[0] >= 0 ? "--prefetch" : sprig_prefetch_why());
            printf("context    %lld tokens of history (%s KV); logits of %s; medians of %d alternated reps after a warm-up\n",
                   ctx_len, sprig_kv_mode_name(c.kv_mode), last_only ? "the last row only" : "every row", c.reps);
            printf("peak       %.1f G ops/s measured (%s); read bandwidth %.2f GB/s measured\n", peak,
                   wt == SPRIG_TYPE_F32 || wt == SPRIG_TYPE_F16 || wt == SPRIG_TYPE_BF16 ? "fp32 fma" : "int8 dot", bw);
            if (ceil > 0)
                printf("ceiling    %.1f G ops/s measured: the exact kernels from L1, weighted by their share of the work (%s), %.0f%% of peak\n",
                       ceil, cmix, peak > 0 ? 100 * ceil / peak : 0);
            if (moe)
                printf("experts    %d of %d per token per layer; GB/s counts the dense weights and the experts each forward read\n",
                       m->hp.n_expert_used, m->hp.n_expert);
            printf("%6s %10s %8s %10s %8s %8s %8s%s%s\n", "n", "ms", "T(n)/T(1)", "G ops/s", "of peak", "of ceil", "GB/s",
                   moe ? " experts/layer weight MB" : "", n_sch == 2 ? " prefetch far/near" : "");
            for (int s = 0; s < n_sch; s++)
                for (int j = 0; j < n_ns; j++) {
                    const double *med = meds[s];
                    double gops = (ops_tok * ns[j] - (last_only ? ops_head * (ns[j] - 1) : 0)) / (med[j] * 1e-3) / 1e9;
                    printf("%6d %10.3f %8.3f %10.1f %7.1f%% %7.1f%% %8.2f", ns[j], med[j], med[j] / t1s[s], gops,
                           peak > 0 ? 100 * gops / peak : 0, ceil > 0 ? 100 * gops / ceil : 0, FWD_BYTES(j) / (med[j] * 1e-3) / 1e9);
                    if (moe) printf(" %13.2f %9.1f", ex_layer[j], FWD_BYTES(j) / 1e6);
                    if (n_sch == 2) printf(" %8s %8.3f", s ? "far" : "near", s ? pair[j] : 1.0);
                    printf("\n");
                }
        }
    }
#undef FWD_BYTES
    free(t);
    free(toks);
    free(logits);
    close_all(m, pool, ctx);
    return rc;
}

/* ---------------------------------------------------------------- spec */

/* One configuration of a spec bench: how the session drafts and verifies. */
struct spec_conf {
    char name[32];
    enum { SC_PLAIN, SC_CHAIN, SC_TREE, SC_RUNNER, SC_DYN, SC_AUTO } kind;
    int k, branches, nodes, width;    /* draft-max; runner-up leaves; dynamic: nodes, width */
    int q;                            /* -1: the session default; 1 "/q": sampled drafts; 0 "/onehot" */
};
#define MAX_CONF 24

/* "plain" | "chain:K" | "tree:K" (linear) | "runner:K:B" | "dyn:D:M:W" | "auto:D:M:W", each but
 * plain optionally with "/q" (sampled drafts) */
static bool parse_conf(const char *C, const char *full, struct spec_conf *o)
{
    memset(o, 0, sizeof *o);
    int a = 0, b = 0, d = 0, n = 0;
    char spec[32];
    size_t len = strlen(full);
    if (len >= sizeof spec) { fprintf(stderr, "sprig %s: --cfg '%.40s...' is too long\n", C, full); return false; }
    memcpy(spec, full, len + 1);
    o->q = -1;
    if (len > 2 && !strcmp(spec + len - 2, "/q")) { o->q = 1; spec[len - 2] = 0; }
    else if (len > 7 && !strcmp(spec + len - 7, "/onehot")) { o->q = 0; spec[len - 7] = 0; }
    if (!strcmp(spec, "plain")) o->kind = SC_PLAIN;
    else if (sscanf(spec, "chain:%d%n", &a, &n) == 1 && !spec[n]) { o->kind = SC_CHAIN; o->k = a; }
    else if (sscanf(spec, "tree:%d%n", &a, &n) == 1 && !spec[n]) { o->kind = SC_TREE; o->k = a; }
    else if (sscanf(spec, "runner:%d:%d%n", &a, &b, &n) == 2 && !spec[n]) { o->kind = SC_RUNNER; o->k = a; o->branches = b; }
    else if (sscanf(spec, "dyn:%d:%d:%d%n", &a, &b, &d, &n) == 3 && !spec[n]) { o->kind = SC_DYN; o->k = a; o->nodes = b; o->width = d; }
    else if (sscanf(spec, "auto:%d:%d:%d%n", &a, &b, &d, &n) == 3 && !spec[n]) { o->kind = SC_AUTO; o->k = a; o->nodes = b; o->width = d; }
    else {
        fprintf(stderr, "sprig %s: --cfg '%s' is not plain, chain:K, tree:K, runner:K:B, dyn:D:M:W or auto:D:M:W\n", C, spec);
        return false;
    }
    if (o->q >= 0 && o->kind == SC_PLAIN) { fprintf(stderr, "sprig %s: --cfg '%s': plain drafts nothing to sample\n", C, full); return false; }
    if (o->kind != SC_PLAIN && (o->k < 1 || o->k > 63 || o->branches < 0 || o->k + 1 + o->branches > 64 ||
                                (o->kind >= SC_DYN && (o->nodes < o->k + 1 || o->nodes > 64 || o->width < 1 || o->width > 8)))) {
        fprintf(stderr, "sprig %s: --cfg '%s': out of range (K, D 1..63; nodes D+1..64; width 1..8)\n", C, spec);
        return false;
    }
    snprintf(o->name, sizeof o->name, "%s", full);
    return true;
}

static int bench_spec(int argc, char **argv)
{
    const char *C = "bench spec";
    struct common c = { .threads = 0, .reps = 5 };
    struct sprig_session_params base = sprig_session_default_params();
    base.temp = 0;
    base.ignore_eos = true;
    base.draft_max = 4;
    int branches = 2;
    long long n_tok = 256, v;
    const char *prompt = "Once upon a time";
    struct spec_conf conf[MAX_CONF];
    int n_conf = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = common_flag(C, &c, a, val);
        if (r == -2) return 2;
        if (r >= 0) { i += r; continue; }
        if (!strcmp(a, "--draft") && val) { base.drafter = SPRIG_DRAFTER_MODEL; base.draft_path = val; i++; }
        else if (!strcmp(a, "--mtp") && val) { base.drafter = SPRIG_DRAFTER_MTP; base.draft_path = val; i++; }
        else if (!strcmp(a, "--draft-ngram")) base.drafter = SPRIG_DRAFTER_NGRAM;
        else if (!strcmp(a, "--draft-oracle") && val) { base.drafter = SPRIG_DRAFTER_ORACLE; base.draft_path = val; i++; }
        else if (!strcmp(a, "--oracle-accept") && val) { base.oracle_accept = val; i++; }
        else if (!strcmp(a, "--oracle-sibling") && val) {
            double d;
            if (!cli_parse_float(C, a, val, 0, 1, &d)) return 2;
            base.oracle_sibling = (float)d;
            i++;
        }
        else if (!strcmp(a, "--draft-max") && val) { if (!cli_parse_int(C, a, val, 1, 63, &v)) return 2; base.draft_max = (int)v; i++; }
        else if (!strcmp(a, "--ngram-min") && val) { if (!cli_parse_int(C, a, val, 1, 8, &v)) return 2; base.ngram_min = (int)v; i++; }
        else if (!strcmp(a, "--ngram-max") && val) { if (!cli_parse_int(C, a, val, 1, 8, &v)) return 2; base.ngram_max = (int)v; i++; }
        else if (!strcmp(a, "--tree-branches") && val) { if (!cli_parse_int(C, a, val, 1, 62, &v)) return 2; branches = (int)v; i++; }
        else if (!strcmp(a, "--cfg") && val) {
            if (n_conf == MAX_CONF) { fprintf(stderr, "sprig %s: more than %d --cfg\n", C, MAX_CONF); return 2; }
            if (!parse_conf(C, val, &conf[n_conf++])) return 2;
            i++;
        }
        else if (!strcmp(a, "-n") && val) { if (!cli_parse_int(C, a, val, 8, 1 << 20, &v)) return 2; n_tok = v; i++; }
        else if (!strcmp(a, "--temp") && val) {
            double d;
            if (!cli_parse_float(C, a, val, 0, 100, &d)) return 2;
            base.temp = (float)d;
            i++;
        }
        else if (!strcmp(a, "--seed") && val) { if (!cli_parse_int(C, a, val, 0, 0x7fffffffffffffffLL, &v)) return 2; base.seed = (uint64_t)v; i++; }
        else if (!strcmp(a, "-p") && val) { prompt = val; i++; }
        else if (!strcmp(a, "--pairs") && val) { if (!cli_parse_int(C, a, val, 1, 100000, &v)) return 2; c.reps = (int)v; i++; }
        else if (!strcmp(a, "-c") && val) { if (!cli_parse_int(C, a, val, 16, 1 << 24, &v)) return 2; base.n_ctx = (int)v; i++; }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: sprig bench spec -m TARGET (--draft FILE | --mtp FILE | --draft-ngram | --draft-oracle IDS\n"
                   "                        [--oracle-accept P1,P2,..] [--oracle-sibling Q]) [--draft-max K]\n"
                   "                        [--ngram-min N] [--ngram-max N]\n"
                   "                        [--tree-branches N] [--cfg SPEC ...] [-n TOKENS] [-p PROMPT] [--pairs R]\n"
                   "                        [-t N] [-c N] [--json]\n"
                   "  --cfg SPEC (repeatable): plain | chain:K | tree:K (linear) | runner:K:B (B runner-up leaves)\n"
                   "             | dyn:D:M:W (dynamic tree: depth D, M nodes, width W) | auto:D:M:W (--tree auto\n"
                   "             choosing from such a tree each round); default: plain, chain:K,\n"
                   "             tree:K, runner:K:B from --draft-max K and --tree-branches B; with --temp\n"
                   "             T > 0 a /q or /onehot suffix (chain:4/onehot) draws the drafts from the\n"
                   "             drafter's distribution or proposes its argmax (default: /q)\n"
                   "  --temp T, --seed N: sample at temperature T (default 0: greedy)\n"
                   "  --draft-oracle IDS: ids from `sprig run -m TARGET -p PROMPT -n TOKENS --temp 0 --ignore-eos\n"
                   "  --save-ids IDS` (the same prompt and length), proposed at set rates (see sprig run --help)\n");
            return 0;
        } else {
            fprintf(stderr, "sprig %s: unknown or incomplete option '%s'\n", C, a);
            return 2;
        }
    }
    if (!c.model) { fprintf(stderr, "sprig %s: -m FILE is required\n", C); return 2; }
    if (base.drafter == SPRIG_DRAFTER_NONE) { fprintf(stderr, "sprig %s: a drafter is required (--draft, --mtp, --draft-ngram or --draft-oracle)\n", C); return 2; }
    if (base.draft_max + 1 + branches > 64) { fprintf(stderr, "sprig %s: --draft-max + --tree-branches exceeds 63\n", C); return 2; }
    if (!n_conf) {   /* the classic four */
        char spec[4][32];
        snprintf(spec[0], 32, "plain");
        snprintf(spec[1], 32, "chain:%d", base.draft_max);
        snprintf(spec[2], 32, "tree:%d", base.draft_max);
        snprintf(spec[3], 32, "runner:%d:%d", base.draft_max, branches);
        for (int k = 0; k < 4; k++) parse_conf(C, spec[k], &conf[n_conf++]);
    }
    if (conf[0].kind != SC_PLAIN) {   /* plain first: every ratio is against it */
        memmove(conf + 1, conf, sizeof conf[0] * (size_t)(n_conf < MAX_CONF ? n_conf : MAX_CONF - 1));
        parse_conf(C, "plain", &conf[0]);
        if (n_conf < MAX_CONF) n_conf++;
    }
    base.n_threads = c.threads;
    if (base.n_ctx == 0) base.n_ctx = (int)(n_tok + 64 + strlen(prompt) * 3);
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    if (sprig_model_load(c.model, &m, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); return 1; }
    sprig_session *s[MAX_CONF] = { 0 };
    int rc = 0;
    for (int k = 0; k < n_conf && !rc; k++) {
        struct sprig_session_params p = base;
        const struct spec_conf *f = &conf[k];
        p.tree = f->kind >= SC_TREE ? SPRIG_TREE_ON : SPRIG_TREE_OFF;
        if (f->kind == SC_PLAIN) p.drafter = SPRIG_DRAFTER_NONE;
        else p.draft_max = f->k;
        p.tree_branches = f->kind == SC_RUNNER ? f->branches : f->kind >= SC_DYN ? f->nodes - (f->k + 1) : 0;
        p.tree_width = f->kind >= SC_DYN ? f->width : 0;
        p.tree_auto = f->kind == SC_AUTO;
        if (f->q >= 0) p.sampled_drafts = f->q;
        if (sprig_session_create(m, &p, &s[k], &err)) { fprintf(stderr, "sprig %s: %s: %s\n", C, f->name, err.msg); rc = 1; }
    }
    int R = c.reps;
    double *tps = calloc((size_t)n_conf * R, sizeof(double));
    struct sprig_stats st[MAX_CONF];
    for (int rep = -1; rep < R && !rc; rep++) {   /* alternated: every config once per round; round -1 warms up */
        for (int k = 0; k < n_conf && !rc; k++) {
            if (sprig_session_generate(s[k], prompt, strlen(prompt), (int)n_tok, NULL, NULL, &err)) {
                fprintf(stderr, "sprig %s: %s: %s\n", C, conf[k].name, err.msg);
                rc = 1;
                break;
            }
            sprig_session_get_stats(s[k], &st[k]);
            if (rep >= 0) tps[(size_t)k * R + rep] = st[k].decode_tok_s;
        }
    }
    if (!rc) {
        double med[MAX_CONF];
        int best_chain = -1, best_tree = -1, best_fixed = -1, best_auto = -1;   /* fixed: chains and fixed trees */
        for (int k = 0; k < n_conf; k++) {
            med[k] = cli_median(tps + (size_t)k * R, R);
            if (conf[k].kind == SC_CHAIN && (best_chain < 0 || med[k] > med[best_chain])) best_chain = k;
            if (conf[k].kind >= SC_RUNNER && (best_tree < 0 || med[k] > med[best_tree])) best_tree = k;
            if (conf[k].kind != SC_PLAIN && conf[k].kind != SC_AUTO && (best_fixed < 0 || med[k] > med[best_fixed])) best_fixed = k;
            if (conf[k].kind == SC_AUTO && (best_auto < 0 || med[k] > med[best_auto])) best_auto = k;
        }
        const double tvc = best_chain >= 0 && best_tree >= 0 ? med[best_tree] / med[best_chain] : 0;
        const double avf = best_auto >= 0 && best_fixed >= 0 ? med[best_auto] / med[best_fixed] : 0;
        if (c.json) {
            printf("{\"bench\":\"spec\",\"model\":\"%s\",\"drafter\":\"%s\",\"draft\":\"%s\",\"tokens\":%lld,\"pairs\":%d,"
                   "\"threads\":%d,\"configs\":[", c.model, n_conf > 1 ? st[1].drafter : "none",
                   base.draft_path ? base.draft_path : "", n_tok, R, st[0].n_threads);
            for (int k = 0; k < n_conf; k++)
                printf("%s{\"name\":\"%s\",\"path\":\"%s\",\"tok_s\":%.3f,\"ratio_vs_plain\":%.4f,\"emitted_per_verify\":%.4f,"
                       "\"acceptance\":%.4f,\"rounds\":%lld,\"branch_rounds\":%lld,\"draft_ms\":%.3f,\"verify_ms\":%.3f}",
                       k ? "," : "", conf[k].name, st[k].path, med[k], med[k] / med[0], st[k].emitted_per_verify,
                       st[k].acceptance_rate, (long long)st[k].rounds, (long long)st[k].branch_rounds, st[k].draft_ms,
                       st[k].verify_ms);
            printf("],\"best_chain\":\"%s\",\"best_tree\":\"%s\",\"best_tree_vs_best_chain\":%.4f,"
                   "\"best_auto\":\"%s\",\"best_fixed\":\"%s\",\"auto_vs_best_fixed\":%.4f}\n",
                   best_chain >= 0 ? conf[best_chain].name : "", best_tree >= 0 ? conf[best_tree].name : "", tvc,
                   best_auto >= 0 ? conf[best_auto].name : "", best_fixed >= 0 ? conf[best_fixed].name : "", avf);
        } else {
            printf("target %s, drafter %s%s%s, %lld tokens, %d alternated rounds after a warm-up, %d threads\n", c.model,
                   n_conf > 1 ? st[1].drafter : "none", base.draft_path ? " " : "", base.draft_path ? base.draft_path : "",
                   n_tok, R, st[0].n_threads);
            printf("%-16s %-6s %12s %9s %14s %11s %8s %9s %9s\n", "config", "path", "tok/s (med)", "vs plain", "emitted/verify",
                   "acceptance", "branch", "draft ms", "verify ms");
            for (int k = 0; k < n_conf; k++)
                printf("%-16s %-6s %12.1f %8.3fx %14.3f %11.3f %8lld %9.1f %9.1f\n", conf[k].name, st[k].path, med[k],
                       med[k] / med[0], st[k].emitted_per_verify, st[k].acceptance_rate, (long long)st[k].branch_rounds,
                       st[k].draft_ms, st[k].verify_ms);
            if (best_chain >= 0 && best_tree >= 0)
                printf("best tree %s vs best chain %s: %.3fx\n", conf[best_tree].name, conf[best_chain].name, tvc);
            if (best_auto >= 0 && best_fixed >= 0)
                printf("tree auto %s vs best fixed %s: %.3fx\n", conf[best_auto].name, conf[best_fixed].name, avf);
        }
    }
    free(tps);
    for (int k = 0; k < n_conf; k++) sprig_session_free(s[k]);
    sprig_model_free(m);
    return rc;
}

/* ---------------------------------------------------------------- matmul */

static int bench_matmul(int argc, char **argv)
{
    const char *C = "bench matmul";
    struct common c = { .threads = 0, .reps = 21 };
    int type = SPRIG_TYPE_Q8_0;
    long long k = 2048, n = 8192, v;
    int ns[MAX_NS] = { 1, 2, 4, 8, 16, 32, 64 }, n_ns = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = common_flag(C, &c, a, val);
        if (r == -2) return 2;
        if (r >= 0) { i += r; continue; }
        if (!strcmp(a, "--type") && val) {
            type = sprig_type_from_name(val);
            const struct sprig_type_traits *tt = sprig_type_traits(type);
            if (!tt || !tt->name) { fprintf(stderr, "sprig %s: --type: '%s' is not a type name (f32, f16, bf16, q8_0, q4_0, q2_k..q6_k)\n", C, val); return 2; }
            i++;
        } else if (!strcmp(a, "--in") && val) { if (!cli_parse_int(C, a, val, 32, 1 << 20, &k)) return 2; i++; }
        else if (!strcmp(a, "--out") && val) { if (!cli_parse_int(C, a, val, 1, 1 << 20, &n)) return 2; i++; }
        else if (!strcmp(a, "--ns") && val) { if (!parse_ns(val, ns, &n_ns)) { fprintf(stderr, "sprig %s: --ns: want a list like 1,2,4\n", C); return 2; } i++; }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: sprig bench matmul [--type q8_0] [--in 2048] [--out 8192] [--ns 1,2,4,...] [-t N] [--reps R] [--json]\n");
            return 0;
        } else { fprintf(stderr, "sprig %s: unknown or incomplete option '%s'\n", C, a); return 2; }
    }
    (void)v;
    sprig_error err = { 0 };
    sprig_pool *pool = sprig_pool_create(c.threads, &err);
    if (!pool) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); return 1; }
    sprig_bench_mm out[MAX_NS];
    sprig_bench_mm_info info = { 0 };
    if (sprig_bench_matmul_ns(pool, type, k, n, ns, n_ns, c.reps, out, &info, &err)) {
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        sprig_pool_free(pool);
        return 1;
    }
    int crows = 0;
    double peak = sprig_measure_peak_gops(pool, type), bw = info.read_gbs;
    double ceil = sprig_measure_ceiling_gops(pool, type, &crows);
    size_t wbytes = info.weight_bytes;
    double t1 = out[0].sec_median / ns[0];
    for (int j = 0; j < n_ns; j++) if (ns[j] == 1) t1 = out[j].sec_median;
    if (c.json) {
        printf("{\"bench\":\"matmul\",\"type\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,\"threads\":%d,\"kernels\":\"%s\",\"prefetch\":\"%s\",\"peak_gops\":%.2f,"
               "\"ceiling_gops\":%.2f,\"ceiling_rows\":%d,\"paired_read_gb_s\":%.3f,\"weight_bytes\":%zu,\"rows\":[", sprig_type_name(type), k, n,
               sprig_pool_size(pool), sprig_kernels_name(), sprig_prefetch_name(), peak, ceil, crows, bw, wbytes);
        for (int j = 0; j < n_ns; j++)
            printf("%s{\"n\":%d,\"us\":%.3f,\"ratio\":%.4f,\"gops\":%.3f,\"fraction_of_peak\":%.4f,\"fraction_of_ceiling\":%.4f,\"gb_s\":%.3f}",
                   j ? "," : "", out[j].n, out[j].sec_median * 1e6, out[j].sec_median / t1, out[j].gops, peak > 0 ? out[j].gops / peak : 0,
                   ceil > 0 ? out[j].gops / ceil : 0, out[j].gbs);
        printf("]}\n");
    } else {
        printf("matmul %s %lldx%lld (n_in x n_out), %d threads, kernels %s, prefetch %s; peak %.1f G ops/s, paired DRAM read %.2f GB/s\n",
               sprig_type_name(type), k, n, sprig_pool_size(pool), sprig_kernels_name(), sprig_prefetch_name(), peak, bw);
        print_ceiling(type, ceil, crows, peak);
        printf("%6s %10s %9s %10s %8s %8s %8s\n", "n", "us", "T(n)/T(1)", "G ops/s", "of peak", "of ceil", "GB/s");
        for (int j = 0; j < n_ns; j++)
            printf("%6d %10.1f %9.3f %10.1f %7.1f%% %7.1f%% %8.2f\n", out[j].n, out[j].sec_median * 1e6, out[j].sec_median / t1, out[j].gops,
                   peak > 0 ? 100 * out[j].gops / peak : 0, ceil > 0 ? 100 * out[j].gops / ceil : 0, out[j].gbs);
    }
    sprig_pool_free(pool);
    return 0;
}

static int bench_attention(int argc, char **argv)
{
    const char *C = "bench attention";
    struct common c = { .threads = 0, .reps = 21 };
    long long heads = 32, kv_heads = 8, hd = 64, ctx = 2048;
    sprig_bench_attn_shape sh = { .kv_type = SPRIG_TYPE_F16 };
    int ns[MAX_NS] = { 1, 2, 4, 8, 16, 32, 64 }, n_ns = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = common_flag(C, &c, a, val);
        if (r == -2) return 2;
        if (r >= 0) { i += r; continue; }
        if (!strcmp(a, "--heads") && val) { if (!cli_parse_int(C, a, val, 1, 1024, &heads)) return 2; i++; }
        else if (!strcmp(a, "--kv-heads") && val) { if (!cli_parse_int(C, a, val, 1, 1024, &kv_heads)) return 2; i++; }
        else if (!strcmp(a, "--hd") && val) { if (!cli_parse_int(C, a, val, 1, 256, &hd)) return 2; i++; }
        else if (!strcmp(a, "--ctx") && val) { if (!cli_parse_int(C, a, val, 1, 1 << 20, &ctx)) return 2; i++; }
        else if (!strcmp(a, "--kv-type") && val) {
            if (!strcmp(val, "f16")) sh.kv_type = SPRIG_TYPE_F16;
            else if (!strcmp(val, "f32")) sh.kv_type = SPRIG_TYPE_F32;
            else { fprintf(stderr, "sprig %s: --kv-type: '%s' is not f32 or f16\n", C, val); return 2; }
            i++;
        } else if (!strcmp(a, "--ns") && val) {
            if (!parse_ns(val, ns, &n_ns)) { fprintf(stderr, "sprig %s: --ns: want a list like 1,2,4\n", C); return 2; }
            i++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: sprig bench attention [--heads 32] [--kv-heads 8] [--hd 64] [--ctx 2048] [--kv-type f16|f32]\n"
                   "                             [--ns 1,2,4,...] [-t N] [--reps R] [--json]\n");
            return 0;
        } else { fprintf(stderr, "sprig %s: unknown or incomplete option '%s'\n", C, a); return 2; }
    }
    if (heads % kv_heads) { fprintf(stderr, "sprig %s: --heads %lld is not a multiple of --kv-heads %lld\n", C, heads, kv_heads); return 2; }
    sh.n_head = (int)heads;
    sh.n_kv_head = (int)kv_heads;
    sh.hd = (int)hd;
    sh.ctx = (int)ctx;
    sprig_error err = { 0 };
    sprig_pool *pool = sprig_pool_create(c.threads, &err);
    if (!pool) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); return 1; }
    sprig_bench_attn out[MAX_NS];
    if (sprig_bench_attention_ns(pool, &sh, ns, n_ns, c.reps, out, &err)) {
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        sprig_pool_free(pool);
        return 1;
    }
    double peak = sprig_measure_peak_gops(pool, SPRIG_TYPE_F32);
    double t1 = out[0].sec_median / ns[0];
    for (int j = 0; j < n_ns; j++) if (ns[j] == 1) t1 = out[j].sec_median;
    if (c.json) {
        printf("{\"bench\":\"attention\",\"heads\":%d,\"kv_heads\":%d,\"hd\":%d,\"ctx\":%d,\"kv_type\":\"%s\",\"threads\":%d,"
               "\"kernel\":\"%s\",\"fma_peak_gflops\":%.2f,\"rows\":[", sh.n_head, sh.n_kv_head, sh.hd, sh.ctx,
               sprig_type_name(sh.kv_type), sprig_pool_size(pool), sprig_attention_kernel(), peak);
        for (int j = 0; j < n_ns; j++)
            printf("%s{\"n\":%d,\"us\":%.3f,\"ratio\":%.4f,\"gflops\":%.3f,\"fraction_of_peak\":%.4f,\"ceiling_gflops\":%.3f,"
                   "\"fraction_of_ceiling\":%.4f,\"gb_s\":%.3f}", j ? "," : "", out[j].n, out[j].sec_median * 1e6,
                   out[j].sec_median / t1, out[j].gflops, peak > 0 ? out[j].gflops / peak : 0, out[j].gflops_cached,
                   out[j].gflops_cached > 0 ? out[j].gflops / out[j].gflops_cached : 0, out[j].gbs);
        printf("]}\n");
    } else {
        printf("attention  %d heads (%d kv) x hd %d, %d keys of %s history + a random tree of n nodes, %d threads, kernel %s\n",
               sh.n_head, sh.n_kv_head, sh.hd, sh.ctx, sprig_type_name(sh.kv_type), sprig_pool_size(pool),
               sprig_attention_kernel());
        printf("peak       %.1f G flop/s measured (fp32 fma); ceiling: the same tree on a %d-key history that stays in cache\n",
               peak, 512);
        printf("%6s %10s %9s %10s %8s %10s %8s %8s\n", "n", "us", "T(n)/T(1)", "G flop/s", "of peak", "ceiling", "of ceil", "GB/s");
        for (int j = 0; j < n_ns; j++)
            printf("%6d %10.1f %9.3f %10.1f %7.1f%% %10.1f %7.1f%% %8.2f\n", out[j].n, out[j].sec_median * 1e6,
                   out[j].sec_median / t1, out[j].gflops, peak > 0 ? 100 * out[j].gflops / peak : 0, out[j].gflops_cached,
                   out[j].gflops_cached > 0 ? 100 * out[j].gflops / out[j].gflops_cached : 0, out[j].gbs);
    }
    sprig_pool_free(pool);
    return 0;
}

int sprig_cmd_bench(int argc, char **argv)
{
    static const struct { const char *name; int (*fn)(int, char **); } subs[] = {
        { "decode", bench_decode }, { "forward", bench_forward }, { "spec", bench_spec }, { "matmul", bench_matmul },
        { "attention", bench_attention },
        { "tokenize", sprig_bench_tokenize }, { "kv", sprig_bench_kv }, { "grammar", sprig_bench_grammar },
    };
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: sprig bench decode|forward|spec|matmul|attention|kv|tokenize|grammar [options] [--json]   ('sprig bench <what> --help')\n");
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(argv[1], subs[i].name)) return subs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "sprig bench: unknown benchmark '%s' (decode, forward, spec, matmul, attention, kv, tokenize, grammar)\n", argv[1]);
    return 2;
}
