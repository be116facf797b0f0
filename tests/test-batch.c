/*
 * tests/test-batch.c — continuous batching (spec/batch.h, model.h's
 * sprig_forward_multi).
 *
 * The shared forward: three sequences with different histories — a causal
 * block, a tree under its mask at depth positions, and one plain row — run
 * as ONE forward give every row the same logits and hidden bits as each
 * sequence's own forward, and leave the same caches (a second step after
 * each keeps its path agrees too). On stories260K (llama), a synthetic
 * gemma4 (sliding layers past their window, per-layer inputs, shared KV),
 * a synthetic qwen3 in Q8_0 and a synthetic qwen3moe in Q8_0 (each row
 * routed to its own experts, the experts run once over the rows that chose
 * them), dense caches and paged sequences on one pool. A bad request names its sequence and appends to no cache.
 *
 * Sessions on a batch: eight requests with mixed prompts, lengths, drafters
 * (none, draft model, MTP head, n-gram) and tree settings (chain, runner-up
 * and dynamic trees, tree auto) arrive at seeded random times on threads,
 * at most four generating at once; each one's greedy tokens equal the same
 * request run alone with its own dense cache. The batch's counts prove the
 * forwards were shared (two or more sequences in one forward) and each
 * tree request's statistics that its tree path ran; across them the rounds
 * accepted none, part and all of their drafts. Admission books and
 * returns the pool's slots.
 */
#include "test.h"
#include "test_session.h"
#include "mkmodel/mkmodel.h"
#include "model/internal.h"
#include "model/model.h"
#include "spec/tree.h"
#include "base/rng.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define NSEQ 3

static sprig_model *load(const char *path)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(path, &m, &err) == SPRIG_OK, "%s: %s", path, err.msg);
    return m;
}

static sprig_model *make(const char *arch, int type, const char *name)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = arch;
    mp.dim = 128;
    mp.n_heads = 4;
    mp.n_kv_heads = 2;
    mp.head_dim = 32;
    mp.n_layers = 3;
    mp.ffn = 192;
    mp.ctx = 512;
    mp.std = 0.08f;
    mp.type = type;
    mp.seed = 31;
    if (!strcmp(arch, "gemma4")) {
        mp.n_layers = 6;
        mp.n_heads = 2;
        mp.n_kv_heads = 1;
        mp.head_dim = 64;
        mp.head_dim_swa = 32;
        mp.window = 16;
        mp.swa_pattern = 3;
        mp.final_softcap = 30.0f;
        mp.shared_kv = 2;
        mp.per_layer_embd = 16;
        mp.no_global_v = true;
        mp.output = SPRIG_MKMODEL_OUTPUT_UNTIED;
    }
    if (!strcmp(arch, "qwen3moe")) {   /* routed experts: rows of one forward choose different experts */
        mp.n_experts = 8;
        mp.n_experts_used = 2;
        mp.expert_ffn = 64;
    }
    const char *path = test_tmpfile(name);
    CHECKF(sprig_mkmodel_write(&mp, path, &err) == SPRIG_OK, "%s", err.msg);
    return load(path);
}

static int tok(const sprig_model *m, int i) { return 3 + (i * 7919) % (m->hp.n_vocab - 3); }

/* ctx[NSEQ] with histories of 5, 40 and 1 tokens */
static bool prefill(const sprig_model *m, sprig_ctx **c)
{
    static const int hist[NSEQ] = { 5, 40, 1 };
    sprig_error err = { 0 };
    for (int s = 0; s < NSEQ; s++) {
        int32_t t[64];
        for (int i = 0; i < hist[s]; i++) t[i] = tok(m, 100 * s + i);
        if (sprig_prefill(c[s], t, hist[s], NULL, NULL, &err)) { CHECKF(false, "%s", err.msg); return false; }
    }
    return true;
}

