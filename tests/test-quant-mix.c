/*
 * tests/test-quant-mix.c — llama.cpp's per-tensor type choice (quant_mix.c)
 * on model shapes the synthetic files do not reach: 32 layers (Llama 2 7B's
 * Q4_K_M pattern of Q6_K attn_v / ffn_down, as in the published files),
 * GQA and Q2_K, a 70B and a 65B, 8 experts (expert layers read from the
 * names), tied embeddings, every fallback (rows of 896 and of 100), the
 * tensors never quantized, pure and float file types, the file type names
 * and llama.cpp's tensor order. tests/test-cli-quantize-llama.sh checks the
 * same rules against llama-quantize itself where it is installed.
 */
#include "test.h"
#include "gguf/quant_mix.h"
#include "tensor/types.h"

static struct sprig_qmix mix(const char *ft, const char *arch, int n_layer, int n_head, int n_head_kv, int n_expert, bool tied)
{
    struct sprig_qmix q;
    const struct sprig_ftype *f = sprig_ftype_find(ft);
    CHECKF(f != NULL, "file type %s", ft);
    sprig_qmix_init(&q, f, false, &(struct sprig_qmix_model){ .arch = arch, .n_layer = n_layer, .n_head = n_head,
                                                             .n_head_kv = n_head_kv, .n_expert = n_expert, .tied = tied });
    return q;
}

/* One dense layer in llama.cpp's order (by name), returning attn_v's and ffn_down's types. */
static void layer(struct sprig_qmix *q, int l, int64_t dim, int64_t ffn, int *v, int *down, int *out, int *k)
{
    static const char *const names[] = { "attn_k", "attn_norm", "attn_output", "attn_q", "attn_v", "ffn_down", "ffn_gate", "ffn_norm", "ffn_up" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, names[i]);
        bool norm = strstr(names[i], "norm") != NULL;
        int t = sprig_qmix_type(q, nm, norm ? 1 : 2, !strcmp(names[i], "ffn_down") ? ffn : dim, SPRIG_TYPE_F32);
        if (norm) CHECKF(t == SPRIG_TYPE_F32, "%s stays f32", nm);
        if (!strcmp(names[i], "attn_v")) *v = t;
        if (!strcmp(names[i], "ffn_down")) *down = t;
        if (!strcmp(names[i], "attn_output") && out) *out = t;
        if (!strcmp(names[i], "attn_k") && k) *k = t;
    }
}

static void test_llama2_7b_q4_k_m(void)
{
    struct sprig_qmix q = mix("q4_k_m", "llama", 32, 32, 32, 0, false);
    CHECK_EQ_INT(sprig_qmix_type(&q, "output.weight", 2, 4096, SPRIG_TYPE_F16), SPRIG_TYPE_Q6_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "token_embd.weight", 2, 4096, SPRIG_TYPE_F16), SPRIG_TYPE_Q4_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "output_norm.weight", 1, 4096, SPRIG_TYPE_F32), SPRIG_TYPE_F32);
    static const int q6[] = { 0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31 };
    for (int l = 0; l < 32; l++) {
        bool more = false;
        for (size_t i = 0; i < sizeof q6 / sizeof q6[0]; i++) more |= q6[i] == l;
        int v = -1, d = -1, o = -1;
        layer(&q, l, 4096, 11008, &v, &d, &o, NULL);
        int want = more ? SPRIG_TYPE_Q6_K : SPRIG_TYPE_Q4_K;
        CHECKF(v == want && d == want, "layer %d: attn_v %s ffn_down %s, want %s", l, sprig_type_name(v), sprig_type_name(d),
               sprig_type_name(want));
        CHECK_EQ_INT(o, SPRIG_TYPE_Q4_K);
    }
}

