/*
 * tests/test-model-load.c — architecture-level validation: broken variants
 * of stories260K.gguf (missing and misshapen tensors, unsupported types,
 * missing or absurd hyper-parameters, broken tokenizer keys, an unknown
 * architecture) must each fail with a message naming the key or tensor and
 * never crash; a model without output.weight runs tied to token_embd; a
 * layer retyped to Q4_1, Q5_0 or Q5_1 (llama-quantize's fallbacks) loads.
 */
#include "test.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tensor/ops.h"

/* What to change while copying stories260K.gguf. */
struct edit {
    const char *drop_kv;          /* key to leave out */
    const char *set_kv;           /* key to (re)write as u32 `u32` or str `str` */
    uint32_t u32;
    const char *str;
    const char *drop_tensor;      /* tensor to leave out */
    const char *reshape_tensor;   /* tensor to write with ne0/ne1 below (zero data) */
    int64_t ne0, ne1;
    const char *retype_tensor;    /* tensor to write as `type` (zero data, same shape) */
    int type;
};

static const char *write_variant(const char *name, const struct edit *e)
{
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(test_shared("models/stories260K.gguf"), &err);
    if (!g) { CHECK(g); return NULL; }
    sprig_gguf_writer *w = sprig_gguf_writer_create(&err);
    bool set_done = false;
    for (int64_t i = 0; i < sprig_gguf_n_kv(g); i++) {
        const char *k = sprig_gguf_kv_key(g, i);
        if (e->drop_kv && !strcmp(k, e->drop_kv)) continue;
        if (e->set_kv && !strcmp(k, e->set_kv)) continue;
        CHECK(sprig_gguf_w_copy_kv(w, g, i, &err) == SPRIG_OK);
    }
    if (e->set_kv && !set_done) {
        if (e->str) CHECK(sprig_gguf_w_str(w, e->set_kv, e->str, strlen(e->str), &err) == SPRIG_OK);
        else CHECK(sprig_gguf_w_u32(w, e->set_kv, e->u32, &err) == SPRIG_OK);
    }
    static uint8_t zeros[1 << 20];
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        if (e->drop_tensor && !strcmp(t->name, e->drop_tensor)) continue;
        if (e->reshape_tensor && !strcmp(t->name, e->reshape_tensor)) {
            int64_t ne[2] = { e->ne0, e->ne1 };
            CHECK(sprig_gguf_w_tensor(w, t->name, t->type, 2, ne, zeros, &err) == SPRIG_OK);
            continue;
        }
        if (e->retype_tensor && !strcmp(t->name, e->retype_tensor)) {
            CHECK(sprig_gguf_w_tensor(w, t->name, e->type, t->n_dims, t->ne, zeros, &err) == SPRIG_OK);
            continue;
        }
        CHECK(sprig_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) == SPRIG_OK);
    }
    const char *path = test_tmpfile(name);
    CHECKF(sprig_gguf_writer_write(w, path, &err) == SPRIG_OK, "%s", err.msg);
    sprig_gguf_writer_free(w);
    sprig_gguf_close(g);
    return path;
}

static void expect_fail(const char *name, const struct edit *e, sprig_status want, const char *needle)
{
    const char *path = write_variant(name, e);
    if (!path) return;
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_status st = sprig_model_load(path, &m, &err);
    CHECKF(st == want, "%s: status %d (%s), want %d", name, st, err.msg, want);
    CHECK(m == NULL);
    CHECKF(strstr(err.msg, needle) != NULL, "%s: message '%s' should name '%s'", name, err.msg, needle);
    sprig_model_free(m);
}

