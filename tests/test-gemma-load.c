/*
 * tests/test-gemma-load.c — the gemma hyper-parameters as sprig reads them
 * (llama.cpp's conventions) and the bad files it refuses, each by the key:
 *   - a period pattern (layer l slides when l % P < P - 1) and the per-layer
 *     array form give the layers' windows; rope.freq_base_swa and the
 *     default 10000 for the sliding layers' theta; the final soft-cap;
 *   - a window larger than the context, a pattern array of the wrong
 *     length or with a value other than 0/1, a soft-cap of zero (and a
 *     negative one), a local theta of zero, head counts that do not divide,
 *     a sliding window on an architecture without sliding layers: each an
 *     error naming the key, no model.
 *   - the gemma4 assistant against its target: a hidden size or kv heads
 *     that differ from the target's, or a target that is not gemma4;
 *   - gemma4: each layer's head size and the cache it reads (the shared-KV
 *     layers: llama.cpp's rule), unscaled queries; a scalar pattern, a
 *     head_count_kv array of the wrong length, an expert count without its
 *     expert_used_count and
 *     too many shared layers refused by the key.
 * Files: a gemma3, a gemma4 (and a llama) from sprig mkmodel, copied with
 * one key changed.
 */
#include "test.h"
#include "test_gguf_edit.h"
#include "gguf/gguf.h"
#include "mkmodel/mkmodel.h"
#include "model/assistant.h"
#include "model/model.h"

#include <math.h>
#include <stdlib.h>

static char *g_gemma, *g_llama, *g_gemma4, *g_gemma2;

