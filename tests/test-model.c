/*
 * tests/test-model.c — the llama forward on the real stories260K model and
 * its distilled draft model against the float32 reference vectors, and the
 * exactness properties speculation relies on: a batched forward's rows are
 * bit-identical to decoding the same tokens one by one, and a tree forward
 * (explicit mask, depth positions) followed by a KV gather gives the same
 * bits as plain decoding of the accepted path.
 */
#include "test.h"
#include "vectors.h"
#include "kv/kv.h"
#include "model/model.h"
#include "tensor/ops.h"

static sprig_pool *g_pool;

static sprig_model *load(const char *rel)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(test_shared(rel), &m, &err);
    CHECKF(st == SPRIG_OK, "%s", err.msg);
    return m;
}

static sprig_ctx *new_ctx(const sprig_model *m, int n_ctx, int n_batch, int kv_mode)
{
    sprig_error err = { 0 };
    struct sprig_ctx_params p = { .n_ctx = n_ctx, .n_batch = n_batch, .kv_mode = kv_mode };
    sprig_ctx *c = NULL;
    sprig_status st = sprig_ctx_create(m, g_pool, &p, &c, &err);
    CHECKF(st == SPRIG_OK, "%s", err.msg);
    return c;
}

static void check_logits_file(const char *model_rel, const char *vec_rel)
{
    sprig_model *m = load(model_rel);
    if (!m) return;
    struct vec_file vf;
    CHECK(vec_load(test_shared(vec_rel), &vf) == 0);
    CHECK(vf.n_cases >= 3);
    float *logits = malloc(sizeof(float) * m->hp.n_vocab);
    for (int ci = 0; ci < vf.n_cases; ci++) {
        const struct vec_field *ids = vec_get(&vf.cases[ci], "prompt_ids");
        const struct vec_field *want = vec_get(&vf.cases[ci], "logits");
        CHECK(ids && want && want->n == m->hp.n_vocab);
        if (!ids || !want) continue;
        sprig_ctx *c = new_ctx(m, 256, 64, SPRIG_KV_MODE_F32);
        sprig_error err = { 0 };
        CHECKF(sprig_prefill(c, ids->ids, ids->n, logits, NULL, &err) == SPRIG_OK, "%s", err.msg);
        double maxd = 0;
        for (int i = 0; i < m->hp.n_vocab; i++) {
            double d = fabs((double)logits[i] - want->vals[i]);
            if (d > maxd) maxd = d;
        }
        CHECKF(maxd <= 1e-4, "%s case %d: max |logit diff| = %g", vec_rel, ci, maxd);
        fprintf(stderr, "  %s case %d: max |logit diff| %.3g\n", vec_rel, ci, maxd);
        sprig_ctx_free(c);
    }
    free(logits);
    vec_free(&vf);
    sprig_model_free(m);
}

static void check_greedy_file(const char *model_rel, const char *vec_rel, int kv_mode)
{
    sprig_model *m = load(model_rel);
    if (!m) return;
    struct vec_file vf;
    CHECK(vec_load(test_shared(vec_rel), &vf) == 0);
    CHECK(vf.n_cases >= 5);
    float *logits = malloc(sizeof(float) * m->hp.n_vocab);
    for (int ci = 0; ci < vf.n_cases; ci++) {
        const struct vec_field *ids = vec_get(&vf.cases[ci], "prompt_ids");
        const struct vec_field *want = vec_get(&vf.cases[ci], "output_ids");
        CHECK(ids && want);
        if (!ids || !want) continue;
        sprig_ctx *c = new_ctx(m, 256, 16, kv_mode);
        sprig_error err = { 0 };
        CHECKF(sprig_prefill(c, ids->ids, ids->n, logits, NULL, &err) == SPRIG_OK, "%s", err.msg);
        int bad = -1;
        for (int i = 0; i < want->n; i++) {
            int32_t t = sprig_argmax(logits, m->hp.n_vocab);
            if (t != want->ids[i]) { bad = i; break; }
            struct sprig_fwd f = { .n = 1, .tokens = &t, .n_out = 1, .logits = logits };
            CHECK(sprig_forward(c, &f, &err) == SPRIG_OK);
        }
        CHECKF(bad < 0, "%s case %d (kv %s): first differing token at %d", vec_rel, ci, sprig_kv_mode_name(kv_mode), bad);
        sprig_ctx_free(c);
    }
    free(logits);
    vec_free(&vf);
    sprig_model_free(m);
}

