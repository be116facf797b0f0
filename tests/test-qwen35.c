/*
 * tests/test-qwen35.c — the Qwen 3.5 hybrid (gated delta-net + gated
 * attention) as sprig runs it, on files from sprig mkmodel --arch qwen35:
 *   - a prompt fed as one batch, in chunks of 3 and one token at a time
 *     gives the same logits bit for bit (the recurrent layers step token by
 *     token inside a batch; attention rows are batch-independent), in f32
 *     and q8_0, with more value than key heads;
 *   - chain speculation (n-grams, a draft model with the same vocabulary;
 *     blocks 2, 4 and 8; 256 tokens) is byte-identical to plain greedy
 *     decoding, with zero, partial and full accepts (a partial accept
 *     restores the states copied before the verify block and replays the
 *     accepted steps); tree mode falls back to chains, the target naming
 *     the recurrent layers; a forward after any other trim is refused
 *     naming the layer;
 *   - a file with the built-in MTP block loads (block_count counts it; its
 *     tensors bound and checked);
 *   - bad files name the key: a recurrent-layer array of the wrong length,
 *     an interval of 0, an inner size the state size does not divide into
 *     the value heads, a conv kernel of 0 or longer than the context, a
 *     layer holding the other kind's tensors.
 * (tests/test-oracle-llamacpp.sh compares the forward with llama.cpp.)
 */
#include "test.h"
#include "test_gguf_edit.h"
#include "test_session.h"
#include "gguf/gguf.h"
#include "mkmodel/mkmodel.h"
#include "model/nextn.h"
#include "spec/round.h"
#include "spec/target_llama.h"
#include "sprig.h"
#include "model/model.h"

#include <stdlib.h>

static char *g_f32, *g_q8;

/* the small qwen35 shape the tests share (sprig mkmodel --arch qwen35) */
static void q35_shape(struct sprig_mkmodel_params *mp, sprig_error *err)
{
    CHECK(sprig_mkmodel_preset("tiny", mp, err) == SPRIG_OK);
    mp->arch = "qwen35";
    mp->dim = 128;
    mp->n_layers = 4;
    mp->n_heads = 4;
    mp->n_kv_heads = 2;
    mp->head_dim = 32;
    mp->ffn = 256;
}

static char *make(const char *name, int type)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    q35_shape(&mp, &err);
    mp.std = 0.08f;
    mp.ssm_state = 32;
    mp.ssm_v_heads = 4;
    mp.ssm_k_heads = 2;
    mp.type = type;
    char *p = strdup(test_tmpfile(name));
    CHECKF(sprig_mkmodel_write(&mp, p, &err) == SPRIG_OK, "%s", err.msg);
    return p;
}

/* logits of the last token after feeding ids[n] in chunks of `chunk` */
static bool logits_in_chunks(const sprig_model *m, const int32_t *ids, int n, int chunk, float *out)
{
    sprig_error err = { 0 };
    sprig_ctx *c = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 256, .n_batch = chunk };
    CHECKF(sprig_ctx_create(m, NULL, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
    if (!c) return false;
    const sprig_status st = sprig_prefill(c, ids, n, out, NULL, &err);
    CHECKF(st == SPRIG_OK, "%s", err.msg);
    sprig_ctx_free(c);
    return st == SPRIG_OK;
}

static void batch_independent(const char *path)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(path, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    CHECK_EQ_INT(m->hp.n_recurrent, 3);   /* full_attention_interval 4: layer 3 attends */
    CHECK(m->layers[0].recurrent && !m->layers[3].recurrent);
    int32_t ids[37];
    for (int i = 0; i < 37; i++) ids[i] = (i * 97 + 5) % m->hp.n_vocab;
    const int V = m->hp.n_vocab;
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V), *c = malloc(sizeof(float) * V);
    if (logits_in_chunks(m, ids, 37, 64, a) && logits_in_chunks(m, ids, 37, 3, b) && logits_in_chunks(m, ids, 37, 1, c)) {
        CHECKF(!memcmp(a, b, sizeof(float) * V), "%s: one batch != chunks of 3", path);
        CHECKF(!memcmp(a, c, sizeof(float) * V), "%s: one batch != one token at a time", path);
    }
    free(a);
    free(b);
    free(c);
    sprig_model_free(m);
}

