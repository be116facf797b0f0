/*
 * tests/test-spec.c — speculative decoding on the real model, end to end
 * through the public API: for each drafter (draft model, MTP head, n-gram),
 * chain and tree (linear and branching), block sizes 2..8, 256 greedy tokens
 * must be byte-identical to plain greedy decoding. The statistics must prove
 * the path under test ran (path "tree" with tree rounds for tree mode), a
 * linear tree must give exactly the chain's round statistics, and across the
 * runs full, partial and zero accepts must all occur. Also: bad drafter
 * inputs (another vocabulary, an MTP head for another target, bad params).
 */
#include "test.h"
#include "sprig.h"
#include "gguf/gguf.h"
#include "mkmodel/mkmodel.h"

#include <stdlib.h>

static sprig_model *g_target;

static struct sprig_session_params greedy_params(void)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 1;
    p.n_ctx = 512;
    p.ignore_eos = true;
    p.tree = SPRIG_TREE_OFF;
    return p;
}

static char *generate(const struct sprig_session_params *p, const char *prompt, int n, struct sprig_stats *st)
{
    sprig_error err = { 0 };
    sprig_session *s = NULL;
    sprig_status rc = sprig_session_create(g_target, p, &s, &err);
    CHECKF(rc == SPRIG_OK, "%s", err.msg);
    if (rc) return NULL;
    struct test_text b = { 0 };
    rc = sprig_session_generate(s, prompt, strlen(prompt), n, test_text_collect, &b, &err);
    CHECKF(rc == SPRIG_OK, "%s", err.msg);
    sprig_session_get_stats(s, st);
    sprig_session_free(s);
    return b.p ? b.p : calloc(1, 1);
}

static const char *const prompts[] = { "Once upon a time", "Lily and Ben went to the park." };

