/*
 * tests/test-widen.c — function-preserving widening (src/widen.c): the real
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
#include "widen.h"
#include "model/model.h"
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

static void run(const sprig_model *m, int tree, int draft_max, int branches, struct buf *out, struct sprig_stats *st)
{
    struct sprig_session_params p = sprig_session_default_params();
    p.temp = 0;
    p.n_threads = 2;
    p.ignore_eos = true;
    p.tree = tree;
    if (draft_max > 0) {
        p.drafter = SPRIG_DRAFTER_MODEL;
        p.draft_path = test_shared("models/stories-draft.gguf");
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
    RUN(test_refuses_shapes_that_do_not_fit);
    return test_summary("test-widen");
}
