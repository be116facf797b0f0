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
#include "tokenizer/pretok.h"
#include "tokenizer/special.h"
#include "base/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* '▁' (U+2581), the SentencePiece space. */
static const char SPACE_MARK[3] = { '\xE2', '\x96', '\x81' };

/* The model kinds (tokenizer.ggml.model). Defaults for absent special ids are
 * llama.cpp's: 1 / 2 / 0 for SentencePiece, none for the BPE kinds. */
static const struct sprig_tok_kind kinds[] = {
    { .name = "llama",  .bpe = false, .escape_spaces = true, .def_bos = 1, .def_eos = 2, .def_unk = 0 },
    { .name = "gpt2",   .bpe = true, .byte_level = true, .needs_pre = true, .def_bos = 11, .def_eos = 11, .def_unk = -1 },
    { .name = "gemma4", .bpe = true, .escape_spaces = true, .fixed_pre = "gemma4", .force_add_bos = true,
      .def_bos = -1, .def_eos = -1, .def_unk = -1 },
};

const struct sprig_tok_kind *sprig_tok_kind_find(const char *name, size_t len)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].name) == len && memcmp(kinds[i].name, name, len) == 0) return &kinds[i];
    return NULL;
}

/* Pieces that end a turn wherever they appear (llama.cpp's list), beside the
 * EOS / EOT / EOM ids the file names. */
static const char *const eog_pieces[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>", "[e~[",
};

/* How a token of each type decodes: its piece with '▁' -> ' ', its byte, or nothing. */
enum decode_kind { DEC_TEXT, DEC_RAW, DEC_BYTE, DEC_NONE };
static const uint8_t type_decode[SPRIG_TOKEN_BYTE + 1] = {
    [SPRIG_TOKEN_UNDEFINED] = DEC_TEXT, [SPRIG_TOKEN_NORMAL] = DEC_TEXT, [SPRIG_TOKEN_UNKNOWN] = DEC_NONE,
    [SPRIG_TOKEN_CONTROL] = DEC_NONE, [SPRIG_TOKEN_USER_DEFINED] = DEC_RAW, [SPRIG_TOKEN_UNUSED] = DEC_NONE,
    [SPRIG_TOKEN_BYTE] = DEC_BYTE,
};

/* ------------------------------------------------------------- helpers */

/* Sequence length a lead byte starts (0: cannot lead) and the allowed range
 * of the second byte (Unicode's Table 3-7). */
static int lead(unsigned c, unsigned *lo, unsigned *hi)
{
    *lo = 0x80; *hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) { if (c == 0xE0) *lo = 0xA0; else if (c == 0xED) *hi = 0x9F; return 3; }
    if (c >= 0xF0 && c <= 0xF4) { if (c == 0xF0) *lo = 0x90; else if (c == 0xF4) *hi = 0x8F; return 4; }
    return 0;
}

int sprig_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned lo, hi;
    int need = lead(s[0], &lo, &hi);
    if (need <= 1) return need;
    if (n < (size_t)need) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < need; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return need;
}

size_t sprig_utf8_bad_len(const unsigned char *s, size_t n)
{
    unsigned lo, hi;
    int need = lead(s[0], &lo, &hi);
    size_t k = 1;
    if (need > 1 && k < n && s[k] >= lo && s[k] <= hi) {
        k++;
        while ((int)k < need && k < n && s[k] >= 0x80 && s[k] <= 0xBF) k++;
    }
    return k;
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

static int find(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, bool any)
{
    size_t len = alen + blen;
    if (len == 0 || len > t->max_piece_len) return -1;
    uint32_t h = hash2(a, alen, b, blen);
    for (uint32_t s = h & t->mask;; s = (s + 1) & t->mask) {
        int32_t id = t->slots[s];
        if (id < 0) return -1;
        if (t->piece_hash[id] != h || t->piece_len[id] != len) continue;
        if (!any && !sprig_vocab_encodable(t, id)) continue;
        const char *p = t->blob + t->piece_off[id];
        if ((alen == 0 || memcmp(p, a, alen) == 0) && (blen == 0 || memcmp(p + alen, b, blen) == 0)) return id;
    }
}

int sprig_vocab_find2(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen)
{
    return find(t, a, alen, b, blen, false);
}

int sprig_vocab_find_any(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen)
{
    return find(t, a, alen, b, blen, true);
}

/* ------------------------------------------------------------- create */

static sprig_status check_special(int id, int n_vocab, const char *name, sprig_error *err)
{
    if (id < -1 || id >= n_vocab)
        return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: %s = %d is out of range (-1 or 0..%d)", name, id, n_vocab - 1);
    return SPRIG_OK;
}

void sprig_vocab_shown(char *dst, size_t cap, const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < cap; i++) {
        unsigned char c = (unsigned char)p[i];
        dst[k++] = (c >= 0x20 && c < 0x7F && c != '"') ? (char)c : '?';
    }
    if (k < n && k + 4 <= cap) { memcpy(dst + k, "...", 3); k += 3; }
    dst[k] = 0;
}

