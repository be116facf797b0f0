/*
 * fuzz/fuzz-tokenizer.c — libFuzzer entry point for the llama tokenizer.
 *
 * The first input byte picks a mode:
 *   even: the rest is text, encoded with the stories260K vocabulary
 *         ($SPRIG_SHARED/models/stories260K.gguf, default ../shared). Checked:
 *         the count bound 3 * len + 4, ids in range, decoded text is valid
 *         UTF-8, streaming decode (with the smallest always-enough buffer)
 *         equals whole decode, and valid UTF-8 text without U+2581 comes back
 *         byte for byte.
 *   odd:  the rest is a vocabulary (pieces separated by 0xFF bytes; each
 *         piece's first byte sets its type and score) followed by text after
 *         the last 0xFE byte; create must either fail with a message or give
 *         a tokenizer whose encode never overflows and whose ids are in range.
 *
 * Not part of the default build. Build and run (from the repository root):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Iinclude -Isrc fuzz/fuzz-tokenizer.c src/tokenizer/vocab.c src/tokenizer/vocab-gguf.c \
 *       src/tokenizer/spm.c src/tokenizer/detok.c src/gguf/gguf.c \
 *       src/base/err.c src/base/log.c src/base/mmap.c src/tensor/types.c -lm -o build/fuzz-tokenizer
 *   ./build/fuzz-tokenizer -max_total_time=60 -max_len=4096
 */
#include "tokenizer/tokenizer.h"
#include "gguf/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sprig_tokenizer *stories(void)
{
    static sprig_tokenizer *t;
    if (t) return t;
    const char *base = getenv("SPRIG_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", base && *base ? base : "../shared");
    sprig_error err;
    sprig_gguf *g = sprig_gguf_open(path, &err);
    if (!g) { fprintf(stderr, "fuzz-tokenizer: %s\n", err.msg); abort(); }
    t = sprig_tokenizer_from_gguf(g, &err);
    sprig_gguf_close(g);
    if (!t) { fprintf(stderr, "fuzz-tokenizer: %s\n", err.msg); abort(); }
    return t;
}

/* Well-formed UTF-8 (Unicode Table 3-7)? */
static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t need;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) need = 2;
        else if (c >= 0xE0 && c <= 0xEF) { need = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
        else return false;
        if (n - i < need || s[i + 1] < lo || s[i + 1] > hi) return false;
        for (size_t k = 2; k < need; k++) if (s[i + k] < 0x80 || s[i + k] > 0xBF) return false;
        i += need;
    }
    return true;
}

static void check_text(const sprig_tokenizer *t, const char *text, size_t len, bool exact)
{
    sprig_error err = { 0 };
    int cap = (int)(3 * len + 4);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    bool bos = sprig_tokenizer_bos(t) >= 0;
    int n = sprig_tokenize(t, text, len, bos, ids, cap, &err);
    if (n < 0) { free(ids); if (!err.msg[0]) abort(); return; }
    if (n > cap) abort();
    for (int i = 0; i < n; i++) if (ids[i] < 0 || ids[i] >= sprig_tokenizer_n_vocab(t)) abort();
    int first = bos ? 1 : 0;
    int prev = bos ? ids[0] : -1;
    size_t dl;
    char *dec = sprig_detokenize_n(t, ids + first, n - first, prev, &dl);
    if (!dec || !valid_utf8((const unsigned char *)dec, dl)) abort();
    if (exact && (dl != len || memcmp(dec, text, len))) abort();
    size_t mo = sprig_detok_max_out(t);
    char *buf = malloc(dl + mo + 1);
    sprig_detok s;
    sprig_detok_init(&s, prev);
    size_t o = 0;
    for (int i = first; i < n; i++) {
        size_t w = sprig_detok_push(t, &s, ids[i], buf + o, mo);
        if (o + w > dl) abort();
        o += w;
    }
    o += sprig_detok_flush(t, &s, buf + o, mo);
    if (o != dl || memcmp(buf, dec, dl)) abort();
    free(buf); free(dec); free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    if ((data[0] & 1) == 0) {
        const sprig_tokenizer *t = stories();
        bool exact = valid_utf8((const unsigned char *)rest, n) && !memmem(rest, n, "\xE2\x96\x81", 3);
        check_text(t, rest, n, exact);
        return 0;
    }
    /* vocabulary | 0xFE | text */
    const char *sep = memrchr(rest, 0xFE, n);
    size_t vlen = sep ? (size_t)(sep - rest) : n;
    const char *text = sep ? sep + 1 : "";
    size_t tlen = sep ? n - vlen - 1 : 0;
    enum { MAXV = 512 };
    const char *pieces[MAXV];
    size_t lens[MAXV];
    float scores[MAXV];
    int32_t types[MAXV];
    int nv = 0;
    for (size_t i = 0; i <= vlen && nv < MAXV;) {
        const char *e = memchr(rest + i, 0xFF, vlen - i);
        size_t end = e ? (size_t)(e - rest) : vlen;
        size_t pl = end - i;
        unsigned char ctl = pl ? (unsigned char)rest[i] : 0;
        pieces[nv] = pl ? rest + i + 1 : "";
        lens[nv] = pl ? pl - 1 : 0;
        types[nv] = ctl % 8;                    /* 7 is invalid on purpose */
        scores[nv] = (float)((int)(ctl >> 3) - 16);
        nv++;
        i = end + 1;
    }
    struct sprig_vocab_desc d = { .model = "llama", .n_vocab = nv, .pieces = pieces, .piece_lens = lens,
                                  .scores = scores, .types = types, .bos = nv > 1 ? 1 : -1, .eos = -1,
                                  .unk = nv > 2 ? (int)(data[0] >> 1) % nv : -1, .add_bos = true,
                                  .add_space_prefix = (data[0] & 2) != 0 };
    sprig_error err = { 0 };
    sprig_tokenizer *t = sprig_tokenizer_create(&d, &err);
    if (!t) { if (err.code == SPRIG_OK || !err.msg[0]) abort(); return 0; }
    check_text(t, text, tlen, false);
    sprig_tokenizer_free(t);
    return 0;
}
