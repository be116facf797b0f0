/*
 * tokenizer/detok — token ids -> text, whole or streaming.
 *
 * Each token contributes the bytes precomputed at creation (vocab.c): its
 * piece with '▁' -> ' ', the byte of a <0xNN> token, nothing for control /
 * unknown / unused tokens. Right after BOS a leading space is dropped
 * (llama2.c's rule, which undoes the dummy prefix). The byte stream then goes
 * through a UTF-8 checker so the output is always valid UTF-8: a well-formed
 * sequence split across tokens is held back (at most 3 bytes, in the stream
 * state) until it completes, and each maximal ill-formed subsequence becomes
 * U+FFFD exactly as Python's bytes.decode("utf-8", "replace") does. The whole
 * decode is the streaming decode run to the end, so the two always agree.
 */
#include "tokenizer/vocab.h"

#include <stdlib.h>
#include <string.h>

static const char REPLACEMENT[3] = { '\xEF', '\xBF', '\xBD' };   /* U+FFFD */

/* Output sink: writes whole characters only, drops what does not fit. */
struct sink {
    char *out;
    size_t cap, n;
};

static void put(struct sink *k, const void *p, size_t n)
{
    if (k->n + n > k->cap) { k->cap = k->n; return; }   /* full: drop the rest */
    memcpy(k->out + k->n, p, n);
    k->n += n;
}

/* Total length of the sequence a lead byte starts, 0 if it cannot lead. */
static int lead_len(unsigned char c)
{
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* May byte c follow the held prefix pend[0..n) (n >= 1)? */
static bool continues(const unsigned char *pend, int n, unsigned char c)
{
    unsigned lo = 0x80, hi = 0xBF;
    if (n == 1) {
        switch (pend[0]) {
        case 0xE0: lo = 0xA0; break;
        case 0xED: hi = 0x9F; break;
        case 0xF0: lo = 0x90; break;
        case 0xF4: hi = 0x8F; break;
        default: break;
        }
    }
    return c >= lo && c <= hi;
}

static void feed(sprig_detok *s, struct sink *k, unsigned char c)
{
    if (s->n_pend > 0) {
        if (continues(s->pend, s->n_pend, c)) {
            s->pend[s->n_pend++] = c;
            if (s->n_pend == lead_len(s->pend[0])) { put(k, s->pend, (size_t)s->n_pend); s->n_pend = 0; }
            return;
        }
        put(k, REPLACEMENT, 3);   /* the held prefix was a maximal ill-formed subsequence */
        s->n_pend = 0;
    }
    int need = lead_len(c);
    if (need == 1) put(k, &c, 1);
    else if (need == 0) put(k, REPLACEMENT, 3);
    else { s->pend[0] = c; s->n_pend = 1; }
}

void sprig_detok_init(sprig_detok *s, int prev_token)
{
    memset(s, 0, sizeof *s);
    s->prev = prev_token;
    s->n_pend = 0;
}

size_t sprig_detok_push(const sprig_tokenizer *t, sprig_detok *s, int id, char *out, size_t cap)
{
    if (!t || !s) return 0;
    if (s->n_pend < 0 || s->n_pend > 3) s->n_pend = 0;   /* a corrupted state holds nothing */
    struct sink k = { .out = out, .cap = out ? cap : 0 };
    int prev = s->prev;
    s->prev = id;
    if (id < 0 || id >= t->n_vocab) return 0;
    const unsigned char *p = (const unsigned char *)t->blob + t->text_off[id];
    size_t n = t->text_len[id];
    /* the dummy-prefix space SentencePiece put in front of the text goes away
     * again at the start of the stream or right after BOS (llama.cpp's
     * remove_space rule) */
    if (t->add_space_prefix && (prev < 0 || prev == t->bos) && n > 0 && p[0] == ' ') { p++; n--; }
    for (size_t i = 0; i < n; i++) feed(s, &k, p[i]);
    return k.n;
}

size_t sprig_detok_flush(const sprig_tokenizer *t, sprig_detok *s, char *out, size_t cap)
{
    if (!t || !s) return 0;
    struct sink k = { .out = out, .cap = out ? cap : 0 };
    if (s->n_pend > 0) put(&k, REPLACEMENT, 3);
    s->n_pend = 0;
    return k.n;
}

size_t sprig_detok_max_out(const sprig_tokenizer *t)
{
    /* a held prefix turning into U+FFFD, then every byte possibly U+FFFD */
    return t ? 3 + 3 * t->max_text_len : 0;
}

char *sprig_detokenize_n(const sprig_tokenizer *t, const int32_t *ids, int n, int prev_token, size_t *len)
{
    if (len) *len = 0;
    if (!t || n < 0 || (!ids && n > 0)) return NULL;
    size_t total = 3 + 1;   /* final flush + NUL */
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab) continue;
        if (sprig_add_ovf(total, 3 * (size_t)t->text_len[ids[i]], &total)) return NULL;
    }
    char *buf = malloc(total);
    if (!buf) return NULL;
    sprig_detok s;
    sprig_detok_init(&s, prev_token);
    size_t o = 0;
    for (int i = 0; i < n; i++) o += sprig_detok_push(t, &s, ids[i], buf + o, total - 1 - o);
    o += sprig_detok_flush(t, &s, buf + o, total - 1 - o);
    buf[o] = 0;
    char *shrunk = realloc(buf, o + 1);
    if (len) *len = o;
    return shrunk ? shrunk : buf;
}

char *sprig_detokenize(const sprig_tokenizer *t, const int32_t *ids, int n, int prev_token)
{
    return sprig_detokenize_n(t, ids, n, prev_token, NULL);
}
