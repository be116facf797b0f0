/*
 * tools/bench_kv — `sprig bench kv`: what each KV cache mode costs and
 * gives, side by side on one model:
 *   - bytes per token per layer (keys + values, every kv head, sidecars
 *     included) and the compression against f16;
 *   - greedy agreement with the f32 cache: the f32 run's greedy tokens are
 *     fed to each mode (teacher forcing) and the share of steps whose argmax
 *     is the same is reported with the largest logit difference;
 *   - decode speed at several context lengths: each mode's cache is filled
 *     with random rows up to the length (their values do not change the
 *     work), then tokens are decoded and trimmed away again, the modes
 *     alternated, a warm-up repetition discarded, medians; the cache's share
 *     of the bytes one token reads is shown beside it;
 *   - rollback: a verify tail of 8 slots gathered to a 4-slot path, timed at
 *     the shortest and the longest context (the gather must not grow with
 *     the context) and compared with one verify forward of 8 tokens there.
 */
#include "cli.h"
#include "base/pool.h"
#include "base/rng.h"
#include "base/timer.h"
#include "kv/kv.h"
#include "model/model.h"
#include "tensor/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTX_LIST 8
#define VERIFY 8

struct mode_result {
    int mode;
    int64_t bytes;                        /* per token per layer */
    double agree, max_err;
    double ms[MAX_CTX_LIST];              /* decode ms/token per context */
    double rb_us_lo, rb_us_hi, verify_ms_hi;
};

static bool parse_list(const char *s, int *v, int *n, int max, long lo, long hi)
{
    *n = 0;
    while (*s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < lo || x > hi || *n == max) return false;
        v[(*n)++] = (int)x;
        if (*end && *end != ',') return false;
        s = *end == ',' ? end + 1 : end;
    }
    return *n > 0;
}

static sprig_ctx *new_ctx(const sprig_model *m, sprig_pool *pool, int mode, int n_ctx, int n_batch, sprig_error *err)
{
    struct sprig_ctx_params cp = { .n_ctx = n_ctx, .n_batch = n_batch, .kv_mode = mode };
    sprig_ctx *c = NULL;
    return sprig_ctx_create(m, pool, &cp, &c, err) ? NULL : c;
}

/* Append n random rows (every layer) to a cache: a long history without a
 * long prefill. */
static bool fill_random(sprig_kv *kv, int n, float *k, float *v, int chunk, sprig_rng *r, sprig_error *err)
{
    const int dim = kv->p.n_kv_head * kv->p.head_dim;
    while (n > 0) {
        const int c = n < chunk ? n : chunk;
        if (sprig_kv_reserve(kv, c, err)) return false;
        for (int l = 0; l < kv->p.n_layer; l++) {
            for (int i = 0; i < c * dim; i++) {
                k[i] = (float)sprig_rng_normal(r);
                v[i] = (float)sprig_rng_normal(r);
            }
            sprig_kv_write(kv, l, c, k, v);
        }
        sprig_kv_commit(kv, c);
        n -= c;
    }
    return true;
}