static void run_drafter(enum sprig_drafter_kind kind, const char *path, const char *label)
{
    int n_tok = test_quick() ? 96 : 256;
    int64_t zero = 0, partial = 0, full = 0, dyn_branch = 0, dyn_rounds = 0, auto_varied = 0, auto_runs = 0;
    double dyn_epv = 0, chain_epv = 0;
    for (size_t pi = 0; pi < sizeof prompts / sizeof prompts[0]; pi++) {
        struct sprig_stats ps;
        struct sprig_session_params pp = greedy_params();
        char *plain = generate(&pp, prompts[pi], n_tok, &ps);
        if (!plain) return;
        CHECK_STR(ps.path, "plain");
        CHECK_EQ_INT(ps.generated_tokens, n_tok);
        for (int block = 2; block <= 8; block++) {
            if (test_quick() && block != 2 && block != 5 && block != 8) continue;
            struct sprig_session_params p = greedy_params();
            p.drafter = kind;
            p.draft_path = path;
            p.draft_max = block - 1;
            struct sprig_stats sc, sl, sb;
            char *chain = generate(&p, prompts[pi], n_tok, &sc);
            p.tree = SPRIG_TREE_ON;
            char *lin = generate(&p, prompts[pi], n_tok, &sl);
            p.tree_branches = 2;
            char *br = generate(&p, prompts[pi], n_tok, &sb);
            if (!chain || !lin || !br) { free(chain); free(lin); free(br); continue; }
            CHECKF(!strcmp(chain, plain), "%s block %d chain differs from plain", label, block);
            CHECKF(!strcmp(lin, plain), "%s block %d linear tree differs from plain", label, block);
            CHECKF(!strcmp(br, plain), "%s block %d branching tree differs from plain", label, block);
            /* the paths under test ran */
            CHECK_STR(sc.path, "chain");
            CHECK_STR(sl.path, "tree");
            CHECK_STR(sb.path, "tree");
            CHECK(sl.tree_mode && sb.tree_mode && !sc.tree_mode);
            CHECK(sc.rounds > 0 && sl.rounds > 0 && sb.rounds > 0);
            CHECK(sb.proposed > sl.proposed);      /* the branches were verified */
            /* a linear tree is the chain, round for round */
            CHECK_EQ_INT(sl.rounds, sc.rounds);
            CHECK_EQ_INT(sl.proposed, sc.proposed);
            CHECK_EQ_INT(sl.accepted, sc.accepted);
            CHECK_EQ_INT(sl.emitted, sc.emitted);
            CHECK_EQ_INT(sl.zero_accept_rounds, sc.zero_accept_rounds);
            CHECK_EQ_INT(sl.partial_accept_rounds, sc.partial_accept_rounds);
            CHECK_EQ_INT(sl.full_accept_rounds, sc.full_accept_rounds);
            CHECK_EQ_INT(sc.generated_tokens, n_tok);
            zero += sc.zero_accept_rounds + sb.zero_accept_rounds;
            partial += sc.partial_accept_rounds + sb.partial_accept_rounds;
            full += sc.full_accept_rounds + sb.full_accept_rounds;
            struct sprig_stats sd = { 0 };
            if (kind != SPRIG_DRAFTER_NGRAM) {   /* model drafters: a dynamic tree of 2 x block nodes, width 3 */
                p.tree_branches = block;
                p.tree_width = 3;
                char *dyn = generate(&p, prompts[pi], n_tok, &sd);
                p.tree_width = 0;
                if (dyn) {
                    CHECKF(!strcmp(dyn, plain), "%s block %d dynamic tree differs from plain", label, block);
                    CHECK_STR(sd.path, "tree");
                    dyn_branch += sd.branch_rounds;
                    dyn_rounds += sd.rounds;
                    dyn_epv += sd.emitted_per_verify;
                    chain_epv += sc.emitted_per_verify;
                }
                free(dyn);
                /* tree auto: chooses from a dynamic tree of 3 x block nodes each round */
                struct sprig_stats sa = { 0 };
                p.tree_branches = 2 * block;
                p.tree_width = 3;
                p.tree_auto = true;
                char *aut = generate(&p, prompts[pi], n_tok, &sa);
                p.tree_width = 0;
                p.tree_auto = false;
                if (aut) {
                    CHECKF(!strcmp(aut, plain), "%s block %d tree auto differs from plain", label, block);
                    CHECK_STR(sa.path, "tree");
                    auto_varied += sa.block_max > sa.block_min;   /* it chose different sizes */
                    auto_runs++;
                }
                free(aut);
            }
            if (pi == 0 && (block == 4 || block == 8))
                fprintf(stderr, "  %s block %d: chain %.3f emitted/verify (acc %.3f), branching %.3f, dynamic %.3f\n", label,
                        block, sc.emitted_per_verify, sc.acceptance_rate, sb.emitted_per_verify, sd.emitted_per_verify);
            free(chain);
            free(lin);
            free(br);
        }
        free(plain);
    }
    CHECKF(zero > 0 && partial > 0 && full > 0, "%s: zero/partial/full accept rounds %lld/%lld/%lld must all occur",
           label, (long long)zero, (long long)partial, (long long)full);
    if (kind != SPRIG_DRAFTER_NGRAM) {   /* dynamic trees ran: side branches won, and they emit more than chains */
        fprintf(stderr, "  %s dynamic trees: %lld of %lld rounds won by a side branch\n", label, (long long)dyn_branch,
                (long long)dyn_rounds);
        CHECK(dyn_branch > 0 && dyn_epv > chain_epv);
        fprintf(stderr, "  %s tree auto: %lld of %lld runs verified rounds of different sizes\n", label, (long long)auto_varied,
                (long long)auto_runs);
        CHECK(auto_runs > 0 && auto_varied * 2 >= auto_runs);
    }
}

static void test_draft_model_equals_plain(void) { run_drafter(SPRIG_DRAFTER_MODEL, test_shared("models/stories-draft.gguf"), "draft-model"); }
static void test_mtp_equals_plain(void) { run_drafter(SPRIG_DRAFTER_MTP, test_shared("models/stories-mtp.gguf"), "mtp"); }
static void test_ngram_equals_plain(void) { run_drafter(SPRIG_DRAFTER_NGRAM, NULL, "ngram"); }

/* Two threads and an f16 cache: still byte-identical (numerics do not depend on the batch). */
static void test_threads_and_f16_cache(void)
{
    struct sprig_session_params p = greedy_params();
    p.n_threads = 2;
    p.kv_type = SPRIG_KV_F16;
    struct sprig_stats s0, s1;
    char *plain = generate(&p, "The sun was", 200, &s0);
    p.drafter = SPRIG_DRAFTER_MTP;
    p.draft_path = test_shared("models/stories-mtp.gguf");
    p.draft_max = 5;
    p.tree = SPRIG_TREE_ON;
    p.tree_branches = 3;
    char *tree = generate(&p, "The sun was", 200, &s1);
    CHECK(plain && tree && !strcmp(plain, tree));
    CHECK_STR(s1.path, "tree");
    free(plain);
    free(tree);
}