/* llama-quantize's 32-block fallback types load (their matmul is the reference). */
static void test_fallback_types_load(void)
{
    const int tys[3] = { SPRIG_TYPE_Q4_1, SPRIG_TYPE_Q5_0, SPRIG_TYPE_Q5_1 };
    for (int i = 0; i < 3; i++) {
        const char *path = write_variant("q5.gguf", &(struct edit){ .retype_tensor = "blk.1.attn_q.weight", .type = tys[i] });
        if (!path) return;
        sprig_error err = { 0 };
        sprig_model *m = NULL;
        CHECKF(sprig_model_load(path, &m, &err) == SPRIG_OK, "%s: %s", sprig_type_name(tys[i]), err.msg);
        sprig_model_free(m);
    }
}

static void test_broken_variants_fail_by_name(void)
{
    expect_fail("no-ffn-up.gguf", &(struct edit){ .drop_tensor = "blk.3.ffn_up.weight" }, SPRIG_E_FORMAT, "missing tensor 'blk.3.ffn_up.weight'");
    expect_fail("no-embd.gguf", &(struct edit){ .drop_tensor = "token_embd.weight" }, SPRIG_E_FORMAT, "token_embd.weight");
    expect_fail("no-norm.gguf", &(struct edit){ .drop_tensor = "output_norm.weight" }, SPRIG_E_FORMAT, "output_norm.weight");
    expect_fail("k-shape.gguf", &(struct edit){ .reshape_tensor = "blk.0.attn_k.weight", .ne0 = 64, .ne1 = 64 },
                SPRIG_E_FORMAT, "tensor 'blk.0.attn_k.weight' has shape [64, 64");
    expect_fail("ffn-shape.gguf", &(struct edit){ .reshape_tensor = "blk.4.ffn_down.weight", .ne0 = 64, .ne1 = 172 },
                SPRIG_E_FORMAT, "blk.4.ffn_down.weight");
    /* known ggml types sprig has no conversions for: refused by name, with the tensor */
    expect_fail("mxfp4.gguf", &(struct edit){ .retype_tensor = "blk.1.attn_q.weight", .type = 39 }, SPRIG_E_UNSUPPORTED,
                "tensor 'blk.1.attn_q.weight' has type mxfp4, which sprig cannot compute");
    expect_fail("iq4nl.gguf", &(struct edit){ .retype_tensor = "blk.2.ffn_up.weight", .type = 20 }, SPRIG_E_UNSUPPORTED,
                "tensor 'blk.2.ffn_up.weight' has type iq4_nl");
    expect_fail("q8_1.gguf", &(struct edit){ .retype_tensor = "output.weight", .type = 9 }, SPRIG_E_UNSUPPORTED,
                "tensor 'output.weight' has type q8_1");
    expect_fail("iq-norm.gguf", &(struct edit){ .retype_tensor = "blk.0.attn_norm.weight", .type = 20 }, SPRIG_E_UNSUPPORTED,
                "tensor 'blk.0.attn_norm.weight' has type iq4_nl");
    expect_fail("arch.gguf", &(struct edit){ .set_kv = "general.architecture", .str = "mamba" }, SPRIG_E_UNSUPPORTED, "mamba");
    expect_fail("no-embd-len.gguf", &(struct edit){ .drop_kv = "llama.embedding_length" }, SPRIG_E_FORMAT, "llama.embedding_length");
    expect_fail("no-eps.gguf", &(struct edit){ .drop_kv = "llama.attention.layer_norm_rms_epsilon" }, SPRIG_E_FORMAT, "layer_norm_rms_epsilon");
    expect_fail("layers.gguf", &(struct edit){ .set_kv = "llama.block_count", .u32 = 100000 }, SPRIG_E_FORMAT, "llama.block_count");
    expect_fail("more-layers.gguf", &(struct edit){ .set_kv = "llama.block_count", .u32 = 6 }, SPRIG_E_FORMAT, "blk.5.");
    expect_fail("heads0.gguf", &(struct edit){ .set_kv = "llama.attention.head_count", .u32 = 0 }, SPRIG_E_FORMAT, "head_count");
    expect_fail("heads7.gguf", &(struct edit){ .set_kv = "llama.attention.head_count", .u32 = 7 }, SPRIG_E_FORMAT, "head_count");
    expect_fail("kvheads3.gguf", &(struct edit){ .set_kv = "llama.attention.head_count_kv", .u32 = 3 }, SPRIG_E_FORMAT, "head_count_kv");
    expect_fail("dim.gguf", &(struct edit){ .set_kv = "llama.embedding_length", .u32 = 65 }, SPRIG_E_FORMAT, "embedding_length");
    expect_fail("rot.gguf", &(struct edit){ .set_kv = "llama.rope.dimension_count", .u32 = 9 }, SPRIG_E_FORMAT, "rope.dimension_count");
    expect_fail("no-tokens.gguf", &(struct edit){ .drop_kv = "tokenizer.ggml.tokens" }, SPRIG_E_FORMAT, "tokenizer.ggml.tokens");
    expect_fail("bos.gguf", &(struct edit){ .set_kv = "tokenizer.ggml.bos_token_id", .u32 = 9999 }, SPRIG_E_FORMAT, "bos");
    expect_fail("tokmodel.gguf", &(struct edit){ .set_kv = "tokenizer.ggml.model", .str = "bert" }, SPRIG_E_UNSUPPORTED, "bert");
    expect_fail("vocabsize.gguf", &(struct edit){ .set_kv = "llama.vocab_size", .u32 = 511 }, SPRIG_E_FORMAT, "vocab_size");
}

