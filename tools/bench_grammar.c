/*
 * tools/bench_grammar.c — `sprig bench grammar`: what constrained decoding
 * costs, and what speculation under a grammar gains.
 *
 *   sprig bench grammar -m FILE [--json-schema JSON|@F | --grammar-file F] [-n 128] [--reps 5] [-t N]
 *                       [--draft FILE | --draft-ngram] [--tree auto] [--prompt TEXT] [--json]
 *
 * Figures:
 *   - the vocabulary's byte trie, built once per model (the first grammar);
 *   - compiling the grammar: schema -> GBNF -> rules -> matcher -> start
 *     state, what every request with a response_format pays (median and
 *     largest of 21; default schema: 30 properties of string, integer and
 *     boolean, two required);
 *   - decoding, greedy, the same prompt, runs alternated round-robin with a
 *     warm-up round discarded: plain (no grammar), constrained; with a
 *     drafter also constrained speculative (drafting with the grammar) and
 *     constrained speculative with a grammar-blind drafter. Medians of tok/s
 *     and emitted tokens per verify, and the ratios within each round
 *     (median, spread): constrained / plain, speculative / constrained,
 *     and emitted per verify, grammar-aware / blind.
 */
#include "cli.h"
#include "sprig.h"
#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *default_schema(void)
{
    char *s = malloc(8192);
    if (!s) return NULL;
    size_t n = (size_t)snprintf(s, 8192, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 30; i++)
        n += (size_t)snprintf(s + n, 8192 - n, "%s\"field_%d\":{\"type\":\"%s\"}", i ? "," : "", i,
                              i % 3 == 0 ? "string" : i % 3 == 1 ? "integer" : "boolean");
    snprintf(s + n, 8192 - n, "},\"required\":[\"field_0\",\"field_1\"]}");
    return s;
}

static bool count(void *user, const char *t, size_t n) { (void)user; (void)t; (void)n; return true; }

enum { PLAIN, CONSTRAINED, SPEC, BLIND, N_CFG };
static const char *const cfg_name[N_CFG] = { "plain", "constrained", "constrained speculative", "constrained speculative, blind drafter" };

static double median_of(double *v, int n) { return n ? cli_median(v, n) : 0; }

static void spread(const double *v, int n, double *lo, double *hi)
{
    *lo = *hi = n ? v[0] : 0;
    for (int k = 1; k < n; k++) {
        *lo = v[k] < *lo ? v[k] : *lo;
        *hi = v[k] > *hi ? v[k] : *hi;
    }
}

