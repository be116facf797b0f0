/*
 * tests/test-moe.c — mixture-of-experts layers (model/moe.h) on synthetic
 * qwen3moe files (sprig mkmodel's layout, checked against llama.cpp by
 * tests/test-oracle-llamacpp.sh):
 *   - routing: the forward of a 12-row block gives every row the bits that
 *     row gets alone (token by token), with 1 and 2 threads, in F32 and
 *     Q8_0; the block ran more experts than one row does (the rows chose
 *     different experts, each run once over the rows that chose it), and for
 *     a gemma4 with experts;
 *   - a mutation of the routing (the second expert's weight dropped) changes
 *     the logits, so the equality above is not vacuous;
 *   - speculation: greedy output with an n-gram chain, oracle chains and
 *     trees (the benchmark drafter replaying plain decoding at set rates, so
 *     drafts are partly accepted and side branches win), a draft model chain,
 *     a draft-model runner-up tree and tree auto (qwen3moe), and the model's
 *     own MTP block in chains and trees (qwen35moe, whose recurrent layers
 *     roll back and whose MTP block has experts too), and on a gemma4 with
 *     experts beside its dense MLP (sliding layers past their window) every
 *     drafter and its assistant, equals plain decoding, each run's
 *     statistics proving its path ran;
 *   - bad files, each refused naming the key or tensor: expert_count 0,
 *     expert_used_count above expert_count, an expert count the tensors do
 *     not have, a softmax-less router (expert_gating_func 2), unnormalised
 *     weights, shared experts, expert keys on a dense architecture, a missing
 *     router, an expert tensor of the wrong shape; qwen35moe without its
 *     shared expert's gate, or with an up projection in neither form;
 *   - qwen35moe with ffn_gate_up_exps fused gives the split file's logits.
 */
#include "test.h"
#include "test_gguf_edit.h"
#include "test_session.h"
#include "gguf/gguf.h"
#include "mkmodel/mkmodel.h"
#include "model/internal.h"
#include "model/model.h"
#include "model/moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *g_f32, *g_q8, *g_draft, *g_dense, *g_q35, *g_g4, *g_g4a;

static char *make(const char *arch, int type, int layers, const char *name)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = arch;
    mp.dim = 128;
    mp.n_heads = 4;
    mp.n_kv_heads = 2;
    mp.head_dim = 32;
    mp.n_layers = layers;
    mp.ffn = 192;
    mp.ctx = 512;
    mp.std = 0.08f;
    mp.type = type;
    mp.seed = 7;
    if (strstr(arch, "moe")) {
        mp.n_experts = 8;
        mp.n_experts_used = 2;
        mp.expert_ffn = 64;
    }
    if (!strcmp(arch, "gemma4")) {   /* Gemma 4 26B-A4B's layout: experts beside the dense MLP, sliding layers */
        mp.head_dim = 64;
        mp.head_dim_swa = 32;
        mp.n_kv_heads = 1;
        mp.window = 16;
        mp.swa_pattern = 3;
        mp.final_softcap = 30.0f;
        mp.shared_kv = 2;
        mp.per_layer_embd = 16;
        mp.no_global_v = true;
        mp.output = SPRIG_MKMODEL_OUTPUT_UNTIED;
        mp.n_experts = 8;
        mp.n_experts_used = 2;
        mp.expert_ffn = 64;
    }
    if (!strcmp(arch, "qwen35moe")) {
        mp.shared_expert_ffn = 96;
        mp.mtp = true;
        mp.expert_scales = true;   /* llama.cpp's per-expert scales, on the MTP block's experts too */
        mp.rms_eps = 1e-6f;
        mp.rope_freq_base = 10000000.0f;
    }
    char *path = strdup(test_tmpfile(name));
    CHECKF(sprig_mkmodel_write(&mp, path, &err) == SPRIG_OK, "%s: %s", name, err.msg);
    return path;
}

