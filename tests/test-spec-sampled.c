/*
 * tests/test-spec-sampled.c — sampled speculation keeps the target's
 * distribution on a real model (stories260K, its draft model and its MTP
 * head), for one-hot drafts and for drafts drawn from the drafter's q.
 *
 * The target's exact joint distribution of the first four generated tokens
 * at temperature 0.8, top-k 4 (256 cells) comes from its own forwards and
 * the sampler's final distributions; each configuration then generates
 * those four tokens thousands of times through the public API with fixed
 * seeds (the first token comes from the prefill, the next three from a
 * round of up to two drafts and then what the budget leaves), and a
 * one-sample chi-square against the exact joint must stay under df +
 * 6 sqrt(2 df). Every configuration also proves its path ran: tree or
 * chain rounds, accepted drafts, and (q) rounds with sampled drafts; and
 * q drafts must be accepted more often than one-hot ones on the same
 * drafter, which is their point.
 *
 * Under a grammar (capitalized words only: the target's most likely
 * continuations are lowercase words and punctuation, which it refuses) the exact joint is taken over the MASKED rows (the grammar's
 * state after each prefix, the mask applied before the sampler), and the
 * speculative configurations (drafts proposed with the grammar, one-hot
 * and sampled, chains and a dynamic tree) must keep it too; each proves
 * the grammar masked its rows and drafts were accepted.
 */
#include "test.h"
#include "sprig.h"
#include "model/model.h"
#include "sample/sample.h"
#include "base/pool.h"
#include "grammar/match.h"
#include "tokenizer/tokenizer.h"

#include <math.h>
#include <stdlib.h>

#define TOPK 4
#define NT 4
#define CELLS (TOPK * TOPK * TOPK * TOPK)

static sprig_model *g_target;
static const char *const PROMPT = "Tom had a big";
static sprig_gmatch *g_grammar;   /* the exact joint under this grammar (NULL: none) */
static int g_np;                  /* prompt tokens: the grammar starts after them */
static const char *const GRAMMAR = "root ::= (\" \" [A-Z] [a-z]*)+\n";

/* the sampler's distribution after prefix[n], as (id, p) of its TOPK tokens */
static void dist_after(sprig_ctx *ctx, sprig_sampler *smp, const int32_t *prefix, int n, float *logits, float *probs,
                       int32_t *ids, double *p)
{
    sprig_error err = { 0 };
    sprig_kv_clear(sprig_ctx_kv(ctx));
    CHECKF(sprig_prefill(ctx, prefix, n, logits, NULL, &err) == SPRIG_OK, "%s", err.msg);
    if (g_grammar) {   /* the state after the generated part of the prefix, its mask on the row */
        int32_t st = sprig_gmatch_start(g_grammar);
        for (int i = g_np; i < n && st >= 0; i++) st = sprig_gmatch_advance(g_grammar, st, prefix[i]);
        CHECK(st >= 0 && sprig_gmatch_apply(g_grammar, st, logits, &err));
    }
    sprig_sampler_probs(smp, logits, probs);
    int k = 0;
    for (int v = 0; v < g_target->hp.n_vocab; v++)
        if (probs[v] > 0.0f) {
            CHECK(k < TOPK);
            if (k < TOPK) { ids[k] = v; p[k] = probs[v]; k++; }
        }
    CHECK_EQ_INT(k, TOPK);
}

struct joint { int32_t ids[CELLS][NT]; double p[CELLS]; };

