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
#include "tokenizer/pretok.h"
#include "gguf/gguf.h"

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

/* A copy of t's vocabulary truncated to n tokens, as a description. */
static sprig_tokenizer *truncated(const sprig_tokenizer *t, int n, sprig_gguf *g)
{
    (void)g;
    const char **pieces = malloc((size_t)n * sizeof *pieces);
    size_t *lens = malloc((size_t)n * sizeof *lens);
    int32_t *types = malloc((size_t)n * sizeof *types);
    for (int i = 0; i < n; i++) {
        pieces[i] = sprig_tokenizer_piece(t, i, &lens[i]);
        types[i] = sprig_tokenizer_type(t, i);
    }
    /* merges from the file: only those whose parts survive are kept */
    int64_t kv = sprig_gguf_find_kv(g, "tokenizer.ggml.merges");
    int et = 0;
    uint64_t nm = 0;
    sprig_error err = { 0 };
    sprig_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &nm, true, &err);
    const char **merges = malloc(nm * sizeof *merges);
    size_t *mlens = malloc(nm * sizeof *mlens);
    int k = 0;
    for (uint64_t i = 0; i < nm; i++) {
        merges[k] = sprig_gguf_arr_str(g, kv, i, &mlens[k]);
        k++;
    }
    struct sprig_vocab_desc d = { .model = "gpt2", .pre = "qwen2", .pre_len = 5, .n_vocab = n, .pieces = pieces,
                                  .piece_lens = lens, .types = types, .n_merges = k, .merges = merges, .merge_lens = mlens,
                                  .bos = -1, .eos = 151643, .unk = -1 };
    sprig_tokenizer *r = sprig_tokenizer_create(&d, &err);
    CHECKF(r != NULL, "%s", err.msg);
    free(pieces); free(lens); free(types); free(merges); free(mlens);
    return r;
}

static void test_draft_target_pairs(void)
{
    sprig_gguf *g = NULL;
    sprig_tokenizer *q2 = load("qwen2", &g), *q35 = load("qwen35", NULL), *l3 = load("llama-bpe", NULL);
    if (!q2 || !q35 || !l3) goto done;
    /* Qwen 2/3 and Qwen 3.5 share the vocabulary */
    CHECK_EQ_INT(sprig_tokenizer_first_difference(q2, q35), -1);
    /* the published 151,665 tokens against the GGUF's padded 151,936 rows */
    sprig_tokenizer *q2s = truncated(q2, 151665, g);
    if (q2s) {
        CHECK_EQ_INT(sprig_tokenizer_n_vocab(q2), 151936);
        CHECK_EQ_INT(sprig_tokenizer_first_difference(q2, q2s), -1);
        CHECK_EQ_INT(sprig_tokenizer_first_difference(q2s, q2), -1);
        sprig_tokenizer_free(q2s);
    }
    /* Llama 3 against Qwen: named at the first differing id */
    int d = sprig_tokenizer_first_difference(l3, q2);
    CHECK(d >= 0);
    size_t la, lb;
    const char *pa = sprig_tokenizer_piece(l3, d, &la), *pb = sprig_tokenizer_piece(q2, d, &lb);
    CHECK(la != lb || memcmp(pa, pb, la) != 0 || sprig_tokenizer_type(l3, d) != sprig_tokenizer_type(q2, d));
    for (int i = 0; i < d; i++) {
        pa = sprig_tokenizer_piece(l3, i, &la);
        pb = sprig_tokenizer_piece(q2, i, &lb);
        if (la != lb || memcmp(pa, pb, la)) { CHECKF(0, "ids before %d must agree, %d differs", d, i); break; }
    }
done:
    sprig_tokenizer_free(q2); sprig_tokenizer_free(q35); sprig_tokenizer_free(l3);
    sprig_gguf_close(g);
}

/* Hostile vocabularies: each refused naming the field. */
static void test_hostile_bpe(void)
{
    const char *pieces[] = { "a", "b", "ab", "c" };
    size_t lens[] = { 1, 1, 2, 1 };
    const char *m_ok[] = { "a b" }, *m_unknown[] = { "a x" }, *m_nomerged[] = { "b a" }, *m_noparts[] = { "ab" };
    size_t ml[] = { 3 }, ml2[] = { 2 };
    struct sprig_vocab_desc d = { .model = "gpt2", .pre = "qwen2", .pre_len = 5, .n_vocab = 4, .pieces = pieces,
                                  .piece_lens = lens, .n_merges = 1, .merges = m_ok, .merge_lens = ml, .bos = -1, .eos = -1, .unk = -1 };
    sprig_error err = { 0 };
    sprig_tokenizer *t = sprig_tokenizer_create(&d, &err);
    CHECKF(t != NULL, "%s", err.msg);
    int32_t ids[8];
    if (t) CHECK(sprig_tokenize(t, "ab", 2, 0, ids, 8, &err) == 1 && ids[0] == 2);
    sprig_tokenizer_free(t);
    struct { const char *const *m; size_t *l; const char *needle; } cases[] = {
        { m_unknown, ml, "merges[0] names a right part \"x\"" },
        { m_nomerged, ml, "merges[0] names a merged piece" },
        { m_noparts, ml2, "merges[0] = \"ab\" is not \"A B\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sprig_vocab_desc b = d;
        b.merges = cases[i].m;
        b.merge_lens = cases[i].l;
        t = sprig_tokenizer_create(&b, &err);
        CHECKF(!t && err.code == SPRIG_E_FORMAT && strstr(err.msg, cases[i].needle), "case %zu: %s", i, err.msg);
        sprig_tokenizer_free(t);
    }
    struct sprig_vocab_desc b = d;
    b.pre = "llama-9000";
    b.pre_len = 10;
    t = sprig_tokenizer_create(&b, &err);
    CHECKF(!t && err.code == SPRIG_E_UNSUPPORTED && strstr(err.msg, "tokenizer.ggml.pre \"llama-9000\""), "%s", err.msg);
    b = d;
    b.eos = 4;
    t = sprig_tokenizer_create(&b, &err);
    CHECKF(!t && strstr(err.msg, "eos_token_id = 4"), "%s", err.msg);
    b = d;
    const char *dup[] = { "a", "b", "ab", "a" };
    b.pieces = dup;
    t = sprig_tokenizer_create(&b, &err);
    CHECKF(!t && strstr(err.msg, "tokens[3]") && strstr(err.msg, "duplicates tokens[0]"), "%s", err.msg);
    /* an expression that does not compile is named with PCRE2's reason */
    const char *bad[] = { "\\p{L}+", "(?i:'s|" };
    sprig_pretok *p = sprig_pretok_compile_regex("broken", bad, 2, &err);
    CHECKF(!p && strstr(err.msg, "pre-tokenizer 'broken': expression 1 does not compile at offset"), "%s", err.msg);
    /* every row of the table compiles */
    int n_rows = 0;
    const struct sprig_pretok_row *rows = sprig_pretok_rows(&n_rows);
    for (int i = 0; i < n_rows; i++) {
        p = sprig_pretok_compile(&rows[i], &err);
        CHECKF(p != NULL, "row %s: %s", rows[i].name, err.msg);
        sprig_pretok_free(p);
    }
}

int main(void)
{
    RUN(test_vectors_all);
    RUN(test_specials_and_eog);
    RUN(test_invalid_utf8_bpe);
    RUN(test_draft_target_pairs);
    RUN(test_hostile_bpe);
    return test_summary("test-tokenizer-vocab");
}
