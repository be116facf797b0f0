/*
 * tokenizer — text <-> token ids from GGUF metadata.
 *
 * tokenizer.ggml.model = "llama": SentencePiece-style BPE over the vocab's
 * pieces ('▁' = U+2581 for a space): a dummy-prefix space (add_space_prefix,
 * default true), pieces looked up per UTF-8 character with byte fallback to
 * <0xNN> tokens, then repeated merges of the adjacent pair whose merged piece
 * has the highest score (leftmost on ties). Control and unknown tokens decode
 * to nothing; byte tokens decode to their byte; a leading space right after
 * BOS is dropped. Streaming decode holds back an incomplete UTF-8 sequence
 * split across tokens until it completes (or turns out invalid).
 */
#ifndef SPRIG_TOKENIZER_H
#define SPRIG_TOKENIZER_H

#include "base/err.h"

struct sprig_gguf;

typedef struct sprig_tokenizer sprig_tokenizer;

/* Token types (tokenizer.ggml.token_type). */
enum sprig_token_type {
    SPRIG_TOKEN_UNDEFINED = 0, SPRIG_TOKEN_NORMAL = 1, SPRIG_TOKEN_UNKNOWN = 2,
    SPRIG_TOKEN_CONTROL = 3, SPRIG_TOKEN_USER_DEFINED = 4, SPRIG_TOKEN_UNUSED = 5, SPRIG_TOKEN_BYTE = 6
};

struct sprig_vocab_desc {
    const char *model;              /* "llama" */
    int n_vocab;
    const char *const *pieces;      /* [n_vocab] UTF-8, not necessarily NUL-terminated */
    const size_t *piece_lens;       /* [n_vocab] */
    const float *scores;            /* [n_vocab] or NULL (all 0) */
    const int32_t *types;           /* [n_vocab] or NULL (all NORMAL) */
    int bos, eos, unk;              /* -1 = none */
    bool add_bos;                   /* tokenizer.ggml.add_bos_token, default true */
    bool add_space_prefix;          /* tokenizer.ggml.add_space_prefix, default true */
};

sprig_tokenizer *sprig_tokenizer_create(const struct sprig_vocab_desc *d, sprig_error *err);
/* From a GGUF's tokenizer.* keys (validates types, lengths, special ids < n_vocab). */
sprig_tokenizer *sprig_tokenizer_from_gguf(const struct sprig_gguf *g, sprig_error *err);
void sprig_tokenizer_free(sprig_tokenizer *t);

int  sprig_tokenizer_n_vocab(const sprig_tokenizer *t);
int  sprig_tokenizer_bos(const sprig_tokenizer *t);
int  sprig_tokenizer_eos(const sprig_tokenizer *t);
bool sprig_tokenizer_add_bos(const sprig_tokenizer *t);
/* Piece bytes of a token exactly as stored (for vocabulary comparison). */
const char *sprig_tokenizer_piece(const sprig_tokenizer *t, int id, size_t *len);
int  sprig_tokenizer_type(const sprig_tokenizer *t, int id);

/* Encode text[len]; writes up to cap ids; returns the total count needed
 * (call again with a bigger buffer if > cap), or -1 with err set. */
int sprig_tokenize(const sprig_tokenizer *t, const char *text, size_t len, bool add_bos,
                   int32_t *out, int cap, sprig_error *err);

/* Streaming decode state (one per output stream). */
typedef struct sprig_detok {
    int prev;               /* previous token id (-1 at start) */
    unsigned char pend[8];  /* bytes of an incomplete UTF-8 sequence */
    int n_pend;
} sprig_detok;

void sprig_detok_init(sprig_detok *s, int prev_token);
/* Append the text of `id` to out (up to cap bytes; returns bytes written).
 * cap >= 64 + longest piece is always enough. */
size_t sprig_detok_push(const sprig_tokenizer *t, sprig_detok *s, int id, char *out, size_t cap);
/* Flush held bytes at end of stream (invalid sequences become U+FFFD). */
size_t sprig_detok_flush(const sprig_tokenizer *t, sprig_detok *s, char *out, size_t cap);

/* Whole-sequence decode into a malloc'd NUL-terminated string (tests, tools). */
char *sprig_detokenize(const sprig_tokenizer *t, const int32_t *ids, int n, int prev_token);

#endif
