/*
 * tokenizer/spm — SentencePiece-style encoding of one fragment ("llama"
 * vocabularies).
 *
 * The fragment gets a dummy-prefix space when add_space_prefix and it starts
 * the text or follows a special token (llama.cpp's rule), every ' ' becomes
 * '▁', and each character (well-formed UTF-8 sequence, or a lone byte of an
 * ill-formed one) becomes the token of that piece or, failing that, one byte
 * token per byte. Then merge.c merges pairs by the score of the merged token.
 *
 * SentencePiece has no pre-tokenizer, so a long text would be one merge
 * sequence (a heap of a million candidates for 1 MB). It is cut first, at
 * every boundary between two symbols whose facing characters (the last of
 * the left piece, the first of the right) never stand side by side inside
 * any piece that text can produce: no merge can ever reach across such a
 * cut, and the merges on either side do not depend on each other (each
 * side's pairs keep their order and ties), so the ids are exactly those of
 * the uncut text, from small heaps.
 */
#include "tokenizer/encode.h"

#include <stdlib.h>
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

/* Code point of the UTF-8 character at p (len >= 1); an ill-formed byte maps
 * above U+10FFFF so it never equals a real character. */
static uint32_t cp_at(const unsigned char *p, size_t len, size_t *n)
{
    int k = sprig_utf8_seq_len(p, len);
    if (k == 0) { *n = 1; return 0x110000u + p[0]; }
    *n = (size_t)k;
    if (k == 1) return p[0];
    uint32_t c = p[0] & (0x7Fu >> k);
    for (int i = 1; i < k; i++) c = (c << 6) | (p[i] & 0x3Fu);
    return c;
}

static inline uint64_t pair_key(uint32_t a, uint32_t b) { return ((uint64_t)(a + 1) << 32) | (b + 1); }

static inline uint32_t pair_hash(uint64_t k)
{
    k *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(k >> 32);
}

static bool pair_in(const sprig_tokenizer *t, uint64_t key)
{
    for (uint32_t h = pair_hash(key) & t->spm_pair_mask;; h = (h + 1) & t->spm_pair_mask) {
        if (t->spm_pairs[h] == key) return true;
        if (t->spm_pairs[h] == 0) return false;
    }
}

sprig_status sprig_spm_prepare(sprig_tokenizer *t, sprig_error *err)
{
    size_t n_chars = 0;
    for (int i = 0; i < t->n_vocab; i++) n_chars += t->piece_len[i];
    uint32_t cap = 16;
    while (cap < 2 * n_chars + 16 && cap < (1u << 30)) cap <<= 1;
    t->spm_pairs = calloc(cap, sizeof *t->spm_pairs);
    t->first_cp = malloc((size_t)t->n_vocab * sizeof *t->first_cp);
    t->last_cp = malloc((size_t)t->n_vocab * sizeof *t->last_cp);
    if (!t->spm_pairs || !t->first_cp || !t->last_cp)
        return sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory for %d tokens", t->n_vocab);
    t->spm_pair_mask = cap - 1;
    for (int i = 0; i < t->n_vocab; i++) {
        const unsigned char *p = (const unsigned char *)t->blob + t->piece_off[i];
        size_t len = t->piece_len[i], k;
        t->first_cp[i] = t->last_cp[i] = UINT32_MAX - 1;   /* an empty piece faces nothing */
        uint32_t prev = UINT32_MAX;
        for (size_t j = 0; j < len; j += k) {
            uint32_t c = cp_at(p + j, len - j, &k);
            if (j == 0) t->first_cp[i] = c;
            t->last_cp[i] = c;
            if (prev != UINT32_MAX && sprig_vocab_encodable(t, i)) {
                uint64_t key = pair_key(prev, c);
                uint32_t h = pair_hash(key) & t->spm_pair_mask;
                while (t->spm_pairs[h] != 0 && t->spm_pairs[h] != key) h = (h + 1) & t->spm_pair_mask;
                t->spm_pairs[h] = key;
            }
            prev = c;
        }
    }
    return SPRIG_OK;
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
    const sprig_tokenizer *t = e->t;
    size_t start = 0;
    for (size_t j = 0; j < n; j++) {
        if (j + 1 < n && pair_in(t, pair_key(t->last_cp[e->sym[j]], t->first_cp[e->sym[j + 1]]))) continue;
        int k = sprig_merge_apply(t, &e->m, e->sym + start, (int)(j + 1 - start));
        for (int i = 0; i < k; i++) sprig_enc_push(e, e->sym[start + (size_t)i]);
        start = j + 1;
    }
    return SPRIG_OK;
}