static sprig_status validate(const struct sprig_vocab_desc *d, sprig_error *err)
{
    if (!d) return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: description is NULL");
    if (!d->model) return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: tokenizer.ggml.model is NULL");
    if (!sprig_tok_kind_find(d->model, strlen(d->model))) {
        char sh[48];
        sprig_vocab_shown(sh, sizeof sh, d->model, strlen(d->model));
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "vocabulary: tokenizer.ggml.model \"%s\" is not supported (llama, gpt2, gemma4)", sh);
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
    if (d->n_extra_eog < 0 || d->n_extra_eog > 16 || (d->n_extra_eog && !d->extra_eog))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: %d extra end-of-generation ids", d->n_extra_eog);
    for (int i = 0; i < d->n_extra_eog; i++)
        if ((st = check_special(d->extra_eog[i], d->n_vocab, "tokenizer.ggml.eot_token_id / eom_token_id", err))) return st;
    if (d->n_merges < 0 || (d->n_merges > 0 && (!d->merges || !d->merge_lens)))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: tokenizer.ggml.merges: bad array (%d)", d->n_merges);
    return SPRIG_OK;
}

/* Decoded text of token i written to dst (NULL: only count); returns its length. */
static size_t decoded_text(const struct sprig_vocab_desc *d, const struct sprig_tok_kind *k, int ty, int i, char *dst)
{
    const char *p = d->pieces[i];
    size_t len = d->piece_lens[i];
    int dk = type_decode[ty];
    /* SentencePiece-style BPE decodes '▁' in added (user-defined) tokens too,
     * as its reference decoder does over every token (Gemma's "▁▁" runs) */
    if (dk == DEC_RAW && k->bpe && k->escape_spaces) dk = DEC_TEXT;
    switch (dk) {
    case DEC_NONE: return 0;
    case DEC_BYTE: if (dst) dst[0] = (char)sprig_vocab_parse_byte_piece(p, len); return 1;
    case DEC_RAW: if (dst && len) memcpy(dst, p, len); return len;
    default: break;
    }
    size_t n = 0;
    for (size_t j = 0; j < len;) {
        if (k->escape_spaces && j + 3 <= len && memcmp(p + j, SPACE_MARK, 3) == 0) {
            if (dst) dst[n] = ' ';
            n++; j += 3;
            continue;
        }
        if (k->byte_level) {
            /* a character of the byte-level alphabet stands for one byte; any
             * other character is kept as it is */
            int cl = sprig_utf8_seq_len((const unsigned char *)p + j, len - j);
            if (cl == 0) cl = 1;
            uint32_t cp = (unsigned char)p[j];
            if (cl == 2) cp = ((cp & 0x1Fu) << 6) | ((unsigned char)p[j + 1] & 0x3Fu);
            int b = cl <= 2 ? sprig_bytelevel_byte(cp) : -1;
            if (b >= 0) { if (dst) dst[n] = (char)b; n++; }
            else { if (dst) memcpy(dst + n, p + j, (size_t)cl); n += (size_t)cl; }
            j += (size_t)cl;
            continue;
        }
        if (dst) dst[n] = p[j];
        n++; j++;
    }
    return n;
}