/* Without output.weight the output projection is tied to token_embd; in
 * stories260K the two are equal, so the logits must be identical. */
static void test_tied_output_equals_separate(void)
{
    const char *path = write_variant("tied.gguf", &(struct edit){ .drop_tensor = "output.weight" });
    sprig_error err = { 0 };
    sprig_model *a = NULL, *b = NULL;
    CHECKF(sprig_model_load(path, &a, &err) == SPRIG_OK, "%s", err.msg);
    CHECK(sprig_model_load(test_shared("models/stories260K.gguf"), &b, &err) == SPRIG_OK);
    if (!a || !b) { sprig_model_free(a); sprig_model_free(b); return; }
    CHECK(a->tied_output && !b->tied_output);
    int32_t toks[4] = { 1, 403, 407, 261 };
    float la[512], lb[512];
    sprig_ctx *ca = NULL, *cb = NULL;
    CHECK(sprig_ctx_create(a, NULL, NULL, &ca, &err) == SPRIG_OK);
    CHECK(sprig_ctx_create(b, NULL, NULL, &cb, &err) == SPRIG_OK);
    CHECK(sprig_prefill(ca, toks, 4, la, NULL, &err) == SPRIG_OK);
    CHECK(sprig_prefill(cb, toks, 4, lb, NULL, &err) == SPRIG_OK);
    CHECK(memcmp(la, lb, sizeof la) == 0);
    sprig_ctx_free(ca);
    sprig_ctx_free(cb);
    sprig_model_free(a);
    sprig_model_free(b);
}

static void test_context_params_are_checked(void)
{
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    CHECK(sprig_model_load(test_shared("models/stories260K.gguf"), &m, &err) == SPRIG_OK);
    if (!m) return;
    sprig_ctx *c = NULL;
    CHECK(sprig_ctx_create(m, NULL, &(struct sprig_ctx_params){ .n_ctx = -5 }, &c, &err) == SPRIG_E_INVALID_ARG && !c);
    CHECK(strstr(err.msg, "n_ctx") != NULL);
    CHECK(sprig_ctx_create(m, NULL, &(struct sprig_ctx_params){ .n_batch = 100000 }, &c, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "n_batch") != NULL);
    CHECK(sprig_ctx_create(m, NULL, &(struct sprig_ctx_params){ .kv_mode = 99 }, &c, &err) == SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "kv type") != NULL);
    sprig_model_free(m);
}

int main(void)
{
    RUN(test_fallback_types_load);
    RUN(test_broken_variants_fail_by_name);
    RUN(test_tied_output_equals_separate);
    RUN(test_context_params_are_checked);
    return test_summary("test-model-load");
}