/* exact joint of the first NT generated tokens after the prompt ids */
static void exact_joint(const int32_t *prompt, int np, struct joint *J)
{
    sprig_error err = { 0 };
    sprig_pool *pool = sprig_pool_create(1, &err);
    sprig_ctx *ctx = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 64 };
    CHECKF(pool && sprig_ctx_create(g_target, pool, &cp, &ctx, &err) == SPRIG_OK, "%s", err.msg);
    struct sprig_sampler_params sp = { .temp = 0.8f, .top_k = TOPK, .top_p = 1.0f, .min_p = 0.0f };
    sprig_sampler *smp = sprig_sampler_create(&sp, g_target->hp.n_vocab, &err);
    const int V = g_target->hp.n_vocab;
    float *logits = malloc(sizeof(float) * (size_t)V), *probs = malloc(sizeof(float) * (size_t)V);
    int32_t pre[64];
    memcpy(pre, prompt, sizeof(int32_t) * (size_t)np);
    int32_t id[NT][TOPK];
    double p[NT][TOPK];
    /* depth-first over the TOPK^NT continuations */
    dist_after(ctx, smp, pre, np, logits, probs, id[0], p[0]);
    for (int a = 0; a < TOPK; a++) {
        pre[np] = id[0][a];
        dist_after(ctx, smp, pre, np + 1, logits, probs, id[1], p[1]);
        for (int b = 0; b < TOPK; b++) {
            pre[np + 1] = id[1][b];
            dist_after(ctx, smp, pre, np + 2, logits, probs, id[2], p[2]);
            for (int c = 0; c < TOPK; c++) {
                pre[np + 2] = id[2][c];
                dist_after(ctx, smp, pre, np + 3, logits, probs, id[3], p[3]);
                for (int d = 0; d < TOPK; d++) {
                    const int cell = ((a * TOPK + b) * TOPK + c) * TOPK + d;
                    J->ids[cell][0] = id[0][a];
                    J->ids[cell][1] = id[1][b];
                    J->ids[cell][2] = id[2][c];
                    J->ids[cell][3] = id[3][d];
                    J->p[cell] = p[0][a] * p[1][b] * p[2][c] * p[3][d];
                }
            }
        }
    }
    free(logits);
    free(probs);
    sprig_sampler_free(smp);
    sprig_ctx_free(ctx);
    sprig_pool_free(pool);
}

static int find_cell(const struct joint *J, const int32_t *t)
{
    for (int c = 0; c < CELLS; c++)
        if (!memcmp(J->ids[c], t, sizeof(int32_t) * NT)) return c;
    return -1;
}

/* one-sample chi-square of counts cnt[CELLS] over runs against J (cells expecting < 5 pooled); *dof its degrees */
static double chi_square(const struct joint *J, const int64_t *cnt, int runs, int *dof)
{
    double chi = 0, pool_o = 0, pool_e = 0;
    int bins = 0;
    for (int c = 0; c < CELLS; c++) {
        const double e = J->p[c] * runs;
        if (e < 5) { pool_o += (double)cnt[c]; pool_e += e; continue; }
        chi += (cnt[c] - e) * (cnt[c] - e) / e;
        bins++;
    }
    if (pool_e > 0) { chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e; bins++; }
    *dof = bins - 1;
    return chi;
}

/* statistics summed over runs */
struct totals { int64_t rounds, tree_rounds, sampled, proposed, accepted, masked, forced, pruned; };

/* runs generations of NT tokens from PROMPT with seeds seed0 + r * 7919, their cells counted in cnt[CELLS] (zeroed
 * here) and their statistics summed in *t; returns the outputs outside J's support */
static int64_t sample_runs(sprig_session *s, const char *name, const struct joint *J, int runs, uint64_t seed0, int64_t *cnt,
                           struct totals *t)
{
    sprig_error err = { 0 };
    struct sprig_output o;
    int64_t outside = 0;
    memset(cnt, 0, sizeof(int64_t) * CELLS);
    memset(t, 0, sizeof *t);
    for (int r = 0; r < runs; r++) {
        sprig_session_set_seed(s, seed0 + (uint64_t)r * 7919);
        if (sprig_session_generate(s, PROMPT, strlen(PROMPT), NT, NULL, NULL, &err)) { CHECKF(0, "%s: %s", name, err.msg); break; }
        sprig_session_get_output(s, &o);
        struct sprig_stats st;
        sprig_session_get_stats(s, &st);
        if (o.n_tokens != NT) { CHECK_EQ_INT(o.n_tokens, NT); break; }
        const int c = find_cell(J, o.tokens);
        if (c < 0) outside++;
        else cnt[c]++;
        t->rounds += st.rounds;
        t->tree_rounds += !strcmp(st.path, "tree") ? st.rounds : 0;
        t->sampled += st.sampled_rounds;
        t->proposed += st.proposed;
        t->accepted += st.accepted;
        t->masked += st.grammar_rows_masked;
        t->forced += st.grammar_forced;
        t->pruned += st.grammar_pruned;
    }
    return outside;
}

struct conf {
    const char *name;
    enum sprig_drafter_kind drafter;
    const char *file;
    bool tree, q;
    int branches, width;
};

static struct sprig_session_params params_of(const struct conf *f)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.n_threads = 1;
    p.n_ctx = 64;
    p.temp = 0.8f;
    p.top_k = TOPK;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.ignore_eos = true;
    p.drafter = f->drafter;
    p.draft_path = f->file ? test_shared(f->file) : NULL;
    p.draft_max = 3;
    p.tree = f->tree ? SPRIG_TREE_ON : SPRIG_TREE_OFF;
    p.tree_branches = f->branches;
    p.tree_width = f->width;
    p.sampled_drafts = f->q;
    return p;
}

