/*
 * tests/test-tokenizer-vocab.c — the real vocabularies people download,
 * against llama.cpp's tokenizer test vectors.
 *
 * ../shared/models/vocab/ holds vocabulary-only GGUF files written by
 * llama.cpp's converter from published tokenizers (Llama 3, Qwen 2/3,
 * Qwen 3.5, Gemma 4, GPT-2, Phi-3, Llama 2), each with X.gguf.inp (test
 * strings separated by "\n__ggml_vocab_test__\n") and X.gguf.out (the ids
 * the reference Hugging Face tokenizer gives, one line per string). Checks:
 *   - every string tokenizes (no BOS, no special-token parsing, as llama.cpp's
 *     test does) to exactly the expected ids, and decodes back to the string
 *     (whole and streamed token by token, which must agree);
 *   - the file's facts: model kind, pre-tokenizer, BOS/EOS, EOG ids;
 *   - special-token text is parsed only when asked; user text never forges
 *     control tokens;
 *   - real pairs' vocabularies compare (Qwen's 151,643 tokens in a 151,936
 *     row list).
 */
#include "test.h"
#include "tokenizer/tokenizer.h"
#include "gguf.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[n] = 0; *len = (size_t)n; }
    return b;
}

static sprig_tokenizer *load(const char *name, sprig_gguf **gout)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", name);
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(test_shared(rel), &err);
    CHECKF(g != NULL, "%s: %s", name, err.msg);
    if (!g) return NULL;
    sprig_tokenizer *t = sprig_tokenizer_from_gguf(g, &err);
    CHECKF(t != NULL, "%s: %s", name, err.msg);
    if (gout) *gout = g;
    else sprig_gguf_close(g);
    return t;
}

/* Whole decode and streaming decode (one push per token) must agree; returns the whole. */
static char *decode_both(const sprig_tokenizer *t, const int32_t *ids, int n, size_t *len, bool *same)
{
    char *whole = sprig_detokenize_n(t, ids, n, -1, len);
    size_t cap = sprig_detok_max_out(t);
    char *buf = malloc(cap), *acc = malloc(*len + 1);
    size_t k = 0;
    sprig_detok s;
    sprig_detok_init(&s, -1);
    *same = whole && buf && acc;
    for (int i = 0; i < n && *same; i++) {
        size_t m = sprig_detok_push(t, &s, ids[i], buf, cap);
        if (k + m > *len) { *same = false; break; }
        memcpy(acc + k, buf, m);
        k += m;
    }
    if (*same) {
        size_t m = sprig_detok_flush(t, &s, buf, cap);
        *same = k + m == *len && memcmp(acc, whole, k) == 0 && (m == 0 || memcmp(buf, whole + k, m) == 0);
    }
    free(buf);
    free(acc);
    return whole;
}

static const char SEP[] = "\n__ggml_vocab_test__\n";

static void check_vectors(const char *name)
{
    sprig_tokenizer *t = load(name, NULL);
    if (!t) return;
    char rel[256];
    size_t ilen = 0, olen = 0;
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf.inp", name);
    char *inp = slurp(test_shared(rel), &ilen);
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf.out", name);
    char *out = slurp(test_shared(rel), &olen);
    CHECK(inp && out);
    int n_case = 0, n_ok = 0, n_roundtrip = 0;
    char *ip = inp, *op = out;
    int32_t ids[4096], want[4096];
    while (inp && out && *ip) {
        char *sep = strstr(ip, SEP);
        if (!sep) break;
        size_t len = (size_t)(sep - ip);
        char *eol = strchr(op, '\n');
        if (!eol) break;
        *eol = 0;
        int nw = 0;
        for (char *q = op; *q && nw < 4096;) {
            char *e;
            long v = strtol(q, &e, 10);
            if (e == q) break;
            want[nw++] = (int32_t)v;
            q = e;
        }
        sprig_error err = { 0 };
        int n = sprig_tokenize(t, ip, len, 0, ids, 4096, &err);
        bool ok = n == nw && memcmp(ids, want, (size_t)n * sizeof *ids) == 0;
        n_case++;
        n_ok += ok;
        if (!ok) {
            fprintf(stderr, "  %s case %d: \"%.*s\"\n    want", name, n_case, (int)len, ip);
            for (int i = 0; i < nw; i++) fprintf(stderr, " %d", want[i]);
            fprintf(stderr, "\n    got ");
            for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
            fprintf(stderr, "%s%s\n", n < 0 ? " error: " : "", n < 0 ? err.msg : "");
        }
        CHECK(ok);
        if (n > 0) {
            size_t dl = 0;
            bool same = false;
            char *dec = decode_both(t, ids, n, &dl, &same);
            bool rt = dec && dl == len && memcmp(dec, ip, len) == 0;
            n_roundtrip += rt;
            CHECKF(rt, "%s case %d decodes to \"%s\"", name, n_case, dec ? dec : "(null)");
            CHECKF(same, "%s case %d: streaming decode differs from the whole decode", name, n_case);
            free(dec);
        } else {
            n_roundtrip += len == 0;
        }
        ip = sep + sizeof SEP - 1;
        op = eol + 1;
    }
    CHECKF(n_case >= 40, "%s: only %d cases read", name, n_case);
    fprintf(stderr, "  %-10s %s/%s: %d/%d cases exact, %d/%d decode back\n", name, sprig_tokenizer_model(t),
            sprig_tokenizer_pre(t), n_ok, n_case, n_roundtrip, n_case);
    free(inp);
    free(out);
    sprig_tokenizer_free(t);
}

