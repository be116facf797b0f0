/*
 * tokenizer/encode — what sprig_tokenize hands the per-kind encoders: one
 * fragment of raw text (special tokens already cut out by special.c) and a
 * scratch sized once per call, so the encoders never allocate per word.
 */
#ifndef SPRIG_TOKENIZER_ENCODE_H
#define SPRIG_TOKENIZER_ENCODE_H

#include "tokenizer/merge.h"

struct sprig_enc {
    const sprig_tokenizer *t;
    struct sprig_merge_scratch m;
    int32_t *sym;          /* [sym_cap] one word's symbols */
    size_t sym_cap;
    char *buf;             /* [buf_cap] a rewritten fragment ('▁' for ' ') */
    size_t buf_cap;
    char *word;            /* [word_cap] a word in the byte-level alphabet */
    size_t word_cap;
    int32_t *out;          /* caller's ids */
    int cap, n;            /* n counts every id, written or not */
    sprig_error *err;
};

static inline void sprig_enc_push(struct sprig_enc *e, int32_t id)
{
    if (e->n < e->cap) e->out[e->n] = id;
    e->n++;
}

/* Grows e->sym to n entries (and the merge scratch with it). */
sprig_status sprig_enc_reserve_sym(struct sprig_enc *e, size_t n);

/* SentencePiece: at_start = the fragment begins the text or follows a special
 * token (the dummy-prefix space goes there). */
sprig_status sprig_spm_encode(struct sprig_enc *e, const char *text, size_t len, bool at_start);
/* BPE (byte-level or '▁'-escaped): pre-tokenize, then merge each word. */
sprig_status sprig_bpe_encode(struct sprig_enc *e, const char *text, size_t len);

#endif