/* A copy of the draft model with token 300's piece changed. */
static const char *write_other_vocab(void)
{
    const char *out = test_tmpfile("draft-other-vocab.gguf");
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(test_shared("models/stories-draft.gguf"), &err);
    CHECK(g != NULL);
    if (!g) return NULL;
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) {
        if (strcmp(sprig_gguf_kv_key(g, i), "tokenizer.ggml.tokens")) {
            CHECK(sprig_gguf_w_copy_kv(w, g, i, &err) == SPRIG_OK);
            continue;
        }
        uint64_t n = 0;
        int et = 0;
        CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, true, &err) == SPRIG_OK);
        const char **s = calloc(n, sizeof *s);
        size_t *l = calloc(n, sizeof *l);
        for (uint64_t j = 0; j < n; j++) s[j] = sprig_gguf_arr_str(g, i, j, &l[j]);
        s[300] = "\xE2\x96\x81zebra";
        l[300] = strlen(s[300]);
        CHECK(sprig_gguf_w_arr_str(w, "tokenizer.ggml.tokens", s, l, n, &err) == SPRIG_OK);
        free(s);
        free(l);
    }
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        CHECK(sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) == SPRIG_OK);
    }
    CHECKF(sprig_gguf_writer_write(w, out, &err) == SPRIG_OK, "%s", err.msg);
    sprig_gguf_writer_free(w);
    sprig_gguf_close(g);
    return out;
}

static void test_bad_drafters_are_refused(void)
{
    sprig_error err = { 0 };
    sprig_session *s = NULL;
    struct sprig_session_params p = greedy_params();
    /* a draft model whose vocabulary differs at one token */
    const char *other = write_other_vocab();
    p.drafter = SPRIG_DRAFTER_MODEL;
    p.draft_path = other;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG && !s);
    CHECKF(strstr(err.msg, "token id 300") != NULL, "%s", err.msg);
    /* a draft model with an entirely different vocabulary (a synthetic model) */
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    const char *tiny = test_tmpfile("tiny.gguf");
    CHECKF(sprig_mkmodel_write(&mp, tiny, &err) == SPRIG_OK, "%s", err.msg);
    p.draft_path = tiny;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG && !s);
    CHECKF(strstr(err.msg, "token id") != NULL, "%s", err.msg);
    /* an MTP head given as a draft model is still a llama model, but an MTP
     * head that does not fit: the draft model given as --mtp */
    p.drafter = SPRIG_DRAFTER_MTP;
    p.draft_path = test_shared("models/stories-draft.gguf");
    CHECK(sprig_session_create(g_target, &p, &s, &err) != SPRIG_OK && !s);
    CHECKF(strstr(err.msg, "mtp.kind") != NULL, "%s", err.msg);
    /* a missing file */
    p.draft_path = test_tmpfile("does-not-exist.gguf");
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_IO && !s);
    /* bad parameters, each named */
    p = greedy_params();
    p.drafter = SPRIG_DRAFTER_NGRAM;
    p.draft_max = 0;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "draft_max") != NULL);
    p.draft_max = 64;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG);
    p = greedy_params();
    p.tree = SPRIG_TREE_ON;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "drafter") != NULL);
    p = greedy_params();
    p.drafter = SPRIG_DRAFTER_MODEL;
    p.draft_path = NULL;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "draft_path") != NULL);
    p = greedy_params();
    p.drafter = SPRIG_DRAFTER_NGRAM;
    p.draft_max = 60;
    p.tree_branches = 5;
    CHECK(sprig_session_create(g_target, &p, &s, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "tree_branches") != NULL);
}

/* The environment switch turns tree mode on; an explicit OFF overrides it. */
static void test_tree_switch_from_environment(void)
{
    struct sprig_session_params p = greedy_params();
    p.drafter = SPRIG_DRAFTER_NGRAM;
    p.tree = SPRIG_TREE_FROM_ENV;
    struct sprig_stats st;
    const char *prev = getenv("SPRIG_TREE");
    char *a = generate(&p, "Once upon a time", 40, &st);
    CHECK_STR(st.path, prev && *prev && strcmp(prev, "0") ? st.path : "chain");
    free(a);
    p.tree = SPRIG_TREE_OFF;
    a = generate(&p, "Once upon a time", 40, &st);
    CHECK_STR(st.path, "chain");
    free(a);
}