/* The requests of one step: seq 0 a causal block of 4, seq 1 a tree of 6
 * (mask, depth positions, parents), seq 2 one row; every row's logits and
 * hidden state wanted (seq 2: its only row). */
struct step {
    struct sprig_fwd f[NSEQ];
    int32_t toks[NSEQ][8];
    int32_t pos[8];
    sprig_tree tree;
    float *mask;
};

static void build_step(const sprig_model *m, sprig_ctx **c, int salt, struct step *st, float *logits[NSEQ], float *hidden[NSEQ])
{
    for (int s = 0; s < NSEQ; s++)
        for (int i = 0; i < 8; i++) st->toks[s][i] = tok(m, 1000 * (salt + 1) + 10 * s + i);
    st->f[0] = (struct sprig_fwd){ .n = 4, .tokens = st->toks[0], .n_out = 4, .logits = logits[0], .hidden = hidden[0] };
    static const int32_t par[6] = { 0, 0, 0, 1, 1, 3 };
    st->tree.n = 6;
    for (int i = 0; i < 6; i++) {
        st->tree.tokens[i] = st->toks[1][i];
        st->tree.parents[i] = par[i];
    }
    const int off = sprig_kv_len(sprig_ctx_kv(c[1]));
    CHECK(sprig_tree_mask_with_history(&st->tree, off, -1e9f, st->mask, NULL) == SPRIG_OK);
    int d[SPRIG_TREE_MAX];
    sprig_tree_depths(&st->tree, d);
    for (int i = 0; i < 6; i++) st->pos[i] = off + d[i];
    st->f[1] = (struct sprig_fwd){ .n = 6, .tokens = st->tree.tokens, .pos = st->pos, .mask = st->mask,
                                   .parents = st->tree.parents, .n_out = 6, .logits = logits[1], .hidden = hidden[1] };
    st->f[2] = (struct sprig_fwd){ .n = 1, .tokens = st->toks[2], .n_out = 1, .logits = logits[2], .hidden = hidden[2] };
}

