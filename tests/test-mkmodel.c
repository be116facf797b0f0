/*
 * tests/test-mkmodel.c — synthetic model writer.
 *
 * A tiny model in every weight type reads back through the GGUF reader with
 * llama.cpp's keys, names, shapes and types (matrices in the chosen type,
 * norms F32 = 1); weights have the promised scale; same seed (and any thread
 * count) gives the same bytes, another seed different ones; the vocabulary
 * has unique pieces whose prefixes are pieces (BPE can reach every one) and
 * round-trips text through the llama tokenizer; bad parameters are refused
 * by name.
 */
#include "test.h"
#include "mkmodel/mkmodel.h"
#include "gguf/gguf.h"
#include "tensor/types.h"
#include "gguf/quant_mix.h"
#include "tokenizer/tokenizer.h"

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static void *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(p, 1, (size_t)sz, f);
    fclose(f);
    return p;
}

static struct sprig_mkmodel_params tiny(int type)
{
    struct sprig_mkmodel_params p;
    CHECK(sprig_mkmodel_preset("tiny", &p, NULL) == SPRIG_OK);
    p.type = type;
    return p;
}

/* mean and standard deviation of a tensor, dequantized */
static void stats(const sprig_gguf_tensor *t, double *mean, double *sd)
{
    int64_t n = t->ne[0] * t->ne[1];
    float *x = malloc((size_t)n * sizeof *x);
    sprig_type_traits(t->type)->to_f32(t->data, x, n);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) { s += x[i]; s2 += (double)x[i] * x[i]; }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
    free(x);
}