/* ---- sampling: speculative output follows the target's distribution ---- */

struct hist { int n; char key[512][64]; int a[512], b[512]; };

static void hist_add(struct hist *h, const char *key, int which)
{
    int i = 0;
    while (i < h->n && strcmp(h->key[i], key)) i++;
    if (i == h->n) {
        if (h->n == 512) return;
        snprintf(h->key[h->n++], 64, "%s", key);
    }
    (which ? h->b : h->a)[i]++;
}

/* Two-sample chi-square over the continuations' texts, pooling cells under 10. */
static double chi2_two_sample(const struct hist *h, int *df)
{
    double chi = 0;
    int pa = 0, pb = 0;
    *df = -1;
    for (int i = 0; i < h->n; i++) {
        if (h->a[i] + h->b[i] < 10) { pa += h->a[i]; pb += h->b[i]; continue; }
        double d = h->a[i] - h->b[i];
        chi += d * d / (h->a[i] + h->b[i]);
        (*df)++;
    }
    if (pa + pb) { chi += (double)(pa - pb) * (pa - pb) / (pa + pb); (*df)++; }
    return chi;
}

static void sample_runs(struct sprig_session_params *p, int runs, uint64_t seed0, struct hist *h, int which, struct sprig_stats *st)
{
    sprig_error err = { 0 };
    sprig_session *s = NULL;
    CHECKF(sprig_session_create(g_target, p, &s, &err) == SPRIG_OK, "%s", err.msg);
    if (!s) return;
    for (int r = 0; r < runs; r++) {
        struct test_text b = { 0 };
        sprig_session_set_seed(s, seed0 + (uint64_t)r);
        CHECK(sprig_session_generate(s, "Tom had a big", 13, 4, test_text_collect, &b, &err) == SPRIG_OK);
        hist_add(h, b.p ? b.p : "", which);
        free(b.p);
    }
    sprig_session_get_stats(s, st);
    sprig_session_free(s);
}

/* Four sampled tokens (temp 0.7, top-k 3): plain decoding against tree
 * speculation with runner-up branches (the MTP head drafts deterministically,
 * the lossless acceptance decides); the joint distributions must agree. A
 * biased acceptance rule (e.g. always accepting drafts) fails this. */
static void test_sampled_tree_keeps_the_distribution(void)
{
    int runs = test_quick() ? 600 : 4000;
    static struct hist h;
    memset(&h, 0, sizeof h);
    struct sprig_session_params p = greedy_params();
    p.temp = 0.7f;
    p.top_k = 3;
    p.top_p = 1;
    p.min_p = 0;
    p.ignore_eos = false;
    struct sprig_stats sp, st;
    sample_runs(&p, runs, 1000, &h, 0, &sp);
    p.drafter = SPRIG_DRAFTER_MTP;
    p.draft_path = test_shared("models/stories-mtp.gguf");
    p.draft_max = 3;
    p.tree = SPRIG_TREE_ON;
    p.tree_branches = 2;
    sample_runs(&p, runs, 900000, &h, 1, &st);
    CHECK_STR(st.path, "tree");
    CHECK(st.accepted > 0);
    int df;
    double chi = chi2_two_sample(&h, &df);
    /* df + 6 sqrt(2 df): far in the tail for a correct rule */
    double limit = df + 6 * sqrt(2.0 * (df > 0 ? df : 1));
    fprintf(stderr, "  %d outcomes, chi2 %.1f on %d df (limit %.1f); tree acceptance %.3f\n", h.n, chi, df, limit, st.acceptance_rate);
    CHECKF(df > 3 && chi < limit, "sampled tree output differs from plain sampling: chi2 %.1f, df %d", chi, df);
}

int main(void)
{
    sprig_error err = { 0 };
    if (sprig_model_load(test_shared("models/stories260K.gguf"), &g_target, &err)) {
        fprintf(stderr, "cannot load target: %s\n", err.msg);
        return 1;
    }
    RUN(test_draft_model_equals_plain);
    RUN(test_mtp_equals_plain);
    RUN(test_ngram_equals_plain);
    RUN(test_threads_and_f16_cache);
    RUN(test_bad_drafters_are_refused);
    RUN(test_tree_switch_from_environment);
    RUN(test_sampled_tree_keeps_the_distribution);
    sprig_model_free(g_target);
    return test_summary("test-spec");
}
