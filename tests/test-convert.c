/*
 * tests/test-convert.c — llama2.c checkpoint import (`sprig convert llama2c`).
 *
 * The official stories260K.bin is not among the fixtures, so the test builds
 * it: a llama2.c checkpoint written from stories260K.gguf's own tensors (the
 * header, every weight in llama2.c order, freq_cis included, shared
 * classifier), converted with tok512.bin and --ctx 2048, must give a file
 * equal to stories260K.gguf tensor for tensor and key for key (and in fact
 * byte for byte). A small synthetic checkpoint with an unshared classifier
 * and a hand-made tokenizer checks the piece conversion rules, and a set of
 * broken checkpoints and tokenizers must be refused with named fields.
 */
#include "test.h"
#include "gguf/convert.h"
#include "gguf/gguf.h"
#include "tensor/types.h"

#include <math.h>
#include <unistd.h>

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static bool write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

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

typedef struct { uint8_t *p; size_t n, cap; } buf;

static void b_put(buf *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + n) nc *= 2;
        b->p = realloc(b->p, nc);
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void b_tensor(buf *b, const sprig_gguf *g, const char *name)
{
    const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, name);
    CHECKF(t != NULL, "missing %s", name);
    if (t) b_put(b, t->data, t->nbytes);
}

/* stories260K.gguf -> llama2.c checkpoint bytes (shared classifier). */
static void checkpoint_from_gguf(const sprig_gguf *g, buf *b)
{
    const int32_t hdr[7] = { 64, 172, 5, 8, 4, 512, 512 };
    b_put(b, hdr, sizeof hdr);
    b_tensor(b, g, "token_embd.weight");
    static const char *const per_layer[] = { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                                             "ffn_gate", "ffn_down", "ffn_up" };
    for (int k = 0; k < 9; k++)
        for (int l = 0; l < 5; l++) {
            char nm[64];
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, per_layer[k]);
            b_tensor(b, g, nm);
        }
    b_tensor(b, g, "output_norm.weight");
    /* freq_cis_real then freq_cis_imag: [seq_len][head_size/2], as llama2.c's export writes */
    for (int part = 0; part < 2; part++)
        for (int pos = 0; pos < 512; pos++)
            for (int i = 0; i < 4; i++) {
                double f = pow(10000.0, -(2.0 * i) / 8.0) * pos;
                float v = (float)(part ? sin(f) : cos(f));
                b_put(b, &v, 4);
            }
}