static void make_models(void)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = "gemma3";
    mp.n_layers = 7;
    mp.head_dim = 32;
    mp.ctx = 512;
    mp.window = 64;
    mp.swa_pattern = 3;
    mp.final_softcap = 30.0f;
    g_gemma = strdup(test_tmpfile("gemma-load.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, g_gemma, &err) == SPRIG_OK, "%s", err.msg);
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = "gemma4";
    mp.n_layers = 6;
    mp.head_dim = 32;
    mp.head_dim_swa = 16;
    mp.ctx = 512;
    mp.window = 64;
    mp.shared_kv = 2;
    g_gemma4 = strdup(test_tmpfile("gemma-load-4.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, g_gemma4, &err) == SPRIG_OK, "%s", err.msg);
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = "gemma2";
    g_gemma2 = strdup(test_tmpfile("gemma-load-2.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, g_gemma2, &err) == SPRIG_OK, "%s", err.msg);
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    g_llama = strdup(test_tmpfile("gemma-load-llama.gguf"));
    CHECKF(sprig_mkmodel_write(&mp, g_llama, &err) == SPRIG_OK, "%s", err.msg);
}

static void test_pattern_and_rope(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(g_gemma, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (!m) return;
    CHECK_EQ_INT(m->hp.swa_window, 64);
    static const int period3[7] = { 64, 64, 0, 64, 64, 0, 64 };   /* llama.cpp: l % 3 < 2 slides */
    for (int l = 0; l < 7; l++) CHECK_EQ_INT(m->layers[l].window, period3[l]);
    CHECK(m->hp.rope_theta_swa == 10000.0f);
    CHECK(m->hp.rope_freq_scale_swa == 1.0f);
    CHECK(m->hp.final_softcap == 30.0f);
    CHECK(m->hp.attn_scale == 1.0f / sqrtf(32.0f));
    sprig_model_free(m);

    /* the per-layer array form */
    const uint8_t flags[7] = { 0, 1, 1, 0, 0, 1, 0 };
    struct test_key_edit e = { "gemma3.attention.sliding_window_pattern", SPRIG_GGUF_BOOL, flags, 7 };
    const char *p = test_gguf_with_key(g_gemma, "gemma-load-arr.gguf", &e);
    CHECKF(p && sprig_model_load(p, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        for (int l = 0; l < 7; l++) CHECK_EQ_INT(m->layers[l].window, flags[l] ? 64 : 0);
        sprig_model_free(m);
        m = NULL;
    }
    /* period 0: every layer slides; the local theta as written */
    const uint32_t zero = 0;
    e = (struct test_key_edit){ "gemma3.attention.sliding_window_pattern", SPRIG_GGUF_U32, &zero, 0 };
    p = test_gguf_with_key(g_gemma, "gemma-load-p0.gguf", &e);
    CHECKF(p && sprig_model_load(p, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        for (int l = 0; l < 7; l++) CHECK_EQ_INT(m->layers[l].window, 64);
        sprig_model_free(m);
        m = NULL;
    }
    const float theta = 5000.0f;
    e = (struct test_key_edit){ "gemma3.rope.freq_base_swa", SPRIG_GGUF_F32, &theta, 0 };
    p = test_gguf_with_key(g_gemma, "gemma-load-theta.gguf", &e);
    CHECKF(p && sprig_model_load(p, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        CHECK(m->hp.rope_theta_swa == 5000.0f);
        sprig_model_free(m);
    }
}

static void test_bad_files_name_the_key(void)
{
    const uint32_t big = 600, three = 3;
    const float fzero = 0.0f, fneg = -2.0f;
    const uint8_t six[6] = { 1, 1, 0, 1, 1, 0 }, two[7] = { 1, 2, 0, 1, 1, 0, 1 };
    struct test_key_edit e;
    e = (struct test_key_edit){ "gemma3.attention.sliding_window", SPRIG_GGUF_U32, &big, 0 };
    test_expect_load_fails(g_gemma, "gl-window.gguf", &e, "gemma3.attention.sliding_window' = 600");
    e = (struct test_key_edit){ "gemma3.attention.sliding_window_pattern", SPRIG_GGUF_BOOL, six, 6 };
    test_expect_load_fails(g_gemma, "gl-arr6.gguf", &e, "gemma3.attention.sliding_window_pattern' has 6 entries");
    e = (struct test_key_edit){ "gemma3.attention.sliding_window_pattern", SPRIG_GGUF_U8, two, 7 };
    test_expect_load_fails(g_gemma, "gl-arr2.gguf", &e, "gemma3.attention.sliding_window_pattern'[1] = 2");
    e = (struct test_key_edit){ "gemma3.final_logit_softcapping", SPRIG_GGUF_F32, &fzero, 0 };
    test_expect_load_fails(g_gemma, "gl-cap0.gguf", &e, "gemma3.final_logit_softcapping' = 0");
    e = (struct test_key_edit){ "gemma3.final_logit_softcapping", SPRIG_GGUF_F32, &fneg, 0 };
    test_expect_load_fails(g_gemma, "gl-capneg.gguf", &e, "gemma3.final_logit_softcapping' = -2");
    e = (struct test_key_edit){ "gemma3.rope.freq_base_swa", SPRIG_GGUF_F32, &fzero, 0 };
    test_expect_load_fails(g_gemma, "gl-theta0.gguf", &e, "gemma3.rope.freq_base_swa' = 0");
    e = (struct test_key_edit){ "gemma3.attention.head_count_kv", SPRIG_GGUF_U32, &three, 0 };
    test_expect_load_fails(g_gemma, "gl-heads.gguf", &e, "head_count_kv 3");
    e = (struct test_key_edit){ "gemma3.attn_logit_softcapping", SPRIG_GGUF_F32, &fneg, 0 };
    test_expect_load_fails(g_gemma, "gl-attncap.gguf", &e, "gemma3.attn_logit_softcapping");
    e = (struct test_key_edit){ "llama.attention.sliding_window", SPRIG_GGUF_U32, &big, 0 };
    test_expect_load_fails(g_llama, "gl-llama-window.gguf", &e, "llama.attention.sliding_window");
}

/* gemma2: llama.cpp's defaults (no window key: 4096, past this context of
 * 512 it never binds; every other layer; caps 50 / 30 as written) and a zero
 * cap refused by the key */
static void test_gemma2(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(g_gemma2, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        CHECK_EQ_INT(m->hp.swa_window, 512);
        CHECK_EQ_INT(m->layers[0].window, 512);
        CHECK_EQ_INT(m->layers[1].window, 0);
        CHECK(m->hp.attn_softcap == 50.0f && m->hp.final_softcap == 30.0f);
        CHECK(m->hp.rope_theta_swa == m->hp.rope_theta);
        sprig_model_free(m);
    }
    const float fzero = 0.0f;
    struct test_key_edit e = { "gemma2.attn_logit_softcapping", SPRIG_GGUF_F32, &fzero, 0 };
    test_expect_load_fails(g_gemma2, "g2-cap0.gguf", &e, "gemma2.attn_logit_softcapping' = 0");
}

/* gemma4: per-layer shapes as read, and its own bad files */
static void test_gemma4(void)
{
    sprig_model *m = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_model_load(g_gemma4, &m, &err) == SPRIG_OK, "%s", err.msg);
    if (m) {
        CHECK_EQ_INT(m->hp.n_kv_start, 4);
        for (int l = 0; l < 6; l++) {
            const struct sprig_layer *L = &m->layers[l];
            CHECK_EQ_INT(L->head_dim, L->window ? 16 : 32);
            if (l >= 4) {   /* llama.cpp's rule: a shared sliding layer reads layer 2, a global one layer 3 */
                CHECK_EQ_INT(L->kv_layer, L->window ? 2 : 3);
                CHECK(L->wk.raw == NULL);
            } else {
                CHECK_EQ_INT(L->kv_layer, l);
            }
        }
        CHECK(m->hp.attn_scale == 1.0f);
        sprig_model_free(m);
    }
    const uint32_t n128 = 128, six = 6;
    const int32_t kv5[5] = { 2, 2, 2, 2, 2 };
    struct test_key_edit e;
    e = (struct test_key_edit){ "gemma4.attention.sliding_window_pattern", SPRIG_GGUF_U32, &six, 0 };
    test_expect_load_fails(g_gemma4, "g4-pattern-scalar.gguf", &e, "gemma4.attention.sliding_window_pattern' must be a per-layer array");
    e = (struct test_key_edit){ "gemma4.attention.head_count_kv", SPRIG_GGUF_I32, kv5, 5 };
    test_expect_load_fails(g_gemma4, "g4-kv5.gguf", &e, "gemma4.attention.head_count_kv' has 5 entries");
    e = (struct test_key_edit){ "gemma4.expert_count", SPRIG_GGUF_U32, &n128, 0 };
    /* experts are read now (model/moe.h): an expert count without expert_used_count is refused by that key */
    test_expect_load_fails(g_gemma4, "g4-moe.gguf", &e, "gemma4.expert_used_count");
    e = (struct test_key_edit){ "gemma4.attention.shared_kv_layers", SPRIG_GGUF_U32, &six, 0 };
    test_expect_load_fails(g_gemma4, "g4-shared.gguf", &e, "gemma4.attention.shared_kv_layers' = 6");
}

/* Gemma 4's assistant: loads against its target; one whose hidden size
 * (embedding_length_out) or kv heads differ from the target's, or a target
 * that is not gemma4, is refused by the key */
static void test_assistant(void)
{
    sprig_error err = { 0 };
    struct sprig_mkmodel_params mp;
    CHECK(sprig_mkmodel_preset("tiny", &mp, &err) == SPRIG_OK);
    mp.arch = "gemma4";
    mp.n_layers = 6;
    mp.head_dim = 32;
    mp.head_dim_swa = 16;
    mp.window = 64;
    mp.shared_kv = 2;
    mp.swa_layers = "sssgsg";
    const char *tp = test_tmpfile("gl-asst-target.gguf");
    char *target = strdup(tp);
    CHECKF(sprig_mkmodel_write(&mp, target, &err) == SPRIG_OK, "%s", err.msg);
    struct sprig_mkmodel_params ap;
    CHECK(sprig_mkmodel_preset("tiny", &ap, &err) == SPRIG_OK);
    ap.arch = "gemma4-assistant";
    ap.target = target;
    ap.dim = 32;
    ap.vocab = ap.ctx = 0;
    char *asst = strdup(test_tmpfile("gl-asst.gguf"));
    CHECKF(sprig_mkmodel_write(&ap, asst, &err) == SPRIG_OK, "%s", err.msg);
    sprig_model *t = NULL, *g3 = NULL;
    CHECKF(sprig_model_load(target, &t, &err) == SPRIG_OK, "%s", err.msg);
    CHECKF(sprig_model_load(g_gemma, &g3, &err) == SPRIG_OK, "%s", err.msg);
    if (t && g3) {
        sprig_assistant *a = NULL;
        CHECK(sprig_assistant_file_is(asst));
        CHECKF(sprig_assistant_load(asst, t, &a, &err) == SPRIG_OK, "%s", err.msg);
        sprig_assistant_free(a);
        a = NULL;
        CHECK(sprig_assistant_load(asst, g3, &a, &err) != SPRIG_OK && !a);
        CHECKF(strstr(err.msg, "gemma4 target, not 'gemma3'"), "%s", err.msg);
        const uint32_t d99 = 96;
        struct test_key_edit e = { "gemma4-assistant.embedding_length_out", SPRIG_GGUF_U32, &d99, 0 };
        const char *bad = test_gguf_with_key(asst, "gl-asst-dim.gguf", &e);
        CHECK(bad && sprig_assistant_load(bad, t, &a, &err) != SPRIG_OK && !a);
        CHECKF(strstr(err.msg, "gemma4-assistant.embedding_length_out' = 96 but the target's hidden size"), "%s", err.msg);
        const int32_t kv[2] = { 3, 3 };
        e = (struct test_key_edit){ "gemma4-assistant.attention.head_count_kv", SPRIG_GGUF_I32, kv, 2 };
        bad = test_gguf_with_key(asst, "gl-asst-kv.gguf", &e);
        CHECK(bad && sprig_assistant_load(bad, t, &a, &err) != SPRIG_OK && !a);
        CHECKF(strstr(err.msg, "head_count_kv = 3 but the target layer"), "%s", err.msg);
    }
    sprig_model_free(t);
    sprig_model_free(g3);
    free(target);
    free(asst);
}

int main(void)
{
    make_models();
    RUN(test_pattern_and_rope);
    RUN(test_bad_files_name_the_key);
    RUN(test_gemma4);
    RUN(test_gemma2);
    RUN(test_assistant);
    free(g_gemma4);
    free(g_gemma2);
    free(g_gemma);
    free(g_llama);
    return test_summary("test-gemma-load");
}
