/*
 * tokenizer — text <-> token ids from GGUF metadata.
 *
 * tokenizer.ggml.model = "llama": SentencePiece-style BPE over the vocab's
 * pieces ('▁' = U+2581 for a space): a dummy-prefix space (add_space_prefix,
 * default true), pieces looked up per UTF-8 character with byte fallback to
 * <0xNN> tokens, then repeated merges of the adjacent pair whose merged piece
 * has the highest score (leftmost on ties; merges scoring <= -1e30 never
 * happen), exactly llama2.c's rule, computed with a heap in O(n log n).
 * Control, unknown and unused tokens are never produced from text (text "<s>"
 * is three characters, not BOS) and decode to nothing; byte tokens decode to
 * their byte; a leading space right after BOS is dropped. Decoded text is
 * always valid UTF-8 (ill-formed bytes -> U+FFFD as Python's "replace"), and
 * streaming decode holds back an incomplete UTF-8 sequence split across tokens
 * until it completes (or turns out invalid). Encode and decode only read the
 * tokenizer, so threads may share one.
 */
#ifndef SPRIG_TOKENIZER_H
#define SPRIG_TOKENIZER_H

#include "base/err.h"

struct sprig_gguf;

typedef struct sprig_tokenizer sprig_tokenizer;

/* Bounds on a vocabulary (hostile GGUFs) and on one encode call. */
#define SPRIG_TOKENIZER_MAX_VOCAB (1 << 22)
#define SPRIG_TOKENIZER_MAX_PIECE 1024
#define SPRIG_TOKENIZE_MAX_TEXT   ((size_t)1 << 26)

/* Token types (tokenizer.ggml.token_type). */
enum sprig_token_type {
    SPRIG_TOKEN_UNDEFINED = 0, SPRIG_TOKEN_NORMAL = 1, SPRIG_TOKEN_UNKNOWN = 2,
    SPRIG_TOKEN_CONTROL = 3, SPRIG_TOKEN_USER_DEFINED = 4, SPRIG_TOKEN_UNUSED = 5, SPRIG_TOKEN_BYTE = 6
};

struct sprig_vocab_desc {
    const char *model;              /* tokenizer.ggml.model: "llama", "gpt2" or "gemma4" */
    const char *pre;                /* tokenizer.ggml.pre (BPE kinds) or NULL: "default" */
    size_t pre_len;
    int n_vocab;
    const char *const *pieces;      /* [n_vocab] UTF-8, not necessarily NUL-terminated */
    const size_t *piece_lens;       /* [n_vocab] */
    const float *scores;            /* [n_vocab] or NULL (all 0) */
    const int32_t *types;           /* [n_vocab] or NULL (all NORMAL) */
    int n_merges;                   /* BPE kinds: tokenizer.ggml.merges, "A B" in rank order */
    const char *const *merges;      /* [n_merges] */
    const size_t *merge_lens;       /* [n_merges] */
    int bos, eos, unk;              /* -1 = none */
    const int32_t *extra_eog;       /* [n_extra_eog] more end-of-generation ids (EOT, EOM keys) */
    int n_extra_eog;
    bool add_bos;                   /* tokenizer.ggml.add_bos_token, default true */
    bool add_eos;                   /* tokenizer.ggml.add_eos_token, default false */
    bool add_space_prefix;          /* tokenizer.ggml.add_space_prefix, default true (llama) */
    bool rstrip_specials;           /* special tokens swallow the whitespace after them (Phi-3) */
    bool allow_duplicates;          /* tests only: duplicate pieces resolve to the lowest id */
};

/* Validates and copies the description (a known model kind, n_vocab in
 * 1..MAX_VOCAB, pieces up to MAX_PIECE bytes, no duplicate piece, no NaN
 * score, known types, a BYTE token's piece exactly "<0xNN>", special ids in
 * range or -1, a known pre-tokenizer, merges "A B" naming tokens whose
 * concatenation is a token). Control, unknown and unused tokens are never
 * produced from text unless special-token parsing is asked for. */
sprig_tokenizer *sprig_tokenizer_create(const struct sprig_vocab_desc *d, sprig_error *err);
/* From a GGUF's tokenizer.* keys: model (must be "llama", else
 * SPRIG_E_UNSUPPORTED naming it), tokens (array of str), scores (f32, optional),
 * token_type (integers, optional) with lengths that agree, bos/eos/unknown ids
 * (optional, default 1/2/0; -1 or 0xFFFFFFFF = none; else < n_vocab),
 * add_bos_token and add_space_prefix (optional, default true). Errors name the
 * file and the key. */
sprig_tokenizer *sprig_tokenizer_from_gguf(const struct sprig_gguf *g, sprig_error *err);
void sprig_tokenizer_free(sprig_tokenizer *t);

int  sprig_tokenizer_n_vocab(const sprig_tokenizer *t);
int  sprig_tokenizer_bos(const sprig_tokenizer *t);
int  sprig_tokenizer_eos(const sprig_tokenizer *t);
int  sprig_tokenizer_unk(const sprig_tokenizer *t);
bool sprig_tokenizer_add_bos(const sprig_tokenizer *t);
bool sprig_tokenizer_add_space_prefix(const sprig_tokenizer *t);
/* Piece bytes of a token exactly as stored (for vocabulary comparison);
 * NUL-terminated for convenience; NULL (len 0) for an id out of range. */
