/*
 * tokenizer/vocab — building and validating the vocabulary (see vocab.h and
 * tokenizer.h): copies every piece into one blob, precomputes what each token
 * decodes to, builds the piece -> id hash table and the byte-fallback table.
 *
 * A vocabulary description is hostile input (it usually comes from a GGUF):
 * n_vocab and piece lengths are bounded, scores may not be NaN, token types
 * must be known, a BYTE token's piece must be exactly "<0xNN>", special ids
 * must be in range or -1. Duplicate pieces are allowed and resolved
 * deterministically: the lowest id wins for lookup.
 */
#include "tokenizer/vocab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* '▁' (U+2581), the SentencePiece space. */
static const char SPACE_MARK[3] = { '\xE2', '\x96', '\x81' };

/* How a token of each type decodes: its piece with '▁' -> ' ', its byte, or nothing. */
enum decode_kind { DEC_TEXT, DEC_BYTE, DEC_NONE };
static const uint8_t type_decode[SPRIG_TOKEN_BYTE + 1] = {
    [SPRIG_TOKEN_UNDEFINED] = DEC_TEXT, [SPRIG_TOKEN_NORMAL] = DEC_TEXT, [SPRIG_TOKEN_UNKNOWN] = DEC_NONE,
    [SPRIG_TOKEN_CONTROL] = DEC_NONE, [SPRIG_TOKEN_USER_DEFINED] = DEC_TEXT, [SPRIG_TOKEN_UNUSED] = DEC_NONE,
    [SPRIG_TOKEN_BYTE] = DEC_BYTE,
};

/* ------------------------------------------------------------- helpers */

int sprig_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int need;
    unsigned lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) { need = 3; if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 4; if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if (n < (size_t)need) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return need;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int sprig_vocab_parse_byte_piece(const char *p, size_t len)
{
    if (len != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
    int h = hexval(p[3]), l = hexval(p[4]);
    if (h < 0 || l < 0) return -1;
    return h * 16 + l;
}

/* FNV-1a over a then b, finished with a murmur3 mix so low bits are usable. */
static uint32_t hash2(const char *a, size_t alen, const char *b, size_t blen)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < alen; i++) { h ^= (unsigned char)a[i]; h *= 16777619u; }
    for (size_t i = 0; i < blen; i++) { h ^= (unsigned char)b[i]; h *= 16777619u; }
    h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16;
    return h;
}

int sprig_vocab_find2(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen)
{
    size_t len = alen + blen;
    if (len == 0 || len > t->max_piece_len) return -1;
    uint32_t h = hash2(a, alen, b, blen);
    for (uint32_t s = h & t->mask;; s = (s + 1) & t->mask) {
        int32_t id = t->slots[s];
        if (id < 0) return -1;
        if (t->piece_hash[id] != h || t->piece_len[id] != len) continue;
        const char *p = t->blob + t->piece_off[id];
        if ((alen == 0 || memcmp(p, a, alen) == 0) && (blen == 0 || memcmp(p + alen, b, blen) == 0)) return id;
    }
}

/* ------------------------------------------------------------- create */

static sprig_status check_special(int id, int n_vocab, const char *name, sprig_error *err)
{
    if (id < -1 || id >= n_vocab)
        return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: %s = %d is out of range (-1 or 0..%d)", name, id, n_vocab - 1);
    return SPRIG_OK;
}

static sprig_status validate(const struct sprig_vocab_desc *d, sprig_error *err)
{
    if (!d) return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: description is NULL");
    if (!d->model) return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: tokenizer.ggml.model is NULL");
    if (strcmp(d->model, "llama") != 0) {
        char shown[48];
        size_t n = strlen(d->model), k = 0;
        for (size_t i = 0; i < n && k + 5 < sizeof shown; i++) {
            unsigned char c = (unsigned char)d->model[i];
            shown[k++] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
        }
        shown[k] = 0;
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "vocabulary: tokenizer.ggml.model \"%s%s\" is not supported (only \"llama\")",
                         shown, k < n ? "..." : "");
    }
    if (d->n_vocab <= 0 || d->n_vocab > SPRIG_TOKENIZER_MAX_VOCAB)
        return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: n_vocab %d is out of range (1..%d)", d->n_vocab, SPRIG_TOKENIZER_MAX_VOCAB);
    if (!d->pieces || !d->piece_lens) return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: pieces or piece_lens is NULL");
    for (int i = 0; i < d->n_vocab; i++) {
        if (d->piece_lens[i] > SPRIG_TOKENIZER_MAX_PIECE)
            return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.tokens[%d]: piece of %zu bytes exceeds %d",
                             i, d->piece_lens[i], SPRIG_TOKENIZER_MAX_PIECE);
        if (d->piece_lens[i] && !d->pieces[i])
            return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: tokenizer.ggml.tokens[%d] is NULL", i);
        if (d->scores && isnan(d->scores[i]))
            return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.scores[%d] is NaN", i);
        if (d->types) {
            int32_t ty = d->types[i];
            if (ty < SPRIG_TOKEN_UNDEFINED || ty > SPRIG_TOKEN_BYTE)
                return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.token_type[%d] = %d is not a token type (0..6)", i, (int)ty);
            if (ty == SPRIG_TOKEN_BYTE && sprig_vocab_parse_byte_piece(d->pieces[i], d->piece_lens[i]) < 0)
                return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.tokens[%d] has type BYTE but its piece is not <0xNN>", i);
        }
    }
    sprig_status st;
    if ((st = check_special(d->bos, d->n_vocab, "tokenizer.ggml.bos_token_id", err))) return st;
    if ((st = check_special(d->eos, d->n_vocab, "tokenizer.ggml.eos_token_id", err))) return st;
    if ((st = check_special(d->unk, d->n_vocab, "tokenizer.ggml.unknown_token_id", err))) return st;
    return SPRIG_OK;
}