static sprig_model *load(const char *path)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(path, &m, &err) == SPRIG_OK, "%s: %s", path, err.msg);
    return m;
}

/* logits[n][V] of tokens[n] as one block (one = false) or token by token */
static bool run_rows(sprig_model *m, int threads, const int32_t *tokens, int n, bool one, float *logits, int *experts)
{
    sprig_error err = { 0 };
    sprig_pool *pool = sprig_pool_create(threads, &err);
    struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 16 };
    sprig_ctx *c = NULL;
    bool ok = pool && sprig_ctx_create(m, pool, &cp, &c, &err) == SPRIG_OK;
    const size_t V = (size_t)m->hp.n_vocab;
    int most = 0;
    for (int i = 0; ok && i < n; i += one ? 1 : n) {
        struct sprig_fwd f = { .n = one ? 1 : n, .tokens = tokens + i, .n_out = one ? 1 : n, .logits = logits + (size_t)i * V };
        ok = sprig_forward(c, &f, &err) == SPRIG_OK;
        if (ok && c->moe && c->moe->last_experts > most) most = c->moe->last_experts;
    }
    CHECKF(ok, "forward: %s", err.msg);
    if (experts) *experts = most;
    sprig_ctx_free(c);
    sprig_pool_free(pool);
    return ok;
}

static void check_rows(const char *path, const char *what)
{
    sprig_model *m = load(path);
    if (!m) return;
    enum { N = 12 };
    const size_t V = (size_t)m->hp.n_vocab;
    int32_t tokens[N];
    for (int i = 0; i < N; i++) tokens[i] = i ? 3 + 37 * i % (m->hp.n_vocab - 3) : 1;
    float *alone = calloc(N * V, sizeof(float)), *block = calloc(N * V, sizeof(float)), *block1 = calloc(N * V, sizeof(float));
    int e_alone = 0, e_block = 0;
    if (run_rows(m, 2, tokens, N, true, alone, &e_alone) && run_rows(m, 2, tokens, N, false, block, &e_block) &&
        run_rows(m, 1, tokens, N, false, block1, NULL)) {
        CHECKF(!memcmp(alone, block, N * V * sizeof(float)), "%s: a 12-row block's logits differ from the rows alone", what);
        CHECKF(!memcmp(block, block1, N * V * sizeof(float)), "%s: 1 and 2 threads give different logits", what);
        CHECK_EQ_INT(e_alone, m->hp.n_expert_used);   /* one row runs exactly its K experts */
        CHECKF(e_block > m->hp.n_expert_used && e_block <= m->hp.n_expert, "%s: the block ran %d experts", what, e_block);
        fprintf(stderr, "  %s: 12 rows in one forward = alone, 1 = 2 threads; one row ran %d experts, the block %d of %d\n", what,
                e_alone, e_block, m->hp.n_expert);
    }
    /* the equality is not vacuous: a routing that drops the second expert changes the logits */
    if (!strcmp(what, "f32")) {
        const int K = m->hp.n_expert_used;
        m->hp.n_expert_used = 1;   /* the top expert alone, renormalised to weight 1 */
        float *mut = calloc(N * V, sizeof(float));
        sprig_error err = { 0 };
        sprig_pool *pool = sprig_pool_create(2, &err);
        struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 16 };
        sprig_ctx *c = NULL;
        if (pool && sprig_ctx_create(m, pool, &cp, &c, &err) == SPRIG_OK) {
            struct sprig_fwd f = { .n = N, .tokens = tokens, .n_out = N, .logits = mut };
            CHECK(sprig_forward(c, &f, &err) == SPRIG_OK);
            CHECKF(memcmp(mut, block, N * V * sizeof(float)) != 0, "one expert instead of two gave the same logits");
        }
        sprig_ctx_free(c);
        sprig_pool_free(pool);
        free(mut);
        m->hp.n_expert_used = K;
    }
    free(alone);
    free(block);
    free(block1);
    sprig_model_free(m);
}