static void compare_gguf(const sprig_gguf *a, const sprig_gguf *b, bool skip_ctx)
{
    CHECK_EQ_INT(sprig_gguf_n_kv(a), sprig_gguf_n_kv(b));
    for (int64_t i = 0; i < sprig_gguf_n_kv(a) && i < sprig_gguf_n_kv(b); i++) {
        CHECK_STR(sprig_gguf_kv_key(a, i), sprig_gguf_kv_key(b, i));
        CHECK_EQ_INT(sprig_gguf_kv_type(a, i), sprig_gguf_kv_type(b, i));
        if (skip_ctx && !strcmp(sprig_gguf_kv_key(a, i), "llama.context_length")) continue;
        char fa[8192], fb[8192];
        sprig_gguf_kv_format(a, i, fa, sizeof fa);
        sprig_gguf_kv_format(b, i, fb, sizeof fb);
        CHECK_STR(fa, fb);
    }
    /* the tokenizer arrays element by element */
    static const char *const arrays[] = { "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type" };
    for (int k = 0; k < 3; k++) {
        int64_t ka = sprig_gguf_find_kv(a, arrays[k]), kb = sprig_gguf_find_kv(b, arrays[k]);
        int ta, tb;
        uint64_t na = 0, nb = 1;
        CHECK(sprig_gguf_get_arr(a, arrays[k], &ta, &na, true, NULL) == SPRIG_OK);
        CHECK(sprig_gguf_get_arr(b, arrays[k], &tb, &nb, true, NULL) == SPRIG_OK);
        CHECK(ta == tb && na == nb);
        int bad = 0;
        for (uint64_t i = 0; i < na && i < nb; i++) {
            if (ta == SPRIG_GGUF_STR) {
                size_t la, lb;
                const char *sa = sprig_gguf_arr_str(a, ka, i, &la), *sb = sprig_gguf_arr_str(b, kb, i, &lb);
                bad += la != lb || memcmp(sa, sb, la);
            } else if (ta == SPRIG_GGUF_F32) {
                float x = sprig_gguf_arr_f32(a, ka, i), y = sprig_gguf_arr_f32(b, kb, i);
                bad += memcmp(&x, &y, 4) != 0;   /* bitwise: -0.0 stays -0.0 */
            } else {
                bad += sprig_gguf_arr_int(a, ka, i) != sprig_gguf_arr_int(b, kb, i);
            }
        }
        CHECKF(bad == 0, "%s: %d elements differ", arrays[k], bad);
    }
    CHECK_EQ_INT(sprig_gguf_n_tensors(a), sprig_gguf_n_tensors(b));
    for (int64_t i = 0; i < sprig_gguf_n_tensors(a) && i < sprig_gguf_n_tensors(b); i++) {
        const sprig_gguf_tensor *ta = sprig_gguf_tensor_at(a, i), *tb = sprig_gguf_tensor_at(b, i);
        CHECK_STR(ta->name, tb->name);
        CHECK(ta->type == tb->type && ta->n_dims == tb->n_dims);
        for (int d = 0; d < 4; d++) CHECK_EQ_INT(ta->ne[d], tb->ne[d]);
        CHECK(ta->offset == tb->offset && ta->nbytes == tb->nbytes);
        CHECKF(ta->nbytes == tb->nbytes && !memcmp(ta->data, tb->data, ta->nbytes), "tensor %s data differs", ta->name);
    }
}

static void test_stories260k_roundtrip(void)
{
    const char *gpath = test_shared("models/stories260K.gguf"), *tpath = test_shared("models/tok512.bin");
    if (!test_file_exists(gpath) || !test_file_exists(tpath)) {
        fprintf(stderr, "  SKIP: fixtures not found\n");
        return;
    }
    sprig_error e = { 0 };
    sprig_gguf *ref = sprig_gguf_open(gpath, &e);
    CHECKF(ref != NULL, "%s", e.msg);
    if (!ref) return;
    buf ck = { 0 };
    checkpoint_from_gguf(ref, &ck);
    CHECK_EQ_INT(ck.n, 1056540);   /* the official stories260K.bin's size */
    const char *bin = test_tmpfile("stories260K.bin"), *out = test_tmpfile("converted.gguf");
    CHECK(write_file(bin, ck.p, ck.n));

    struct sprig_llama2c_config c;
    CHECK(sprig_llama2c_parse_header(ck.p, ck.n, "x", &c, &e) == SPRIG_OK);
    CHECK(c.shared_classifier && c.n_vocab == 512 && c.head_size == 8 && c.kv_dim == 32);

    struct sprig_convert_opts o = { .context_length = 2048 };
    CHECKF(sprig_convert_llama2c(bin, tpath, out, &o, &e) == SPRIG_OK, "%s", e.msg);
    sprig_gguf *g = sprig_gguf_open(out, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (g) {
        compare_gguf(g, ref, false);
        sprig_gguf_close(g);
    }
    /* byte for byte */
    size_t na, nb;
    uint8_t *a = read_all(out, &na), *b = read_all(gpath, &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na));
    free(a);
    free(b);

    /* defaults: context from the checkpoint's seq_len, general.name "llama"; --name */
    struct sprig_convert_opts o2 = { .name = "my-model" };
    CHECKF(sprig_convert_llama2c(bin, tpath, out, &o2, &e) == SPRIG_OK, "%s", e.msg);
    g = sprig_gguf_open(out, &e);
    if (g) {
        uint32_t ctx = 0;
        CHECK(sprig_gguf_get_u32(g, "llama.context_length", &ctx, true, &e) == SPRIG_OK && ctx == 512);
        const char *s;
        size_t len;
        CHECK(sprig_gguf_get_str(g, "general.name", &s, &len, true, &e) == SPRIG_OK && len == 8 && !memcmp(s, "my-model", 8));
        CHECK_EQ_INT(sprig_gguf_n_tensors(g), 48);
        sprig_gguf_close(g);
    }
    free(ck.p);
    sprig_gguf_close(ref);
}