/* Decoded text of token i written to dst (NULL: only count); returns its length. */
static size_t decoded_text(const struct sprig_vocab_desc *d, int i, char *dst)
{
    int ty = d->types ? d->types[i] : SPRIG_TOKEN_NORMAL;
    const char *p = d->pieces[i];
    size_t len = d->piece_lens[i];
    switch (type_decode[ty]) {
    case DEC_NONE: return 0;
    case DEC_BYTE: if (dst) dst[0] = (char)sprig_vocab_parse_byte_piece(p, len); return 1;
    default: break;
    }
    size_t n = 0;
    for (size_t k = 0; k < len;) {
        if (k + 3 <= len && memcmp(p + k, SPACE_MARK, 3) == 0) {
            if (dst) dst[n] = ' ';
            n++; k += 3;
        } else {
            if (dst) dst[n] = p[k];
            n++; k++;
        }
    }
    return n;
}

sprig_tokenizer *sprig_tokenizer_create(const struct sprig_vocab_desc *d, sprig_error *err)
{
    if (validate(d, err) != SPRIG_OK) return NULL;
    int n = d->n_vocab;
    sprig_tokenizer *t = calloc(1, sizeof *t);
    if (!t) { sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory"); return NULL; }
    t->n_vocab = n;
    t->bos = d->bos; t->eos = d->eos; t->unk = d->unk;
    t->add_bos = d->add_bos; t->add_space_prefix = d->add_space_prefix;

    /* Sizes are bounded by validate(): n <= 2^22, pieces <= 1024 bytes. */
    size_t blob = 0;
    for (int i = 0; i < n; i++) blob += d->piece_lens[i] + 1 + decoded_text(d, i, NULL) + 1;
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n) cap <<= 1;
    t->mask = cap - 1;

    t->blob = malloc(blob);
    t->piece_off = malloc((size_t)n * sizeof *t->piece_off);
    t->piece_len = malloc((size_t)n * sizeof *t->piece_len);
    t->text_off = malloc((size_t)n * sizeof *t->text_off);
    t->text_len = malloc((size_t)n * sizeof *t->text_len);
    t->scores = malloc((size_t)n * sizeof *t->scores);
    t->types = malloc((size_t)n);
    t->piece_hash = malloc((size_t)n * sizeof *t->piece_hash);
    t->slots = malloc((size_t)cap * sizeof *t->slots);
    if (!t->blob || !t->piece_off || !t->piece_len || !t->text_off || !t->text_len || !t->scores ||
        !t->types || !t->piece_hash || !t->slots) {
        sprig_tokenizer_free(t);
        sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory for %d tokens", n);
        return NULL;
    }

    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t len = d->piece_lens[i];
        t->piece_off[i] = o;
        t->piece_len[i] = (uint32_t)len;
        if (len) memcpy(t->blob + o, d->pieces[i], len);
        t->blob[o + len] = 0;
        o += len + 1;
        t->scores[i] = d->scores ? d->scores[i] : 0.0f;
        t->types[i] = (uint8_t)(d->types ? d->types[i] : SPRIG_TOKEN_NORMAL);
        if (len > t->max_piece_len) t->max_piece_len = len;
    }
    for (int i = 0; i < n; i++) {
        t->text_off[i] = o;
        size_t tl = decoded_text(d, i, t->blob + o);
        t->text_len[i] = (uint32_t)tl;
        t->blob[o + tl] = 0;
        o += tl + 1;
        if (tl > t->max_text_len) t->max_text_len = tl;
    }

    /* Hash table over encodable pieces; the first id of a duplicate wins. */
    for (uint32_t s = 0; s < cap; s++) t->slots[s] = -1;
    for (int i = 0; i < n; i++) {
        const char *p = t->blob + t->piece_off[i];
        uint32_t h = hash2(p, t->piece_len[i], NULL, 0);
        t->piece_hash[i] = h;
        if (!sprig_vocab_encodable(t, i) || t->piece_len[i] == 0) continue;
        if (sprig_vocab_find2(t, p, t->piece_len[i], NULL, 0) >= 0) continue;
        uint32_t s = h & t->mask;
        while (t->slots[s] >= 0) s = (s + 1) & t->mask;
        t->slots[s] = i;
    }

    /* Byte fallback: "<0xNN>" (upper-case hex, as converters write it), else
     * the lower-case spelling, else the single-byte piece, else unk. */
    for (int b = 0; b < 256; b++) {
        static const char hex_u[] = "0123456789ABCDEF", hex_l[] = "0123456789abcdef";
        char name[6] = { '<', '0', 'x', hex_u[b >> 4], hex_u[b & 15], '>' };
        int id = sprig_vocab_find2(t, name, 6, NULL, 0);
        if (id < 0) {
            name[3] = hex_l[b >> 4]; name[4] = hex_l[b & 15];
            id = sprig_vocab_find2(t, name, 6, NULL, 0);
        }
        if (id < 0) { char c = (char)b; id = sprig_vocab_find2(t, &c, 1, NULL, 0); }
        if (id < 0) id = t->unk;
        t->byte_tok[b] = id;
    }
    return t;
}