static void test_rows(void)
{
    check_rows(g_f32, "f32");
    check_rows(g_q8, "q8_0");
    check_rows(g_g4, "gemma4 f32");
}

static struct sprig_session_params params(int drafter, const char *draft, int k, int tree, int branches, int width, bool autos)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.n_threads = 2;
    p.temp = 0;
    p.n_ctx = 256;
    p.ignore_eos = true;
    p.drafter = drafter;
    p.draft_path = draft;
    p.draft_max = k ? k : 4;
    p.tree = tree;
    p.tree_branches = branches;
    p.tree_width = width;
    p.tree_auto = autos;
    return p;
}

static void spec_on(const char *path, const char *mtp)
{
    sprig_model *m = load(path);
    if (!m) return;
    const char *prompt = "the cat the cat the cat";
    struct test_run plain = { 0 };
    struct sprig_session_params pp = params(SPRIG_DRAFTER_NONE, NULL, 0, SPRIG_TREE_OFF, 0, 0, false);
    if (!test_run_session(m, &pp, prompt, 96, &plain)) { sprig_model_free(m); return; }
    /* the statistics of expert reading: a plain step is one row, so exactly K experts per layer */
    CHECK_EQ_INT(plain.st.expert_forwards, 95);
    CHECKF(plain.st.experts_per_layer == (double)m->hp.n_expert_used, "plain: %.3f experts per layer", plain.st.experts_per_layer);
    CHECKF(plain.st.expert_mb_per_forward > 0 && plain.st.experts_per_token > 0, "plain: no expert bytes or reads reported");
    {   /* per verify: K in each expert layer; per token: the same (one forward a token) */
        int layers = 0;
        for (int l = 0; l < m->hp.n_layer; l++) layers += m->layers[l].exp_gate != NULL;
        CHECKF(plain.st.experts_per_verify == (double)layers * m->hp.n_expert_used, "plain: %.3f experts per verify",
               plain.st.experts_per_verify);
        CHECKF(fabs(plain.st.experts_per_token - plain.st.experts_per_verify) < 1e-9, "plain: %.3f reads per token",
               plain.st.experts_per_token);
    }
    /* the oracle drafter (benchmarks' drafter) replays plain decoding's ids at set rates, so chains and
     * trees accept part of their drafts and side branches win, which random drafters never do */
    const char *ids = test_tmpfile("moe-ids.txt");
    {
        sprig_error err = { 0 };
        int32_t pid[64];
        const int np = sprig_text_to_tokens(m, prompt, strlen(prompt), true, pid, 64, &err);
        FILE *f = fopen(ids, "w");
        CHECK(f && np > 0 && np <= 64);
        if (!f || np <= 0 || np > 64) { free(plain.ids); sprig_model_free(m); if (f) fclose(f); return; }
        for (int i = 0; i < np; i++) fprintf(f, "%d%c", (int)pid[i], i + 1 == np ? '\n' : ' ');
        for (int i = 0; i < plain.n; i++) fprintf(f, "%d%c", (int)plain.ids[i], i + 1 == plain.n ? '\n' : ' ');
        fclose(f);
    }
    struct sprig_session_params oc = params(SPRIG_DRAFTER_ORACLE, ids, 5, SPRIG_TREE_OFF, 0, 0, false);
    oc.oracle_accept = "0.8,0.6";
    struct sprig_session_params ot = oc;
    ot.tree = SPRIG_TREE_ON;
    ot.tree_branches = 3;
    ot.oracle_sibling = 0.7f;
    struct sprig_session_params oa = ot;   /* tree auto chooses among the oracle's chain and runner-ups */
    oa.tree_auto = true;
    oa.tree_width = 1;
    const struct {
        const char *name, *path;
        struct sprig_session_params p;
        bool accepts, branches;
    } cases[] = {
        { "n-gram chain", "chain", params(SPRIG_DRAFTER_NGRAM, NULL, 4, SPRIG_TREE_OFF, 0, 0, false), false, false },
        { "oracle chain", "chain", oc, true, false },
        { "oracle tree", "tree", ot, true, true },
        /* tree auto's choices follow measured times (an ASan build may find no draft pays): exactness and the
         * path here; test-tree checks the choice itself with injected costs */
        { "oracle tree auto", "tree", oa, false, false },
        { "n-gram tree auto", NULL, params(SPRIG_DRAFTER_NGRAM, NULL, 6, SPRIG_TREE_ON, 4, 1, true), false, false },
        { "draft-model chain", "chain", params(SPRIG_DRAFTER_MODEL, g_draft, 4, SPRIG_TREE_OFF, 0, 0, false), false, false },
        { "draft-model tree", "tree", params(SPRIG_DRAFTER_MODEL, g_draft, 4, SPRIG_TREE_ON, 3, 0, false), false, false },
        { "draft-model tree auto", NULL, params(SPRIG_DRAFTER_MODEL, g_draft, 6, SPRIG_TREE_ON, 10, 3, true), false, false },
        { "MTP chain", "chain", params(SPRIG_DRAFTER_MTP, mtp, 3, SPRIG_TREE_OFF, 0, 0, false), false, false },
        { "MTP tree", "tree", params(SPRIG_DRAFTER_MTP, mtp, 3, SPRIG_TREE_ON, 2, 0, false), false, false },
    };
    long long zero = 0, partial = 0, full = 0;   /* across the runs: every kind of round was walked */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct test_run r = { 0 };
        if (!mtp && cases[i].p.drafter == SPRIG_DRAFTER_MTP) continue;   /* the model has no MTP head */
        if (!test_run_session(m, &cases[i].p, prompt, 96, &r)) continue;
        const int d = test_first_diff(&plain, &r);
        CHECKF(d < 0, "%s: differs from plain decoding at step %d", cases[i].name, d);
        /* tree auto may find drafting never pays (drafts that are never accepted) and take bare steps */
        CHECKF(r.st.rounds > 0 && (r.st.proposed > 0 || cases[i].p.tree_auto), "%s: no speculative round ran (path %s)",
               cases[i].name, r.st.path);
        CHECKF(!cases[i].path || !strcmp(r.st.path, cases[i].path), "%s: path %s", cases[i].name, r.st.path);
        CHECKF(!cases[i].accepts || (r.st.accepted > 0 && r.st.accepted < r.st.proposed),
               "%s: accepted %lld of %lld drafts", cases[i].name, (long long)r.st.accepted, (long long)r.st.proposed);
        CHECKF(!cases[i].branches || r.st.branch_rounds > 0, "%s: no round was won by a side branch", cases[i].name);
        CHECKF(r.st.expert_forwards > 0 && r.st.experts_per_layer >= m->hp.n_expert_used - 1e-9,
               "%s: %lld expert forwards, %.3f experts per layer", cases[i].name, (long long)r.st.expert_forwards, r.st.experts_per_layer);
        fprintf(stderr, "  %-22s = plain over 96 tokens: path %s, %lld rounds, %lld of %lld drafts accepted, %lld by side branches; "
                "%.2f experts per layer per forward, %.2f expert reads per token (plain %.2f)\n",
                cases[i].name, r.st.path, (long long)r.st.rounds, (long long)r.st.accepted, (long long)r.st.proposed,
                (long long)r.st.branch_rounds, r.st.experts_per_layer, r.st.experts_per_token, plain.st.experts_per_token);
        zero += r.st.zero_accept_rounds;
        partial += r.st.partial_accept_rounds;
        full += r.st.full_accept_rounds;
        free(r.ids);
    }
    CHECKF(zero > 0 && partial > 0 && full > 0, "rounds accepting none / part / all of their drafts: %lld / %lld / %lld", zero,
           partial, full);
    fprintf(stderr, "  rounds accepting none / part / all of their drafts: %lld / %lld / %lld\n", zero, partial, full);
    free(plain.ids);
    sprig_model_free(m);
}