static void check_arch(const sprig_model *m, const char *what, bool paged)
{
    if (!m) return;
    sprig_error err = { 0 };
    const size_t V = (size_t)m->hp.n_vocab, D = (size_t)m->hp.dim;
    sprig_pool *pool = sprig_pool_create(2, NULL);
    struct sprig_kv_pool *kvp = NULL;
    if (paged) {
        struct sprig_kv_pool_params pp = { .n_layer = m->hp.n_layer, .n_kv_head = m->hp.n_kv_head, .head_dim = m->hp.head_dim,
                                           .mode = 0, .block_slots = 8, .n_blocks = 64 };
        kvp = sprig_kv_pool_create(&pp, &err);
        CHECKF(kvp != NULL, "%s", err.msg);
    }
    struct sprig_ctx_params cp = { .n_ctx = 128, .n_batch = 16, .kv_pool = kvp };
    struct sprig_ctx_params hp_ = { .n_ctx = 32, .n_batch = 32 };
    sprig_ctx *one[NSEQ] = { 0 }, *many[NSEQ] = { 0 }, *host = NULL;
    bool ok = sprig_ctx_create(m, pool, &hp_, &host, &err) == SPRIG_OK;
    for (int s = 0; s < NSEQ && ok; s++)
        ok = sprig_ctx_create(m, pool, &cp, &one[s], &err) == SPRIG_OK && sprig_ctx_create(m, pool, &cp, &many[s], &err) == SPRIG_OK &&
             sprig_ctx_speculative(one[s], 8, &err) == SPRIG_OK && sprig_ctx_speculative(many[s], 8, &err) == SPRIG_OK;
    CHECKF(ok, "%s: %s", what, err.msg);
    float *l1[NSEQ], *lm[NSEQ], *h1[NSEQ], *hm[NSEQ];
    for (int s = 0; s < NSEQ; s++) {
        l1[s] = calloc(8 * V, sizeof(float)); lm[s] = calloc(8 * V, sizeof(float));
        h1[s] = calloc(8 * D, sizeof(float)); hm[s] = calloc(8 * D, sizeof(float));
    }
    float *scratch = calloc(32 * V, sizeof(float));
    struct step a, b;
    a.mask = calloc(8 * 128, sizeof(float));
    b.mask = calloc(8 * 128, sizeof(float));
    ok = ok && prefill(m, one) && prefill(m, many);
    for (int step = 0; ok && step < 2; step++) {
        build_step(m, one, step, &a, l1, h1);
        build_step(m, many, step, &b, lm, hm);
        for (int s = 0; s < NSEQ && ok; s++) ok = sprig_forward(one[s], &a.f[s], &err) == SPRIG_OK;
        CHECKF(ok, "%s alone: %s", what, err.msg);
        ok = ok && sprig_forward_multi(host, NSEQ, many, b.f, scratch, &err) == SPRIG_OK;
        CHECKF(ok, "%s multi: %s", what, err.msg);
        for (int s = 0; s < NSEQ && ok; s++) {
            const int n = a.f[s].n_out;
            CHECKF(!memcmp(l1[s], lm[s], sizeof(float) * V * (size_t)n), "%s step %d seq %d: logits differ from its own forward",
                   what, step, s);
            CHECKF(!memcmp(h1[s], hm[s], sizeof(float) * D * (size_t)n), "%s step %d seq %d: hidden rows differ", what, step, s);
            CHECK_EQ_INT(sprig_kv_len(sprig_ctx_kv(one[s])), sprig_kv_len(sprig_ctx_kv(many[s])));
        }
        /* keep a path of each (the chain's first 3, the tree's 0-1-3-5, the row) */
        static const int chain[3] = { 0, 1, 2 }, path[4] = { 0, 1, 3, 5 }, row[1] = { 0 };
        for (int k = 0; k < 2 && ok; k++) {
            sprig_ctx **c = k ? many : one;
            ok = sprig_ctx_keep_path(c[0], 4, chain, 3, &err) == SPRIG_OK && sprig_ctx_keep_path(c[1], 6, path, 4, &err) == SPRIG_OK &&
                 sprig_ctx_keep_path(c[2], 1, row, 1, &err) == SPRIG_OK;
        }
        CHECKF(ok, "%s keep_path: %s", what, err.msg);
    }
    if (ok) {   /* a bad request: named, and no cache grows */
        build_step(m, many, 7, &b, lm, hm);
        b.toks[2][0] = m->hp.n_vocab;
        int len[NSEQ];
        for (int s = 0; s < NSEQ; s++) len[s] = sprig_kv_len(sprig_ctx_kv(many[s]));
        sprig_status st = sprig_forward_multi(host, NSEQ, many, b.f, scratch, &err);
        CHECK(st == SPRIG_E_INVALID_ARG);
        CHECKF(strstr(err.msg, "sequence 2") != NULL, "%s", err.msg);
        for (int s = 0; s < NSEQ; s++) CHECK_EQ_INT(sprig_kv_len(sprig_ctx_kv(many[s])), len[s]);
        b.toks[2][0] = 5;
        sprig_ctx *dup[NSEQ] = { many[0], many[1], many[0] };
        CHECK(sprig_forward_multi(host, NSEQ, dup, b.f, scratch, &err) == SPRIG_E_INVALID_ARG);
        CHECKF(strstr(err.msg, "same context") != NULL, "%s", err.msg);
        struct sprig_ctx_params small = { .n_ctx = 8, .n_batch = 8 };
        sprig_ctx *h2 = NULL;
        CHECK(sprig_ctx_create(m, pool, &small, &h2, &err) == SPRIG_OK);
        CHECK(sprig_forward_multi(h2, NSEQ, many, b.f, scratch, &err) == SPRIG_E_INVALID_ARG);   /* 11 rows > 8 */
        CHECKF(strstr(err.msg, "host's batch") != NULL, "%s", err.msg);
        sprig_ctx_free(h2);
    }
    if (ok) fprintf(stderr, "  %s%s: 2 steps of 3 sequences (block 4, tree 6, row 1) equal their own forwards\n", what, paged ? " (paged)" : "");
    for (int s = 0; s < NSEQ; s++) {
        sprig_ctx_free(one[s]);
        sprig_ctx_free(many[s]);
        free(l1[s]); free(lm[s]); free(h1[s]); free(hm[s]);
    }
    sprig_ctx_free(host);
    sprig_kv_pool_free(kvp);
    free(scratch);
    free(a.mask);
    free(b.mask);
    sprig_pool_free(pool);
}