const char *sprig_tokenizer_piece(const sprig_tokenizer *t, int id, size_t *len);
float sprig_tokenizer_score(const sprig_tokenizer *t, int id);
int  sprig_tokenizer_type(const sprig_tokenizer *t, int id);
/* Id of the token text can produce whose piece is piece[len] (lowest id of
 * duplicates; control/unknown/unused tokens excluded), or -1. */
int  sprig_tokenizer_find(const sprig_tokenizer *t, const char *piece, size_t len);
/* The bytes a token decodes to in isolation ('▁' -> ' ', <0xNN> -> the byte,
 * control/unknown/unused -> empty); NUL-terminated; NULL for an id out of range. */
const char *sprig_tokenizer_token_text(const sprig_tokenizer *t, int id, size_t *len);

/* Draft / target compatibility: -1 when every id both vocabularies have
 * carries the same piece bytes and token type (one side may be longer:
 * padding such as Qwen's 151,643 tokens in a 151,936-row list), else the
 * first id that differs. */
int sprig_tokenizer_first_difference(const sprig_tokenizer *a, const sprig_tokenizer *b);

/* Encode flags (an int so that `true` still means "add BOS"). */
enum {
    SPRIG_TOK_BOS           = 1,   /* prepend BOS (an error if the vocabulary has none) */
    SPRIG_TOK_EOS           = 2,   /* append EOS (likewise) */
    SPRIG_TOK_ADD_SPECIAL   = 4,   /* BOS / EOS as the vocabulary says (add_bos_token / add_eos_token) */
    SPRIG_TOK_PARSE_SPECIAL = 8,   /* text of control tokens (<|im_start|>, <bos>...) becomes those tokens */
    SPRIG_TOK_MID_TEXT      = 16,  /* the text continues other text: no SentencePiece dummy-prefix space */
};

/* Encode text[len] (any bytes; at most SPRIG_TOKENIZE_MAX_TEXT); writes up to
 * cap ids; returns the total count needed (call again with a bigger buffer if
 * > cap), or -1 with err set. flags: SPRIG_TOK_*. User-defined tokens are
 * always matched in the text; control tokens only with PARSE_SPECIAL.
 * SentencePiece ("llama"): a "character" is a well-formed UTF-8 sequence; each
 * byte of an ill-formed one is a character of its own. Characters with no
 * piece fall back to <0xNN> byte tokens (else the unknown token, else an error).
 * BPE ("gpt2", "gemma4"): each maximal ill-formed UTF-8 subsequence is read as
 * U+FFFD first (what the reference tokenizers see after decoding the bytes).
 * The bound 3 * len + 4 on the count always holds. */
int sprig_tokenize(const sprig_tokenizer *t, const char *text, size_t len, int flags,
                   int32_t *out, int cap, sprig_error *err);

/* tokenizer.ggml.model and tokenizer.ggml.pre ("" when absent) as loaded. */
const char *sprig_tokenizer_model(const sprig_tokenizer *t);
const char *sprig_tokenizer_pre(const sprig_tokenizer *t);
bool sprig_tokenizer_add_eos(const sprig_tokenizer *t);
/* End-of-generation: EOS, EOT (<|eot_id|>, <|im_end|>, <end_of_turn>, ...) and
 * the other ids llama.cpp treats as ending a turn. */
bool sprig_tokenizer_is_eog(const sprig_tokenizer *t, int id);
/* The EOG ids, ascending; returns their count. */
int  sprig_tokenizer_eog_ids(const sprig_tokenizer *t, const int32_t **ids);

/* Streaming decode state (one per output stream). */
typedef struct sprig_detok {
    int prev;               /* previous token id (-1 at start) */
    unsigned char pend[8];  /* bytes of an incomplete UTF-8 sequence */
    int n_pend;
} sprig_detok;

void sprig_detok_init(sprig_detok *s, int prev_token);
/* Append the text of `id` to out (up to cap bytes; returns bytes written).
 * The output is always valid UTF-8: each maximal ill-formed subsequence becomes
 * U+FFFD (as Python's errors="replace"). Ids outside the vocabulary decode to
 * nothing. cap >= sprig_detok_max_out(t) is always enough (64 + longest piece
 * is enough when every piece is valid UTF-8); with less, only whole
 * characters that fit are written and the rest of this token's text is lost. */
size_t sprig_detok_push(const sprig_tokenizer *t, sprig_detok *s, int id, char *out, size_t cap);
/* Flush held bytes at end of stream (an incomplete sequence becomes U+FFFD). */
size_t sprig_detok_flush(const sprig_tokenizer *t, sprig_detok *s, char *out, size_t cap);
/* Largest number of bytes one push or flush can write. */
size_t sprig_detok_max_out(const sprig_tokenizer *t);

/* Whole-sequence decode into a malloc'd NUL-terminated string (tests, tools):
 * exactly the concatenation of pushes and the final flush. NULL on bad
 * arguments or out of memory. The _n variant also returns the length, for
 * text that may hold NUL bytes. */
char *sprig_detokenize(const sprig_tokenizer *t, const int32_t *ids, int n, int prev_token);
char *sprig_detokenize_n(const sprig_tokenizer *t, const int32_t *ids, int n, int prev_token, size_t *len);

#endif