static void test_speculation(void)
{
    fprintf(stderr, "  qwen3moe q8_0:\n");
    spec_on(g_q8, NULL);
    fprintf(stderr, "  qwen35moe f32 (recurrent layers rolled back; its MTP block with its own experts and their scales):\n");
    sprig_model *m = load(g_q35);
    if (m) {   /* the scales are bound on the trunk's layers and the MTP block's (the drafts below run them) */
        CHECK(m->n_nextn == 1 && m->nextn[0].blk.exp_gate_s && m->nextn[0].blk.exp_up_s && m->nextn[0].blk.exp_down_s);
        CHECK(m->layers[0].exp_gate_s && m->layers[m->hp.n_layer - 1].exp_down_s);
        sprig_model_free(m);
    }
    spec_on(g_q35, g_q35);
    fprintf(stderr, "  gemma4 with experts, f32 (sliding window 16, past several windows; its assistant):\n");
    spec_on(g_g4, g_g4a);
}

/* src rewritten without tensor `drop` and with tensor `reshape` declared as ne (same bytes) */
static const char *rewrite(const char *src, const char *name, const char *drop, const char *reshape, const int64_t *ne)
{
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(src, &err);
    if (!g) { CHECKF(false, "%s", err.msg); return NULL; }
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < sprig_gguf_n_kv(g); i++) ok = sprig_gguf_w_copy_kv(w, g, i, &err) == SPRIG_OK;
    for (int64_t i = 0; ok && i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        if (drop && !strcmp(t->name, drop)) continue;
        const bool rs = reshape && !strcmp(t->name, reshape);
        ok = sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, rs ? ne : t->ne, t->data, &err) == SPRIG_OK;
    }
    const char *path = test_tmpfile(name);
    ok = ok && sprig_gguf_writer_write(w, path, &err) == SPRIG_OK;
    CHECKF(ok, "rewrite %s: %s", name, err.msg);
    sprig_gguf_writer_free(w);
    sprig_gguf_close(g);
    return ok ? path : NULL;
}