void sprig_tokenizer_free(sprig_tokenizer *t)
{
    if (!t) return;
    free(t->blob); free(t->piece_off); free(t->piece_len); free(t->text_off); free(t->text_len);
    free(t->scores); free(t->types); free(t->piece_hash); free(t->slots);
    free(t);
}

/* ------------------------------------------------------------- accessors */

int  sprig_tokenizer_n_vocab(const sprig_tokenizer *t) { return t ? t->n_vocab : 0; }
int  sprig_tokenizer_bos(const sprig_tokenizer *t) { return t ? t->bos : -1; }
int  sprig_tokenizer_eos(const sprig_tokenizer *t) { return t ? t->eos : -1; }
int  sprig_tokenizer_unk(const sprig_tokenizer *t) { return t ? t->unk : -1; }
bool sprig_tokenizer_add_bos(const sprig_tokenizer *t) { return t && t->add_bos; }
bool sprig_tokenizer_add_space_prefix(const sprig_tokenizer *t) { return t && t->add_space_prefix; }

const char *sprig_tokenizer_piece(const sprig_tokenizer *t, int id, size_t *len)
{
    if (!t || id < 0 || id >= t->n_vocab) { if (len) *len = 0; return NULL; }
    if (len) *len = t->piece_len[id];
    return t->blob + t->piece_off[id];
}

float sprig_tokenizer_score(const sprig_tokenizer *t, int id)
{
    if (!t || id < 0 || id >= t->n_vocab) return 0.0f;
    return t->scores[id];
}

int sprig_tokenizer_type(const sprig_tokenizer *t, int id)
{
    if (!t || id < 0 || id >= t->n_vocab) return SPRIG_TOKEN_UNDEFINED;
    return t->types[id];
}

int sprig_tokenizer_find(const sprig_tokenizer *t, const char *piece, size_t len)
{
    if (!t || (!piece && len)) return -1;
    return sprig_vocab_find2(t, piece, len, NULL, 0);
}

const char *sprig_tokenizer_token_text(const sprig_tokenizer *t, int id, size_t *len)
{
    if (!t || id < 0 || id >= t->n_vocab) { if (len) *len = 0; return NULL; }
    if (len) *len = t->text_len[id];
    return t->blob + t->text_off[id];
}

const char *sprig_tokenizer_model(const sprig_tokenizer *t) { return t ? "llama" : ""; }
const char *sprig_tokenizer_pre(const sprig_tokenizer *t) { return ""; }
bool sprig_tokenizer_add_eos(const sprig_tokenizer *t) { return false; }
bool sprig_tokenizer_is_eog(const sprig_tokenizer *t, int id) { return t && id >= 0 && id == t->eos; }
int  sprig_tokenizer_eog_ids(const sprig_tokenizer *t, const int32_t **ids)
{
    static const int32_t none[1] = { -1 };
    if (ids) *ids = none;
    return 0;
}
