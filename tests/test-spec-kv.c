/*
 * tests/test-spec-kv.c — speculative greedy output is byte-identical to
 * plain greedy output in every KV cache mode (issue: lossy caches), because
 * a verify block reads its own keys and values exactly as the cache holds
 * them, as plain decoding does:
 *   - stories260K (head size 8) in f16, int8, turbo4, turbo4-asym,
 *     turbo3-asym, turbo4-delegated: every drafter (draft model, MTP head, n-gram), chain and
 *     branching tree, 256 tokens;
 *   - synthetic llama models with head sizes 64 and 128 (mkmodel, std 0.08
 *     so attention matters), a ~2,050-token prompt and 160 generated tokens,
 *     so verification runs past 2,048 slots of context: every mode, a
 *     draft model (another seed) and the n-gram drafter, chain and tree.
 * Paged caches too: stories260K in f32 (16-slot blocks) and turbo4 (8), and
 * turbo4 on the synthetic models (32-slot blocks), plain vs speculative
 * each on a paged cache. Each run's statistics prove what ran: the mode (kv_type), the path
 * ("chain" / "tree") with rounds; across a model's runs zero and partial
 * accepts occur (rollback happened). A lossy mode must also change the
 * generated ids somewhere against f32 on the synthetic models (proof the
 * mode is not silently f32).
 */
#include "test.h"
#include "test_session.h"
#include "sprig.h"
#include "mkmodel/mkmodel.h"
#include "base/rng.h"

#include <stdlib.h>

static const enum sprig_kv_type all_modes[] = { SPRIG_KV_F32, SPRIG_KV_F16, SPRIG_KV_INT8, SPRIG_KV_TURBO4,
                                                SPRIG_KV_TURBO4_ASYM, SPRIG_KV_TURBO3_ASYM, SPRIG_KV_TURBO4_DELEGATED };
#define N_MODES ((int)(sizeof all_modes / sizeof all_modes[0]))


static bool same_ids(const struct test_run *a, const struct test_run *b)
{
    return a->n == b->n && !memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n);
}

static int g_block;   /* kv_block_slots of the current runs */

static struct sprig_session_params greedy(enum sprig_kv_type mode, int n_ctx)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 2;
    p.n_ctx = n_ctx;
    p.ignore_eos = true;
    p.tree = SPRIG_TREE_OFF;
    p.kv_type = mode;
    p.kv_block_slots = g_block;
    return p;
}

struct drafter { enum sprig_drafter_kind kind; const char *path; const char *label; };

/* Plain, chain and branching tree for each drafter in one mode; returns the plain run. */
static void check_mode(const sprig_model *m, enum sprig_kv_type mode, const struct drafter *d, int nd, const char *prompt,
                       int n_tok, int n_ctx, int block, int kv_block, int64_t acc[2], struct test_run *plain_out)
{
    g_block = kv_block;
    struct sprig_session_params p = greedy(mode, n_ctx);
    struct test_run plain;
    if (!test_run_session(m, &p, prompt, n_tok, &plain)) return;
    CHECK_STR(plain.st.path, "plain");
    CHECK_STR(plain.st.kv_type, sprig_kv_type_name(mode));
    CHECK_STR(plain.st.kv_layout, kv_block ? "paged" : mode == SPRIG_KV_TURBO4_DELEGATED ? "delegated" : "dense");
    CHECK_EQ_INT(plain.n, n_tok);
    for (int di = 0; di < nd; di++)
        for (int tree = 0; tree < 2; tree++) {
            p = greedy(mode, n_ctx);
            p.drafter = d[di].kind;
            p.draft_path = d[di].path;
            p.draft_max = block - 1;
            if (tree) { p.tree = SPRIG_TREE_ON; p.tree_branches = 2; }
            struct test_run r;
            if (!test_run_session(m, &p, prompt, n_tok, &r)) continue;
            CHECKF(same_ids(&r, &plain), "kv %s, %s %s: output differs from plain decoding", sprig_kv_type_name(mode),
                   d[di].label, tree ? "tree" : "chain");
            CHECK_STR(r.st.kv_type, sprig_kv_type_name(mode));
            CHECK_STR(r.st.kv_layout, kv_block ? "paged" : mode == SPRIG_KV_TURBO4_DELEGATED ? "delegated" : "dense");
            CHECK_STR(r.st.path, tree ? "tree" : "chain");
            CHECK(r.st.rounds > 0);
            acc[0] += r.st.zero_accept_rounds;
            acc[1] += r.st.partial_accept_rounds;
            free(r.ids);
        }
    if (plain_out) *plain_out = plain;
    else free(plain.ids);
}