/* src with each layer's ffn_gate_exps and ffn_up_exps fused into ffn_gate_up_exps [dim, 2 F, E]: per
 * expert the gate's rows, then the up projection's (as llama.cpp's converter fuses them). The gate's
 * and up's per-expert scales are dropped (llama.cpp loads them only beside split tensors) unless
 * keep_scales; fuse = false writes the split form without them (the fused form's twin). */
static const char *fuse_gate_up(const char *src, const char *name, bool fuse, bool keep_scales)
{
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(src, &err);
    if (!g) { CHECKF(false, "%s", err.msg); return NULL; }
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    bool ok = w != NULL;
    char *bufs[64] = { 0 };
    int nb = 0;
    for (int64_t i = 0; ok && i < sprig_gguf_n_kv(g); i++) ok = sprig_gguf_w_copy_kv(w, g, i, &err) == SPRIG_OK;
    for (int64_t i = 0; ok && i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        const char *gate = strstr(t->name, ".ffn_gate_exps.weight");
        const bool scale = strstr(t->name, ".ffn_gate_exps.scale") || strstr(t->name, ".ffn_up_exps.scale");
        if ((fuse && strstr(t->name, ".ffn_up_exps.weight")) || (scale && !keep_scales)) continue;
        if (!gate || !fuse) { ok = sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) == SPRIG_OK; continue; }
        char up_name[96], fused[96];
        snprintf(up_name, sizeof up_name, "%.*s.ffn_up_exps.weight", (int)(gate - t->name), t->name);
        snprintf(fused, sizeof fused, "%.*s.ffn_gate_up_exps.weight", (int)(gate - t->name), t->name);
        const sprig_gguf_tensor *u = sprig_gguf_find_tensor(g, up_name);
        CHECK(u && t->type == SPRIG_TYPE_F32 && nb < 64);
        if (!u || t->type != SPRIG_TYPE_F32 || nb >= 64) { ok = false; break; }
        const size_t slice = (size_t)t->ne[0] * (size_t)t->ne[1] * sizeof(float);
        char *buf = bufs[nb++] = malloc(2 * slice * (size_t)t->ne[2]);
        for (int64_t e = 0; e < t->ne[2]; e++) {
            memcpy(buf + (size_t)e * 2 * slice, (const char *)t->data + (size_t)e * slice, slice);
            memcpy(buf + (size_t)e * 2 * slice + slice, (const char *)u->data + (size_t)e * slice, slice);
        }
        const int64_t ne[3] = { t->ne[0], 2 * t->ne[1], t->ne[2] };
        ok = sprig_gguf_w_tensor(w, fused, t->type, 3, ne, buf, &err) == SPRIG_OK;
    }
    const char *path = test_tmpfile(name);
    ok = ok && sprig_gguf_writer_write(w, path, &err) == SPRIG_OK;
    CHECKF(ok, "fuse %s: %s", name, err.msg);
    sprig_gguf_writer_free(w);
    sprig_gguf_close(g);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    return ok ? path : NULL;
}

