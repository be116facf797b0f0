/*
 * tokenizer/vocab — the tokenizer object shared by the tokenizer's files
 * (private to src/tokenizer/; the public contract is tokenizer.h).
 *
 * The vocabulary is copied into one blob at creation: every piece exactly as
 * stored (NUL-terminated for convenience) and, separately, the text each token
 * decodes to ('▁' turned into ' ', a byte token's byte, nothing for control /
 * unknown / unused). Lookup from piece bytes to id goes through an
 * open-addressing hash table over the tokens that text may produce (control,
 * unknown and unused tokens are left out, so no input text can forge BOS/EOS);
 * for duplicate pieces the first id wins. Lookups can hash the concatenation of
 * two pieces without building it, which is what the merge loop needs.
 */
#ifndef SPRIG_TOKENIZER_VOCAB_H
#define SPRIG_TOKENIZER_VOCAB_H

#include "tokenizer/tokenizer.h"

struct sprig_tokenizer {
    int n_vocab;
    int bos, eos, unk;
    bool add_bos, add_space_prefix;

    char *blob;               /* all pieces then all decoded texts, NUL-separated */
    size_t *piece_off;        /* [n_vocab] into blob */
    uint32_t *piece_len;      /* [n_vocab] */
    size_t *text_off;         /* [n_vocab] into blob */
    uint32_t *text_len;       /* [n_vocab] decoded bytes */
    float *scores;            /* [n_vocab] */
    uint8_t *types;           /* [n_vocab] enum sprig_token_type */

    int32_t *slots;           /* [mask + 1] token id or -1 (empty) */
    uint32_t *piece_hash;     /* [n_vocab] */
    uint32_t mask;

    int32_t byte_tok[256];    /* byte fallback: <0xNN>, else the 1-byte piece, else unk, else -1 */
    size_t max_piece_len;
    size_t max_text_len;
};

/* Id of the encodable token whose piece is a[alen] followed by b[blen]
 * (b may be NULL with blen 0); -1 when there is none. */
int sprig_vocab_find2(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen);

/* Can text produce this token (may it take part in merges)? */
static inline bool sprig_vocab_encodable(const sprig_tokenizer *t, int id)
{
    int ty = t->types[id];
    return ty != SPRIG_TOKEN_CONTROL && ty != SPRIG_TOKEN_UNKNOWN && ty != SPRIG_TOKEN_UNUSED;
}

/* Byte value of a strict "<0xNN>" piece (two hex digits), or -1. */
int sprig_vocab_parse_byte_piece(const char *p, size_t len);

/* Length of the well-formed UTF-8 sequence starting at s[0] (1..4), or 0 when
 * s[0..n) does not start with one (n >= 1). Unicode's Table 3-7 rules: no
 * overlongs, no surrogates, nothing above U+10FFFF. */
int sprig_utf8_seq_len(const unsigned char *s, size_t n);

#endif
