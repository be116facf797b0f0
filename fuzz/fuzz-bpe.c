/*
 * fuzz/fuzz-bpe.c — libFuzzer entry point for the BPE tokenizers (byte-level
 * "gpt2" and Gemma 4's "gemma4"), the pre-tokenizers on PCRE2 and the
 * special-token partition.
 *
 * The first input byte picks a mode:
 *   0-5: the rest is text, encoded with a real vocabulary ($SPRIG_SHARED/
 *        models/vocab/: Llama 3, Qwen 2, Gemma 4; with and without special-
 *        token parsing). Checked: the count bound 3 * len + 5, ids in range,
 *        decoded text is valid UTF-8, streaming decode equals whole decode,
 *        and (byte-level, no special parsing) valid UTF-8 text comes back
 *        byte for byte.
 *   6-7: the rest is a small vocabulary: pieces separated by 0xFF, then
 *        merges after 0xFE (pairs "A B" separated by 0xFF), then text after
 *        0xFD; create must fail with a message or give a tokenizer whose
 *        encode stays in bounds.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Iinclude -Isrc fuzz/fuzz-bpe.c src/tokenizer/[a-z]*.c src/gguf/gguf.c \
 *       src/base/err.c src/base/log.c src/base/mmap.c src/tensor/types.c -lpcre2-8 -lm -o build/fuzz-bpe
 *   ./build/fuzz-bpe -max_total_time=300 -max_len=4096
 */
#include "tokenizer/tokenizer.h"
#include "gguf/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sprig_tokenizer *real(int which)
{
    static sprig_tokenizer *t[3];
    static const char *const names[3] = { "llama-bpe", "qwen2", "gemma-4" };
    if (t[which]) return t[which];
    const char *base = getenv("SPRIG_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/vocab/ggml-vocab-%s.gguf", base && *base ? base : "../shared", names[which]);
    sprig_error err;
    sprig_gguf *g = sprig_gguf_open(path, &err);
    if (!g) { fprintf(stderr, "%s\n", err.msg); abort(); }
    t[which] = sprig_tokenizer_from_gguf(g, &err);
    sprig_gguf_close(g);
    if (!t[which]) { fprintf(stderr, "%s\n", err.msg); abort(); }
    return t[which];
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        int need = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (!need || i + (size_t)need > n) return false;
        unsigned lo = 0x80, hi = 0xBF;
        if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; else if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F;
        if (need > 1 && (s[i + 1] < lo || s[i + 1] > hi)) return false;
        for (int k = 2; k < need; k++) if (s[i + (size_t)k] < 0x80 || s[i + (size_t)k] > 0xBF) return false;
        i += (size_t)need;
    }
    return true;
}

static void check_encode(const sprig_tokenizer *t, const char *text, size_t len, int flags, bool roundtrip)
{
    int cap = (int)(3 * len + 5);
    int32_t *ids = malloc(((size_t)cap + 1) * sizeof *ids);
    sprig_error err = { 0 };
    int n = sprig_tokenize(t, text, len, flags, ids, cap, &err);
    if (n < 0) { if (!err.msg[0]) abort(); free(ids); return; }
    if (n > cap) abort();
    int V = sprig_tokenizer_n_vocab(t);
    for (int i = 0; i < n; i++) if (ids[i] < 0 || ids[i] >= V) abort();
    size_t whole_len = 0;
    char *whole = sprig_detokenize_n(t, ids, n, -1, &whole_len);
    if (!whole || !valid_utf8((unsigned char *)whole, whole_len)) abort();
    size_t bcap = sprig_detok_max_out(t);
    char *buf = malloc(bcap + 1), *acc = malloc(whole_len + 1);
    size_t k = 0;
    sprig_detok s;
    sprig_detok_init(&s, -1);
    for (int i = 0; i < n; i++) {
        size_t m = sprig_detok_push(t, &s, ids[i], buf, bcap);
        if (!valid_utf8((unsigned char *)buf, m) || k + m > whole_len) abort();
        memcpy(acc + k, buf, m);
        k += m;
    }
    size_t m = sprig_detok_flush(t, &s, buf, bcap);
    if (k + m != whole_len || memcmp(acc, whole, k) || memcmp(buf, whole + k, m)) abort();
    if (roundtrip && valid_utf8((const unsigned char *)text, len) && (whole_len != len || memcmp(whole, text, len))) abort();
    free(buf); free(acc); free(whole); free(ids);
}

static void fuzz_vocab(const uint8_t *d, size_t n)
{
    const char *pieces[64], *merges[64];
    size_t plen[64], mlen[64];
    int np = 0, nm = 0;
    size_t i = 0, start = 0;
    while (i < n && d[i] != 0xFE && np < 64) {
        if (d[i] == 0xFF) { pieces[np] = (const char *)d + start; plen[np++] = i - start; start = i + 1; }
        i++;
    }
    if (i < n && d[i] == 0xFE) i++;
    start = i;
    while (i < n && d[i] != 0xFD && nm < 64) {
        if (d[i] == 0xFF) { merges[nm] = (const char *)d + start; mlen[nm++] = i - start; start = i + 1; }
        i++;
    }
    if (np == 0) return;
    size_t text_at = i < n ? i + 1 : n;
    struct sprig_vocab_desc desc = { .model = (n & 1) ? "gpt2" : "gemma4", .pre = "qwen2", .pre_len = 5, .n_vocab = np,
                                     .pieces = pieces, .piece_lens = plen, .n_merges = nm, .merges = merges,
                                     .merge_lens = mlen, .bos = -1, .eos = -1, .unk = -1 };
    sprig_error err = { 0 };
    sprig_tokenizer *t = sprig_tokenizer_create(&desc, &err);
    if (!t) { if (!err.msg[0]) abort(); return; }
    check_encode(t, (const char *)d + text_at, n - text_at, SPRIG_TOK_PARSE_SPECIAL, false);
    sprig_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned mode = data[0] % 8;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (mode < 6) {
        int which = (int)(mode / 2);
        bool special = mode & 1;
        check_encode(real(which), text, len, special ? SPRIG_TOK_PARSE_SPECIAL : 0, !special && which < 2);
    } else {
        fuzz_vocab(data + 1, size - 1);
    }
    return 0;
}