/* the fused form computes what the split form does, bit for bit */
static void test_fused_gate_up(void)
{
    char *split = NULL;
    const char *s = fuse_gate_up(g_q35, "moe-q35-split.gguf", false, false);
    if (!s || !(split = strdup(s))) return;
    const char *fused = fuse_gate_up(g_q35, "moe-q35-fused.gguf", true, false);
    if (!fused) { free(split); return; }
    sprig_model *a = load(split), *b = load(fused);
    if (a && b) {
        CHECK(b->layers[0].exp_gate != NULL && b->layers[0].exp_up != NULL && b->nextn && b->nextn[0].blk.exp_up != NULL);
        enum { N = 8 };
        const size_t V = (size_t)a->hp.n_vocab;
        int32_t tokens[N] = { 1, 17, 99, 250, 31, 4, 77, 120 };
        float *la = calloc(N * V, sizeof(float)), *lb = calloc(N * V, sizeof(float));
        if (run_rows(a, 2, tokens, N, false, la, NULL) && run_rows(b, 2, tokens, N, false, lb, NULL)) {
            CHECKF(!memcmp(la, lb, N * V * sizeof(float)), "fused ffn_gate_up_exps: logits differ from the split file's");
            fprintf(stderr, "  qwen35moe with ffn_gate_up_exps fused: the same logits as split\n");
        }
        free(la);
        free(lb);
    }
    sprig_model_free(a);
    sprig_model_free(b);
    free(split);
}

static void expect_refused(const char *path, const char *needle)
{
    if (!path) return;
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    const sprig_status st = sprig_model_load(path, &m, &err);
    CHECKF(st != SPRIG_OK && strstr(err.msg, needle), "load must fail naming '%s'; got %d: %s", needle, (int)st, err.msg);
    sprig_model_free(m);
}