static void test_hparams_of_stories260k(void)
{
    sprig_model *m = load("models/stories260K.gguf");
    if (!m) return;
    CHECK_EQ_INT(m->hp.dim, 64);
    CHECK_EQ_INT(m->hp.n_layer, 5);
    CHECK_EQ_INT(m->hp.n_head, 8);
    CHECK_EQ_INT(m->hp.n_kv_head, 4);
    CHECK_EQ_INT(m->hp.head_dim, 8);
    CHECK_EQ_INT(m->hp.n_ff, 172);
    CHECK_EQ_INT(m->hp.n_vocab, 512);
    CHECK_NEAR(m->hp.rope_theta, 10000.0, 0);
    CHECK_EQ_INT(m->hp.rope_mode, SPRIG_ROPE_NORM);
    CHECK(!m->tied_output);   /* output.weight is present (equal to token_embd) */
    sprig_model_free(m);
}

static void test_logits_target(void) { check_logits_file("models/stories260K.gguf", "models/vectors/logits_target.txt"); }
static void test_logits_draft(void) { check_logits_file("models/stories-draft.gguf", "models/vectors/logits_draft.txt"); }
static void test_greedy_target(void) { check_greedy_file("models/stories260K.gguf", "models/vectors/greedy_target.txt", SPRIG_KV_MODE_F32); }
static void test_greedy_draft(void) { check_greedy_file("models/stories-draft.gguf", "models/vectors/greedy_draft.txt", SPRIG_KV_MODE_F32); }
static void test_greedy_target_f16_kv(void) { check_greedy_file("models/stories260K.gguf", "models/vectors/greedy_target.txt", SPRIG_KV_MODE_F16); }

/* Rows of one batched forward == the same tokens decoded one at a time, bit for bit. */
static void test_batched_rows_equal_sequential(void)
{
    sprig_model *m = load("models/stories260K.gguf");
    if (!m) return;
    int V = m->hp.n_vocab;
    int32_t toks[40];
    for (int i = 0; i < 40; i++) toks[i] = i == 0 ? 1 : 3 + (i * 37) % 500;
    float *a = malloc(sizeof(float) * V * 40), *b = malloc(sizeof(float) * V * 40);
    for (int kt = 0; kt < SPRIG_KV_MODE_COUNT; kt++) {   /* every cache mode, lossy ones too */
        if (sprig_kv_mode_from_name(sprig_kv_mode_name(kt)) != kt) continue;
        sprig_ctx *c1 = new_ctx(m, 128, 64, kt), *c2 = new_ctx(m, 128, 64, kt);
        sprig_error err = { 0 };
        /* c1: 5 history tokens, then a batch of 35 with every row's logits */
        struct sprig_fwd f = { .n = 5, .tokens = toks };
        CHECK(sprig_forward(c1, &f, &err) == SPRIG_OK);
        struct sprig_fwd g = { .n = 35, .tokens = toks + 5, .n_out = 35, .logits = a + 5 * V };
        CHECK(sprig_forward(c1, &g, &err) == SPRIG_OK);
        /* c2: one at a time */
        for (int i = 0; i < 40; i++) {
            struct sprig_fwd h = { .n = 1, .tokens = toks + i, .n_out = 1, .logits = b + i * V };
            CHECK(sprig_forward(c2, &h, &err) == SPRIG_OK);
        }
        CHECKF(memcmp(a + 5 * V, b + 5 * V, sizeof(float) * V * 35) == 0, "kv %s: batched rows differ from sequential", sprig_kv_mode_name(kt));
        sprig_ctx_free(c1);
        sprig_ctx_free(c2);
    }
    free(a);
    free(b);
    sprig_model_free(m);
}

/* A tree block (root, a chain, a sibling leaf) forwarded with the ancestor
 * mask and depth positions, then the accepted path gathered, equals plain
 * decoding of the path: same logits bits on the path rows, same cache. */
