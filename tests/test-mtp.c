/*
 * tests/test-mtp.c — the MTP assistant head on the real fixtures: drafts,
 * runner-ups and step-1 logits against the float32 reference
 * (models/vectors/mtp_drafts.txt), and the fit checks against a target.
 */
#include "test.h"
#include "vectors.h"
#include "model/model.h"
#include "model/mtp.h"
#include "tensor/ops.h"
#include "base/pool.h"

static int second_best(const float *x, int n, int best)
{
    int r = best == 0 ? 1 : 0;
    for (int i = 0; i < n; i++)
        if (i != best && x[i] > x[r]) r = i;
    return r;
}

static void test_mtp_drafts_match_reference(void)
{
    sprig_error err = { 0 };
    sprig_model *t = NULL;
    CHECKF(sprig_model_load(test_shared("models/stories260K.gguf"), &t, &err) == SPRIG_OK, "%s", err.msg);
    if (!t) return;
    sprig_mtp *h = NULL;
    CHECKF(sprig_mtp_load(test_shared("models/stories-mtp.gguf"), t, &h, &err) == SPRIG_OK, "%s", err.msg);
    if (!h) { sprig_model_free(t); return; }
    CHECK_EQ_INT(sprig_mtp_kv_layer(h), 4);
    struct vec_file vf;
    CHECK(vec_load(test_shared("models/vectors/mtp_drafts.txt"), &vf) == 0);
    CHECK(vf.n_cases >= 3);
    int V = t->hp.n_vocab, D = t->hp.dim;
    float *logits = malloc(sizeof(float) * V), *hid = malloc(sizeof(float) * D);
    for (int ci = 0; ci < vf.n_cases; ci++) {
        const struct vec_case *c = &vf.cases[ci];
        const struct vec_field *ids = vec_get(c, "prompt_ids"), *bonus = vec_get(c, "bonus"), *drafts = vec_get(c, "drafts");
        const struct vec_field *runner = vec_get(c, "runner_up"), *l1 = vec_get(c, "step1_logits"), *p = vec_get(c, "p");
        CHECK(ids && bonus && drafts && runner && l1 && p);
        if (!ids || !bonus || !drafts || !runner || !l1 || !p) continue;
        sprig_ctx *ctx = NULL;
        struct sprig_ctx_params cp = { .n_ctx = 128, .n_batch = 32 };
        CHECK(sprig_ctx_create(t, NULL, &cp, &ctx, &err) == SPRIG_OK);
        CHECK(sprig_prefill(ctx, ids->ids, ids->n, logits, hid, &err) == SPRIG_OK);
        int32_t tok = sprig_argmax(logits, V);
        CHECK_EQ_INT(tok, bonus->ids[0]);
        CHECK_EQ_INT(atoi(p->text), ids->n - 1);
        sprig_mtp_state *s = sprig_mtp_state_create(h, 128, &err);
        for (int k = 0; k < drafts->n; k++) {
            CHECK(sprig_mtp_step(h, s, NULL, sprig_ctx_kv(ctx), hid, tok, ids->n - 1, hid, logits, &err) == SPRIG_OK);
            if (k == 0) {
                double md = 0;
                for (int i = 0; i < V; i++) md = fmax(md, fabs((double)logits[i] - l1->vals[i]));
                CHECKF(md <= 1e-4, "case %d: step-1 logits max diff %g", ci, md);
                fprintf(stderr, "  case %d: step-1 max |logit diff| %.3g\n", ci, md);
            }
            tok = sprig_argmax(logits, V);
            CHECKF(tok == drafts->ids[k], "case %d step %d: draft %d, want %d", ci, k, tok, drafts->ids[k]);
            CHECK_EQ_INT(second_best(logits, V, tok), runner->ids[k]);
        }
        sprig_mtp_state_free(s);
        sprig_ctx_free(ctx);
    }
    free(logits);
    free(hid);
    vec_free(&vf);
    sprig_mtp_free(h);
    sprig_model_free(t);
}