static void test_forward_multi(void)
{
    sprig_model *st = load(test_shared("models/stories260K.gguf"));
    check_arch(st, "stories260K", false);
    check_arch(st, "stories260K", true);
    sprig_model_free(st);
    sprig_model *q = make("qwen3", SPRIG_TYPE_Q8_0, "batch-qwen3.gguf");
    check_arch(q, "qwen3 q8_0", true);
    sprig_model_free(q);
    sprig_model *g = make("gemma4", 0, "batch-gemma4.gguf");
    check_arch(g, "gemma4", false);
    sprig_model_free(g);
    sprig_model *e = make("qwen3moe", SPRIG_TYPE_Q8_0, "batch-qwen3moe.gguf");
    check_arch(e, "qwen3moe q8_0", true);
    check_arch(e, "qwen3moe q8_0", false);
    sprig_model_free(e);
}

/* ------------------------------------------------------------- sessions */

struct req {
    const char *prompt;
    int n;
    enum sprig_drafter_kind drafter;
    int draft_max, tree, branches, width;
    bool autos;
    int delay_ms;
    struct test_run alone, batched;
    bool ok;
};

static sprig_model *g_m;
static sprig_batch *g_batch;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_free_slots = 4;

static struct sprig_session_params req_params(const struct req *r)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 1;
    p.n_ctx = 256;
    p.ignore_eos = true;
    p.drafter = r->drafter;
    p.draft_path = r->drafter == SPRIG_DRAFTER_MODEL ? test_shared("models/stories-draft.gguf")
                 : r->drafter == SPRIG_DRAFTER_MTP ? test_shared("models/stories-mtp.gguf") : NULL;
    p.draft_path = p.draft_path ? strdup(p.draft_path) : NULL;   /* test_shared's buffer is static */
    p.draft_max = r->draft_max ? r->draft_max : 4;
    p.tree = r->tree;
    p.tree_branches = r->branches;
    p.tree_width = r->width;
    p.tree_auto = r->autos;
    return p;
}

