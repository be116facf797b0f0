/*
 * tokenizer/vocab — the tokenizer object shared by the tokenizer's files
 * (private to src/tokenizer/; the public contract is tokenizer.h).
 *
 * The vocabulary is copied into one blob at creation: every piece exactly as
 * stored (NUL-terminated for convenience) and, separately, the text each token
 * decodes to (per the model kind: '▁' turned into ' ', a byte token's byte,
 * byte-level BPE characters mapped back to their bytes, nothing for control /
 * unknown / unused). Lookup from piece bytes to id goes through an
 * open-addressing hash table over the tokens that text may produce (control,
 * unknown and unused tokens are left out, so no input text can forge BOS/EOS);
 * for duplicate pieces the first id wins. Lookups can hash the concatenation of
 * two pieces without building it, which is what the merge loop needs.
 *
 * Model kinds (tokenizer.ggml.model) are rows of one table (vocab.c): how text
 * is split into fragments, which encoder runs on them, how pieces decode.
 * BPE merges live in a second hash table keyed by the (left, right) token ids.
 * Special (control / user-defined) tokens matched in raw text live in a byte
 * trie (special.c).
 */
#ifndef SPRIG_TOKENIZER_VOCAB_H
#define SPRIG_TOKENIZER_VOCAB_H

#include "tokenizer/tokenizer.h"

struct sprig_pretok;
struct sprig_special_trie;

/* One model kind: a row of the table in vocab.c. */
struct sprig_tok_kind {
    const char *name;            /* tokenizer.ggml.model */
    bool bpe;                    /* merges (rank order) rather than SentencePiece scores */
    bool byte_level;             /* GPT-2 byte-to-unicode alphabet (gpt2) */
    bool escape_spaces;          /* ' ' -> '▁' before encoding, '▁' -> ' ' when decoding */
    bool needs_pre;              /* tokenizer.ggml.pre names a pre-tokenizer row */
    const char *fixed_pre;       /* pre-tokenizer row used whatever the file says (gemma4) */
    bool force_add_bos;          /* llama.cpp forces add_bos (Gemma 4) */
    int def_bos, def_eos, def_unk;   /* defaults when the keys are absent (-1 = none) */
};

/* A BPE merge: (left id, right id) -> rank and the merged token. */
struct sprig_merge {
    int32_t left, right, merged;
    uint32_t rank;
};

struct sprig_tokenizer {
    const struct sprig_tok_kind *kind;
    const struct sprig_pretok *pre;   /* NULL for SentencePiece */
    char pre_name[64];
    int n_vocab;
    int bos, eos, unk;
    bool add_bos, add_eos, add_space_prefix;
    bool ignore_merges;           /* a whole pre-token that is a token is taken as is (llama3) */

    char *blob;               /* all pieces then all decoded texts, NUL-separated */
    size_t *piece_off;        /* [n_vocab] into blob */
    uint32_t *piece_len;      /* [n_vocab] */
    size_t *text_off;         /* [n_vocab] into blob */
    uint32_t *text_len;       /* [n_vocab] decoded bytes */
    float *scores;            /* [n_vocab] */
    uint8_t *types;           /* [n_vocab] enum sprig_token_type */
    uint8_t *attrs;           /* [n_vocab] SPRIG_TOKATTR_* */

    int32_t *slots;           /* [mask + 1] token id or -1 (empty) */
    uint32_t *piece_hash;     /* [n_vocab] */
    uint32_t mask;

    struct sprig_merge *merges;   /* [merge_mask + 1] open addressing, left = -1 empty */
    uint32_t merge_mask;
    int n_merges;

    int32_t byte_tok[256];    /* byte fallback: <0xNN>, else the 1-byte piece, else unk, else -1;
                                 byte-level BPE: the token of the byte's alphabet character */
    size_t max_piece_len;
    size_t max_text_len;

    int32_t *eog;             /* [n_eog] ascending */
    int n_eog;
    struct sprig_special_trie *special;   /* control + user-defined (+ unknown) pieces */

    /* SentencePiece only (spm.c): the character pairs that occur inside some
     * piece text could produce, and each token's first and last character,
     * so the text can be cut where no merge can ever reach across */
    uint64_t *spm_pairs;      /* [spm_pair_mask + 1] open addressing, 0 = empty */
    uint32_t spm_pair_mask;
    uint32_t *first_cp, *last_cp;   /* [n_vocab] */
};

/* Builds the SentencePiece cut tables (spm.c). */
sprig_status sprig_spm_prepare(sprig_tokenizer *t, sprig_error *err);

/* Per-token attributes beyond the type (llama.cpp's lstrip / rstrip). */
enum { SPRIG_TOKATTR_LSTRIP = 1, SPRIG_TOKATTR_RSTRIP = 2 };

/* Rank and merged token of the BPE merge (left, right); false when none. */
static inline bool sprig_vocab_merge(const sprig_tokenizer *t, int32_t left, int32_t right, uint32_t *rank, int32_t *merged)
{
    if (!t->merges || left < 0 || right < 0) return false;
    uint32_t h = (uint32_t)left * 0x9E3779B1u ^ ((uint32_t)right + 0x7F4A7C15u) * 0x85EBCA77u;
    h ^= h >> 15;
    for (uint32_t s = h & t->merge_mask;; s = (s + 1) & t->merge_mask) {
        const struct sprig_merge *m = &t->merges[s];
        if (m->left < 0) return false;
        if (m->left == left && m->right == right) { *rank = m->rank; *merged = m->merged; return true; }
    }
}

/* Id of the encodable token whose piece is a[alen] followed by b[blen]
 * (b may be NULL with blen 0); -1 when there is none. */
int sprig_vocab_find2(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen);

/* The same over every token, whatever its type (merges name them so). */
int sprig_vocab_find_any(const sprig_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen);

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
/* Length (>= 1) of the maximal ill-formed subsequence at s[0..n) (Unicode's
 * "maximal subpart": a lead byte and the continuation bytes that could still
 * follow it); call only where no well-formed sequence starts. */
size_t sprig_utf8_bad_len(const unsigned char *s, size_t n);

/* Printable form of untrusted bytes for an error message: non-ASCII and
 * quotes as '?', "..." when cut to cap. */
void sprig_vocab_shown(char *dst, size_t cap, const char *p, size_t n);

/* Model kind row by name, or NULL. */
const struct sprig_tok_kind *sprig_tok_kind_find(const char *name, size_t len);

/* Byte-level BPE alphabet: the character (as UTF-8, 1-2 bytes) byte b maps to,
 * and the byte a code point maps back to (-1 if it is not in the alphabet). */
int sprig_bytelevel_char(unsigned b, char out[2]);
int sprig_bytelevel_byte(uint32_t cp);

#endif