static void test_q2_k_and_q3_k(void)
{
    int v, d, o;
    struct sprig_qmix q = mix("q2_k", "llama", 32, 32, 8, 0, false);   /* GQA 4: attn_v Q4_K */
    layer(&q, 0, 4096, 14336, &v, &d, &o, NULL);
    CHECK(v == SPRIG_TYPE_Q4_K && d == SPRIG_TYPE_Q3_K && o == SPRIG_TYPE_Q3_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.attn_q.weight", 2, 4096, SPRIG_TYPE_F32), SPRIG_TYPE_Q2_K);
    q = mix("q2_k", "llama", 32, 32, 16, 0, false);                    /* GQA 2: Q3_K */
    layer(&q, 0, 4096, 14336, &v, &d, &o, NULL);
    CHECK_EQ_INT(v, SPRIG_TYPE_Q3_K);
    q = mix("q3_k_m", "llama", 32, 32, 32, 0, false);                  /* attn_v: first 2 Q5_K; ffn_down: first 32/16 Q5_K */
    for (int l = 0; l < 4; l++) {
        layer(&q, l, 4096, 11008, &v, &d, &o, NULL);
        CHECK_EQ_INT(v, l < 2 ? SPRIG_TYPE_Q5_K : SPRIG_TYPE_Q4_K);
        CHECK_EQ_INT(d, l < 2 ? SPRIG_TYPE_Q5_K : SPRIG_TYPE_Q4_K);
        CHECK_EQ_INT(o, SPRIG_TYPE_Q4_K);
    }
    q = mix("q3_k_s", "llama", 32, 32, 32, 0, false);                  /* no exceptions but the output */
    layer(&q, 0, 4096, 11008, &v, &d, &o, NULL);
    CHECK(v == SPRIG_TYPE_Q3_K && d == SPRIG_TYPE_Q3_K && o == SPRIG_TYPE_Q3_K);
    q = mix("q4_k_s", "llama", 32, 32, 32, 0, false);                  /* attn_v first 4, ffn_down first 32/8 Q5_K */
    for (int l = 0; l < 6; l++) {
        layer(&q, l, 4096, 11008, &v, &d, &o, NULL);
        CHECK_EQ_INT(v, l < 4 ? SPRIG_TYPE_Q5_K : SPRIG_TYPE_Q4_K);
        CHECK_EQ_INT(d, l < 4 ? SPRIG_TYPE_Q5_K : SPRIG_TYPE_Q4_K);
    }
}

static void test_70b_and_experts(void)
{
    int v, d, o, k;
    struct sprig_qmix q = mix("q4_k_s", "llama", 80, 64, 8, 0, false);   /* 70B: attn_v Q4_K -> Q5_K */
    for (int l = 0; l < 8; l++) {
        layer(&q, l, 8192, 28672, &v, &d, &o, NULL);
        CHECK_EQ_INT(v, SPRIG_TYPE_Q5_K);
    }
    q = mix("q4_k_s", "llama", 80, 64, 64, 0, false);                    /* 65B (no GQA): not bumped */
    for (int l = 0; l < 5; l++) layer(&q, l, 8192, 22016, &v, &d, &o, NULL);
    CHECK_EQ_INT(v, SPRIG_TYPE_Q4_K);
    q = mix("q4_k_s", "qwen2", 80, 64, 8, 0, false);                     /* Qwen2 72B sizes as 70B too */
    for (int l = 0; l < 5; l++) layer(&q, l, 8192, 29568, &v, &d, &o, NULL);
    CHECK_EQ_INT(v, SPRIG_TYPE_Q5_K);

    q = mix("q4_k_m", "llama", 32, 32, 8, 8, false);                     /* 8 experts */
    layer(&q, 0, 4096, 14336, &v, &d, &o, &k);
    CHECK(v == SPRIG_TYPE_Q8_0 && k == SPRIG_TYPE_Q8_0 && o == SPRIG_TYPE_Q5_K);
    /* expert ffn_down tensors take their layer from the name, not the count */
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.10.ffn_down_exps.weight", 3, 14336, SPRIG_TYPE_F32), SPRIG_TYPE_Q4_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.31.ffn_down_exps.weight", 3, 14336, SPRIG_TYPE_F32), SPRIG_TYPE_Q6_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.3.ffn_gate_inp.weight", 2, 4096, SPRIG_TYPE_F32), SPRIG_TYPE_F32);
}

static void test_tied_and_fallbacks(void)
{
    /* tied: token_embd is quantized as the output */
    struct sprig_qmix q = mix("q4_k_m", "qwen2", 24, 14, 2, 0, true);
    CHECK_EQ_INT(sprig_qmix_type(&q, "token_embd.weight", 2, 4096, SPRIG_TYPE_BF16), SPRIG_TYPE_Q6_K);
    /* Qwen2.5-0.5B: rows of 896 (not 256) -> Q8_0 for the tied embedding, Q5_0 for Q4_K, Q8_0 for Q6_K */
    CHECK_EQ_INT(sprig_qmix_type(&q, "token_embd.weight", 2, 896, SPRIG_TYPE_BF16), SPRIG_TYPE_Q8_0);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.attn_q.weight", 2, 896, SPRIG_TYPE_BF16), SPRIG_TYPE_Q5_0);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.attn_v.weight", 2, 896, SPRIG_TYPE_BF16), SPRIG_TYPE_Q8_0);   /* Q6_K (layer 0) */
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.ffn_down.weight", 2, 4864, SPRIG_TYPE_BF16), SPRIG_TYPE_Q6_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.attn_q.bias", 1, 896, SPRIG_TYPE_F32), SPRIG_TYPE_F32);
    static const struct { const char *ft; int want; } fb[] = {
        { "q2_k", SPRIG_TYPE_Q4_0 }, { "q3_k_s", SPRIG_TYPE_Q4_0 }, { "q4_k_s", SPRIG_TYPE_Q5_0 },
        { "q5_k_s", SPRIG_TYPE_Q5_1 }, { "q6_k", SPRIG_TYPE_Q8_0 }, { "q8_0", SPRIG_TYPE_Q8_0 },
    };
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
        q = mix(fb[i].ft, "llama", 24, 14, 14, 0, false);
        CHECKF(sprig_qmix_type(&q, "blk.5.attn_q.weight", 2, 896, SPRIG_TYPE_F32) == fb[i].want, "%s on rows of 896", fb[i].ft);
        CHECKF(sprig_qmix_type(&q, "blk.5.attn_q.weight", 2, 100, SPRIG_TYPE_F32) == SPRIG_TYPE_F16, "%s on rows of 100", fb[i].ft);
    }
    q = mix("q4_k_m", "llama", 2, 4, 4, 0, false);
    CHECK_EQ_INT(sprig_qmix_type(&q, "output.weight", 2, 100, SPRIG_TYPE_F32), SPRIG_TYPE_F16);   /* Q8_0 does not fit either */
}