static void test_tree_forward_then_gather_equals_plain(void)
{
    sprig_model *m = load("models/stories260K.gguf");
    if (!m) return;
    int V = m->hp.n_vocab;
    int32_t hist[6] = { 1, 403, 407, 261, 378, 432 };
    /* nodes: 0 root, 1 child of 0, 2 child of 1, 3 sibling of 1 (child of 0), 4 child of 3 */
    int32_t tok[5] = { 383, 286, 261, 300, 290 };
    int parent[5] = { 0, 0, 1, 0, 3 };
    int depth[5] = { 0, 1, 2, 1, 2 };
    int n = 5, off = 6;
    float mask[5][11];
    for (int q = 0; q < n; q++)
        for (int j = 0; j < off + n; j++) {
            bool vis = j < off;
            if (!vis) {
                int a = q;
                for (;;) { if (a == j - off) { vis = true; break; } if (a == 0) break; a = parent[a]; }
            }
            mask[q][j] = vis ? 0.0f : -1e9f;
        }
    int32_t pos[5];
    for (int i = 0; i < n; i++) pos[i] = off + depth[i];
    float *tl = malloc(sizeof(float) * V * n), *pl = malloc(sizeof(float) * V * 3);
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V);
    for (int mode = 0; mode < SPRIG_KV_MODE_COUNT; mode++) {   /* every cache mode, lossy ones too */
    if (sprig_kv_mode_from_name(sprig_kv_mode_name(mode)) != mode) continue;
    sprig_error err = { 0 };
    sprig_ctx *ct = new_ctx(m, 64, 16, mode), *cp = new_ctx(m, 64, 16, mode);
    struct sprig_fwd h = { .n = off, .tokens = hist };
    CHECK(sprig_forward(ct, &h, &err) == SPRIG_OK);
    CHECK(sprig_forward(cp, &h, &err) == SPRIG_OK);
    struct sprig_fwd f = { .n = n, .tokens = tok, .pos = pos, .mask = &mask[0][0], .n_out = n, .logits = tl };
    CHECKF(sprig_forward(ct, &f, &err) == SPRIG_OK, "%s", err.msg);
    /* accepted path 0 -> 3 -> 4 */
    int path[3] = { 0, 3, 4 };
    int32_t ptok[3] = { tok[0], tok[3], tok[4] };
    for (int i = 0; i < 3; i++) {
        struct sprig_fwd p1 = { .n = 1, .tokens = ptok + i, .n_out = 1, .logits = pl + i * V };
        CHECK(sprig_forward(cp, &p1, &err) == SPRIG_OK);
    }
    for (int i = 0; i < 3; i++)
        CHECKF(memcmp(tl + path[i] * V, pl + i * V, sizeof(float) * V) == 0, "kv %s: tree row %d differs from plain decode",
               sprig_kv_mode_name(mode), path[i]);
    CHECK(sprig_kv_gather_within_tail(sprig_ctx_kv(ct), n, path, 3, &err) == SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_len(sprig_ctx_kv(ct)), off + 3);
    /* the next token after the gathered cache equals the plain path too */
    int32_t nxt = 300;
    struct sprig_fwd na = { .n = 1, .tokens = &nxt, .n_out = 1, .logits = a };
    struct sprig_fwd nb = { .n = 1, .tokens = &nxt, .n_out = 1, .logits = b };
    CHECK(sprig_forward(ct, &na, &err) == SPRIG_OK);
    CHECK(sprig_forward(cp, &nb, &err) == SPRIG_OK);
    CHECKF(memcmp(a, b, sizeof(float) * V) == 0, "kv %s", sprig_kv_mode_name(mode));
    sprig_ctx_free(ct);
    sprig_ctx_free(cp);
    }
    free(a); free(b); free(tl); free(pl);
    sprig_model_free(m);
}

/* Two sequences on one shared paged pool, forwarded in turns, give the
 * logits bits of two dense contexts; a pool that runs out refuses the
 * sequence that asked (SPRIG_E_CONTEXT_FULL, naming the pool) and the other
 * sequence goes on unharmed. */