static void test_sampled_speculation_keeps_the_distribution(void)
{
    static const struct conf confs[] = {
        { "plain", SPRIG_DRAFTER_NONE, NULL, false, false, 0, 0 },
        { "draft-model chain one-hot", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", false, false, 0, 0 },
        { "draft-model chain q", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", false, true, 0, 0 },
        { "draft-model runner-up tree q", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", true, true, 2, 0 },
        { "draft-model dynamic tree q", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", true, true, 4, 3 },
        { "mtp chain q", SPRIG_DRAFTER_MTP, "models/stories-mtp.gguf", false, true, 0, 0 },
        { "mtp dynamic tree q", SPRIG_DRAFTER_MTP, "models/stories-mtp.gguf", true, true, 4, 3 },
    };
    const int runs = test_quick() ? 1200 : 20000;   /* quick: the sanitizer run */
    /* the prompt as the session evaluates it */
    struct sprig_session_params gp = params_of(&confs[0]);
    gp.temp = 0;
    sprig_session *s = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_session_create(g_target, &gp, &s, &err) == SPRIG_OK, "%s", err.msg);
    if (!s) return;
    CHECK(sprig_session_generate(s, PROMPT, strlen(PROMPT), 1, NULL, NULL, &err) == SPRIG_OK);
    struct sprig_output o;
    sprig_session_get_output(s, &o);
    int32_t prompt[32];
    const int np = o.n_prompt < 32 ? o.n_prompt : 32;
    memcpy(prompt, o.prompt, sizeof(int32_t) * (size_t)np);
    sprig_session_free(s);
    static struct joint J;
    exact_joint(prompt, np, &J);
    double acc_onehot = 0, acc_q = 0;
    for (size_t ci = 0; ci < sizeof confs / sizeof confs[0]; ci++) {
        const struct conf *f = &confs[ci];
        struct sprig_session_params p = params_of(f);
        s = NULL;
        CHECKF(sprig_session_create(g_target, &p, &s, &err) == SPRIG_OK, "%s: %s", f->name, err.msg);
        if (!s) continue;
        static int64_t cnt[CELLS];
        struct totals t;
        const int64_t outside = sample_runs(s, f->name, &J, runs, 777000 + ci, cnt, &t);
        const int64_t rounds = t.rounds, tree_rounds = t.tree_rounds, sampled = t.sampled, proposed = t.proposed, accepted = t.accepted;
        sprig_session_free(s);
        CHECKF(outside == 0, "%s: %lld outputs outside the top-%d support", f->name, (long long)outside, TOPK);
        int dof;
        const double chi = chi_square(&J, cnt, runs, &dof), limit = dof + 6.0 * sqrt(2.0 * dof);
        const double acc = proposed ? (double)accepted / (double)proposed : 0;
        fprintf(stderr, "  %-30s chi2 %7.1f (dof %d, limit %.1f)  acceptance %.3f  rounds/run %.2f  sampled rounds %lld\n",
                f->name, chi, dof, limit, acc, (double)rounds / runs, (long long)sampled);
        CHECKF(dof > 20 && chi < limit, "%s: chi2 %.1f >= %.1f (dof %d)", f->name, chi, limit, dof);
        if (f->drafter == SPRIG_DRAFTER_NONE) continue;
        CHECKF(accepted > runs / 4, "%s: %lld drafts accepted", f->name, (long long)accepted);   /* speculation ran */
        if (f->tree) CHECKF(tree_rounds == rounds, "%s: %lld of %lld rounds were tree rounds", f->name, (long long)tree_rounds, (long long)rounds);
        else CHECK_EQ_INT(tree_rounds, 0);
        if (f->q) CHECKF(sampled * 2 > rounds, "%s: %lld of %lld rounds drew from q", f->name, (long long)sampled, (long long)rounds);
        else CHECK_EQ_INT(sampled, 0);
        if (ci == 1) acc_onehot = acc;
        if (ci == 2) acc_q = acc;
    }
    CHECKF(acc_q > acc_onehot, "q drafts accepted %.3f, one-hot %.3f", acc_q, acc_onehot);
}

static const char *gv_text(const void *u, int32_t id, size_t *len) { return sprig_tokenizer_token_text(u, id, len); }
static bool gv_eog(const void *u, int32_t id) { return sprig_tokenizer_is_eog(u, id); }

static void test_grammar_speculation_keeps_the_constrained_distribution(void)
{
    static const struct conf confs[] = {
        { "grammar plain", SPRIG_DRAFTER_NONE, NULL, false, false, 0, 0 },
        { "grammar draft-model chain", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", false, false, 0, 0 },
        { "grammar draft-model dyntree", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", true, false, 4, 3 },
        { "grammar draft-model chain q", SPRIG_DRAFTER_MODEL, "models/stories-draft.gguf", false, true, 0, 0 },
    };
    const int runs = test_quick() ? 1200 : 12000;
    sprig_error err = { 0 };
    sprig_gvocab *v = sprig_gvocab_create(g_target->hp.n_vocab, gv_text, gv_eog, g_target->tok, &err);
    sprig_gbnf *gb = NULL;
    CHECKF(v && !sprig_gbnf_parse(GRAMMAR, strlen(GRAMMAR), &gb, &err), "%s", err.msg);
    g_grammar = gb ? sprig_gmatch_create(gb, v, &err) : NULL;
    sprig_gbnf_free(gb);
    if (!g_grammar) { sprig_gvocab_free(v); return; }
    struct sprig_session_params gp = params_of(&confs[0]);
    gp.temp = 0;
    sprig_session *s = NULL;
    CHECKF(sprig_session_create(g_target, &gp, &s, &err) == SPRIG_OK, "%s", err.msg);
    CHECK(sprig_session_generate(s, PROMPT, strlen(PROMPT), 1, NULL, NULL, &err) == SPRIG_OK);
    struct sprig_output o;
    sprig_session_get_output(s, &o);
    int32_t prompt[32];
    g_np = o.n_prompt < 32 ? o.n_prompt : 32;
    memcpy(prompt, o.prompt, sizeof(int32_t) * (size_t)g_np);
    sprig_session_free(s);
    static struct joint J;
    exact_joint(prompt, g_np, &J);
    /* the grammar bites: the unconstrained joint's most likely cell is one it refuses */
    for (size_t ci = 0; ci < sizeof confs / sizeof confs[0]; ci++) {
        const struct conf *f = &confs[ci];
        struct sprig_session_params p = params_of(f);
        s = NULL;
        CHECKF(sprig_session_create(g_target, &p, &s, &err) == SPRIG_OK, "%s: %s", f->name, err.msg);
        if (!s) continue;
        CHECKF(sprig_session_set_grammar(s, GRAMMAR, strlen(GRAMMAR), &err) == SPRIG_OK, "%s", err.msg);
        static int64_t cnt[CELLS];
        struct totals t;
        const int64_t outside = sample_runs(s, f->name, &J, runs, 991000 + ci, cnt, &t);
        const int64_t accepted = t.accepted, masked = t.masked, forced = t.forced, pruned = t.pruned, sampled = t.sampled;
        sprig_session_free(s);
        CHECKF(outside == 0, "%s: %lld outputs outside the masked top-%d support", f->name, (long long)outside, TOPK);
        int dof;
        const double chi = chi_square(&J, cnt, runs, &dof), limit = dof + 6.0 * sqrt(2.0 * dof);
        fprintf(stderr, "  %-30s chi2 %7.1f (dof %d, limit %.1f)  accepted %lld  rows masked %lld  forced %lld  cut %lld  q rounds %lld\n",
                f->name, chi, dof, limit, (long long)accepted, (long long)masked, (long long)forced, (long long)pruned, (long long)sampled);
        CHECKF(dof > 20 && chi < limit, "%s: chi2 %.1f >= %.1f (dof %d)", f->name, chi, limit, dof);
        CHECKF(masked > runs, "%s: %lld rows masked: the grammar did not run", f->name, (long long)masked);
        if (f->drafter == SPRIG_DRAFTER_NONE) continue;
        CHECKF(accepted > runs / 40, "%s: %lld drafts accepted", f->name, (long long)accepted);   /* speculation ran */
        if (f->q) CHECKF(sampled > runs / 2, "%s: %lld rounds drew from q", f->name, (long long)sampled);
    }
    sprig_gmatch_free(g_grammar);
    g_grammar = NULL;
    sprig_gvocab_free(v);
}

int main(void)
{
    sprig_error err = { 0 };
    if (sprig_model_load(test_shared("models/stories260K.gguf"), &g_target, &err)) {
        fprintf(stderr, "cannot load target: %s\n", err.msg);
        return 1;
    }
    RUN(test_sampled_speculation_keeps_the_distribution);
    RUN(test_grammar_speculation_keeps_the_constrained_distribution);
    sprig_model_free(g_target);
    return test_summary("test-spec-sampled");
}
