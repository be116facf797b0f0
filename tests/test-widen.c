/*
 * tests/test-widen.c — function-preserving widening (src/mkmodel/widen.c): the real
 * stories260K model embedded in a larger llama shape (wider hidden, more and
 * wider heads, a bigger FFN, identity layers in front) must still match the
 * float32 reference vectors (logits within 1e-4, greedy tokens identical);
 * in Q8_0 the real draft model must drive chain and branching-tree
 * speculation byte-identically to plain greedy decoding of the widened
 * model, with acceptance near the small model's; shapes that cannot hold
 * the source are refused naming the size.
 */
#include "test.h"
#include "vectors.h"
#include "sprig.h"
#include "mkmodel/widen.h"
#include "model/model.h"
#include "model/mtp.h"
#include "base/pool.h"
#include "tensor/ops.h"
#include "tensor/types.h"

#include <math.h>
#include <stdlib.h>

/* the source is 64 dims, 5 layers, 8 heads of 8, 4 kv heads, ffn 172 */
static struct sprig_mkmodel_params shape(int type)
{
    struct sprig_mkmodel_params p;
    CHECK(sprig_mkmodel_preset("tiny", &p, NULL) == SPRIG_OK);
    p.dim = 256;
    p.n_layers = 7;
    p.n_heads = 16;     /* head size 16 */
    p.n_kv_heads = 4;   /* 4 query heads per kv head */
    p.ffn = 256;
    p.type = type;
    return p;
}

static const char *widened(int type)
{
    static char path[2][512];
    char *dst = path[type == SPRIG_TYPE_F32 ? 0 : 1];
    if (dst[0]) return dst;
    snprintf(dst, sizeof path[0], "%s", test_tmpfile(type == SPRIG_TYPE_F32 ? "wide-f32.gguf" : "wide-q8.gguf"));
    struct sprig_mkmodel_params p = shape(type);
    sprig_error err = { 0 };
    sprig_status st = sprig_widen_write(test_shared("models/stories260K.gguf"), &p, dst, &err);
    CHECKF(st == SPRIG_OK, "%s", err.msg);
    return dst;
}