int sprig_bench_grammar(int argc, char **argv)
{
    const char *C = "bench grammar";
    const char *model = NULL, *schema_arg = NULL, *gfile = NULL, *draft = NULL, *prompt = "Here is the record, as JSON:\n";
    bool json = false, ngram = false, tree_auto = false;
    long long n_tok = 128, reps = 5, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: sprig bench grammar -m FILE [--json-schema JSON|@F | --grammar-file F] [-n 128] [--reps 5] [-t N]\n"
                   "                           [--draft FILE | --draft-ngram] [--tree auto] [--prompt TEXT] [--json]\n");
            return 0;
        }
        if (!strcmp(a, "--json")) { json = true; continue; }
        if (!strcmp(a, "--draft-ngram")) { ngram = true; continue; }
        if (!val) { fprintf(stderr, "sprig %s: %s: missing value\n", C, a); return 2; }
        i++;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = val;
        else if (!strcmp(a, "--json-schema")) schema_arg = val;
        else if (!strcmp(a, "--grammar-file")) gfile = val;
        else if (!strcmp(a, "--draft")) draft = val;
        else if (!strcmp(a, "--prompt")) prompt = val;
        else if (!strcmp(a, "--tree") && !strcmp(val, "auto")) tree_auto = true;
        else if (!strcmp(a, "-n")) { if (!cli_parse_int(C, a, val, 8, 100000, &n_tok)) return 2; }
        else if (!strcmp(a, "--reps")) { if (!cli_parse_int(C, a, val, 1, 1000, &reps)) return 2; }
        else if (!strcmp(a, "-t")) { if (!cli_parse_int(C, a, val, 1, 256, &threads)) return 2; }
        else { fprintf(stderr, "sprig %s: unknown option '%s'\n", C, a); return 2; }
    }
    if (!model) { fprintf(stderr, "sprig %s: -m FILE is required\n", C); return 2; }
    char why[512], *text = NULL;
    size_t tl = 0;
    const char *path = gfile ? gfile : schema_arg && schema_arg[0] == '@' ? schema_arg + 1 : NULL;
    if (path && !(text = cli_read_all(path, (size_t)1 << 24, &tl, why, sizeof why))) {
        fprintf(stderr, "sprig %s: %s\n", C, why);
        return 1;
    }
    if (!text && !gfile) {
        text = schema_arg ? strdup(schema_arg) : default_schema();
        tl = text ? strlen(text) : 0;
    }
    const bool spec = draft || ngram, is_schema = !gfile;
    const int n_cfg = spec ? N_CFG : SPEC;
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_session *ses[N_CFG] = { 0 };
    int rc = 1;
    double *compile = malloc(sizeof(double) * 21), *tok[N_CFG], *epv[N_CFG], *r_gp = malloc(sizeof(double) * (size_t)reps),
           *r_sg = malloc(sizeof(double) * (size_t)reps), *r_epv = malloc(sizeof(double) * (size_t)reps);
    for (int c = 0; c < N_CFG; c++) {
        tok[c] = malloc(sizeof(double) * (size_t)reps);
        epv[c] = malloc(sizeof(double) * (size_t)reps);
    }
    struct sprig_stats last[N_CFG];
    memset(last, 0, sizeof last);
    if (!text || !compile || !r_gp || !r_sg || !r_epv || !tok[N_CFG - 1] || !epv[N_CFG - 1]) { fprintf(stderr, "sprig %s: out of memory\n", C); goto done; }
    if (sprig_model_load(model, &m, &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); goto done; }
    for (int c = 0; c < n_cfg; c++) {   /* plain and constrained share a session; each speculative one has its own */
        if (c == CONSTRAINED) { ses[c] = ses[PLAIN]; continue; }
        struct sprig_session_params p = sprig_session_default_params();
        p.temp = 0;
        p.n_threads = (int)threads;
        p.n_ctx = (int)n_tok + 256;
        if (c >= SPEC) {
            p.drafter = ngram ? SPRIG_DRAFTER_NGRAM : SPRIG_DRAFTER_MODEL;
            p.draft_path = draft;
            p.grammar_blind_drafts = c == BLIND;
            if (tree_auto) {
                p.tree = SPRIG_TREE_ON;
                p.tree_auto = true;
                p.tree_width = 3;
                p.draft_max = 8;
                p.tree_branches = 15;
            }
        }
        if (sprig_session_create(m, &p, &ses[c], &err)) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); goto done; }
    }