static void test_vectors_all(void)
{
    static const char *const names[] = { "llama-bpe", "qwen2", "qwen35", "gpt-2", "gemma-4", "phi-3", "llama-spm" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) check_vectors(names[i]);
}

static int tok1(const sprig_tokenizer *t, const char *s, int flags, int32_t *ids, int cap)
{
    sprig_error err = { 0 };
    int n = sprig_tokenize(t, s, strlen(s), flags, ids, cap, &err);
    CHECKF(n >= 0, "tokenize \"%s\": %s", s, err.msg);
    return n;
}

static void test_specials_and_eog(void)
{
    int32_t ids[64];
    sprig_tokenizer *t = load("qwen2", NULL);
    if (t) {
        int start = sprig_tokenizer_find(t, "<|im_start|>", 12);
        CHECK(start < 0);   /* control: not findable from text */
        int n = tok1(t, "<|im_start|>user", SPRIG_TOK_PARSE_SPECIAL, ids, 64);
        CHECK(n == 2 && ids[0] == 151644);
        n = tok1(t, "<|im_start|>user", 0, ids, 64);
        CHECK(n > 2 && ids[0] != 151644);
        CHECK(sprig_tokenizer_is_eog(t, 151645));   /* <|im_end|> */
        CHECK(sprig_tokenizer_is_eog(t, 151643));   /* <|endoftext|> = EOS */
        CHECK(!sprig_tokenizer_is_eog(t, 151644));
        CHECK_STR(sprig_tokenizer_pre(t), "qwen2");
        CHECK(!sprig_tokenizer_add_bos(t));
        sprig_tokenizer_free(t);
    }
    t = load("llama-bpe", NULL);
    if (t) {
        CHECK_EQ_INT(sprig_tokenizer_bos(t), 128000);
        int n = tok1(t, "Hello", SPRIG_TOK_ADD_SPECIAL, ids, 64);
        CHECK(n == 2 && ids[0] == 128000);
        CHECK(sprig_tokenizer_is_eog(t, 128009));   /* <|eot_id|> */
        CHECK(sprig_tokenizer_is_eog(t, 128001));   /* <|end_of_text|> */
        n = tok1(t, "a<|eot_id|>b", SPRIG_TOK_PARSE_SPECIAL, ids, 64);
        CHECK(n == 3 && ids[1] == 128009);
        size_t len = 0;
        char *s = sprig_detokenize_n(t, ids, n, -1, &len);
        CHECK_STR(s, "ab");   /* control tokens decode to nothing */
        free(s);
        sprig_tokenizer_free(t);
    }
    t = load("gemma-4", NULL);
    if (t) {
        CHECK(sprig_tokenizer_add_bos(t));   /* forced on, as llama.cpp does */
        int eot = -1;
        const int32_t *eog;
        int ne = sprig_tokenizer_eog_ids(t, &eog);
        CHECK(ne >= 2);
        for (int i = 0; i < ne; i++) {
            size_t pl;
            const char *p = sprig_tokenizer_piece(t, eog[i], &pl);
            if (p && strcmp(p, "<turn|>") == 0) eot = eog[i];
            CHECKF(strcmp(p, "</s>") != 0, "</s> must not end a Gemma 4 turn");
        }
        CHECK(eot >= 0);
        int n = tok1(t, "<|turn>user\nHi<turn|>", SPRIG_TOK_PARSE_SPECIAL, ids, 64);
        CHECK(n >= 3 && ids[n - 1] == eot);
        sprig_tokenizer_free(t);
    }
    t = load("phi-3", NULL);
    if (t) {
        /* Phi-3's special tokens swallow the whitespace after them (rstrip) */
        int a = tok1(t, "<|user|>\nHi", SPRIG_TOK_PARSE_SPECIAL, ids, 64);
        int32_t b_ids[64];
        int b = tok1(t, "<|user|>Hi", SPRIG_TOK_PARSE_SPECIAL, b_ids, 64);
        CHECK(a == b && memcmp(ids, b_ids, (size_t)a * sizeof *ids) == 0);
        CHECK(sprig_tokenizer_is_eog(t, 32007));   /* <|end|> */
        sprig_tokenizer_free(t);
    }
}

static void test_invalid_utf8_bpe(void)
{
    sprig_tokenizer *t = load("llama-bpe", NULL);
    if (!t) return;
    int32_t a[64], b[64];
    /* ill-formed bytes read as U+FFFD per maximal subpart */
    int na = tok1(t, "x\xE2\x82y\xFFz", 0, a, 64);
    int nb = tok1(t, "x\xEF\xBF\xBDy\xEF\xBF\xBDz", 0, b, 64);
    CHECK(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0);
    sprig_tokenizer_free(t);
}

int main(void)
{
    RUN(test_vectors_all);
    RUN(test_specials_and_eog);
    RUN(test_invalid_utf8_bpe);
    return test_summary("test-tokenizer-vocab");
}