/* ---------------------------------------------------------------- synthetic */

struct small { int32_t dim, hidden, layers, heads, kv_heads, vocab, seq; };

static uint64_t small_floats(const struct small *s)
{
    uint64_t D = (uint64_t)s->dim, H = (uint64_t)s->hidden, L = (uint64_t)s->layers, V = (uint64_t)llabs(s->vocab);
    uint64_t KV = D / (uint64_t)s->heads * (uint64_t)s->kv_heads, hs = D / (uint64_t)s->heads;
    return V * D + L * D * 2 + L * D * D * 2 + L * KV * D * 2 + L * H * D * 3 + D + (uint64_t)s->seq * hs +
           (s->vocab < 0 ? V * D : 0);
}

/* Header + floats i * 0.001 (distinct, so any misplaced slice shows). */
static void small_checkpoint(const struct small *s, buf *b)
{
    int32_t h[7] = { s->dim, s->hidden, s->layers, s->heads, s->kv_heads, s->vocab, s->seq };
    b_put(b, h, sizeof h);
    uint64_t n = small_floats(s);
    for (uint64_t i = 0; i < n; i++) {
        float v = (float)i * 0.001f;
        b_put(b, &v, 4);
    }
}

/* A tokenizer.bin of n tokens: specials, a few byte pieces, spaced pieces, one empty. */
static void small_tokenizer(int n, buf *b)
{
    uint32_t maxlen = 16;
    b_put(b, &maxlen, 4);
    for (int i = 0; i < n; i++) {
        char piece[32];
        if (i == 0) snprintf(piece, sizeof piece, "<unk>");
        else if (i == 1) snprintf(piece, sizeof piece, "\n<s>\n");
        else if (i == 2) snprintf(piece, sizeof piece, "\n</s>\n");
        else if (i < 3 + 4) snprintf(piece, sizeof piece, "<0x%02X>", i + 0x3d);
        else if (i == 7) piece[0] = 0;
        else if (i == 8) snprintf(piece, sizeof piece, "<0xZZ>");
        else if (i % 3 == 0) snprintf(piece, sizeof piece, " w%d", i);
        else snprintf(piece, sizeof piece, "p%d x", i);
        float score = -(float)i;
        uint32_t len = (uint32_t)strlen(piece);
        b_put(b, &score, 4);
        b_put(b, &len, 4);
        b_put(b, piece, len);
    }
}