static void *req_thread(void *arg)
{
    struct req *r = arg;
    usleep((useconds_t)r->delay_ms * 1000);
    pthread_mutex_lock(&g_mu);   /* a slot, as the server's --parallel */
    while (g_free_slots == 0) pthread_cond_wait(&g_cv, &g_mu);
    g_free_slots--;
    pthread_mutex_unlock(&g_mu);
    struct sprig_session_params p = req_params(r);
    p.batch = g_batch;
    r->ok = test_run_session(g_m, &p, r->prompt, r->n, &r->batched);
    free((char *)p.draft_path);
    pthread_mutex_lock(&g_mu);
    g_free_slots++;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* Each request run alone (r->alone), then all of them on one batch of 4 sequences from threads (r->batched);
 * false (the model freed) when the batch cannot be made. */
static bool run_batched(struct req *reqs, int nr)
{
    for (int i = 0; i < nr; i++) {
        struct sprig_session_params p = req_params(&reqs[i]);
        test_run_session(g_m, &p, reqs[i].prompt, reqs[i].n, &reqs[i].alone);
        free((char *)p.draft_path);
    }
    sprig_error err = { 0 };
    struct sprig_batch_params bp = sprig_batch_default_params();
    bp.n_seq = 4;
    bp.max_rows = 16;
    bp.n_ctx = 256;
    bp.kv_block_slots = 16;
    CHECKF(sprig_batch_create(g_m, &bp, &g_batch, &err) == SPRIG_OK, "%s", err.msg);
    if (!g_batch) { sprig_model_free(g_m); return false; }
    pthread_t th[16];
    for (int i = 0; i < nr && i < 16; i++) CHECK(pthread_create(&th[i], NULL, req_thread, &reqs[i]) == 0);
    for (int i = 0; i < nr && i < 16; i++) pthread_join(th[i], NULL);
    return true;
}

static void test_sessions(void)
{
    g_m = load(test_shared("models/stories260K.gguf"));
    if (!g_m) return;
#define R(p_, n_, d_, k_, t_, b_, w_, a_) { .prompt = p_, .n = n_, .drafter = d_, .draft_max = k_, .tree = t_, .branches = b_, .width = w_, .autos = a_ }
    struct req reqs[] = {
        R("Once upon a time", 96, SPRIG_DRAFTER_NONE, 0, SPRIG_TREE_OFF, 0, 0, false),
        R("Lily wanted to play in the park", 64, SPRIG_DRAFTER_MODEL, 4, SPRIG_TREE_OFF, 0, 0, false),
        R("The little dog", 80, SPRIG_DRAFTER_MODEL, 5, SPRIG_TREE_ON, 3, 0, false),
        R("Tom had a red ball", 72, SPRIG_DRAFTER_MTP, 6, SPRIG_TREE_ON, 6, 3, false),
        R("One day, a bird", 40, SPRIG_DRAFTER_NGRAM, 4, SPRIG_TREE_OFF, 0, 0, false),
        R("Once upon a time, there was a girl", 88, SPRIG_DRAFTER_MODEL, 6, SPRIG_TREE_ON, 8, 3, true),
        R("The sun was hot", 24, SPRIG_DRAFTER_NONE, 0, SPRIG_TREE_OFF, 0, 0, false),
        R("Sam and Mia", 64, SPRIG_DRAFTER_MTP, 4, SPRIG_TREE_ON, 2, 0, false),
    };
#undef R
    const int nr = (int)(sizeof reqs / sizeof reqs[0]);
    sprig_rng rng;
    sprig_rng_seed(&rng, 20261202);
    for (int i = 0; i < nr; i++) reqs[i].delay_ms = (int)(sprig_rng_u64(&rng) % 40);
    sprig_error err = { 0 };
    if (!run_batched(reqs, nr)) return;
    int trees = 0;
    long long zero = 0, partial = 0, full = 0;
    for (int i = 0; i < nr; i++) {
        struct req *r = &reqs[i];
        CHECKF(r->ok, "request %d failed", i);
        if (!r->ok) continue;
        CHECK_EQ_INT(r->batched.n, r->n);
        CHECKF(test_first_diff(&r->alone, &r->batched) < 0, "request %d (%s): batched tokens differ from alone at step %d", i,
               r->prompt, test_first_diff(&r->alone, &r->batched));
        CHECK_STR(r->batched.st.kv_layout, "paged");
        if (r->tree == SPRIG_TREE_ON) {
            CHECKF(!strcmp(r->batched.st.path, "tree"), "request %d ran %s, not a tree", i, r->batched.st.path);
            trees += !strcmp(r->batched.st.path, "tree");
        }
        if (r->drafter != SPRIG_DRAFTER_NONE) CHECKF(r->batched.st.accepted > 0, "request %d accepted no draft", i);
        zero += r->batched.st.zero_accept_rounds;
        partial += r->batched.st.partial_accept_rounds;
        full += r->batched.st.full_accept_rounds;
    }
    /* the batched rounds rolled back every way: nothing kept, part kept, all kept */
    CHECKF(zero > 0 && partial > 0 && full > 0, "accept kinds: zero %lld, partial %lld, full %lld", zero, partial, full);
    struct sprig_batch_stats bs;
    sprig_batch_get_stats(g_batch, &bs);
    fprintf(stderr, "  %d requests equal alone (%d trees); %lld forwards, %lld shared, %.2f sessions and %.1f rows per forward, "
            "at most %d; %lld by the wait limit\n", nr, trees, (long long)bs.forwards, (long long)bs.shared_forwards,
            bs.forwards ? (double)bs.seqs / (double)bs.forwards : 0.0, bs.forwards ? (double)bs.rows / (double)bs.forwards : 0.0,
            bs.max_seqs, (long long)bs.timeouts);
    CHECKF(bs.shared_forwards > 0 && bs.max_seqs >= 2, "no forward held two sessions");
    CHECK(bs.max_seqs <= 4);
    CHECK_EQ_INT(bs.kv_booked, 0);

    /* admission books whole blocks of the pool */
    CHECK_EQ_INT(bs.kv_slots, 4 * (256 / 16 + 1) * 16);
    CHECK(sprig_batch_admit(g_batch, (int)bs.kv_slots - 16));
    CHECK(!sprig_batch_admit(g_batch, 17));
    CHECK(sprig_batch_admit(g_batch, 16));
    CHECK(!sprig_batch_admit(g_batch, 1));
    sprig_batch_release(g_batch, 16);
    CHECK(sprig_batch_admit(g_batch, 1));
    sprig_batch_release(g_batch, 1);
    sprig_batch_release(g_batch, (int)bs.kv_slots - 16);
    sprig_batch_get_stats(g_batch, &bs);
    CHECK_EQ_INT(bs.kv_booked, 0);

    /* bad batch parameters are refused by name */
    sprig_batch *bad = NULL;
    struct sprig_batch_params bb = sprig_batch_default_params();
    bb.n_seq = 0;
    CHECK(sprig_batch_create(g_m, &bb, &bad, &err) == SPRIG_E_INVALID_ARG && !bad);
    CHECKF(strstr(err.msg, "n_seq") != NULL, "%s", err.msg);
    bb = sprig_batch_default_params();
    bb.max_rows = 65;
    CHECK(sprig_batch_create(g_m, &bb, &bad, &err) == SPRIG_E_INVALID_ARG && !bad);
    CHECKF(strstr(err.msg, "max_rows") != NULL, "%s", err.msg);
    bb = sprig_batch_default_params();
    bb.kv_block_slots = 24;
    CHECK(sprig_batch_create(g_m, &bb, &bad, &err) == SPRIG_E_INVALID_ARG && !bad);
    CHECKF(strstr(err.msg, "block_slots") != NULL, "%s", err.msg);
    bb = sprig_batch_default_params();
    bb.wait_us = -1;
    CHECK(sprig_batch_create(g_m, &bb, &bad, &err) == SPRIG_E_INVALID_ARG && !bad);
    CHECKF(strstr(err.msg, "wait_us") != NULL, "%s", err.msg);

    /* a session whose verify block does not fit the batch is refused by name */
    struct sprig_session_params p = req_params(&reqs[5]);
    p.batch = g_batch;
    p.tree_branches = 20;
    sprig_session *s = NULL;
    CHECK(sprig_session_create(g_m, &p, &s, &err) == SPRIG_E_INVALID_ARG);
    CHECKF(strstr(err.msg, "max_rows") != NULL, "%s", err.msg);
    free((char *)p.draft_path);

    for (int i = 0; i < nr; i++) {
        free(reqs[i].alone.ids);
        free(reqs[i].batched.ids);
    }
    sprig_batch_free(g_batch);
    sprig_model_free(g_m);
}

/* Tree auto on a batch plans jointly (spec/joint.h): four tree-auto requests
 * (three on the draft model, one on the MTP head) and a chain request share
 * the steps; each one's tokens equal the request run alone; the batch
 * allocated steps' rows across several offers at once, and every tree-auto
 * session verified rows the batch granted it. */
static void test_joint_plans(void)
{
    g_m = load(test_shared("models/stories260K.gguf"));
    if (!g_m) return;
#define R(p_, n_, d_, k_, t_, b_, w_, a_) { .prompt = p_, .n = n_, .drafter = d_, .draft_max = k_, .tree = t_, .branches = b_, .width = w_, .autos = a_ }
    struct req reqs[] = {
        R("Once upon a time", 96, SPRIG_DRAFTER_MODEL, 6, SPRIG_TREE_ON, 8, 3, true),
        R("Lily wanted to play in the park", 80, SPRIG_DRAFTER_MODEL, 6, SPRIG_TREE_ON, 8, 2, true),
        R("The little dog", 88, SPRIG_DRAFTER_MTP, 5, SPRIG_TREE_ON, 6, 2, true),
        R("Tom had a red ball", 72, SPRIG_DRAFTER_MODEL, 4, SPRIG_TREE_ON, 4, 2, true),
        R("One day, a bird", 64, SPRIG_DRAFTER_MODEL, 3, SPRIG_TREE_OFF, 0, 0, false),
    };
#undef R
    reqs[4].delay_ms = 100;   /* the chain request takes the first slot that frees: the four tree-auto ones start together (a
                                 tree-auto request left for last ran its 22 rounds alone once, on a loaded machine) */
    const int nr = (int)(sizeof reqs / sizeof reqs[0]);
    if (!run_batched(reqs, nr)) return;
    for (int i = 0; i < nr; i++) {
        struct req *r = &reqs[i];
        CHECKF(r->ok, "request %d failed", i);
        if (!r->ok) continue;
        CHECKF(test_first_diff(&r->alone, &r->batched) < 0, "request %d (%s): batched tokens differ from alone at step %d", i,
               r->prompt, test_first_diff(&r->alone, &r->batched));
        if (r->autos) {
            CHECKF(!strcmp(r->batched.st.path, "tree"), "request %d ran %s, not a tree", i, r->batched.st.path);
            CHECKF(r->batched.st.plan_joint > 0, "request %d: none of its %lld rounds had rows the batch granted", i,
                   (long long)r->batched.st.rounds);
        } else {
            CHECK_EQ_INT(r->batched.st.plan_joint, 0);
        }
    }
    struct sprig_batch_stats bs;
    sprig_batch_get_stats(g_batch, &bs);
    fprintf(stderr, "  joint plans: %lld steps, %.2f offers each, %lld by the wait limit; %lld forwards, %.1f rows each\n",
            (long long)bs.joint_plans, bs.joint_plans ? (double)bs.joint_offers / (double)bs.joint_plans : 0.0,
            (long long)bs.joint_late, (long long)bs.forwards, bs.forwards ? (double)bs.rows / (double)bs.forwards : 0.0);
    CHECKF(bs.joint_plans > 0 && bs.joint_offers >= 2 * bs.joint_plans - bs.joint_plans / 2,
           "joint plans %lld with %lld offers: the sessions did not plan together", (long long)bs.joint_plans,
           (long long)bs.joint_offers);
    CHECKF(bs.joint_late * 10 <= bs.joint_plans, "%lld of %lld joint plans waited out the limit", (long long)bs.joint_late,
           (long long)bs.joint_plans);
    for (int i = 0; i < nr; i++) {
        free(reqs[i].alone.ids);
        free(reqs[i].batched.ids);
    }
    sprig_batch_free(g_batch);
    sprig_model_free(g_m);
}

int main(void)
{
    RUN(test_forward_multi);
    RUN(test_sessions);
    RUN(test_joint_plans);
    return test_summary("test-batch");
}
