/*
 * tokenizer/encode — sprig_tokenize: arguments checked, ill-formed UTF-8
 * replaced for the BPE kinds, special tokens cut out (special.c), each raw
 * fragment handed to its kind's encoder (spm.c, bpe.c), BOS / EOS around.
 */
#include "tokenizer/encode.h"
#include "tokenizer/special.h"

#include <stdlib.h>
#include <string.h>

static const char REPLACEMENT[3] = { '\xEF', '\xBF', '\xBD' };   /* U+FFFD */

sprig_status sprig_enc_reserve_sym(struct sprig_enc *e, size_t n)
{
    if (n > e->sym_cap) {
        size_t c = n < 256 ? 256 : n + n / 2;
        int32_t *s = realloc(e->sym, c * sizeof *s);
        if (!s) return sprig_err(e->err, SPRIG_E_NOMEM, "tokenize: out of memory for %zu symbols", n);
        e->sym = s;
        e->sym_cap = c;
    }
    return sprig_merge_reserve(&e->m, n, e->err);
}

/* text with each maximal ill-formed subsequence replaced by U+FFFD, in a
 * malloc'd copy (*out NULL when the text is already valid). */
static sprig_status sanitize(const char *text, size_t len, char **out, size_t *out_len, sprig_error *err)
{
    const unsigned char *u = (const unsigned char *)text;
    *out = NULL;
    size_t i = 0;
    while (i < len) {
        if (u[i] < 0x80) { i++; continue; }
        int n = sprig_utf8_seq_len(u + i, len - i);
        if (n == 0) break;
        i += (size_t)n;
    }
    if (i == len) return SPRIG_OK;
    char *b = malloc(3 * len + 1);   /* each bad byte at worst becomes 3 */
    if (!b) return sprig_err(err, SPRIG_E_NOMEM, "tokenize: out of memory for %zu bytes of text", len);
    memcpy(b, text, i);
    size_t k = i;
    while (i < len) {
        int n = u[i] < 0x80 ? 1 : sprig_utf8_seq_len(u + i, len - i);
        if (n > 0) { memcpy(b + k, u + i, (size_t)n); k += (size_t)n; i += (size_t)n; continue; }
        memcpy(b + k, REPLACEMENT, 3);
        k += 3;
        i += sprig_utf8_bad_len(u + i, len - i);
    }
    *out = b;
    *out_len = k;
    return SPRIG_OK;
}

struct frag {
    struct sprig_enc *e;
    bool at_start;          /* SentencePiece: start of text or after a special token */
};

static sprig_status on_fragment(void *user, const char *text, size_t len, int32_t token)
{
    struct frag *f = user;
    if (token >= 0) {
        sprig_enc_push(f->e, token);
        f->at_start = true;
        return SPRIG_OK;
    }
    sprig_status st = f->e->t->kind->bpe ? sprig_bpe_encode(f->e, text, len) : sprig_spm_encode(f->e, text, len, f->at_start);
    f->at_start = false;
    if (st == SPRIG_OK && f->e->n > INT32_MAX / 2)
        st = sprig_err(f->e->err, SPRIG_E_INVALID_ARG, "tokenize: too many tokens");
    return st;
}

int sprig_tokenize(const sprig_tokenizer *t, const char *text, size_t len, int flags,
                   int32_t *out, int cap, sprig_error *err)
{
    if (!t) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: tokenizer is NULL"); return -1; }
    if (!text && len) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: text is NULL with length %zu", len); return -1; }
    if (cap < 0 || (!out && cap > 0)) { sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: bad output buffer (cap %d)", cap); return -1; }
    if (flags & ~(SPRIG_TOK_BOS | SPRIG_TOK_EOS | SPRIG_TOK_ADD_SPECIAL | SPRIG_TOK_PARSE_SPECIAL | SPRIG_TOK_MID_TEXT)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: unknown flags 0x%x", (unsigned)flags);
        return -1;
    }
    if (len > SPRIG_TOKENIZE_MAX_TEXT) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: text of %zu bytes exceeds %zu", len, SPRIG_TOKENIZE_MAX_TEXT);
        return -1;
    }
    bool add_bos = (flags & SPRIG_TOK_BOS) || ((flags & SPRIG_TOK_ADD_SPECIAL) && t->add_bos);
    bool add_eos = (flags & SPRIG_TOK_EOS) || ((flags & SPRIG_TOK_ADD_SPECIAL) && t->add_eos);
    if (add_bos && t->bos < 0) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: add_bos requested but the vocabulary has no BOS token");
        return -1;
    }
    if (add_eos && t->eos < 0) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "tokenize: add_eos requested but the vocabulary has no EOS token");
        return -1;
    }

    struct sprig_enc e = { .t = t, .out = out, .cap = cap, .err = err };
    char *clean = NULL;
    if (t->kind->bpe) {
        size_t clean_len = 0;
        if (sanitize(text ? text : "", len, &clean, &clean_len, err) != SPRIG_OK) return -1;
        if (clean) { text = clean; len = clean_len; }
    }
    if (add_bos) sprig_enc_push(&e, t->bos);
    struct frag f = { .e = &e, .at_start = !(flags & SPRIG_TOK_MID_TEXT) };
    sprig_status st = sprig_special_partition(t, text ? text : "", len, (flags & SPRIG_TOK_PARSE_SPECIAL) != 0,
                                              on_fragment, &f, err);
    if (add_eos) sprig_enc_push(&e, t->eos);
    free(clean);
    free(e.sym);
    free(e.buf);
    free(e.word);
    sprig_merge_release(&e.m);
    if (st != SPRIG_OK) return -1;
    return e.n;
}