static void test_bad_files(void)
{
    const uint32_t zero = 0, nine = 9, four = 4, two = 2;
    const bool no = false;
    const struct { const char *key; int vtype; const void *v; const char *needle; } keys[] = {
        { "qwen3moe.expert_count", SPRIG_GGUF_U32, &zero, "qwen3moe.expert_count" },
        { "qwen3moe.expert_used_count", SPRIG_GGUF_U32, &nine, "qwen3moe.expert_used_count" },
        { "qwen3moe.expert_count", SPRIG_GGUF_U32, &four, "blk.0.ffn_gate_inp.weight" },   /* the tensors hold 8 */
        { "qwen3moe.expert_gating_func", SPRIG_GGUF_U32, &two, "qwen3moe.expert_gating_func" },
        { "qwen3moe.expert_weights_norm", SPRIG_GGUF_BOOL, &no, "qwen3moe.expert_weights_norm" },
        { "qwen3moe.expert_shared_count", SPRIG_GGUF_U32, &two, "qwen3moe.expert_shared_count" },
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        struct test_key_edit e = { keys[i].key, keys[i].vtype, keys[i].v, 0 };
        char name[64];
        snprintf(name, sizeof name, "moe-bad-%zu.gguf", i);
        test_expect_load_fails(g_f32, name, &e, keys[i].needle);
    }
    const uint32_t eight = 8;
    struct test_key_edit dense = { "qwen3.expert_count", SPRIG_GGUF_U32, &eight, 0 };
    test_expect_load_fails(g_dense, "moe-bad-dense.gguf", &dense, "qwen3.expert_count");
    expect_refused(rewrite(g_f32, "moe-no-router.gguf", "blk.1.ffn_gate_inp.weight", NULL, NULL), "blk.1.ffn_gate_inp.weight");
    const int64_t swapped[3] = { 128, 64, 8 };   /* ffn_down_exps is [64, 128, 8] */
    expect_refused(rewrite(g_f32, "moe-bad-shape.gguf", NULL, "blk.0.ffn_down_exps.weight", swapped), "blk.0.ffn_down_exps.weight");
    expect_refused(rewrite(g_q35, "moe-no-shexp-gate.gguf", "blk.0.ffn_gate_inp_shexp.weight", NULL, NULL),
                   "blk.0.ffn_gate_inp_shexp.weight");
    expect_refused(fuse_gate_up(g_q35, "moe-fused-scaled.gguf", true, true), "blk.0.ffn_gate_exps.scale' scales a split projection");
    expect_refused(rewrite(g_q35, "moe-no-up.gguf", "blk.1.ffn_up_exps.weight", NULL, NULL), "blk.1.ffn_gate_up_exps.weight");
    const int64_t fewer[3] = { 128, 128, 4 };   /* 8 experts' bytes declared as 4 of twice the width */
    expect_refused(rewrite(g_f32, "moe-bad-count.gguf", NULL, "blk.1.ffn_up_exps.weight", fewer), "blk.1.ffn_up_exps.weight");
}

/* A figure of /proc/self/status ("RssAnon:", "RssFile:") in bytes */
static double status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    double kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) kb = strtod(line + strlen(key), NULL);
    if (f) fclose(f);
    return kb * 1024;
}

/* Experts are read in place (never copied) where the kernels read their
 * type's rows: the weights are views of the file, the resident set grows by
 * the experts touched, and the touched count is what the forwards read. The
 * copies sprig makes must fit the memory available, else the load is refused
 * with the figures. */