static void test_batch_independent(void)
{
    batch_independent(g_f32);
    batch_independent(g_q8);
}

/* a target whose greedy text mixes runs and novelty (n-gram drafts get zero,
 * partial and full accepts), a llama draft model with its vocabulary, and
 * the target's own MTP block; each as chains, linear trees and branching
 * trees (every node stepped from its parent's recurrent state), all equal
 * to plain greedy decoding */
static void test_chain_equals_plain(void)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    q35_shape(&mp, &err);
    mp.vocab = 512;
    mp.std = 0.06f;
    mp.seed = 3;
    mp.type = 0;
    mp.rope_freq_base = 1e7f;   /* what `sprig mkmodel --arch qwen35` writes by default */
    mp.rms_eps = 1e-6f;
    mp.mtp = true;              /* its own MTP block: the fourth drafter (--mtp FILE = the target file) */
    char *tp = strdup(test_tmpfile("q35-spec.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, tp, &err) == SPRIG_OK, "%s", err.msg);
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.vocab = 512;
    mp.dim = 128;
    mp.n_layers = 2;
    mp.seed = 9;
    char *dp = strdup(test_tmpfile("q35-spec-draft.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, dp, &err) == SPRIG_OK, "%s", err.msg);
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(tp, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        const int n_tok = test_quick() ? 96 : 256;
        struct sprig_session_params p = sprig_session_default_params();
        p.temp = 0;
        p.n_threads = 2;
        p.ignore_eos = true;
        p.tree = SPRIG_TREE_OFF;
        struct test_run plain;
        if (test_run_session(m, &p, "Once upon a time", n_tok, &plain)) {
            CHECK_STR(plain.st.path, "plain");
            int64_t zero = 0, partial = 0, full = 0, mtp_drafted = 0, tree_rounds = 0, branch = 0;
            static const int blocks[3] = { 2, 4, 8 };
            static const char *const names[3] = { "n-gram", "draft model", "MTP block" };
            static const char *const shapes[3] = { "chain", "linear tree", "tree of 3 branches" };
            for (int bi = 0; bi < 3; bi++)
                for (int di = 0; di < 3; di++)   /* n-grams, the draft model, the MTP block */
                    for (int ti = 0; ti < 3; ti++) {   /* chain, linear tree, branching tree */
                        struct sprig_session_params q = p;
                        q.drafter = di == 1 ? SPRIG_DRAFTER_MODEL : di == 2 ? SPRIG_DRAFTER_MTP : SPRIG_DRAFTER_NGRAM;
                        q.draft_path = di == 1 ? dp : di == 2 ? tp : NULL;
                        q.draft_max = blocks[bi] - 1;
                        if (ti) { q.tree = SPRIG_TREE_ON; q.tree_branches = ti == 2 ? 3 : 0; }
                        struct test_run r;
                        if (!test_run_session(m, &q, "Once upon a time", n_tok, &r)) continue;
                        const int at = test_first_diff(&r, &plain);
                        CHECKF(at < 0, "block %d, %s, %s: differs from plain decoding at step %d", blocks[bi], names[di], shapes[ti], at);
                        CHECK_STR(r.st.path, ti ? "tree" : "chain");   /* the tree path ran: no fallback */
                        CHECK_STR(r.st.drafter, di == 1 ? "draft-model" : di == 2 ? "mtp" : "ngram");
                        CHECK(r.st.rounds > 0);
                        if (ti == 1) CHECK_EQ_INT((int)r.st.branch_rounds, 0);   /* a linear tree has no side branch */
                        if (ti == 2) { tree_rounds += r.st.rounds; branch += r.st.branch_rounds; }
                        if (di == 2) mtp_drafted += r.st.proposed;
                        zero += r.st.zero_accept_rounds;
                        partial += r.st.partial_accept_rounds;
                        full += r.st.full_accept_rounds;
                        free(r.ids);
                    }
            fprintf(stderr, "  %d tokens, blocks 2/4/8: zero/partial/full accepts %lld/%lld/%lld; branching trees: %lld of %lld "
                    "rounds won by a side branch\n", n_tok, (long long)zero, (long long)partial, (long long)full, (long long)branch,
                    (long long)tree_rounds);
            CHECK(zero > 0 && partial > 0 && full > 0);
            /* (random drafters' runner-ups rarely win: test_side_branches makes side branches win) */
            CHECK(mtp_drafted > 0);   /* the MTP block drafted (its random weights rarely agree: exactness is the point) */
            free(plain.ids);
        }
        sprig_model_free(m);
    }
    free(tp);
    free(dp);
}

/* A drafter that knows plain decoding's output and hides it in a side
 * branch: round r's first chain follows the truth for j = r % (k - 1) steps,
 * then decoys; the truth continues from chain node j as a side branch of
 * up to two nodes. The accepted path then leaves the chain at depth j, and
 * the target must finish the round from that branch's own recurrent state. */
struct script_drafter {
    sprig_drafter base;
    const int32_t *truth;   /* plain decoding's tokens, the first emitted one first */
    int n_truth, n_prompt, n_vocab, round;
};

static sprig_status script_tree(sprig_drafter *d, const sprig_draft_ctx *c, int k, int max_nodes, sprig_tree *out,
                                sprig_error *err)
{
    struct script_drafter *s = (struct script_drafter *)d;
    const int at = c->n_history - s->n_prompt + 1;   /* truth[at] follows the bonus */
    sprig_tree_root(out, c->bonus);
    if (k < 2 || max_nodes < k + 2 || at + k + 2 > s->n_truth) return SPRIG_OK;
    const int j = s->round++ % (k - 1);
    sprig_status st;
    for (int i = 0; i < k - 1; i++) {   /* the first chain: truth for j steps, then decoys */
        const int32_t t = s->truth[at + i];
        if ((st = sprig_tree_push_child(out, i, i < j ? t : (t + 1) % s->n_vocab, NULL, err))) return st;
    }
    int parent = j;
    for (int i = 0; i < 2 && i + j < k - 1 && out->n < max_nodes; i++) {   /* the truth, off the chain */
        if ((st = sprig_tree_push_child(out, parent, s->truth[at + j + i], NULL, err))) return st;
        parent = out->n - 1;
    }
    return SPRIG_OK;
}

static sprig_status script_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    (void)d; (void)c; (void)k; (void)out; (void)err;
    return SPRIG_OK;
}

static bool collect(void *user, int32_t token, const sprig_logprob *top)
{
    (void)top;
    struct test_run *r = user;
    r->ids[r->n++] = token;
    return true;
}

static void test_side_branches(void)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(g_f32, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    enum { N = 96, K = 6, ROWS = K + 2 };
    static const int32_t prompt[5] = { 1, 17, 33, 5, 60 };
    sprig_ctx *c = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 256, .n_batch = 16 };
    CHECKF(sprig_ctx_create(m, NULL, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
    sprig_target *t = c ? sprig_model_target_create(c, ROWS, &err) : NULL;
    CHECKF(t, "%s", err.msg);
    int32_t plain_ids[N], tree_ids[N];
    struct test_run plain = { plain_ids, 0, { 0 } }, tree = { tree_ids, 0, { 0 } };
    struct sprig_spec_params sp = sprig_spec_default_params();
    sp.max_tokens = N;
    sp.ignore_eos = true;
    sp.block = K;
    sp.tree_branches = 2;
    sp.tree = SPRIG_TREE_ON;
    sp.on_token = collect;
    static const struct sprig_drafter_vt vt = { .name = "script", .draft_block = script_block, .draft_tree = script_tree };
    struct script_drafter sd = { .base = { .vt = &vt }, .truth = plain_ids, .n_prompt = 5, .n_vocab = m->hp.n_vocab };
    if (t) {
        sp.user = &plain;
        sprig_spec_session *s = sprig_spec_create(t, NULL, &sp, &err);
        CHECK(s && sprig_spec_generate(s, prompt, 5, &err) == SPRIG_OK);
        sprig_spec_free(s);
        sprig_kv_clear(sprig_ctx_kv(c));
        sd.n_truth = plain.n;
        sp.user = &tree;
        s = sprig_spec_create(t, &sd.base, &sp, &err);
        CHECKF(s && sprig_spec_generate(s, prompt, 5, &err) == SPRIG_OK, "%s", err.msg);
        if (s) {
            const sprig_spec_stats *st = sprig_spec_get_stats(s);
            CHECK_EQ_INT(plain.n, N);
            CHECK_EQ_INT(tree.n, N);
            CHECK(!memcmp(plain_ids, tree_ids, sizeof plain_ids));
            CHECK(st->tree_rounds > 0 && st->chain_rounds == 0);
            CHECK(st->branch_rounds * 2 > st->tree_rounds);   /* most rounds: only the last few, near the end, are root-only */
            fprintf(stderr, "  %d tokens in %lld tree rounds, %lld won by a side branch, %lld drafts accepted\n", N,
                    (long long)st->tree_rounds, (long long)st->branch_rounds, (long long)st->accepted);
        }
        sprig_spec_free(s);
    }
    sprig_model_target_free(t);
    sprig_ctx_free(c);
    sprig_model_free(m);
}

static void test_rollback_limits(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(g_f32, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    /* the forward refuses to continue from a trimmed cache */
    sprig_ctx *c = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 8 };
    CHECKF(sprig_ctx_create(m, NULL, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
    if (c) {
        int32_t ids[4] = { 5, 6, 7, 8 };
        CHECK(sprig_prefill(c, ids, 4, NULL, NULL, &err) == SPRIG_OK);
        CHECK(sprig_kv_trim(sprig_ctx_kv(c), 2, &err) == SPRIG_OK);
        CHECK(sprig_prefill(c, ids, 1, NULL, NULL, &err) == SPRIG_E_REFUSED);
        CHECKF(strstr(err.msg, "recurrent layers (first: layer 0) hold 4 tokens but the cache 2"), "%s", err.msg);
        sprig_ctx_free(c);
    }
    /* trees: refused by name until the rollback is on, and then only whole trees within it */
    c = NULL;
    CHECKF(sprig_ctx_create(m, NULL, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
    if (c) {
        char why[256] = "";
        CHECK(!sprig_ctx_tree_ok(c, why, sizeof why));
        CHECKF(strstr(why, "recurrent (gated delta-net) layers and their rollback is off"), "%s", why);
        int32_t ids[4] = { 5, 6, 7, 8 }, parents[4] = { 0, 0, 1, 1 };
        float mask[4 * 6] = { 0 };
        CHECK(sprig_prefill(c, ids, 2, NULL, NULL, &err) == SPRIG_OK);
        struct sprig_fwd f = { .n = 4, .tokens = ids, .mask = mask };
        CHECK(sprig_forward(c, &f, &err) == SPRIG_E_REFUSED);
        CHECKF(strstr(err.msg, "a masked batch needs its tree (parents)"), "%s", err.msg);
        f.parents = parents;
        CHECK(sprig_forward(c, &f, &err) == SPRIG_E_REFUSED);
        CHECKF(strstr(err.msg, "a tree of 4 nodes needs the recurrent layers' rollback"), "%s", err.msg);
        CHECK(sprig_ctx_speculative(c, 4, &err) == SPRIG_OK);
        CHECK(sprig_ctx_tree_ok(c, why, sizeof why));
        parents[2] = 2;
        CHECK(sprig_forward(c, &f, &err) == SPRIG_E_INVALID_ARG);
        CHECKF(strstr(err.msg, "parents[2] = 2"), "%s", err.msg);
        parents[2] = 1;
        CHECK(sprig_forward(c, &f, &err) == SPRIG_OK);
        const int sibling_path[2] = { 0, 3 }, skip[2] = { 0, 2 };
        CHECK(sprig_ctx_keep_path(c, 4, skip, 2, &err) == SPRIG_E_REFUSED);   /* row 2's parent is row 1 */
        CHECKF(strstr(err.msg, "cannot keep row 2 after row 0"), "%s", err.msg);
        CHECK(sprig_ctx_keep_path(c, 4, sibling_path, 2, &err) == SPRIG_E_REFUSED);
        const int path[3] = { 0, 1, 3 };
        CHECK(sprig_ctx_keep_path(c, 4, path, 3, &err) == SPRIG_OK);
        CHECK_EQ_INT(sprig_kv_len(sprig_ctx_kv(c)), 5);
        CHECK(sprig_prefill(c, ids, 1, NULL, NULL, &err) == SPRIG_OK);   /* the states follow the cache */
        sprig_ctx_free(c);
    }
    sprig_model_free(m);
}

static void test_bad_files(void)
{
    const uint8_t three[3] = { 1, 1, 0 }, four[4] = { 1, 0, 1, 0 };
    const uint32_t zero = 0, big = 100000, odd = 100;
    test_expect_load_fails(g_f32, "q-rl3.gguf", &(struct test_key_edit){ "qwen35.attention.recurrent_layers", SPRIG_GGUF_BOOL, three, 3 },
                           "qwen35.attention.recurrent_layers' has 3 entries");
    test_expect_load_fails(g_f32, "q-int0.gguf", &(struct test_key_edit){ "qwen35.full_attention_interval", SPRIG_GGUF_U32, &zero, 0 },
                           "qwen35.full_attention_interval' = 0");
    test_expect_load_fails(g_f32, "q-inner.gguf", &(struct test_key_edit){ "qwen35.ssm.inner_size", SPRIG_GGUF_U32, &odd, 0 },
                           "qwen35.ssm.inner_size' = 100 is not");
    test_expect_load_fails(g_f32, "q-conv0.gguf", &(struct test_key_edit){ "qwen35.ssm.conv_kernel", SPRIG_GGUF_U32, &zero, 0 },
                           "qwen35.ssm.conv_kernel' = 0");
    test_expect_load_fails(g_f32, "q-convbig.gguf", &(struct test_key_edit){ "qwen35.ssm.conv_kernel", SPRIG_GGUF_U32, &big, 0 },
                           "qwen35.ssm.conv_kernel' = 100000");
    /* layer 1 declared attention but holding delta-net tensors */
    test_expect_load_fails(g_f32, "q-kind.gguf", &(struct test_key_edit){ "qwen35.attention.recurrent_layers", SPRIG_GGUF_BOOL, four, 4 },
                           "layer 1 is an attention layer");
}

/* the MTP block as the drafter runs it (model/nextn.h): n pairs in one batch
 * give the bits of n single feeds (what the drafter's catch-up relies on),
 * and a trim then refeed gives them again */
static void mtp_block_runs(const sprig_model *m)
{
    sprig_error err = { 0 };
    enum { N = 9 };
    const int D = m->hp.dim, V = m->hp.n_vocab;
    sprig_nextn_ctx *a = NULL, *b = NULL;
    CHECKF(sprig_nextn_create(m, NULL, 64, 16, &a, &err) == SPRIG_OK, "%s", err.msg);
    CHECKF(sprig_nextn_create(m, NULL, 64, 16, &b, &err) == SPRIG_OK, "%s", err.msg);
    float *h = calloc((size_t)N * D, sizeof(float)), *ha = calloc((size_t)D, sizeof(float)), *hb = calloc((size_t)D, sizeof(float));
    float *la = calloc((size_t)V, sizeof(float)), *lb = calloc((size_t)V, sizeof(float));
    if (a && b && h && ha && hb && la && lb) {
        int32_t tok[N];
        for (int i = 0; i < N; i++) tok[i] = (int32_t)((i * 37 + 11) % V);
        for (int i = D; i < N * D; i++) h[i] = sinf(0.37f * (float)i);   /* row 0: the zeros of position -1 */
        CHECK(sprig_nextn_feed(a, tok, h, N, ha, la, &err) == SPRIG_OK);
        for (int i = 0; i < N; i++) CHECK(sprig_nextn_feed(b, tok + i, h + (size_t)i * D, 1, hb, lb, &err) == SPRIG_OK);
        CHECK_EQ_INT(sprig_nextn_len(a), N);
        CHECK(!memcmp(ha, hb, (size_t)D * sizeof(float)) && !memcmp(la, lb, (size_t)V * sizeof(float)));
        CHECK(sprig_nextn_trim(b, 4, &err) == SPRIG_OK);
        CHECK(sprig_nextn_trim(b, 5, &err) == SPRIG_E_INVALID_ARG);
        CHECK(sprig_nextn_feed(b, tok + 4, h + 4 * (size_t)D, N - 4, hb, lb, &err) == SPRIG_OK);
        CHECK(!memcmp(ha, hb, (size_t)D * sizeof(float)) && !memcmp(la, lb, (size_t)V * sizeof(float)));
        float mx = 0;
        for (int i = 0; i < V; i++) mx = fmaxf(mx, fabsf(la[i]));
        CHECK(mx > 0 && isfinite(mx));
    }
    sprig_nextn_free(a);
    sprig_nextn_free(b);
    free(h); free(ha); free(hb); free(la); free(lb);
}

/* a file with the built-in MTP block: loaded and checked with the model
 * (block_count counts it), the trunk unchanged by it */
static void test_mtp_block_loads(void)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    q35_shape(&mp, &err);
    mp.mtp = true;
    mp.mtp_head = true;
    mp.recurrent_layers = "rrar";
    char *p = strdup(test_tmpfile("q35-mtp.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, p, &err) == SPRIG_OK, "%s", err.msg);
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(p, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        CHECK_EQ_INT(m->hp.n_layer, 4);
        CHECK_EQ_INT(m->n_nextn, 1);
        CHECK(m->nextn && m->nextn[0].eh_proj.raw && m->nextn[0].embed.raw && m->nextn[0].head.raw && m->nextn[0].head_norm);
        CHECK(m->layers[0].recurrent && m->layers[1].recurrent && !m->layers[2].recurrent && m->layers[3].recurrent);
        mtp_block_runs(m);
        sprig_model_free(m);
    }
    free(p);
    /* --mtp FILE with a target file that has no MTP block: refused naming the key */
    m = NULL;
    CHECKF(sprig_model_load(g_f32, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        struct sprig_session_params sp = sprig_session_default_params();
        sp.drafter = SPRIG_DRAFTER_MTP;
        sp.draft_path = g_f32;
        sprig_session *s = NULL;
        CHECK(sprig_session_create(m, &sp, &s, &err) != SPRIG_OK && !s);
        CHECKF(strstr(err.msg, "no MTP block (qwen35.nextn_predict_layers is absent or 0)"), "%s", err.msg);
        sprig_model_free(m);
    }
}

int main(void)
{
    g_f32 = make("q35-f32.gguf", 0);
    g_q8 = make("q35-q8.gguf", SPRIG_TYPE_Q8_0);
    RUN(test_batch_independent);
    RUN(test_chain_equals_plain);
    RUN(test_side_branches);
    RUN(test_rollback_limits);
    RUN(test_bad_files);
    RUN(test_mtp_block_loads);
    free(g_f32);
    free(g_q8);
    return test_summary("test-qwen35");
}
