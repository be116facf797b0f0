/*
 * spec/ngram — prompt-lookup / n-gram drafting without a model.
 *
 * The history is every token the session has emitted (prompt included). To
 * draft after it, find the most recent EARLIER occurrence of its last n
 * tokens (n from n_max down to n_min, longest first) and propose the tokens
 * that followed that occurrence. A continuation that runs into the end of the
 * history continues periodically (the pattern repeats), which is what
 * repetitive text wants. Lookups are O(n) through one hash index per n-gram
 * length, updated incrementally as tokens are appended; no allocation after
 * creation. A second-most-recent occurrence that continues differently is
 * offered as an alternative branch for trees.
 */
#ifndef SPRIG_SPEC_NGRAM_H
#define SPRIG_SPEC_NGRAM_H

#include "base/err.h"

#define SPRIG_NGRAM_MAX_N 8

typedef struct sprig_ngram sprig_ngram;

/* capacity: the most tokens the history will hold (the context size). */
sprig_ngram *sprig_ngram_create(int n_min, int n_max, int capacity, sprig_error *err);
void sprig_ngram_free(sprig_ngram *g);
void sprig_ngram_reset(sprig_ngram *g);
int  sprig_ngram_len(const sprig_ngram *g);

/* Append tokens to the history (silently ignores tokens past capacity). */
void sprig_ngram_push(sprig_ngram *g, const int32_t *tok, int n);

/* Propose up to k tokens continuing the history. Returns how many (0 when no
 * suffix of length >= n_min occurred before). If alt/alt_at are given, also
 * returns an alternative next token *alt at draft step *alt_at (a different
 * continuation seen after another occurrence), or *alt = -1. */
int sprig_ngram_draft(const sprig_ngram *g, int32_t *out, int k, int32_t *alt, int *alt_at);

#endif