static bool piece_is(const struct sprig_vocab_desc *d, int i, const char *s)
{
    size_t n = strlen(s);
    return d->piece_lens[i] == n && memcmp(d->pieces[i], s, n) == 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* EOG ids (llama.cpp's rules) into t->eog; forces their type to CONTROL. */
static sprig_status build_eog(sprig_tokenizer *t, const struct sprig_vocab_desc *d, sprig_error *err)
{
    int cap = 3 + (int)(sizeof eog_pieces / sizeof eog_pieces[0]) * 2, n = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory");
    int end_id = -1, s_id = -1;
    bool has_return = false, has_call = false, has_flush = false, has_tool_response = false;
    for (int i = 0; i < d->n_vocab; i++) {
        bool hit = i == d->eos;
        for (int k = 0; k < d->n_extra_eog && !hit; k++) hit = i == d->extra_eog[k];
        for (size_t k = 0; !hit && k < sizeof eog_pieces / sizeof eog_pieces[0]; k++) hit = piece_is(d, i, eog_pieces[k]);
        if (!hit) continue;
        if (n == cap) {   /* duplicates of listed pieces are refused earlier; grow anyway */
            int32_t *g = realloc(ids, (size_t)(cap *= 2) * sizeof *g);
            if (!g) { free(ids); return sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory"); }
            ids = g;
        }
        ids[n++] = i;
        if (piece_is(d, i, "<|return|>")) has_return = true;
        if (piece_is(d, i, "<|call|>") || piece_is(d, i, "<|calls|>")) has_call = true;
        if (piece_is(d, i, "<|flush|>")) has_flush = true;
        if (piece_is(d, i, "<|end|>")) end_id = i;
        if (piece_is(d, i, "<|tool_response>")) has_tool_response = true;
        if (piece_is(d, i, "</s>")) s_id = i;
    }
    /* llama.cpp: with <|return|> and <|call|> (or <|calls|> and <|flush|>)
     * "<|end|>" is not EOG; with <|tool_response> (Gemma 4) "</s>" is not */
    int drop1 = ((has_return && has_call) || (has_call && has_flush)) ? end_id : -1;
    int drop2 = has_tool_response ? s_id : -1;
    int k = 0;
    for (int j = 0; j < n; j++) {
        int id = ids[j];
        if (id == drop1) { t->types[id] = SPRIG_TOKEN_USER_DEFINED; continue; }
        if (id == drop2 && id != d->eos) { t->types[id] = SPRIG_TOKEN_NORMAL; continue; }
        ids[k++] = id;
        if (t->types[id] != SPRIG_TOKEN_CONTROL && t->types[id] != SPRIG_TOKEN_UNUSED) t->types[id] = SPRIG_TOKEN_CONTROL;
    }
    qsort(ids, (size_t)k, sizeof *ids, cmp_i32);
    t->eog = ids;
    t->n_eog = k;
    return SPRIG_OK;
}

/* The merges table: each "A B" names two tokens whose concatenation is a
 * token; later duplicates of a pair keep the first rank. */
static sprig_status build_merges(sprig_tokenizer *t, const struct sprig_vocab_desc *d, sprig_error *err)
{
    int n = d->n_merges;
    if (n == 0) return SPRIG_OK;
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n) cap <<= 1;
    t->merges = malloc((size_t)cap * sizeof *t->merges);
    if (!t->merges) return sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory for %d merges", n);
    t->merge_mask = cap - 1;
    for (uint32_t i = 0; i < cap; i++) t->merges[i].left = -1;
    for (int r = 0; r < n; r++) {
        const char *m = d->merges[r];
        size_t len = d->merge_lens[r];
        if (len && !m) return sprig_err(err, SPRIG_E_INVALID_ARG, "vocabulary: tokenizer.ggml.merges[%d] is NULL", r);
        size_t sp = 1;   /* llama.cpp splits at the first space after the first byte */
        while (sp < len && m[sp] != ' ') sp++;
        char sh[64];
        if (len < 3 || sp >= len - 1) {
            sprig_vocab_shown(sh, sizeof sh, m, len);
            return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.merges[%d] = \"%s\" is not \"A B\"", r, sh);
        }
        int a = sprig_vocab_find_any(t, m, sp, NULL, 0), b = sprig_vocab_find_any(t, m + sp + 1, len - sp - 1, NULL, 0);
        int c = sprig_vocab_find_any(t, m, sp, m + sp + 1, len - sp - 1);
        if (a < 0 || b < 0 || c < 0) {
            const char *what = a < 0 ? m : b < 0 ? m + sp + 1 : m;
            size_t wl = a < 0 ? sp : b < 0 ? len - sp - 1 : len;
            sprig_vocab_shown(sh, sizeof sh, what, wl);
            return sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.merges[%d] names %s \"%s\" that is not a token",
                             r, a < 0 ? "a left part" : b < 0 ? "a right part" : "a merged piece (without the space)", sh);
        }
        uint32_t h = (uint32_t)a * 0x9E3779B1u ^ ((uint32_t)b + 0x7F4A7C15u) * 0x85EBCA77u;
        h ^= h >> 15;
        uint32_t s = h & t->merge_mask;
        while (t->merges[s].left >= 0 && !(t->merges[s].left == a && t->merges[s].right == b)) s = (s + 1) & t->merge_mask;
        if (t->merges[s].left >= 0) continue;
        t->merges[s] = (struct sprig_merge){ .left = a, .right = b, .merged = c, .rank = (uint32_t)r };
    }
    t->n_merges = n;
    return SPRIG_OK;
}

