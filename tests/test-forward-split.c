/*
 * tests/test-forward-split.c — the llama forward's thread-level splits give
 * the same bits as one thread: the row-wise ops between the matmuls (norms
 * fused with the residual adds, RoPE, SwiGLU) split across the pool's
 * threads (forced for every op here; by default only big batches split),
 * and every matmul prefetching its successor's weights. On the real
 * stories260K model and a synthetic Q8_0 one (odd dims, two layers), for 1-3
 * threads and pools with more threads than CPUs: a batch with every row's
 * logits equals the tokens decoded alone, one thread, no splitting.
 */
#include "test.h"
#include "mkmodel/mkmodel.h"
#include "model/internal.h"
#include "model/model.h"

#define N_TOK 29

static sprig_model *make_q8(void)
{
    struct sprig_mkmodel_params p;
    sprig_error err = { 0 };
    CHECK(sprig_mkmodel_preset("tiny", &p, &err) == SPRIG_OK);
    p.dim = 160;   /* 10 panels of 16, 5 quant blocks */
    p.n_heads = 10;
    p.n_kv_heads = 2;
    p.ffn = 224;
    p.n_layers = 2;
    p.type = SPRIG_TYPE_Q8_0;
    p.seed = 5;
    const char *path = test_tmpfile("split-q8_0.gguf");
    CHECKF(sprig_mkmodel_write(&p, path, &err) == SPRIG_OK, "%s", err.msg);
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(path, &m, &err) == SPRIG_OK, "%s", err.msg);
    return m;
}

/* logits[N_TOK][V] of: 4 history tokens, then the other N_TOK - 4 as one
 * batch (batched) or one at a time. */
static bool run(const sprig_model *m, sprig_pool *pool, bool batched, float *logits)
{
    const int V = m->hp.n_vocab;
    int32_t toks[N_TOK];
    for (int i = 0; i < N_TOK; i++) toks[i] = i == 0 ? 1 : 3 + (i * 89) % (V - 3);
    sprig_error err = { 0 };
    sprig_ctx *c = NULL;
    struct sprig_ctx_params cp = { .n_ctx = 64, .n_batch = 32 };
    if (sprig_ctx_create(m, pool, &cp, &c, &err) != SPRIG_OK) {
        CHECKF(false, "%s", err.msg);
        return false;
    }
    bool ok = true;
    if (batched) {
        ok &= sprig_forward(c, &(struct sprig_fwd){ .n = 4, .tokens = toks, .n_out = 4, .logits = logits }, &err) == SPRIG_OK;
        ok &= sprig_forward(c, &(struct sprig_fwd){ .n = N_TOK - 4, .tokens = toks + 4, .n_out = N_TOK - 4,
                                                    .logits = logits + (size_t)4 * V }, &err) == SPRIG_OK;
    } else {
        for (int i = 0; i < N_TOK; i++)
            ok &= sprig_forward(c, &(struct sprig_fwd){ .n = 1, .tokens = toks + i, .n_out = 1,
                                                        .logits = logits + (size_t)i * V }, &err) == SPRIG_OK;
    }
    CHECKF(ok, "forward failed: %s", err.msg);
    sprig_ctx_free(c);
    return ok;
}

static void check_model(const sprig_model *m, const char *what)
{
    if (!m) return;
    const size_t V = (size_t)m->hp.n_vocab;
    float *ref = malloc(sizeof(float) * V * N_TOK), *got = malloc(sizeof(float) * V * N_TOK);
    int64_t old = sprig_llama_rowwise_split_min(-1);
    run(m, NULL, false, ref);
    const int sizes[] = { 1, 2, 3, 2 * sprig_cpu_count() + 1 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        sprig_pool *pool = sprig_pool_create(sizes[s], NULL);
        CHECK(pool != NULL);
        if (!pool) continue;
        for (int split = 0; split <= 1; split++) {
            sprig_llama_rowwise_split_min(split ? 0 : -1);
            for (int batched = 0; batched <= 1; batched++) {
                memset(got, 0, sizeof(float) * V * N_TOK);
                if (!run(m, pool, batched, got)) continue;
                CHECKF(memcmp(got, ref, sizeof(float) * V * N_TOK) == 0,
                       "%s: %d threads, %s, row-wise ops %s: logits differ from one thread decoding alone", what,
                       sizes[s], batched ? "batched" : "one at a time", split ? "split" : "by default");
            }
        }
        sprig_pool_free(pool);
    }
    sprig_llama_rowwise_split_min(old);
    free(ref);
    free(got);
}

static void test_stories_split_equals_one_thread(void)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    CHECKF(sprig_model_load(test_shared("models/stories260K.gguf"), &m, &err) == SPRIG_OK, "%s", err.msg);
    check_model(m, "stories260K");
    sprig_model_free(m);
}

static void test_q8_split_equals_one_thread(void)
{
    sprig_model *m = make_q8();
    check_model(m, "synthetic q8_0");
    sprig_model_free(m);
}

int main(void)
{
    RUN(test_stories_split_equals_one_thread);
    RUN(test_q8_split_equals_one_thread);
    return test_summary("test-forward-split");
}