static void test_shape_and_keys(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(widened(SPRIG_TYPE_F32), &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    CHECK_EQ_INT(m->hp.dim, 256);
    CHECK_EQ_INT(m->hp.n_layer, 7);
    CHECK_EQ_INT(m->hp.n_head, 16);
    CHECK_EQ_INT(m->hp.n_kv_head, 4);
    CHECK_EQ_INT(m->hp.head_dim, 16);
    CHECK_EQ_INT(m->hp.n_ff, 256);
    CHECK_EQ_INT(m->hp.n_rot, 16);         /* whole heads rotate (llama.cpp's rule) ... */
    CHECK(m->rope_freqs != NULL);          /* ... and rope_freqs gives the source's 4 pairs their frequencies */
    if (m->rope_freqs) {
        CHECK_NEAR(m->rope_freqs[0], 1.0, 1e-6);
        CHECK_NEAR(m->rope_freqs[3], pow(10000.0, 6.0 / 8 - 6.0 / 16), 1e-2);
        CHECK_NEAR(m->rope_freqs[4], 1.0, 1e-6);
    }
    CHECK_EQ_INT(m->hp.n_vocab, 512);
    CHECK_NEAR(m->hp.eps, 1e-5 * 64 / 256, 1e-12);
    sprig_model_free(m);
}

static void test_logits_match_reference(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(widened(SPRIG_TYPE_F32), &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    sprig_pool *pool = sprig_pool_create(1, &err);
    struct vec_file vf;
    CHECK(vec_load(test_shared("models/vectors/logits_target.txt"), &vf) == 0);
    float *logits = malloc(sizeof(float) * 512);
    for (int ci = 0; ci < vf.n_cases; ci++) {
        const struct vec_field *ids = vec_get(&vf.cases[ci], "prompt_ids");
        const struct vec_field *want = vec_get(&vf.cases[ci], "logits");
        CHECK(ids && want && want->n == 512);
        if (!ids || !want || want->n != 512) continue;
        struct sprig_ctx_params cp = { .n_ctx = 256, .n_batch = 64 };
        sprig_ctx *c = NULL;
        CHECKF(sprig_ctx_create(m, pool, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
        if (!c) continue;
        CHECKF(sprig_prefill(c, ids->ids, ids->n, logits, NULL, &err) == SPRIG_OK, "%s", err.msg);
        double maxd = 0;
        for (int i = 0; i < 512; i++) maxd = fmax(maxd, fabs((double)logits[i] - want->vals[i]));
        CHECKF(maxd <= 1e-4, "case %d: max |logit diff| = %g", ci, maxd);
        fprintf(stderr, "  widened f32 case %d: max |logit diff| %.3g\n", ci, maxd);
        sprig_ctx_free(c);
    }
    free(logits);
    vec_free(&vf);
    sprig_pool_free(pool);
    sprig_model_free(m);
}

static void test_greedy_matches_reference(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(widened(SPRIG_TYPE_F32), &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    sprig_pool *pool = sprig_pool_create(2, &err);
    struct vec_file vf;
    CHECK(vec_load(test_shared("models/vectors/greedy_target.txt"), &vf) == 0);
    float logits[512];
    for (int ci = 0; ci < vf.n_cases; ci++) {
        const struct vec_field *ids = vec_get(&vf.cases[ci], "prompt_ids");
        const struct vec_field *want = vec_get(&vf.cases[ci], "output_ids");
        CHECK(ids && want);
        if (!ids || !want) continue;
        struct sprig_ctx_params cp = { .n_ctx = 256, .n_batch = 16 };
        sprig_ctx *c = NULL;
        CHECKF(sprig_ctx_create(m, pool, &cp, &c, &err) == SPRIG_OK, "%s", err.msg);
        if (!c) continue;
        CHECK(sprig_prefill(c, ids->ids, ids->n, logits, NULL, &err) == SPRIG_OK);
        int bad = -1;
        for (int i = 0; i < want->n && bad < 0; i++) {
            int32_t t = sprig_argmax(logits, 512);
            if (t != want->ids[i]) bad = i;
            struct sprig_fwd f = { .n = 1, .tokens = &t, .n_out = 1, .logits = logits };
            CHECK(sprig_forward(c, &f, &err) == SPRIG_OK);
        }
        CHECKF(bad < 0, "case %d: first differing token at %d", ci, bad);
        sprig_ctx_free(c);
    }
    vec_free(&vf);
    sprig_pool_free(pool);
    sprig_model_free(m);
}

struct buf { char p[8192]; size_t n; };

static bool collect(void *user, const char *text, size_t len)
{
    struct buf *b = user;
    if (b->n + len >= sizeof b->p) return false;
    memcpy(b->p + b->n, text, len);
    b->n += len;
    b->p[b->n] = 0;
    return true;
}

static const char *g_mtp_head;   /* run() drafts with this MTP head instead of the draft model */

static void run(const sprig_model *m, int tree, int draft_max, int branches, struct buf *out, struct sprig_stats *st)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 2;
    p.ignore_eos = true;
    p.tree = tree;
    if (draft_max > 0) {
        p.drafter = g_mtp_head ? SPRIG_DRAFTER_MTP : SPRIG_DRAFTER_MODEL;
        p.draft_path = g_mtp_head ? g_mtp_head : test_shared("models/stories-draft.gguf");
        p.tree_width = g_mtp_head && tree == SPRIG_TREE_ON ? 3 : 0;   /* the head's dynamic tree */
        p.draft_max = draft_max;
        p.tree_branches = branches;
    }
    sprig_error err = { 0 };
    sprig_session *s = NULL;
    CHECKF(sprig_session_create(m, &p, &s, &err) == SPRIG_OK, "%s", err.msg);
    if (!s) return;
    out->n = 0;
    out->p[0] = 0;
    const char *prompt = "Once upon a time";
    CHECKF(sprig_session_generate(s, prompt, strlen(prompt), 128, collect, out, &err) == SPRIG_OK, "%s", err.msg);
    sprig_session_get_stats(s, st);
    sprig_session_free(s);
}

static void test_speculation_on_the_widened_model(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(widened(SPRIG_TYPE_Q8_0), &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    static struct buf plain, chain, tree;
    struct sprig_stats sp, sc, st;
    run(m, SPRIG_TREE_OFF, 0, 0, &plain, &sp);
    run(m, SPRIG_TREE_OFF, 5, 0, &chain, &sc);
    run(m, SPRIG_TREE_ON, 5, 2, &tree, &st);
    CHECK_STR(sp.path, "plain");
    CHECK_STR(sc.path, "chain");
    CHECK_STR(st.path, "tree");
    CHECK(st.tree_mode && st.rounds > 0);
    CHECK(plain.n > 100);
    CHECK_STR(chain.p, plain.p);
    CHECK_STR(tree.p, plain.p);
    /* the draft model still predicts the widened target: it computes what stories260K computes */
    CHECKF(sc.emitted_per_verify > 2.0, "chain emitted/verify %.3f", sc.emitted_per_verify);
    fprintf(stderr, "  widened q8_0: chain %.3f emitted/verify, branching tree %.3f\n", sc.emitted_per_verify,
            st.emitted_per_verify);
    sprig_model_free(m);
}

/* The MTP head widened with its target drafts what it drafted for stories260K: from the same
 * prompt, each head step's logits agree (f32, within 1e-3) and so do its greedy drafts; the
 * widened head also drives speculation on the widened Q8_0 target byte-identically to plain
 * decoding. A file that is not an MTP head is refused by name. */
static void test_mtp_head_widens_with_its_target(void)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params p = shape(SPRIG_TYPE_F32);
    const char *head = test_tmpfile("wide-mtp-f32.gguf");
    CHECKF(sprig_widen_mtp_write(test_shared("models/stories260K.gguf"), test_shared("models/stories-mtp.gguf"), &p, head, &err) ==
               SPRIG_OK, "%s", err.msg);
    sprig_model *m[2] = { NULL, NULL };
    sprig_mtp *h[2] = { NULL, NULL };
    CHECKF(sprig_model_load(test_shared("models/stories260K.gguf"), &m[0], &err) == SPRIG_OK, "%s", err.msg);
    CHECKF(sprig_model_load(widened(SPRIG_TYPE_F32), &m[1], &err) == SPRIG_OK, "%s", err.msg);
    if (!m[0] || !m[1]) goto out;
    CHECKF(sprig_mtp_load(test_shared("models/stories-mtp.gguf"), m[0], &h[0], &err) == SPRIG_OK, "%s", err.msg);
    CHECKF(sprig_mtp_load(head, m[1], &h[1], &err) == SPRIG_OK, "%s", err.msg);
    if (!h[0] || !h[1]) goto out;
    CHECK_EQ_INT(sprig_mtp_kv_layer(h[1]), sprig_mtp_kv_layer(h[0]) + 2);   /* two identity layers in front */
    sprig_pool *pool = sprig_pool_create(1, &err);
    static const int32_t prompt[] = { 1, 403, 407, 261, 378, 362, 328, 270, 357, 263, 402, 395 };
    const int np = (int)(sizeof prompt / sizeof prompt[0]);
    float *logit[2], *hid[2], *hl[2];
    sprig_ctx *c[2] = { NULL, NULL };
    sprig_mtp_state *ms[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++) {
        struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 64 };
        CHECKF(sprig_ctx_create(m[i], pool, &cp, &c[i], &err) == SPRIG_OK, "%s", err.msg);
        ms[i] = sprig_mtp_state_create(h[i], 64, &err);
        logit[i] = malloc(sizeof(float) * 512 * (size_t)np);
        hid[i] = malloc(sizeof(float) * (size_t)m[i]->hp.dim * (size_t)np);
        hl[i] = malloc(sizeof(float) * (size_t)m[i]->hp.dim);
    }
    int agree = 0, steps = 0;
    double worst = 0;
    for (int n = 4; n <= np && c[0] && c[1] && ms[0] && ms[1]; n += 4) {
        int32_t tok[2];
        for (int i = 0; i < 2; i++) {
            sprig_kv_clear(sprig_ctx_kv(c[i]));
            CHECK(sprig_prefill(c[i], prompt, n, logit[i], hid[i], &err) == SPRIG_OK);
            memcpy(hl[i], hid[i], sizeof(float) * (size_t)m[i]->hp.dim);   /* the last row's (prefill keeps it first) */
            tok[i] = prompt[n - 1] == 1 ? 13 : prompt[n - 1];
        }
        for (int j = 0; j < 3; j++) {
            int32_t best[2];
            for (int i = 0; i < 2; i++) {
                CHECK(sprig_mtp_step(h[i], ms[i], pool, sprig_ctx_kv(c[i]), hl[i], tok[i], n - 1, hl[i], logit[i], &err) == SPRIG_OK);
                best[i] = 0;
                for (int v = 1; v < 512; v++) if (logit[i][v] > logit[i][best[i]]) best[i] = v;
            }
            for (int v = 0; v < 512; v++) {
                const double d = fabs((double)logit[0][v] - (double)logit[1][v]);
                if (d > worst) worst = d;
            }
            agree += best[0] == best[1];
            steps++;
            tok[0] = tok[1] = best[0];
        }
    }
    fprintf(stderr, "  widened MTP head: %d of %d greedy drafts agree, max |logit diff| %.2e\n", agree, steps, worst);
    CHECK(steps >= 9);
    CHECK_EQ_INT(agree, steps);
    CHECKF(worst < 1e-3, "max |logit diff| %.3g", worst);
    for (int i = 0; i < 2; i++) {
        sprig_ctx_free(c[i]);
        sprig_mtp_state_free(ms[i]);
        free(logit[i]);
        free(hid[i]);
        free(hl[i]);
    }
    sprig_pool_free(pool);
    /* in Q8_0 beside the Q8_0 target: chain and dynamic-tree speculation equal plain decoding */
    const char *head8 = test_tmpfile("wide-mtp-q8.gguf");
    struct sprig_mkmodel_params p8 = shape(SPRIG_TYPE_Q8_0);
    CHECKF(sprig_widen_mtp_write(test_shared("models/stories260K.gguf"), test_shared("models/stories-mtp.gguf"), &p8, head8, &err) ==
               SPRIG_OK, "%s", err.msg);
    sprig_model *m8 = NULL;
    CHECKF(sprig_model_load(widened(SPRIG_TYPE_Q8_0), &m8, &err) == SPRIG_OK, "%s", err.msg);
    if (m8) {
        static struct buf plain, chain, tree;
        struct sprig_stats sp, sc, st;
        g_mtp_head = head8;
        run(m8, SPRIG_TREE_OFF, 0, 0, &plain, &sp);
        run(m8, SPRIG_TREE_OFF, 4, 0, &chain, &sc);
        run(m8, SPRIG_TREE_ON, 4, 6, &tree, &st);
        g_mtp_head = NULL;
        CHECK_STR(sc.path, "chain");
        CHECK_STR(st.path, "tree");
        CHECK(plain.n > 100);
        CHECK_STR(chain.p, plain.p);
        CHECK_STR(tree.p, plain.p);
        CHECKF(sc.emitted_per_verify > 2.0 && st.branch_rounds > 0, "chain %.3f emitted/verify, %lld branch rounds",
               sc.emitted_per_verify, (long long)st.branch_rounds);
        fprintf(stderr, "  widened MTP head, q8_0: chain %.3f emitted/verify, dynamic tree %.3f (%lld rounds won by a branch)\n",
                sc.emitted_per_verify, st.emitted_per_verify, (long long)st.branch_rounds);
        sprig_model_free(m8);
    }
    /* not an MTP head */
    p.n_heads = 8;
    CHECK(sprig_widen_mtp_write(test_shared("models/stories260K.gguf"), test_shared("models/stories-draft.gguf"), &p,
                                test_tmpfile("wide-mtp-bad.gguf"), &err) != SPRIG_OK);
    CHECKF(strstr(err.msg, "stories-draft.gguf") != NULL, "%s", err.msg);
out:
    for (int i = 0; i < 2; i++) {
        sprig_mtp_free(h[i]);
        sprig_model_free(m[i]);
    }
}

static void test_refuses_shapes_that_do_not_fit(void)
{
    static const struct { const char *field; int dim, heads, kv, ffn, layers; } bad[] = {
        { "dim", 32, 4, 2, 256, 7 },                   /* narrower than 64 */
        { "layers", 256, 16, 4, 256, 4 },              /* fewer than 5 */
        { "kv-heads", 256, 16, 2, 256, 7 },            /* fewer than 4 */
        { "head size", 256, 64, 16, 256, 7 },          /* 4 < 8 */
        { "query heads per kv head", 256, 8, 8, 256, 7 },  /* 1 < 2 */
        { "ffn", 256, 16, 4, 128, 7 },                 /* fewer than 172 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sprig_mkmodel_params p = shape(SPRIG_TYPE_F32);
        p.dim = bad[i].dim;
        p.n_heads = bad[i].heads;
        p.n_kv_heads = bad[i].kv;
        p.ffn = bad[i].ffn;
        p.n_layers = bad[i].layers;
        sprig_error err = { 0 };
        const char *out = test_tmpfile("wide-bad.gguf");
        CHECK(sprig_widen_write(test_shared("models/stories260K.gguf"), &p, out, &err) == SPRIG_E_INVALID_ARG);
        CHECKF(strstr(err.msg, bad[i].field) != NULL, "message '%s' should name %s", err.msg, bad[i].field);
        FILE *f = fopen(out, "rb");
        CHECKF(f == NULL, "%s: nothing may be written for a refused shape", bad[i].field);
        if (f) fclose(f);
    }
    struct sprig_mkmodel_params p = shape(SPRIG_TYPE_F32);
    sprig_error err = { 0 };
    CHECK(sprig_widen_write(test_shared("models/no-such-model.gguf"), &p, test_tmpfile("wide-x.gguf"), &err) != SPRIG_OK);
    CHECK(strstr(err.msg, "no-such-model.gguf") != NULL);
}

int main(void)
{
    RUN(test_shape_and_keys);
    RUN(test_logits_match_reference);
    RUN(test_greedy_matches_reference);
    RUN(test_speculation_on_the_widened_model);
    RUN(test_mtp_head_widens_with_its_target);
    RUN(test_refuses_shapes_that_do_not_fit);
    return test_summary("test-widen");
}