sprig_tokenizer *sprig_tokenizer_create(const struct sprig_vocab_desc *d, sprig_error *err)
{
    if (validate(d, err) != SPRIG_OK) return NULL;
    const struct sprig_tok_kind *kind = sprig_tok_kind_find(d->model, strlen(d->model));
    const struct sprig_pretok_row *row = NULL;
    if (kind->bpe) {
        const char *pre = kind->fixed_pre ? kind->fixed_pre : d->pre;
        size_t pre_len = kind->fixed_pre ? strlen(pre) : d->pre_len;
        if (!pre) { pre = "default"; pre_len = 7; SPRIG_LOGW("vocabulary: no tokenizer.ggml.pre, using the 'default' pre-tokenizer"); }
        row = sprig_pretok_row_find(pre, pre_len);
        if (!row) {
            char sh[48];
            sprig_vocab_shown(sh, sizeof sh, pre, pre_len);
            sprig_err(err, SPRIG_E_UNSUPPORTED, "vocabulary: tokenizer.ggml.pre \"%s\" is not a known pre-tokenizer "
                      "(llama-bpe, qwen2, qwen35, gpt-2, default, ...)", sh);
            return NULL;
        }
        if (d->n_merges == 0) {
            sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.merges is missing (needed by tokenizer.ggml.model \"%s\")", kind->name);
            return NULL;
        }
    }
    int n = d->n_vocab;
    sprig_tokenizer *t = calloc(1, sizeof *t);
    if (!t) { sprig_err(err, SPRIG_E_NOMEM, "vocabulary: out of memory"); return NULL; }
    t->kind = kind;
    t->n_vocab = n;
    t->bos = d->bos; t->eos = d->eos; t->unk = d->unk;
    t->add_bos = d->add_bos || kind->force_add_bos;
    t->add_eos = d->add_eos;
    t->add_space_prefix = kind->bpe ? false : d->add_space_prefix;
    t->ignore_merges = row && row->ignore_merges;
    if (row) snprintf(t->pre_name, sizeof t->pre_name, "%s", row->name);

    /* Sizes are bounded by validate(): n <= 2^22, pieces <= 1024 bytes (a
     * decoded text is at most as long as its piece). */
    size_t blob = 0;
    for (int i = 0; i < n; i++) blob += 2 * d->piece_lens[i] + 2;
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
    t->attrs = calloc((size_t)n, 1);
    t->piece_hash = malloc((size_t)n * sizeof *t->piece_hash);
    t->slots = malloc((size_t)cap * sizeof *t->slots);
    if (!t->blob || !t->piece_off || !t->piece_len || !t->text_off || !t->text_len || !t->scores ||
        !t->types || !t->attrs || !t->piece_hash || !t->slots) {
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
    if (build_eog(t, d, err) != SPRIG_OK) { sprig_tokenizer_free(t); return NULL; }
    for (int i = 0; i < n; i++) {
        t->text_off[i] = o;
        size_t tl = decoded_text(d, kind, t->types[i], i, t->blob + o);
        t->text_len[i] = (uint32_t)tl;
        t->blob[o + tl] = 0;
        o += tl + 1;
        if (tl > t->max_text_len) t->max_text_len = tl;
    }

    /* Hash table over all pieces, in id order (lookups for text skip the
     * tokens text cannot produce; with duplicates allowed the lowest id of
     * each kind wins). Duplicate pieces are refused, as llama.cpp does. */
    for (uint32_t s = 0; s < cap; s++) t->slots[s] = -1;
    for (int i = 0; i < n; i++) {
        const char *p = t->blob + t->piece_off[i];
        uint32_t h = hash2(p, t->piece_len[i], NULL, 0);
        t->piece_hash[i] = h;
        if (t->piece_len[i] == 0) continue;
        int prev = sprig_vocab_find_any(t, p, t->piece_len[i], NULL, 0);
        if (prev >= 0 && !d->allow_duplicates) {
            char sh[48];
            sprig_vocab_shown(sh, sizeof sh, p, t->piece_len[i]);
            sprig_err(err, SPRIG_E_FORMAT, "vocabulary: tokenizer.ggml.tokens[%d] = \"%s\" duplicates tokens[%d]", i, sh, prev);
            sprig_tokenizer_free(t);
            return NULL;
        }
        uint32_t s = h & t->mask;
        while (t->slots[s] >= 0) s = (s + 1) & t->mask;
        t->slots[s] = i;
    }

    if (kind->byte_level) {
        /* each byte's symbol is the token of its alphabet character */
        for (int b = 0; b < 256; b++) {
            char c[2];
            int cl = sprig_bytelevel_char((unsigned)b, c);
            t->byte_tok[b] = sprig_vocab_find2(t, c, (size_t)cl, NULL, 0);
        }
    } else {
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
            if (id < 0 && !kind->bpe) { char c = (char)b; id = sprig_vocab_find2(t, &c, 1, NULL, 0); }
            if (id < 0 && !kind->bpe) id = t->unk;
            t->byte_tok[b] = id;
        }
    }

    sprig_status st = SPRIG_OK;
    if (kind->bpe) {
        st = build_merges(t, d, err);
        if (st == SPRIG_OK && !(t->pre = sprig_pretok_compile(row, err))) st = err ? err->code : SPRIG_E_INTERNAL;
    }
    if (d->rstrip_specials)   /* llama.cpp's Phi-3 rule: every special token but <unk>, <s>, <|endoftext|> rstrips, </s> too */
        for (int i = 0; i < n; i++) {
            int ty = t->types[i];
            bool special = ty == SPRIG_TOKEN_CONTROL || ty == SPRIG_TOKEN_USER_DEFINED || ty == SPRIG_TOKEN_UNKNOWN;
            if ((special || piece_is(d, i, "</s>")) && !piece_is(d, i, "<unk>") && !piece_is(d, i, "<s>") && !piece_is(d, i, "<|endoftext|>"))
                t->attrs[i] |= SPRIG_TOKATTR_RSTRIP;
        }
    if (st == SPRIG_OK) st = sprig_special_build(t, &t->special, err);
    if (st == SPRIG_OK && !kind->bpe) st = sprig_spm_prepare(t, err);
    if (st != SPRIG_OK) { sprig_tokenizer_free(t); return NULL; }
    return t;
}