int sprig_bench_kv(int argc, char **argv)
{
    const char *C = "bench kv";
    const char *model = NULL;
    int threads = 0, reps = 3, n_agree = 256, n_dec = 16;
    int modes[SPRIG_KV_MODE_COUNT], n_modes = 0, ctxs[MAX_CTX_LIST] = { 512, 4096, 16384 }, n_ctxs = 3;
    bool json = false;
    long long v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: sprig bench kv -m FILE [-t N] [--modes f32,f16,...] [--ctx 512,4096,16384] [--tokens 256]\n"
                   "                      [--decode 16] [--reps 3] [--json]\n"
                   "  per KV cache mode: bytes per token per layer, greedy agreement with f32 over --tokens teacher-forced\n"
                   "  steps and the largest logit error, decode speed at each --ctx (random history), rollback time\n");
            return 0;
        }
        if (!val && strcmp(a, "--json")) { fprintf(stderr, "sprig %s: %s: missing value\n", C, a); return 2; }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = val;
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { if (!cli_parse_int(C, a, val, 1, 256, &v)) return 2; threads = (int)v; }
        else if (!strcmp(a, "--reps")) { if (!cli_parse_int(C, a, val, 2, 1000, &v)) return 2; reps = (int)v; }
        else if (!strcmp(a, "--tokens")) { if (!cli_parse_int(C, a, val, 0, 100000, &v)) return 2; n_agree = (int)v; }
        else if (!strcmp(a, "--decode")) { if (!cli_parse_int(C, a, val, 1, 10000, &v)) return 2; n_dec = (int)v; }
        else if (!strcmp(a, "--ctx")) {
            if (!parse_list(val, ctxs, &n_ctxs, MAX_CTX_LIST, 16, 1 << 22)) {
                fprintf(stderr, "sprig %s: --ctx: want up to %d lengths like 512,4096\n", C, MAX_CTX_LIST);
                return 2;
            }
        } else if (!strcmp(a, "--modes")) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", val);
            n_modes = 0;
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                const int md = sprig_kv_mode_from_name(t);
                if (md < 0 || n_modes == SPRIG_KV_MODE_COUNT) {
                    fprintf(stderr, "sprig %s: --modes: '%s' is not a KV cache type (%s)\n", C, t, sprig_kv_mode_list());
                    return 2;
                }
                modes[n_modes++] = md;
            }
        } else if (!strcmp(a, "--json")) { json = true; continue; }
        else { fprintf(stderr, "sprig %s: unknown option '%s'\n", C, a); return 2; }
        i++;
    }
    if (!model) { fprintf(stderr, "sprig %s: -m FILE is required\n", C); return 2; }
    if (!n_modes)
        for (int md = 0; md < SPRIG_KV_MODE_COUNT; md++)
            if (sprig_kv_mode_from_name(sprig_kv_mode_name(md)) == md) modes[n_modes++] = md;
    for (int i = 1; i < n_ctxs; i++)
        if (ctxs[i] <= ctxs[i - 1]) { fprintf(stderr, "sprig %s: --ctx: lengths must increase\n", C); return 2; }

    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_pool *pool = NULL;
    if (sprig_model_load(model, &m, &err) || !(pool = sprig_pool_create(threads, &err))) {
        fprintf(stderr, "sprig %s: %s\n", C, err.msg);
        sprig_model_free(m);
        return 1;
    }
    const struct sprig_hparams *hp = &m->hp;
    const int V = hp->n_vocab, max_ctx = ctxs[n_ctxs - 1];
    struct mode_result res[SPRIG_KV_MODE_COUNT];
    memset(res, 0, sizeof res);
    for (int i = 0; i < n_modes; i++) {
        res[i].mode = modes[i];
        res[i].bytes = sprig_kv_mode_slot_bytes(modes[i], hp->n_kv_head, hp->head_dim);
    }
    const double f16_bytes = (double)sprig_kv_mode_slot_bytes(SPRIG_KV_MODE_F16, hp->n_kv_head, hp->head_dim);
    int rc = 0;

    /* ---- agreement with f32, teacher forced */
    if (n_agree > 0) {
        float *ref = malloc(sizeof(float) * (size_t)V * (size_t)n_agree), *lg = malloc(sizeof(float) * (size_t)V);
        int32_t *tok = malloc(sizeof(int32_t) * (size_t)(n_agree + 1));
        sprig_ctx *c = ref && lg && tok ? new_ctx(m, pool, SPRIG_KV_MODE_F32, n_agree + 8, 16, &err) : NULL;
        if (!c) { fprintf(stderr, "sprig %s: %s\n", C, err.msg[0] ? err.msg : "out of memory"); rc = 1; }
        tok[0] = sprig_tokenizer_bos(m->tok) >= 0 ? sprig_tokenizer_bos(m->tok) : 0;
        for (int i = 0; !rc && i < n_agree; i++) {
            struct sprig_fwd f = { .n = 1, .tokens = &tok[i], .n_out = 1, .logits = ref + (size_t)i * V };
            if (sprig_forward(c, &f, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; }
            tok[i + 1] = sprig_argmax(ref + (size_t)i * V, V);
        }
        sprig_ctx_free(c);
        for (int mi = 0; !rc && mi < n_modes; mi++) {
            if (!(c = new_ctx(m, pool, modes[mi], n_agree + 8, 16, &err))) {
                fprintf(stderr, "sprig %s: %s: %s\n", C, sprig_kv_mode_name(modes[mi]), err.msg);
                rc = 1;
                break;
            }
            int same = 0;
            double mx = 0;
            for (int i = 0; i < n_agree; i++) {
                struct sprig_fwd f = { .n = 1, .tokens = &tok[i], .n_out = 1, .logits = lg };
                if (sprig_forward(c, &f, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; break; }
                same += sprig_argmax(lg, V) == tok[i + 1];
                for (int t = 0; t < V; t++) mx = fmax(mx, fabs((double)lg[t] - ref[(size_t)i * V + t]));
            }
            res[mi].agree = (double)same / n_agree;
            res[mi].max_err = mx;
            sprig_ctx_free(c);
        }
        free(ref);
        free(lg);
        free(tok);
    }

    /* ---- decode at each context, modes alternated */
    sprig_ctx *cx[SPRIG_KV_MODE_COUNT] = { 0 };
    const int chunk = 64, dim = hp->n_kv_head * hp->head_dim;
    float *kb = malloc(sizeof(float) * (size_t)chunk * dim), *vb = malloc(sizeof(float) * (size_t)chunk * dim);
    float *lg = malloc(sizeof(float) * (size_t)V);
    double *samples = malloc(sizeof(double) * (size_t)(reps * n_dec + 1));
    sprig_rng rng;
    sprig_rng_seed(&rng, 7);
    for (int mi = 0; !rc && mi < n_modes; mi++)
        if (!(cx[mi] = new_ctx(m, pool, modes[mi], max_ctx + n_dec + VERIFY + 8, chunk, &err))) {
            fprintf(stderr, "sprig %s: %s: %s\n", C, sprig_kv_mode_name(modes[mi]), err.msg);
            rc = 1;
        }
    double (*tok_ms)[SPRIG_KV_MODE_COUNT] = calloc((size_t)reps * n_dec, sizeof *tok_ms);
    for (int ci = 0; !rc && ci < n_ctxs; ci++) {
        for (int mi = 0; !rc && mi < n_modes; mi++) {
            sprig_kv *kv = sprig_ctx_kv(cx[mi]);
            if (!fill_random(kv, ctxs[ci] - sprig_kv_len(kv), kb, vb, chunk, &rng, &err)) {
                fprintf(stderr, "sprig %s: %s\n", C, err.msg);
                rc = 1;
            }
        }
        for (int rep = 0; !rc && rep < reps; rep++)
            for (int mi = 0; !rc && mi < n_modes; mi++) {
                int32_t t = 5;
                for (int i = 0; i < n_dec; i++) {
                    const double t0 = sprig_time_ms();
                    struct sprig_fwd f = { .n = 1, .tokens = &t, .n_out = 1, .logits = lg };
                    if (sprig_forward(cx[mi], &f, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; break; }
                    t = sprig_argmax(lg, V);
                    tok_ms[rep * n_dec + i][mi] = sprig_time_ms() - t0;
                }
                if (sprig_kv_trim(sprig_ctx_kv(cx[mi]), n_dec, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; }
            }
        for (int mi = 0; !rc && mi < n_modes; mi++) {
            int ns = 0;
            for (int s = n_dec; s < reps * n_dec; s++) samples[ns++] = tok_ms[s][mi];   /* rep 0: warm-up */
            res[mi].ms[ci] = cli_median(samples, ns);
        }
        /* rollback at the shortest and the longest context, and a verify at the longest */
        if (!rc && (ci == 0 || ci == n_ctxs - 1))
            for (int mi = 0; !rc && mi < n_modes; mi++) {
                sprig_kv *kv = sprig_ctx_kv(cx[mi]);
                const int kept[4] = { 0, 2, 3, 5 }, n_rb = 60;
                double rb[60];
                for (int r = 0; r < n_rb && !rc; r++) {
                    if (!fill_random(kv, VERIFY, kb, vb, chunk, &rng, &err)) { rc = 1; break; }
                    const double t0 = sprig_time_ms();
                    if (sprig_kv_gather_within_tail(kv, VERIFY, kept, 4, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; }
                    rb[r] = (sprig_time_ms() - t0) * 1e3;
                    sprig_kv_trim(kv, 4, &err);
                }
                const double us = cli_median(rb, n_rb);
                if (ci == 0) res[mi].rb_us_lo = us;
                if (ci == n_ctxs - 1) {
                    res[mi].rb_us_hi = us;
                    int32_t toks[VERIFY] = { 5, 6, 7, 8, 9, 10, 11, 12 };
                    double vt[5];
                    float *vl = malloc(sizeof(float) * (size_t)V * VERIFY);
                    for (int r = 0; r < 5 && !rc && vl; r++) {
                        const double t0 = sprig_time_ms();
                        struct sprig_fwd f = { .n = VERIFY, .tokens = toks, .n_out = VERIFY, .logits = vl };
                        if (sprig_forward(cx[mi], &f, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); rc = 1; }
                        vt[r] = sprig_time_ms() - t0;
                        sprig_kv_trim(sprig_ctx_kv(cx[mi]), VERIFY, &err);
                    }
                    free(vl);
                    res[mi].verify_ms_hi = cli_median(vt + 1, 4);
                }
            }
    }
    free(tok_ms);
    for (int mi = 0; mi < n_modes; mi++) sprig_ctx_free(cx[mi]);
    free(kb);
    free(vb);
    free(lg);
    free(samples);

    if (!rc) {
        const double wbytes = (double)m->weight_bytes;
        struct sprig_model_info mi;
        sprig_model_get_info(m, &mi);
        if (json) {
            printf("{\"bench\":\"kv\",\"model\":\"%s\",\"threads\":%d,\"kernels\":\"%s\",\"n_layer\":%d,\"n_kv_head\":%d,"
                   "\"head_dim\":%d,\"agree_tokens\":%d,\"decode_tokens\":%d,\"reps\":%d,\"modes\":[",
                   model, sprig_pool_size(pool), mi.kernels, hp->n_layer, hp->n_kv_head, hp->head_dim, n_agree, n_dec, reps);
            for (int i = 0; i < n_modes; i++) {
                const struct mode_result *r = &res[i];
                printf("%s{\"mode\":\"%s\",\"bytes_per_token_layer\":%lld,\"compression_vs_f16\":%.3f,\"agree_with_f32\":%.4f,"
                       "\"max_logit_err\":%.6g,\"decode\":[",
                       i ? "," : "", sprig_kv_mode_name(r->mode), (long long)r->bytes, f16_bytes / (double)r->bytes, r->agree,
                       r->max_err);
                for (int c = 0; c < n_ctxs; c++) {
                    const double kvb = (double)r->bytes * hp->n_layer * ctxs[c];
                    printf("%s{\"ctx\":%d,\"ms_per_token\":%.4f,\"tok_s\":%.3f,\"kv_share_of_bytes\":%.4f}", c ? "," : "", ctxs[c],
                           r->ms[c], 1e3 / r->ms[c], kvb / (kvb + wbytes));
                }
                printf("],\"rollback_us\":{\"ctx\":%d,\"us\":%.3f,\"ctx_long\":%d,\"us_long\":%.3f,\"ratio\":%.3f,"
                       "\"verify_ms_long\":%.4f,\"share_of_verify\":%.6f}}",
                       ctxs[0], r->rb_us_lo, max_ctx, r->rb_us_hi, r->rb_us_lo > 0 ? r->rb_us_hi / r->rb_us_lo : 0,
                       r->verify_ms_hi, r->verify_ms_hi > 0 ? r->rb_us_hi / 1e3 / r->verify_ms_hi : 0);
            }
            printf("]}\n");
        } else {
            printf("model   %s (%s, %d layers, %d kv heads x %d), %d threads, kernels %s\n", model, mi.arch, hp->n_layer,
                   hp->n_kv_head, hp->head_dim, sprig_pool_size(pool), mi.kernels);
            printf("agreement: %d greedy steps of the f32 cache fed to each mode; decode: median of %d tokens x %d reps "
                   "(first rep discarded), random history\n", n_agree, n_dec, reps);
            printf("%-17s %9s %7s %7s %10s", "mode", "B/tok/lyr", "vs f16", "agree", "max|dlog|");
            for (int c = 0; c < n_ctxs; c++) printf(" %8s@%-6d %5s", "tok/s", ctxs[c], "kv%");
            printf(" %10s %10s %7s %9s\n", "rollbk us", "@long us", "ratio", "of verify");
            for (int i = 0; i < n_modes; i++) {
                const struct mode_result *r = &res[i];
                printf("%-17s %9lld %6.2fx %6.1f%% %10.4g", sprig_kv_mode_name(r->mode), (long long)r->bytes,
                       f16_bytes / (double)r->bytes, 100 * r->agree, r->max_err);
                for (int c = 0; c < n_ctxs; c++) {
                    const double kvb = (double)r->bytes * hp->n_layer * ctxs[c];
                    printf(" %15.2f %4.0f%%", 1e3 / r->ms[c], 100 * kvb / (kvb + wbytes));
                }
                printf(" %10.2f %10.2f %7.2f %8.3f%%\n", r->rb_us_lo, r->rb_us_hi, r->rb_us_lo > 0 ? r->rb_us_hi / r->rb_us_lo : 0,
                       r->verify_ms_hi > 0 ? 100 * r->rb_us_hi / 1e3 / r->verify_ms_hi : 0);
            }
        }
    }
    sprig_pool_free(pool);
    sprig_model_free(m);
    return rc;
}