/* n rows in one step_rows call give each row the bits of its own one-row step */
static void test_mtp_step_rows_equals_steps(void)
{
    sprig_error err = { 0 };
    sprig_model *t = NULL;
    CHECKF(sprig_model_load(test_shared("models/stories260K.gguf"), &t, &err) == SPRIG_OK, "%s", err.msg);
    if (!t) return;
    sprig_mtp *h = NULL;
    CHECKF(sprig_mtp_load(test_shared("models/stories-mtp.gguf"), t, &h, &err) == SPRIG_OK, "%s", err.msg);
    sprig_pool *pool = sprig_pool_create(2, &err);
    sprig_ctx *ctx = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 32 };
    CHECK(h && sprig_ctx_create(t, pool, &cp, &ctx, &err) == SPRIG_OK);
    enum { N = SPRIG_MTP_MAX_ROWS };
    const int V = t->hp.n_vocab, D = t->hp.dim;
    static const int32_t prompt[] = { 1, 403, 407, 261, 378, 362, 328, 270 };
    float *hid = malloc(sizeof(float) * D * N), *h1 = malloc(sizeof(float) * D * N), *hb = malloc(sizeof(float) * D * N);
    float *l1 = malloc(sizeof(float) * V * N), *lb = malloc(sizeof(float) * V * N);
    sprig_mtp_state *s = h ? sprig_mtp_state_create(h, 64, &err) : NULL;
    if (ctx && s && sprig_prefill(ctx, prompt, 8, l1, hid, &err) == SPRIG_OK) {
        int32_t toks[N];
        for (int r = 0; r < N; r++) {   /* distinct inputs per row */
            toks[r] = (int32_t)(5 + 37 * r);
            for (int i = 0; i < D; i++) hid[r * D + i] = hid[i] * (1.0f + 0.1f * (float)r);
        }
        for (int n = 1; n <= N; n += 3) {
            for (int r = 0; r < n; r++)
                CHECK(sprig_mtp_step(h, s, pool, sprig_ctx_kv(ctx), hid + r * D, toks[r], 7, h1 + r * D, l1 + (size_t)r * V, &err) == SPRIG_OK);
            CHECK(sprig_mtp_step_rows(h, s, pool, sprig_ctx_kv(ctx), hid, toks, n, 7, hb, lb, &err) == SPRIG_OK);
            CHECKF(!memcmp(h1, hb, sizeof(float) * D * (size_t)n) && !memcmp(l1, lb, sizeof(float) * V * (size_t)n),
                   "%d rows: step_rows differs from one-row steps", n);
        }
        CHECK(sprig_mtp_step_rows(h, s, pool, sprig_ctx_kv(ctx), hid, toks, N + 1, 7, hb, lb, &err) == SPRIG_E_INVALID_ARG);
    }
    sprig_mtp_state_free(s);
    free(hid); free(h1); free(hb); free(l1); free(lb);
    sprig_ctx_free(ctx);
    sprig_pool_free(pool);
    sprig_mtp_free(h);
    sprig_model_free(t);
}

static void test_mtp_refuses_wrong_target(void)
{
    sprig_error err = { 0 };
    sprig_model *d = NULL;
    /* the draft model (dim 32) is not a target the head fits */
    CHECK(sprig_model_load(test_shared("models/stories-draft.gguf"), &d, &err) == SPRIG_OK);
    if (!d) return;
    sprig_mtp *h = NULL;
    CHECK(sprig_mtp_load(test_shared("models/stories-mtp.gguf"), d, &h, &err) != SPRIG_OK);
    CHECK(h == NULL);
    CHECKF(strstr(err.msg, "embedding_length") != NULL, "%s", err.msg);
    /* a plain model is not an MTP head */
    sprig_model *t = NULL;
    CHECK(sprig_model_load(test_shared("models/stories260K.gguf"), &t, &err) == SPRIG_OK);
    CHECK(sprig_mtp_load(test_shared("models/stories-draft.gguf"), t, &h, &err) != SPRIG_OK);
    CHECKF(strstr(err.msg, "mtp.kind") != NULL, "%s", err.msg);
    sprig_model_free(t);
    sprig_model_free(d);
}

int main(void)
{
    RUN(test_mtp_drafts_match_reference);
    RUN(test_mtp_step_rows_equals_steps);
    RUN(test_mtp_refuses_wrong_target);
    return test_summary("test-mtp");
}