void sprig_tokenizer_free(sprig_tokenizer *t)
{
    if (!t) return;
    free(t->blob); free(t->piece_off); free(t->piece_len); free(t->text_off); free(t->text_len);
    free(t->scores); free(t->types); free(t->attrs); free(t->piece_hash); free(t->slots);
    free(t->merges); free(t->eog); free(t->spm_pairs); free(t->first_cp); free(t->last_cp);
    sprig_pretok_free((sprig_pretok *)t->pre);
    sprig_special_free(t->special);
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

const char *sprig_tokenizer_model(const sprig_tokenizer *t) { return t ? t->kind->name : ""; }
const char *sprig_tokenizer_pre(const sprig_tokenizer *t) { return t ? t->pre_name : ""; }
bool sprig_tokenizer_add_eos(const sprig_tokenizer *t) { return t && t->add_eos; }

bool sprig_tokenizer_is_eog(const sprig_tokenizer *t, int id)
{
    if (!t || id < 0 || id >= t->n_vocab) return false;
    int lo = 0, hi = t->n_eog;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->eog[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->n_eog && t->eog[lo] == id;
}

int sprig_tokenizer_eog_ids(const sprig_tokenizer *t, const int32_t **ids)
{
    static const int32_t none[1] = { -1 };
    if (ids) *ids = t && t->n_eog ? t->eog : none;
    return t ? t->n_eog : 0;
}

int sprig_tokenizer_first_difference(const sprig_tokenizer *a, const sprig_tokenizer *b)
{
    if (!a || !b) return 0;
    int n = a->n_vocab < b->n_vocab ? a->n_vocab : b->n_vocab;
    for (int i = 0; i < n; i++)
        if (a->piece_len[i] != b->piece_len[i] || memcmp(a->blob + a->piece_off[i], b->blob + b->piece_off[i], a->piece_len[i]) ||
            a->types[i] != b->types[i])
            return i;
    return -1;
}
