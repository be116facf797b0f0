/*
 * tokenizer/spm — SentencePiece-style encoding of one fragment ("llama"
 * vocabularies).
 *
 * The fragment gets a dummy-prefix space when add_space_prefix and it starts
 * the text or follows a special token (llama.cpp's rule), every ' ' becomes
 * '▁', and each character (well-formed UTF-8 sequence, or a lone byte of an
 * ill-formed one) becomes the token of that piece or, failing that, one byte
 * token per byte. Then merge.c merges pairs by the score of the merged token.
 */
#include "tokenizer/encode.h"

#include <string.h>

static const char SPACE_MARK[3] = { '\xE2', '\x96', '\x81' };

/* One character (bytes c[n]) -> its token, or its bytes' fallback tokens.
 * With e->sym NULL only counts. */
static sprig_status add_char(struct sprig_enc *e, size_t *k, const char *c, size_t n, size_t at)
{
    const sprig_tokenizer *t = e->t;
    int id = sprig_vocab_find2(t, c, n, NULL, 0);
    if (id >= 0) { if (e->sym) e->sym[*k] = id; (*k)++; return SPRIG_OK; }
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)c[i];
        if (t->byte_tok[b] < 0)
            return sprig_err(e->err, SPRIG_E_UNSUPPORTED,
                             "tokenize: byte 0x%02X at text offset %zu has no token (no <0x%02X> piece and no unknown token)",
                             b, at, b);
        if (e->sym) e->sym[*k] = t->byte_tok[b];
        (*k)++;
    }
    return SPRIG_OK;
}

static sprig_status segment(struct sprig_enc *e, const char *text, size_t len, bool prefix, size_t *count)
{
    sprig_status st = SPRIG_OK;
    size_t k = 0;
    if (prefix) st = add_char(e, &k, SPACE_MARK, 3, 0);
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len && st == SPRIG_OK;) {
        if (u[i] == ' ') { st = add_char(e, &k, SPACE_MARK, 3, i); i++; continue; }
        int n = sprig_utf8_seq_len(u + i, len - i);
        if (n == 0) n = 1;
        st = add_char(e, &k, text + i, (size_t)n, i);
        i += (size_t)n;
    }
    *count = k;
    return st;
}

sprig_status sprig_spm_encode(struct sprig_enc *e, const char *text, size_t len, bool at_start)
{
    if (len == 0) return SPRIG_OK;
    bool prefix = at_start && e->t->add_space_prefix;
    /* count, size the scratch, then fill (at most 3 symbols per byte + 3) */
    int32_t *keep = e->sym;
    e->sym = NULL;
    size_t n = 0;
    sprig_status st = segment(e, text, len, prefix, &n);
    e->sym = keep;
    if (st != SPRIG_OK) return st;
    if ((st = sprig_enc_reserve_sym(e, n)) != SPRIG_OK) return st;
    size_t n2 = 0;
    st = segment(e, text, len, prefix, &n2);
    SPRIG_ASSERT(st == SPRIG_OK && n2 == n);
    int k = sprig_merge_apply(e->t, &e->m, e->sym, (int)n);
    for (int i = 0; i < k; i++) sprig_enc_push(e, e->sym[i]);
    return SPRIG_OK;
}