static void test_shared_pool_sequences(void)
{
    sprig_model *m = load("models/stories260K.gguf");
    if (!m) return;
    const int V = m->hp.n_vocab;
    sprig_error err = { 0 };
    struct sprig_kv_pool_params pp = { .n_layer = m->hp.n_layer, .n_kv_head = m->hp.n_kv_head, .head_dim = m->hp.head_dim,
                                       .mode = SPRIG_KV_MODE_INT8, .block_slots = 8, .n_blocks = 9 };
    sprig_kv_pool *P = sprig_kv_pool_create(&pp, &err);
    CHECKF(P != NULL, "%s", err.msg);
    if (!P) { sprig_model_free(m); return; }
    sprig_ctx *a = NULL, *b = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 16, .kv_pool = P };
    CHECK(sprig_ctx_create(m, g_pool, &cp, &a, &err) == SPRIG_OK);
    CHECK(sprig_ctx_create(m, g_pool, &cp, &b, &err) == SPRIG_OK);
    sprig_ctx *da = new_ctx(m, 64, 16, SPRIG_KV_MODE_INT8), *db = new_ctx(m, 64, 16, SPRIG_KV_MODE_INT8);
    if (!a || !b || !da || !db) goto out;
    CHECK_STR(sprig_kv_kind(sprig_ctx_kv(a)), "paged");
    float *la = malloc(sizeof(float) * V), *lb = malloc(sizeof(float) * V);
    int32_t ta = 1, tb = 1;
    bool ok = true;
    for (int step = 0; step < 40; step++) {   /* a: 40 tokens (5 blocks), b: 20 (3 blocks) */
        struct sprig_fwd f = { .n = 1, .tokens = &ta, .n_out = 1, .logits = la };
        CHECK(sprig_forward(a, &f, &err) == SPRIG_OK);
        f.logits = lb;
        CHECK(sprig_forward(da, &f, &err) == SPRIG_OK);
        ok &= memcmp(la, lb, sizeof(float) * V) == 0;
        ta = 3 + (ta * 31 + step) % 400;
        if (step % 2) continue;
        struct sprig_fwd g = { .n = 1, .tokens = &tb, .n_out = 1, .logits = la };
        CHECK(sprig_forward(b, &g, &err) == SPRIG_OK);
        g.logits = lb;
        CHECK(sprig_forward(db, &g, &err) == SPRIG_OK);
        ok &= memcmp(la, lb, sizeof(float) * V) == 0;
        tb = 3 + (tb * 17 + step) % 400;
    }
    CHECK(ok);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 1);
    /* b wants 13 more slots: 2 more blocks, 1 free: refused; a is unharmed */
    int32_t many[13] = { 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };
    struct sprig_fwd h = { .n = 13, .tokens = many };
    err.msg[0] = 0;
    CHECK_EQ_INT(sprig_forward(b, &h, &err), SPRIG_E_CONTEXT_FULL);
    CHECKF(strstr(err.msg, "out of blocks") != NULL, "%s", err.msg);
    CHECK_EQ_INT(sprig_kv_len(sprig_ctx_kv(b)), 20);
    struct sprig_fwd f = { .n = 1, .tokens = &ta, .n_out = 1, .logits = la };
    CHECK(sprig_forward(a, &f, &err) == SPRIG_OK);
    f.logits = lb;
    CHECK(sprig_forward(da, &f, &err) == SPRIG_OK);
    CHECK(memcmp(la, lb, sizeof(float) * V) == 0);
    /* a pool for another shape is refused by name */
    sprig_ctx *x = NULL;
    struct sprig_kv_pool_params qp = pp;
    qp.n_layer = pp.n_layer + 1;
    sprig_kv_pool *Q = sprig_kv_pool_create(&qp, &err);
    struct sprig_ctx_params xp = { .n_ctx = 64, .kv_pool = Q };
    CHECK_EQ_INT(sprig_ctx_create(m, g_pool, &xp, &x, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "kv_pool") != NULL && !x);
    sprig_kv_pool_free(Q);
    free(la);
    free(lb);
out:
    sprig_ctx_free(a);
    sprig_ctx_free(b);
    sprig_ctx_free(da);
    sprig_ctx_free(db);
    CHECK_EQ_INT(sprig_kv_pool_free_blocks(P), 9);
    sprig_kv_pool_free(P);
    sprig_model_free(m);
}

static void test_forward_rejects_bad_input(void)
{
    sprig_model *m = load("models/stories260K.gguf");
    if (!m) return;
    sprig_ctx *c = new_ctx(m, 8, 4, SPRIG_KV_MODE_F32);
    sprig_error err = { 0 };
    int32_t t[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    struct sprig_fwd f = { .n = 5, .tokens = t };
    CHECK(sprig_forward(c, &f, &err) == SPRIG_E_INVALID_ARG);   /* larger than n_batch */
    int32_t bad = 512;
    struct sprig_fwd g = { .n = 1, .tokens = &bad };
    CHECK(sprig_forward(c, &g, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "vocabulary") != NULL);
    CHECK(sprig_prefill(c, t, 8, NULL, NULL, &err) == SPRIG_OK);
    CHECK(sprig_forward(c, &(struct sprig_fwd){ .n = 1, .tokens = t }, &err) == SPRIG_E_CONTEXT_FULL);
    CHECK_EQ_INT(sprig_kv_len(sprig_ctx_kv(c)), 8);
    sprig_ctx_free(c);
    sprig_model_free(m);
}

int main(void)
{
    sprig_error err;
    g_pool = sprig_pool_create(2, &err);
    RUN(test_hparams_of_stories260k);
    RUN(test_logits_target);
    RUN(test_logits_draft);
    RUN(test_greedy_target);
    RUN(test_greedy_draft);
    RUN(test_greedy_target_f16_kv);
    RUN(test_batched_rows_equal_sequential);
    RUN(test_tree_forward_then_gather_equals_plain);
    RUN(test_shared_pool_sequences);
    RUN(test_forward_rejects_bad_input);
    sprig_pool_free(g_pool);
    return test_summary("test-model");
}