static void test_every_type(void)
{
    const int types[] = { SPRIG_TYPE_F32, SPRIG_TYPE_F16, SPRIG_TYPE_BF16, SPRIG_TYPE_Q8_0, SPRIG_TYPE_Q4_0 };
    const uint32_t ftypes[] = { 0, 1, 32, 7, 2 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        struct sprig_mkmodel_params p = tiny(types[ti]);
        char name[64];
        snprintf(name, sizeof name, "tiny-%s.gguf", sprig_type_name(types[ti]));
        const char *path = test_tmpfile(name);
        sprig_error e = { 0 };
        CHECKF(sprig_mkmodel_write(&p, path, &e) == SPRIG_OK, "%s", e.msg);
        sprig_gguf *g = sprig_gguf_open(path, &e);
        CHECKF(g != NULL, "%s: %s", name, e.msg);
        if (!g) continue;
        const char *s;
        size_t len;
        uint32_t v = 0;
        float f = 0;
        CHECK(sprig_gguf_get_str(g, "general.architecture", &s, &len, true, &e) == SPRIG_OK && len == 5 && !memcmp(s, "llama", 5));
        CHECK(sprig_gguf_get_u32(g, "general.file_type", &v, true, &e) == SPRIG_OK && v == ftypes[ti]);
        CHECK(sprig_gguf_get_u32(g, "llama.embedding_length", &v, true, &e) == SPRIG_OK && v == 64);
        CHECK(sprig_gguf_get_u32(g, "llama.block_count", &v, true, &e) == SPRIG_OK && v == 2);
        CHECK(sprig_gguf_get_u32(g, "llama.feed_forward_length", &v, true, &e) == SPRIG_OK && v == 128);
        CHECK(sprig_gguf_get_u32(g, "llama.attention.head_count", &v, true, &e) == SPRIG_OK && v == 4);
        CHECK(sprig_gguf_get_u32(g, "llama.attention.head_count_kv", &v, true, &e) == SPRIG_OK && v == 2);
        CHECK(sprig_gguf_get_u32(g, "llama.rope.dimension_count", &v, true, &e) == SPRIG_OK && v == 16);
        CHECK(sprig_gguf_get_u32(g, "llama.context_length", &v, true, &e) == SPRIG_OK && v == 512);
        CHECK(sprig_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f, true, &e) == SPRIG_OK && f == 1e-5f);
        CHECK(sprig_gguf_get_f32(g, "llama.rope.freq_base", &f, true, &e) == SPRIG_OK && f == 10000.0f);
        CHECK(sprig_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &v, true, &e) == SPRIG_OK && v == 1);
        CHECK(sprig_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &v, true, &e) == SPRIG_OK && v == 2);
        CHECK(sprig_gguf_get_u32(g, "tokenizer.ggml.unknown_token_id", &v, true, &e) == SPRIG_OK && v == 0);
        int et;
        uint64_t n;
        CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_STR && n == 300);
        CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_F32 && n == 300);
        CHECK(sprig_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, true, &e) == SPRIG_OK && et == SPRIG_GGUF_I32 && n == 300);

        CHECK_EQ_INT(sprig_gguf_n_tensors(g), 3 + 9 * 2);
        struct { const char *name; int64_t ne0, ne1; bool norm; } want[] = {
            { "token_embd.weight", 64, 300, false }, { "output_norm.weight", 64, 1, true }, { "output.weight", 64, 300, false },
            { "blk.1.attn_q.weight", 64, 64, false }, { "blk.1.attn_k.weight", 64, 32, false }, { "blk.1.attn_v.weight", 64, 32, false },
            { "blk.1.attn_output.weight", 64, 64, false }, { "blk.1.attn_norm.weight", 64, 1, true },
            { "blk.1.ffn_gate.weight", 64, 128, false }, { "blk.1.ffn_down.weight", 128, 64, false },
            { "blk.1.ffn_up.weight", 64, 128, false }, { "blk.1.ffn_norm.weight", 64, 1, true },
        };
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, want[k].name);
            CHECKF(t != NULL, "%s: missing %s", name, want[k].name);
            if (!t) continue;
            CHECK_EQ_INT(t->ne[0], want[k].ne0);
            CHECK_EQ_INT(t->ne[1], want[k].ne1);
            CHECK_EQ_INT(t->n_dims, want[k].norm ? 1 : 2);
            CHECK_EQ_INT(t->type, want[k].norm ? SPRIG_TYPE_F32 : types[ti]);
            if (want[k].norm) {
                bool ones = true;
                for (int64_t i = 0; i < t->ne[0]; i++) ones &= ((const float *)t->data)[i] == 1.0f;
                CHECK(ones);
            }
        }
        /* scale: ~0.02, attn_output / ffn_down 0.02 / sqrt(2 * 2) = 0.01 */
        double mean, sd;
        stats(sprig_gguf_find_tensor(g, "token_embd.weight"), &mean, &sd);
        CHECKF(fabs(mean) < 0.001 && fabs(sd - 0.02) < 0.0015, "%s: token_embd mean %g sd %g", name, mean, sd);
        stats(sprig_gguf_find_tensor(g, "blk.0.ffn_down.weight"), &mean, &sd);
        CHECKF(fabs(mean) < 0.001 && fabs(sd - 0.01) < 0.001, "%s: ffn_down mean %g sd %g", name, mean, sd);
        /* token_embd and output are different draws */
        const sprig_gguf_tensor *a = sprig_gguf_find_tensor(g, "token_embd.weight"), *b = sprig_gguf_find_tensor(g, "output.weight");
        CHECK(a && b && memcmp(a->data, b->data, a->nbytes));
        sprig_gguf_close(g);
    }
}

static void test_determinism(void)
{
    struct sprig_mkmodel_params p = tiny(SPRIG_TYPE_Q8_0);
    sprig_error e = { 0 };
    const char *a = test_tmpfile("det-a.gguf"), *b = test_tmpfile("det-b.gguf"), *c = test_tmpfile("det-c.gguf");
    p.seed = 42;
    p.n_threads = 2;
    CHECK(sprig_mkmodel_write(&p, a, &e) == SPRIG_OK);
    p.n_threads = 1;
    CHECK(sprig_mkmodel_write(&p, b, &e) == SPRIG_OK);
    p.seed = 43;
    CHECK(sprig_mkmodel_write(&p, c, &e) == SPRIG_OK);
    size_t na, nb, nc;
    uint8_t *da = read_all(a, &na), *db = read_all(b, &nb), *dc = read_all(c, &nc);
    CHECK(da && db && dc);
    CHECK(na == nb && !memcmp(da, db, na));
    CHECK(na == nc && memcmp(da, dc, na));
    /* the difference is in the weights only: headers are identical */
    sprig_gguf *g = sprig_gguf_open(a, &e);
    if (g) {
        size_t off = sprig_gguf_data_offset(g);
        CHECK(!memcmp(da, dc, off));
        sprig_gguf_close(g);
    }
    free(da); free(db); free(dc);
}