static void test_stories_every_mode(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(test_shared("models/stories260K.gguf"), &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    const struct drafter d[3] = {
        { SPRIG_DRAFTER_MODEL, test_shared("models/stories-draft.gguf"), "draft-model" },
        { SPRIG_DRAFTER_MTP, test_shared("models/stories-mtp.gguf"), "mtp" },
        { SPRIG_DRAFTER_NGRAM, NULL, "ngram" },
    };
    const int n_tok = test_quick() ? 64 : 256;
    for (int mi = 1; mi < N_MODES; mi++) {   /* f32: test-spec */
        int64_t acc[2] = { 0, 0 };
        check_mode(m, all_modes[mi], d, 3, "Once upon a time", n_tok, 512, 5, 0, acc, NULL);
        CHECKF(acc[0] > 0 && acc[1] > 0, "kv %s: zero/partial accepts %lld/%lld", sprig_kv_type_name(all_modes[mi]),
               (long long)acc[0], (long long)acc[1]);
    }
    /* paged caches (blocks of 8 and 16 slots) in a plain and a lossy mode */
    for (int mi = 0; mi < N_MODES; mi += 4) {
        int64_t acc[2] = { 0, 0 };
        check_mode(m, all_modes[mi], d, 3, "Once upon a time", n_tok, 512, 5, mi ? 8 : 16, acc, NULL);
        CHECK(acc[0] > 0 && acc[1] > 0);
    }
    sprig_model_free(m);
}

/* A prompt of random words from the synthetic vocabulary's letters: many tokens. */
static char *long_prompt(int words, uint64_t seed)
{
    sprig_rng r;
    sprig_rng_seed(&r, seed);
    char *s = malloc((size_t)words * 8 + 1);
    size_t n = 0;
    for (int w = 0; w < words; w++) {
        const int len = 1 + (int)(sprig_rng_u64(&r) % 5);
        for (int c = 0; c < len; c++) s[n++] = (char)('a' + sprig_rng_u64(&r) % 26);
        s[n++] = ' ';
    }
    s[n] = 0;
    return s;
}

static void synthetic(int hd)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.dim = 2 * hd;
    mp.n_heads = 2;
    mp.n_kv_heads = 1;
    mp.n_layers = 2;
    mp.ffn = 256;
    mp.ctx = 4096;
    mp.std = 0.08f;
    mp.type = 0;   /* f32 */
    mp.seed = 1000 + (uint64_t)hd;
    char name[64], dname[64];
    snprintf(name, sizeof name, "spec-kv-hd%d.gguf", hd);
    snprintf(dname, sizeof dname, "spec-kv-hd%d-draft.gguf", hd);
    const char *tpath = test_tmpfile(name);
    CHECKF(sprig_mkmodel_write(&mp, tpath, &err) == SPRIG_OK, "%s", err.msg);
    char *tp = strdup(tpath);
    mp.seed += 7;
    mp.n_layers = 1;
    const char *dpath = test_tmpfile(dname);
    CHECKF(sprig_mkmodel_write(&mp, dpath, &err) == SPRIG_OK, "%s", err.msg);
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(tp, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) { free(tp); return; }
    const struct drafter d[2] = { { SPRIG_DRAFTER_MODEL, dpath, "draft-model" }, { SPRIG_DRAFTER_NGRAM, NULL, "ngram" } };
    /* a prompt of ~2,050 tokens, so generation runs past 2,048 slots */
    int words = 400;
    char *prompt = long_prompt(words, 5);
    int32_t *ids = malloc(sizeof(int32_t) * 8192);
    int np = sprig_text_to_tokens(m, prompt, strlen(prompt), true, ids, 8192, &err);
    while (np >= 0 && np < 2050 && words < 4000) {
        free(prompt);
        words += 10;
        prompt = long_prompt(words, 5);
        np = sprig_text_to_tokens(m, prompt, strlen(prompt), true, ids, 8192, &err);
    }
    CHECKF(np >= 2050 && np < 2200, "prompt of %d tokens", np);
    const int n_tok = test_quick() ? 48 : 160;
    struct test_run base = { 0 };
    int64_t acc[2] = { 0, 0 };
    int differs = 0;
    for (int mi = 0; mi < N_MODES; mi++) {
        /* quick runs (ASan): f32, turbo4 (paged) and the delegated cache */
        if (test_quick() && mi != 0 && mi != 3 && all_modes[mi] != SPRIG_KV_TURBO4_DELEGATED) continue;
        struct test_run plain = { 0 };
        check_mode(m, all_modes[mi], d, 2, prompt, n_tok, 2304, 5, mi == 3 ? 32 : 0, acc, &plain);
        if (mi == 0) base = plain;
        else {
            if (!same_ids(&plain, &base)) differs++;
            free(plain.ids);
        }
    }
    fprintf(stderr, "  hd %d: prompt %d tokens; %d of %d lossy modes change the greedy ids against f32; zero/partial accepts %lld/%lld\n",
            hd, np, differs, N_MODES - 1, (long long)acc[0], (long long)acc[1]);
    CHECK(differs > 0 || test_quick());
    CHECK(acc[0] > 0 && acc[1] > 0);
    free(base.ids);
    free(ids);
    free(prompt);
    free(tp);
    sprig_model_free(m);
}

static void test_synthetic_hd64(void) { synthetic(64); }
static void test_synthetic_hd128(void)
{
    if (test_quick()) return;   /* ASan: head size 64 only */
    synthetic(128);
}

int main(void)
{
    RUN(test_stories_every_mode);
    RUN(test_synthetic_hd64);
    RUN(test_synthetic_hd128);
    return test_summary("test-spec-kv");
}