static void test_small_unshared(void)
{
    struct small s = { 16, 24, 2, 4, 2, -20, 6 };
    buf ck = { 0 }, tk = { 0 };
    small_checkpoint(&s, &ck);
    small_tokenizer(20, &tk);
    const char *bin = test_tmpfile("small.bin"), *tok = test_tmpfile("small-tok.bin"), *out = test_tmpfile("small.gguf");
    CHECK(write_file(bin, ck.p, ck.n) && write_file(tok, tk.p, tk.n));
    sprig_error e = { 0 };
    CHECKF(sprig_convert_llama2c(bin, tok, out, NULL, &e) == SPRIG_OK, "%s", e.msg);
    sprig_gguf *g = sprig_gguf_open(out, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (!g) goto out;
    uint32_t v = 0;
    CHECK(sprig_gguf_get_u32(g, "llama.context_length", &v, true, &e) == SPRIG_OK && v == 6);
    CHECK(sprig_gguf_get_u32(g, "llama.rope.dimension_count", &v, true, &e) == SPRIG_OK && v == 4);
    CHECK(sprig_gguf_get_u32(g, "llama.attention.head_count_kv", &v, true, &e) == SPRIG_OK && v == 2);
    CHECK_EQ_INT(sprig_gguf_n_tensors(g), 3 + 9 * 2);
    /* slice positions: token_embd starts at float 0, output.weight is wcls (the last V*D floats) */
    uint64_t n = small_floats(&s);
    const sprig_gguf_tensor *t = sprig_gguf_find_tensor(g, "output.weight");
    CHECK(t && t->ne[0] == 16 && t->ne[1] == 20);
    if (t) CHECK(((const float *)t->data)[0] == (float)(n - 20 * 16) * 0.001f);
    t = sprig_gguf_find_tensor(g, "token_embd.weight");
    if (t) CHECK(((const float *)t->data)[1] == 0.001f);
    /* blk.1.attn_k: after emb (320), rms_att (32), wq (512), wk layer 0 (8*16 = 128) */
    t = sprig_gguf_find_tensor(g, "blk.1.attn_k.weight");
    CHECK(t && t->ne[0] == 16 && t->ne[1] == 8);
    if (t) CHECK(((const float *)t->data)[0] == (float)(320 + 32 + 512 + 128) * 0.001f);
    t = sprig_gguf_find_tensor(g, "blk.0.ffn_down.weight");
    CHECK(t && t->ne[0] == 24 && t->ne[1] == 16);
    t = sprig_gguf_find_tensor(g, "output_norm.weight");
    /* rms_final: after emb 320, rms_att 32, wq 512, wk 256, wv 256, wo 512, rms_ffn 32, w1/w2/w3 3*768 */
    if (t) CHECK(((const float *)t->data)[0] == (float)(320 + 32 + 512 + 256 + 256 + 512 + 32 + 3 * 768) * 0.001f);
    /* pieces */
    int64_t k = sprig_gguf_find_kv(g, "tokenizer.ggml.tokens"), kt = sprig_gguf_find_kv(g, "tokenizer.ggml.token_type");
    size_t len;
    const char *p = sprig_gguf_arr_str(g, k, 1, &len);
    CHECK(len == 3 && !memcmp(p, "<s>", 3));
    p = sprig_gguf_arr_str(g, k, 2, &len);
    CHECK(len == 4 && !memcmp(p, "</s>", 4));
    p = sprig_gguf_arr_str(g, k, 9, &len);
    CHECK(len == 5 && !memcmp(p, "\xe2\x96\x81w9", 5));
    p = sprig_gguf_arr_str(g, k, 10, &len);
    CHECK(len == 7 && !memcmp(p, "p10\xe2\x96\x81x", 7));
    CHECK_EQ_INT(sprig_gguf_arr_int(g, kt, 0), 2);
    CHECK_EQ_INT(sprig_gguf_arr_int(g, kt, 1), 3);
    CHECK_EQ_INT(sprig_gguf_arr_int(g, kt, 3), 6);
    CHECK_EQ_INT(sprig_gguf_arr_int(g, kt, 7), 3);    /* empty piece: control */
    CHECK_EQ_INT(sprig_gguf_arr_int(g, kt, 8), 1);    /* <0xZZ> is not a byte */
    CHECK_EQ_INT(sprig_gguf_arr_int(g, kt, 9), 1);
    CHECK(sprig_gguf_arr_f32(g, sprig_gguf_find_kv(g, "tokenizer.ggml.scores"), 19) == -19.0f);
    sprig_gguf_close(g);
out:
    free(ck.p);
    free(tk.p);
}

/* ---------------------------------------------------------------- refusals */

static void expect_header_fail(const char *label, const int32_t h[7], size_t extra_bytes, const char *sub)
{
    size_t n = 28 + extra_bytes;
    uint8_t *p = calloc(1, n);
    memcpy(p, h, 28);
    struct sprig_llama2c_config c;
    sprig_error e = { 0 };
    sprig_status st = sprig_llama2c_parse_header(p, n, "m.bin", &c, &e);
    CHECKF(st == SPRIG_E_FORMAT && contains(e.msg, "m.bin: ") && contains(e.msg, sub), "%s: %s", label, e.msg);
    free(p);
}

static void test_bad_headers(void)
{
    struct { const char *label; int32_t h[7]; const char *sub; } cases[] = {
        { "dim 0", { 0, 172, 5, 8, 4, 512, 512 }, "dim = 0 is not positive" },
        { "hidden negative", { 64, -1, 5, 8, 4, 512, 512 }, "hidden_dim = -1" },
        { "layers 0", { 64, 172, 0, 8, 4, 512, 512 }, "n_layers = 0" },
        { "layers negative", { 64, 172, -5, 8, 4, 512, 512 }, "n_layers = -5" },
        { "layers huge", { 64, 172, 100000, 8, 4, 512, 512 }, "n_layers 100000 exceeds the limit" },
        { "heads 0", { 64, 172, 5, 0, 4, 512, 512 }, "n_heads = 0" },
        { "kv heads 0", { 64, 172, 5, 8, 0, 512, 512 }, "n_kv_heads = 0" },
        { "vocab 0", { 64, 172, 5, 8, 4, 0, 512 }, "vocab_size = 0" },
        { "vocab INT32_MIN", { 64, 172, 5, 8, 4, INT32_MIN, 512 }, "vocab_size" },
        { "vocab 2", { 64, 172, 5, 8, 4, 2, 512 }, "vocab_size 2 is too small" },
        { "seq 0", { 64, 172, 5, 8, 4, 512, 0 }, "seq_len = 0" },
        { "dim % heads", { 64, 172, 5, 7, 7, 512, 512 }, "dim 64 is not divisible by n_heads 7" },
        { "heads % kv", { 64, 172, 5, 8, 3, 512, 512 }, "n_heads 8 is not a multiple of n_kv_heads 3" },
        { "kv > heads", { 64, 172, 5, 8, 16, 512, 512 }, "n_kv_heads 16" },
        { "odd head", { 24, 172, 5, 8, 4, 512, 512 }, "head size 3" },
        { "huge dims overflow", { 1 << 30, 1 << 30, 512, 2, 2, INT32_MAX, INT32_MAX }, "overflows" },
        { "huge dims", { 1 << 16, 1 << 16, 5, 2, 2, 1 << 16, 1024 }, "implies 618612391964 bytes" },
        { "size mismatch", { 64, 172, 5, 8, 4, 512, 512 }, "truncated" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_header_fail(cases[i].label, cases[i].h, 64, cases[i].sub);
    /* too short, llama2.c v1/v2 exports */
    sprig_error e = { 0 };
    struct sprig_llama2c_config c;
    CHECK(sprig_llama2c_parse_header("abc", 3, "m.bin", &c, &e) == SPRIG_E_FORMAT && contains(e.msg, "too short"));
    uint8_t ak[64] = "ak42\x02\0\0\0";
    CHECK(sprig_llama2c_parse_header(ak, sizeof ak, "m.bin", &c, &e) == SPRIG_E_UNSUPPORTED && contains(e.msg, "version 2"));
}

static void expect_convert_fail(const char *label, const char *bin, const char *tok, const char *out, sprig_status code,
                                const char *sub1, const char *sub2)
{
    sprig_error e = { 0 };
    sprig_status st = sprig_convert_llama2c(bin, tok, out, NULL, &e);
    CHECKF(st == code && contains(e.msg, sub1) && (!sub2 || contains(e.msg, sub2)), "%s: %s (%s)", label, e.msg,
           sprig_status_str(st));
    CHECKF(!test_file_exists(out), "%s: output left behind", label);
}

static void test_bad_files(void)
{
    struct small s = { 16, 24, 2, 4, 2, 20, 6 };
    buf ck = { 0 }, tk = { 0 };
    small_checkpoint(&s, &ck);
    small_tokenizer(20, &tk);
    const char *bin = test_tmpfile("b.bin"), *tok = test_tmpfile("b-tok.bin"), *out = test_tmpfile("b.gguf");
    CHECK(write_file(tok, tk.p, tk.n));
    /* checkpoint truncated / oversized */
    CHECK(write_file(bin, ck.p, ck.n - 4));
    expect_convert_fail("ckpt truncated", bin, tok, out, SPRIG_E_FORMAT, "b.bin: header (dim 16", "truncated");
    buf big = { 0 };
    b_put(&big, ck.p, ck.n);
    b_put(&big, "\0\0\0\0", 4);
    CHECK(write_file(bin, big.p, big.n));
    expect_convert_fail("ckpt oversized", bin, tok, out, SPRIG_E_FORMAT, "b.bin", "trailing bytes");
    CHECK(write_file(bin, ck.p, 10));
    expect_convert_fail("ckpt tiny", bin, tok, out, SPRIG_E_FORMAT, "b.bin", "too short");
    CHECK(write_file(bin, ck.p, ck.n));
    /* tokenizer truncated at several points */
    const size_t cuts[] = { 2, 4, 10, tk.n / 2, tk.n - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        CHECK(write_file(tok, tk.p, cuts[i]));
        expect_convert_fail("tok truncated", bin, tok, out, SPRIG_E_FORMAT, "b-tok.bin", cuts[i] < 4 ? "too short" : "");
    }
    CHECK(write_file(tok, tk.p, tk.n - 1));
    expect_convert_fail("tok last byte", bin, tok, out, SPRIG_E_FORMAT, "b-tok.bin: token 19", "runs past the end");
    /* token length past EOF */
    buf bad = { 0 };
    b_put(&bad, tk.p, tk.n);
    uint32_t huge = 0xffffffffu;
    memcpy(bad.p + 4 + 4, &huge, 4);
    CHECK(write_file(tok, bad.p, bad.n));
    expect_convert_fail("tok len", bin, tok, out, SPRIG_E_FORMAT, "b-tok.bin: token 0: length 4294967295", NULL);
    /* vocab size mismatch both ways */
    buf t19 = { 0 }, t21 = { 0 };
    small_tokenizer(19, &t19);
    small_tokenizer(21, &t21);
    CHECK(write_file(tok, t19.p, t19.n));
    expect_convert_fail("vocab 19 vs 20", bin, tok, out, SPRIG_E_FORMAT, "b-tok.bin: token 19", "fewer than the checkpoint's 20 tokens");
    CHECK(write_file(tok, t21.p, t21.n));
    expect_convert_fail("vocab 21 vs 20", bin, tok, out, SPRIG_E_FORMAT, "b-tok.bin", "vocab size mismatch");
    /* a tokenizer far too small for the vocab */
    CHECK(write_file(tok, t19.p, 40));
    expect_convert_fail("vocab tiny tok", bin, tok, out, SPRIG_E_FORMAT, "b-tok.bin", NULL);
    /* missing inputs, unwritable output */
    CHECK(write_file(tok, tk.p, tk.n));
    expect_convert_fail("missing model", "/nonexistent/m.bin", tok, out, SPRIG_E_IO, "/nonexistent/m.bin", NULL);
    expect_convert_fail("missing tok", bin, "/nonexistent/t.bin", out, SPRIG_E_IO, "/nonexistent/t.bin", NULL);
    expect_convert_fail("bad out", bin, tok, "/nonexistent/o.gguf", SPRIG_E_IO, "/nonexistent/o.gguf", NULL);
    /* and the good pair still converts */
    sprig_error e = { 0 };
    CHECKF(sprig_convert_llama2c(bin, tok, out, NULL, &e) == SPRIG_OK, "%s", e.msg);
    sprig_gguf *g = sprig_gguf_open(out, &e);
    CHECK(g != NULL);
    if (g) {
        /* shared classifier: output.weight equals token_embd.weight */
        const sprig_gguf_tensor *a = sprig_gguf_find_tensor(g, "token_embd.weight"), *b = sprig_gguf_find_tensor(g, "output.weight");
        CHECK(a && b && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes));
        sprig_gguf_close(g);
    }
    free(ck.p); free(tk.p); free(big.p); free(bad.p); free(t19.p); free(t21.p);
}

int main(void)
{
    RUN(test_stories260k_roundtrip);
    RUN(test_small_unshared);
    RUN(test_bad_headers);
    RUN(test_bad_files);
    return test_summary("test-convert");
}