static void test_vocab(void)
{
    /* unique pieces; every piece longer than one character has its prefix
     * (the piece minus the last letter) earlier in the vocabulary */
    const int n = 40000;
    char (*pieces)[16] = calloc((size_t)n, 16);
    for (int i = 0; i < n; i++) {
        size_t len = sprig_mkmodel_piece(i, pieces[i]);
        CHECK(len > 0 && len < 16);
    }
    CHECK_STR(pieces[0], "<unk>");
    CHECK_STR(pieces[1], "<s>");
    CHECK_STR(pieces[3], "<0x00>");
    CHECK_STR(pieces[258], "<0xFF>");
    CHECK_STR(pieces[259], "\xe2\x96\x81");
    CHECK_STR(pieces[260], "!");
    /* a hash set for uniqueness / prefix lookup */
    size_t cap = 1 << 17;
    int32_t *tab = calloc(cap, sizeof *tab);
    int dups = 0, orphans = 0;
    for (int i = 0; i < n; i++) {
        uint64_t h = 1469598103934665603ull;
        for (const char *s = pieces[i]; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
        size_t k = h & (cap - 1);
        while (tab[k] && strcmp(pieces[tab[k] - 1], pieces[i])) k = (k + 1) & (cap - 1);
        if (tab[k]) dups++;
        tab[k] = i + 1;
    }
    CHECK_EQ_INT(dups, 0);
    for (int i = 260; i < n; i++) {
        size_t len = strlen(pieces[i]);
        if (len <= 1 || !strcmp(pieces[i], "\xe2\x96\x81")) continue;
        char pre[16];
        memcpy(pre, pieces[i], len - 1);
        pre[len - 1] = 0;
        uint64_t h = 1469598103934665603ull;
        for (const char *s = pre; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
        size_t k = h & (cap - 1);
        while (tab[k] && strcmp(pieces[tab[k] - 1], pre)) k = (k + 1) & (cap - 1);
        if (!tab[k] || tab[k] - 1 >= i) orphans++;
    }
    CHECK_EQ_INT(orphans, 0);
    free(tab);
    free(pieces);
}

/* The written vocabulary drives the llama tokenizer: text round-trips and
 * common words become single pieces. */
static void test_tokenizer_roundtrip(void)
{
    struct sprig_mkmodel_params p = tiny(SPRIG_TYPE_F32);
    p.vocab = 2000;
    const char *path = test_tmpfile("tok.gguf");
    sprig_error e = { 0 };
    CHECK(sprig_mkmodel_write(&p, path, &e) == SPRIG_OK);
    sprig_gguf *g = sprig_gguf_open(path, &e);
    CHECK(g != NULL);
    if (!g) return;
    int64_t kt = sprig_gguf_find_kv(g, "tokenizer.ggml.tokens"), ks = sprig_gguf_find_kv(g, "tokenizer.ggml.scores"),
            ky = sprig_gguf_find_kv(g, "tokenizer.ggml.token_type");
    int nv = p.vocab;
    const char **pieces = malloc((size_t)nv * sizeof *pieces);
    size_t *lens = malloc((size_t)nv * sizeof *lens);
    float *scores = malloc((size_t)nv * sizeof *scores);
    int32_t *types = malloc((size_t)nv * sizeof *types);
    for (int i = 0; i < nv; i++) {
        pieces[i] = sprig_gguf_arr_str(g, kt, (uint64_t)i, &lens[i]);
        scores[i] = sprig_gguf_arr_f32(g, ks, (uint64_t)i);
        types[i] = (int32_t)sprig_gguf_arr_int(g, ky, (uint64_t)i);
    }
    struct sprig_vocab_desc d = { .model = "llama", .n_vocab = nv, .pieces = pieces, .piece_lens = lens, .scores = scores,
                                  .types = types, .bos = 1, .eos = 2, .unk = 0, .add_bos = true, .add_space_prefix = true };
    sprig_tokenizer *t = sprig_tokenizer_create(&d, &e);
    CHECKF(t != NULL, "%s", e.msg);
    if (t) {
        const char *text = "the cat sat on a mat, Zebra! 42 \xc3\xa9t\xc3\xa9";
        int32_t ids[128];
        int n = sprig_tokenize(t, text, strlen(text), true, ids, 128, &e);
        CHECKF(n > 1 && n <= 128, "tokenize: %d %s", n, e.msg);
        if (n > 1 && n <= 128) {
            CHECK_EQ_INT(ids[0], 1);
            char *back = sprig_detokenize(t, ids, n, -1);
            CHECKF(back && !strcmp(back, text), "round trip: '%s'", back ? back : "(null)");
            free(back);
            /* merges happened: "▁t" and "he" are single pieces ("▁the" needs a
             * bigger vocabulary; the 'é' goes through byte fallback) */
            char piece[64];
            bool found = false;
            for (int i = 1; i < n; i++) {
                size_t len;
                const char *s = sprig_tokenizer_piece(t, ids[i], &len);
                sprig_mkmodel_piece(ids[i], piece);
                CHECK(len == strlen(piece) && !memcmp(s, piece, len));
                found |= len == 4 && !memcmp(s, "\xe2\x96\x81t", 4);
            }
            CHECK(found);
            CHECKF(n < 30, "%d tokens for %zu bytes", n, strlen(text));
        }
        sprig_tokenizer_free(t);
    }
    free(pieces); free(lens); free(scores); free(types);
    sprig_gguf_close(g);
}

static void test_validation(void)
{
    sprig_error e = { 0 };
    struct sprig_mkmodel_params p;
#define BAD(stmt, sub) do { p = tiny(SPRIG_TYPE_F32); stmt; \
        sprig_status st_ = sprig_mkmodel_write(&p, test_tmpfile("bad.gguf"), &e); \
        CHECKF(st_ == SPRIG_E_INVALID_ARG && contains(e.msg, sub), "%s: %s", #stmt, e.msg); \
        CHECK(!test_file_exists(test_tmpfile("bad.gguf"))); } while (0)
    BAD(p.dim = 0, "dim = 0");
    BAD(p.n_heads = 3, "dim 64 is not divisible by heads 3");
    BAD(p.n_kv_heads = 3, "heads 4 is not a multiple of kv-heads 3");
    BAD(p.n_kv_heads = 8, "kv-heads 8");
    BAD(p.n_heads = 64, "head size 1");
    BAD(p.vocab = 259, "vocab = 259");
    BAD(p.n_layers = 513, "layers = 513");
    BAD(p.ffn = 0, "ffn = 0");
    BAD(p.ctx = 0, "ctx = 0");
    BAD(p.type = 16, "iq2_xxs");
    BAD((p.type = SPRIG_TYPE_Q4_K, p.ftype = sprig_ftype_find("q6_k")), "file type q6_k is not made of q4_k");
    BAD((p.type = SPRIG_TYPE_Q6_K, p.dim = 48, p.n_heads = 4, p.n_kv_heads = 2), "multiples of 32");
    BAD(p.type = 99, "weight type");
    BAD((p.type = SPRIG_TYPE_Q8_0, p.ffn = 100), "multiples of 32");
    BAD((p.type = SPRIG_TYPE_Q4_0, p.dim = 48, p.n_heads = 4, p.n_kv_heads = 2), "multiples of 32");
    BAD(p.rope_freq_base = 0, "rope freq base");
    BAD(p.rms_eps = -1, "rms epsilon");
#undef BAD
    CHECK(sprig_mkmodel_preset("huge", &p, &e) == SPRIG_E_INVALID_ARG && contains(e.msg, "unknown preset 'huge'"));
    CHECK(sprig_mkmodel_preset("llama-1b", &p, &e) == SPRIG_OK && p.dim == 2048 && p.n_layers == 16 && p.n_heads == 32 &&
          p.n_kv_heads == 8 && p.ffn == 8192 && p.vocab == 32000);
    p.type = SPRIG_TYPE_Q8_0;
    CHECK(sprig_mkmodel_validate(&p, &e) == SPRIG_OK);
    CHECK_EQ_INT(sprig_mkmodel_n_params(&p), 1104218112);
    p = tiny(SPRIG_TYPE_F32);
    CHECK(sprig_mkmodel_write(&p, "/nonexistent/dir/m.gguf", &e) == SPRIG_E_IO && contains(e.msg, "/nonexistent/dir/m.gguf"));
}

/* A llama.cpp file type: general.file_type, llama-quantize's per-tensor
 * types (Q6_K output, attn_v / ffn_down in the use_more_bits layers, the
 * 32-block fallback where rows are not multiples of 256) and weights that
 * dequantize to the generator's spread. */
static void check_types(const char *path, uint32_t want_ft, const char *const *want, int n_want)
{
    sprig_error e = { 0 };
    sprig_gguf *g = sprig_gguf_open(path, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (!g) return;
    uint32_t ft = 0;
    CHECK(sprig_gguf_get_u32(g, "general.file_type", &ft, true, &e) == SPRIG_OK);
    CHECK_EQ_INT(ft, want_ft);
    for (int i = 0; i < n_want; i += 2) {
        const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, want[i]);
        CHECKF(t && !strcmp(sprig_type_name(t->type), want[i + 1]), "%s: %s, want %s", want[i], t ? sprig_type_name(t->type) : "missing",
               want[i + 1]);
        if (!t || t->n_dims != 2) continue;
        double mean, sd;
        stats(t, &mean, &sd);
        CHECKF(fabs(mean) < 0.002 && sd > 0.002 && sd < 0.025, "%s (%s): mean %g sd %g", want[i], want[i + 1], mean, sd);
    }
    sprig_gguf_close(g);
}

static void test_kquant_mix(void)
{
    sprig_error e = { 0 };
    struct sprig_mkmodel_params p = tiny(SPRIG_TYPE_Q4_K);
    p.dim = 256, p.ffn = 512, p.n_layers = 8, p.n_heads = 4, p.n_kv_heads = 2;
    p.ftype = sprig_ftype_find("q4_k_m");
    const char *path = test_tmpfile("q4_k_m.gguf");
    CHECKF(sprig_mkmodel_write(&p, path, &e) == SPRIG_OK, "%s", e.msg);
    /* use_more_bits over 8 layers: 0, 3, 6, 7 */
    const char *const want[] = {
        "token_embd.weight", "q4_k", "output.weight", "q6_k", "output_norm.weight", "f32",
        "blk.0.attn_v.weight", "q6_k", "blk.1.attn_v.weight", "q4_k", "blk.3.attn_v.weight", "q6_k",
        "blk.5.attn_v.weight", "q4_k", "blk.6.attn_v.weight", "q6_k", "blk.7.attn_v.weight", "q6_k",
        "blk.0.ffn_down.weight", "q6_k", "blk.2.ffn_down.weight", "q4_k", "blk.7.ffn_down.weight", "q6_k",
        "blk.4.attn_q.weight", "q4_k", "blk.4.attn_k.weight", "q4_k", "blk.4.attn_output.weight", "q4_k",
        "blk.4.ffn_gate.weight", "q4_k", "blk.4.ffn_up.weight", "q4_k", "blk.4.ffn_norm.weight", "f32",
    };
    check_types(path, 15, want, (int)(sizeof want / sizeof want[0]));

    /* rows of 160: Q4_K falls back to Q5_0, the output to Q8_0; ffn_down's rows of 256 stay K */
    p = tiny(SPRIG_TYPE_Q4_K);
    p.dim = 160, p.ffn = 256, p.n_layers = 2, p.n_heads = 5, p.n_kv_heads = 1;
    p.ftype = sprig_ftype_find("q4_k_m");
    path = test_tmpfile("fallback.gguf");
    CHECKF(sprig_mkmodel_write(&p, path, &e) == SPRIG_OK, "%s", e.msg);
    const char *const want2[] = {
        "token_embd.weight", "q5_0", "output.weight", "q8_0", "blk.0.attn_q.weight", "q5_0",
        "blk.0.attn_v.weight", "q5_0", "blk.1.attn_v.weight", "q8_0",
        "blk.0.ffn_down.weight", "q4_k", "blk.1.ffn_down.weight", "q6_k",
    };
    check_types(path, 15, want2, (int)(sizeof want2 / sizeof want2[0]));

    /* pure: every matrix Q5_K; file_type Q5_K_M as llama-quantize --pure writes it */
    p = tiny(SPRIG_TYPE_Q5_K);
    p.dim = 256, p.ffn = 256, p.n_layers = 2;
    path = test_tmpfile("pure.gguf");
    CHECKF(sprig_mkmodel_write(&p, path, &e) == SPRIG_OK, "%s", e.msg);
    const char *const want3[] = { "token_embd.weight", "q5_k", "output.weight", "q5_k", "blk.1.attn_v.weight", "q5_k",
                                  "blk.1.ffn_down.weight", "q5_k" };
    check_types(path, 17, want3, (int)(sizeof want3 / sizeof want3[0]));
}

int main(void)
{
    RUN(test_kquant_mix);
    RUN(test_every_type);
    RUN(test_determinism);
    RUN(test_vocab);
    RUN(test_tokenizer_roundtrip);
    RUN(test_validation);
    return test_summary("test-mkmodel");
}