static void test_kept_pure_and_names(void)
{
    struct sprig_qmix q = mix("q5_k_m", "llama", 4, 4, 4, 0, false);
    static const char *const kept[] = { "blk.0.attn_norm.weight", "position_embd.weight", "token_types.weight", "blk.0.ssm_conv1d.weight",
                                        "blk.0.attn_rel_b.weight", "v.patch_embd.weight", "blk.0.attn_q.bias", "rope_freqs" };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        CHECKF(sprig_qmix_type(&q, kept[i], 2, 256, SPRIG_TYPE_BF16) == SPRIG_TYPE_BF16, "%s is never quantized", kept[i]);
    /* pure: the base type everywhere, fallback still applies */
    sprig_qmix_init(&q, sprig_ftype_find("q4_k_m"), true, &(struct sprig_qmix_model){ .arch = "llama", .n_layer = 4, .n_head = 4, .n_head_kv = 4 });
    CHECK_EQ_INT(sprig_qmix_type(&q, "output.weight", 2, 256, SPRIG_TYPE_F32), SPRIG_TYPE_Q4_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.attn_v.weight", 2, 256, SPRIG_TYPE_F32), SPRIG_TYPE_Q4_K);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.attn_v.weight", 2, 96, SPRIG_TYPE_F32), SPRIG_TYPE_Q5_0);
    q = mix("f16", "llama", 4, 4, 4, 0, false);   /* float types: no mix, no fallback */
    CHECK_EQ_INT(sprig_qmix_type(&q, "output.weight", 2, 100, SPRIG_TYPE_F32), SPRIG_TYPE_F16);
    CHECK_EQ_INT(sprig_qmix_type(&q, "blk.0.ffn_norm.weight", 1, 100, SPRIG_TYPE_F32), SPRIG_TYPE_F32);
    q = mix("q4_0", "llama", 4, 4, 4, 0, false);  /* the legacy names are pure */
    CHECK_EQ_INT(sprig_qmix_type(&q, "output.weight", 2, 256, SPRIG_TYPE_F32), SPRIG_TYPE_Q4_0);

    static const struct { const char *name; uint32_t ft; int type; bool mix; } names[] = {
        { "q4_k_m", 15, SPRIG_TYPE_Q4_K, true }, { "Q4_K", 15, SPRIG_TYPE_Q4_K, true }, { "q5_k", 17, SPRIG_TYPE_Q5_K, true },
        { "q3_k", 12, SPRIG_TYPE_Q3_K, true },   { "q6_k", 18, SPRIG_TYPE_Q6_K, true }, { "q2_k", 10, SPRIG_TYPE_Q2_K, true },
        { "q8_0", 7, SPRIG_TYPE_Q8_0, false },   { "bf16", 32, SPRIG_TYPE_BF16, false }, { "q5_1", 9, SPRIG_TYPE_Q5_1, false },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const struct sprig_ftype *f = sprig_ftype_find(names[i].name);
        CHECKF(f && f->ftype == names[i].ft && f->type == names[i].type && f->mix == names[i].mix, "%s", names[i].name);
        if (f) CHECKF(strstr(sprig_ftype_names(), f->name) != NULL, "%s listed", f->name);
    }
    CHECK(sprig_ftype_find("q2_k_s") == NULL && sprig_ftype_find("iq2_xs") == NULL && sprig_ftype_find(NULL) == NULL);

    const char *order[] = { "blk.10.attn_v.weight", "output.weight", "blk.2.ffn_up.weight", "blk.2.attn_k.weight", "token_embd.weight" };
    qsort(order, 5, sizeof order[0], sprig_qmix_cmp_names);
    CHECK_STR(order[0], "output.weight");
    CHECK_STR(order[1], "token_embd.weight");
    CHECK_STR(order[2], "blk.2.attn_k.weight");
    CHECK_STR(order[3], "blk.2.ffn_up.weight");
    CHECK_STR(order[4], "blk.10.attn_v.weight");
}

int main(void)
{
    RUN(test_llama2_7b_q4_k_m);
    RUN(test_q2_k_and_q3_k);
    RUN(test_70b_and_experts);
    RUN(test_tied_and_fallbacks);
    RUN(test_kept_pure_and_names);
    return test_summary("test-quant-mix");
}