static void test_memory(void)
{
    if (!sprig_weight_maps(SPRIG_TYPE_Q8_0)) {
        fprintf(stderr, "  (the reference kernels pack every weight: nothing is read in place)\n");
        return;
    }
    /* 64 experts of 256 x 256 in 4 layers: 50 MB of Q8_0 experts, a little else */
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = "qwen3moe";
    mp.dim = 256;
    mp.n_heads = 4;
    mp.n_kv_heads = 2;
    mp.head_dim = 64;
    mp.n_layers = 4;
    mp.ffn = 256;
    mp.ctx = 128;
    mp.type = SPRIG_TYPE_Q8_0;
    mp.n_experts = 64;
    mp.n_experts_used = 2;
    mp.expert_ffn = 256;
    mp.seed = 11;
    const char *path = test_tmpfile("moe-memory.gguf");
    CHECKF(sprig_mkmodel_write(&mp, path, &err) == SPRIG_OK, "%s", err.msg);
    const double anon0 = status_bytes("RssAnon:"), file0 = status_bytes("RssFile:");
    sprig_model *m = load(path);
    if (!m) return;
    struct sprig_model_info mi;
    sprig_model_get_info(m, &mi);
    const double expert_bytes = 4.0 * 64 * 3 * 256 * 256 * 34 / 32;
    CHECKF(fabs(mi.weights_mapped_mb * 1e6 - expert_bytes) < 2e6, "mapped %.1f MB, the experts are %.1f MB", mi.weights_mapped_mb,
           expert_bytes / 1e6);
    CHECK(mi.experts_total == 4 * 64 && mi.experts_touched == 0);
    for (int l = 0; l < m->hp.n_layer; l++)
        for (int e = 0; e < m->hp.n_expert; e++) {
            const sprig_weight *w[3] = { &m->layers[l].exp_gate[e], &m->layers[l].exp_up[e], &m->layers[l].exp_down[e] };
            for (int i = 0; i < 3; i++)
                CHECKF(w[i]->mapped && !w[i]->packed, "layer %d expert %d: a packed copy", l, e);
        }
    float *logits = calloc((size_t)m->hp.n_vocab, sizeof(float));
    const int32_t tok = 5;
    if (run_rows(m, 2, &tok, 1, true, logits, NULL)) {
        sprig_model_get_info(m, &mi);
        CHECK_EQ_INT((int)mi.experts_touched, 4 * 2);   /* one row: K experts per layer */
        /* anonymous memory (what sprig allocates) grew by its copies and buffers, never by the experts; the
         * file's pages are the page cache's, mapped as the kernel maps them (whole large folios here) */
        const double anon = status_bytes("RssAnon:") - anon0, file = status_bytes("RssFile:") - file0;
        fprintf(stderr, "  64 experts x 4 layers of Q8_0 (%.1f MB) read in place; one token touched %lld (%.2f MB); "
                "anonymous memory grew %.1f MB (packed weights %.1f MB), the mapped file's resident pages %.1f MB\n",
                expert_bytes / 1e6, (long long)mi.experts_touched, mi.experts_touched_mb, anon / 1e6, mi.weights_copied_mb,
                file / 1e6);
        CHECKF(anon < mi.weights_copied_mb * 1e6 + 16e6, "anonymous memory grew %.1f MB", anon / 1e6);
    }
    free(logits);
    sprig_model_free(m);
    /* the memory check: what would be packed must fit */
    setenv("SPRIG_MEM_AVAILABLE", "100000", 1);
    expect_refused(path, "GiB of memory is available");
    expect_refused(path, "the weights sprig packs need");
    unsetenv("SPRIG_MEM_AVAILABLE");
}

int main(void)
{
    g_f32 = make("qwen3moe", SPRIG_TYPE_F32, 3, "moe-f32.gguf");
    g_q8 = make("qwen3moe", SPRIG_TYPE_Q8_0, 3, "moe-q8.gguf");
    g_draft = make("qwen3", SPRIG_TYPE_F32, 1, "moe-draft.gguf");
    g_dense = make("qwen3", SPRIG_TYPE_F32, 2, "moe-dense.gguf");
    g_q35 = make("qwen35moe", SPRIG_TYPE_F32, 4, "moe-q35.gguf");
    g_g4 = make("gemma4", SPRIG_TYPE_F32, 6, "moe-g4.gguf");
    {   /* Gemma 4's assistant for it: two layers reading the target's last caches */
        sprig_error err = { 0 };
        struct sprig_mkmodel_params ap;
        CHECK(sprig_mkmodel_preset("tiny", &ap, &err) == SPRIG_OK);
        ap.arch = "gemma4-assistant";
        ap.target = g_g4;
        ap.dim = 64;
        ap.n_layers = 2;
        ap.n_heads = 2;
        ap.ffn = 128;
        ap.std = 0.08f;
        ap.vocab = ap.ctx = 0;
        ap.seed = 78;
        g_g4a = strdup(test_tmpfile("moe-g4-assistant.gguf"));
        CHECKF(sprig_mkmodel_write(&ap, g_g4a, &err) == SPRIG_OK, "%s", err.msg);
    }
    RUN(test_rows);
    RUN(test_speculation);
    RUN(test_fused_gate_up);
    RUN(test_bad_files);
    RUN(test_memory);
    free(g_f32);
    free(g_q8);
    free(g_draft);
    free(g_dense);
    free(g_q35);
    free(g_g4);
    free(g_g4a);
    return test_summary("test-moe");
}
