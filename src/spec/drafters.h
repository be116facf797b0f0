/*
 * spec/drafters — the drafters sprig ships, behind spec/drafter.h:
 *
 *   draft model  a separate small model with the target's exact vocabulary
 *                (refused otherwise, naming the first differing token id);
 *                it keeps its own KV cache and re-syncs it each round to the
 *                longest prefix it shares with what the target accepted.
 *   MTP head     an assistant head that drafts from the target's final-norm
 *                hidden state and last-layer K/V (model/mtp.h); stateless.
 *   n-gram       prompt lookup over everything emitted so far (spec/ngram.h);
 *                no model at all.
 *   oracle       for benchmarks: a recorded greedy continuation proposed at
 *                set acceptance rates (spec/draft_oracle.c).
 * Model drafters report each step's runner-up token and top-2 margin, so a
 * branching tree (`--tree-branches N`) costs no extra drafter forwards.
 * Drafts are argmax (deterministic) even when the session samples: the
 * lossless acceptance treats each draft as proposed with probability one.
 */
#ifndef SPRIG_SPEC_DRAFTERS_H
#define SPRIG_SPEC_DRAFTERS_H

#include "model/model.h"
#include "spec/drafter.h"

/* Loads the draft model from `path`; n_ctx = slots for its cache (>= the
 * target's context plus one block). The pool is borrowed. With a batch (may
 * be NULL) its cache is a paged sequence on the batch's draft pool, and the
 * history it feeds is shared with the other sessions' draft models (a
 * prompt prefix one computed, the others attach). */
struct sprig_batch;
sprig_drafter *sprig_draft_model_create(const char *path, const sprig_model *target, sprig_pool *pool,
                                        int n_ctx, struct sprig_batch *batch, sprig_error *err);
/* Loads an MTP head from `path` and checks it fits `target`. */
sprig_drafter *sprig_draft_mtp_create(const char *path, const sprig_model *target, sprig_pool *pool,
                                      int n_ctx, sprig_error *err);
/* For benchmarks (spec/draft_oracle.c): the recorded greedy ids in `path`,
 * proposed at the per-depth rates `accept` ("0.9,0.8,..."; NULL: 0.8), the
 * runner-up holding the truth at the first wrong depth with probability
 * `sibling`; draws seeded by `seed`. */
sprig_drafter *sprig_draft_oracle_create(const char *path, int n_vocab, const char *accept, float sibling, uint64_t seed,
                                         sprig_error *err);
/* Its file's parser: decimal ids below n_vocab separated by white space,
 * at least two; *out malloc'd. Errors name `name` and the id's index. */
sprig_status sprig_oracle_parse_ids(const char *text, size_t len, const char *name, int n_vocab, int32_t **out, int *n_out,
                                    sprig_error *err);
/* n-gram sizes [n_min, n_max] (1..8); capacity = the context size. */
sprig_drafter *sprig_draft_ngram_create(int n_min, int n_max, int capacity, sprig_error *err);


/* Best and second-best of x[n] (first index on ties) and their gap. */
static inline void sprig_top2(const float *x, int n, int32_t *best, int32_t *second, float *margin)
{
    int b = 0, s = -1;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[b]) { s = b; b = i; }
        else if (s < 0 || x[i] > x[s]) s = i;
    }
    *best = b;
    *second = s;
    *margin = s >= 0 ? x[b] - x[s] : 0.0f;
}

#endif