#define SET(x) (is_schema ? sprig_session_set_json_schema((x), text, tl, &err) : sprig_session_set_grammar((x), text, tl, &err))
    double t0 = sprig_time_ms();
    if (SET(ses[PLAIN])) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); goto done; }
    const double first_ms = sprig_time_ms() - t0;   /* the trie and one compile */
    for (int k = 0; k < 21; k++) {
        t0 = sprig_time_ms();
        SET(ses[PLAIN]);
        compile[k] = sprig_time_ms() - t0;
    }
    double worst = 0;
    for (int k = 0; k < 21; k++) worst = compile[k] > worst ? compile[k] : worst;
    const double compile_med = cli_median(compile, 21);
    for (int c = SPEC; c < n_cfg; c++)
        if (SET(ses[c])) { fprintf(stderr, "sprig %s: %s\n", C, err.msg); goto done; }
    int n = 0;
    for (int rep = -1; rep < reps; rep++) {   /* rep -1: the warm-up round */
        double t[N_CFG] = { 0 }, e[N_CFG] = { 0 };
        for (int j = 0; j < n_cfg; j++) {
            const int c = (j + (rep < 0 ? 0 : rep)) % n_cfg;   /* round-robin: each configuration goes first in turn */
            if (c == PLAIN && sprig_session_set_grammar(ses[c], NULL, 0, &err)) goto fail;
            if (c == CONSTRAINED && SET(ses[c])) goto fail;
            if (sprig_session_generate(ses[c], prompt, strlen(prompt), (int)n_tok, count, NULL, &err)) goto fail;
            sprig_session_get_stats(ses[c], &last[c]);
            t[c] = last[c].decode_tok_s;
            e[c] = last[c].emitted_per_verify;
        }
        if (rep < 0) continue;
        for (int c = 0; c < n_cfg; c++) {
            tok[c][n] = t[c];
            epv[c][n] = e[c];
        }
        r_gp[n] = t[PLAIN] > 0 ? t[CONSTRAINED] / t[PLAIN] : 0;
        r_sg[n] = spec && t[CONSTRAINED] > 0 ? t[SPEC] / t[CONSTRAINED] : 0;
        r_epv[n] = spec && e[BLIND] > 0 ? e[SPEC] / e[BLIND] : 0;
        n++;
    }
    double lo[3], hi[3];
    spread(r_gp, n, &lo[0], &hi[0]);
    spread(r_sg, n, &lo[1], &hi[1]);
    spread(r_epv, n, &lo[2], &hi[2]);
    struct sprig_model_info mi;
    sprig_model_get_info(m, &mi);
    if (json) {
        printf("{\"bench\":\"grammar\",\"model\":\"%s\",\"n_vocab\":%d,\"kernels\":\"%s\",\"threads\":%d,\"first_grammar_ms\":%.2f,"
               "\"compile_ms_median\":%.3f,\"compile_ms_max\":%.3f,\"reps\":%d,\"tokens\":%lld", model, mi.n_vocab, last[PLAIN].kernels,
               last[PLAIN].n_threads, first_ms, compile_med, worst, n, n_tok);
        for (int c = 0; c < n_cfg; c++)
            printf(",\"%s\":{\"tok_s\":%.3f,\"emitted_per_verify\":%.3f,\"generated\":%lld,\"rows_masked\":%lld,\"pruned\":%lld,\"forced\":%lld}",
                   c == PLAIN ? "plain" : c == CONSTRAINED ? "constrained" : c == SPEC ? "speculative" : "blind", median_of(tok[c], n),
                   median_of(epv[c], n), (long long)last[c].generated_tokens, (long long)last[c].grammar_rows_masked,
                   (long long)last[c].grammar_pruned, (long long)last[c].grammar_forced);
        printf(",\"constrained_over_plain\":[%.4f,%.4f,%.4f],\"speculative_over_constrained\":[%.4f,%.4f,%.4f],"
               "\"epv_aware_over_blind\":[%.4f,%.4f,%.4f]}\n", median_of(r_gp, n), lo[0], hi[0], median_of(r_sg, n), lo[1], hi[1],
               median_of(r_epv, n), lo[2], hi[2]);
    } else {
        printf("model            %s (%s, %d tokens in the vocabulary; kernels %s, %d threads)\n", model, mi.arch, mi.n_vocab,
               last[PLAIN].kernels, last[PLAIN].n_threads);
        printf("first grammar    %.1f ms (the vocabulary's byte trie, once per model, and one compile)\n", first_ms);
        printf("compile          %.2f ms median, %.2f ms largest of 21 (%s -> GBNF -> matcher -> start state)\n", compile_med, worst,
               is_schema ? "schema" : "GBNF file");
        for (int c = 0; c < n_cfg; c++)
            printf("%-39s %8.2f tok/s, %.3f emitted per verify (medians of %d); last run %lld tokens, %lld rows masked whole, "
                   "%lld drafts cut, %lld forced\n", cfg_name[c], median_of(tok[c], n), median_of(epv[c], n), n,
                   (long long)last[c].generated_tokens, (long long)last[c].grammar_rows_masked, (long long)last[c].grammar_pruned,
                   (long long)last[c].grammar_forced);
        printf("constrained / plain tok/s              %.3fx (spread %.3f-%.3f)\n", median_of(r_gp, n), lo[0], hi[0]);
        if (spec) {
            printf("speculative / constrained tok/s        %.3fx (spread %.3f-%.3f)\n", median_of(r_sg, n), lo[1], hi[1]);
            printf("emitted per verify, aware / blind      %.3fx (spread %.3f-%.3f)\n", median_of(r_epv, n), lo[2], hi[2]);
        }
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "sprig %s: %s\n", C, err.msg);
#undef SET
done:
    for (int c = 0; c < N_CFG; c++)
        if (c != CONSTRAINED) sprig_session_free(ses[c]);
    sprig_model_free(m);
    free(text);
    free(compile);
    free(r_gp);
    free(r_sg);
    free(r_epv);
    for (int c = 0; c < N_CFG; c++) {
        free(tok[c]);
        free(epv[c]);
    }
    return rc;
}
