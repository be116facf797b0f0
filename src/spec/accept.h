/*
 * spec/accept — lossless acceptance for temperature > 0 (DESIGN §7,
 * multi-candidate rejection with deterministic drafts).
 *
 * The drafts are deterministic (a drafter's argmax or runner-up, an n-gram
 * continuation), so each draft's proposal probability is one: q is one-hot.
 * At a node with target distribution p (the sampler's final distribution
 * after that node), the children are examined in insertion order; child x is
 * accepted with probability r(x) / sum(r), where r starts as p and every
 * rejected child's token is zeroed (so a duplicate sibling can never be
 * accepted after its twin was rejected). On acceptance the walk descends; if
 * every child is rejected the bonus is drawn from the residual r. This is
 * exactly "draw y ~ p and follow the child whose token is y", so every
 * emitted token is distributed as the target's conditional: the output
 * follows the target distribution whatever the drafts were. For a chain it
 * is standard speculative sampling with a one-hot q.
 *
 * Sampled drafts (q != NULL and q->row[node] >= 0, spec/draftq.h): that
 * node's children were drawn one after another without replacement from
 * the drafter's q. Child x is accepted with min(1, r(x) / q'(x)) (r and q'
 * normalised; q' is q without the children examined before); on rejection
 * r becomes (r - q')+ and x leaves q'; if every child is rejected the bonus
 * is drawn from r. For a chain this is standard speculative sampling,
 * accept min(1, p/q), residual (p - q)+. Each step emits r exactly:
 * P(x accepted) = min(q', r)(x), P(rejected) = sum (r - q')+, and what
 * follows is lossless for (r - q')+ whatever x was. Nodes without a row
 * keep the one-hot rule above, so both kinds mix in one tree.
 *
 * The budget clamps as in the greedy walk (walk.h): the walk never descends
 * past budget - 1 accepted drafts; at a node where it stops for the budget,
 * the bonus is drawn from the full p (no child was tried).
 *
 * Inputs are rows of probabilities, not necessarily normalised; entries that
 * are not > 0 (negative, zero, NaN) count as zero mass. A row the walk reads
 * with no mass at all is refused (SPRIG_E_INVALID_ARG naming the row).
 * scratch[n_vocab] (scratch[2 * n_vocab] with q) is caller-owned so nothing
 * allocates per round.
 */
#ifndef SPRIG_SPEC_ACCEPT_H
#define SPRIG_SPEC_ACCEPT_H

#include "base/rng.h"
#include "spec/draftq.h"
#include "spec/walk.h"

/* probs[t->n][n_vocab]: row i is the target's distribution after node i. */
sprig_status sprig_tree_walk_sample(const sprig_tree *t, const float *probs, int n_vocab, int budget,
                                    const sprig_draft_q *q, sprig_rng *rng, float *scratch, sprig_walk *out,
                                    sprig_error *err);

/* Chain form: draft[k-1], probs[k][n_vocab] (row 0 follows the bonus). */
sprig_status sprig_chain_walk_sample(const int32_t *draft, int k, const float *probs, int n_vocab, int budget,
                                     const sprig_draft_q *q, sprig_rng *rng, float *scratch, sprig_walk *out,
                                     sprig_error *err);

/* Draw a token from w[n] (unnormalised, entries not > 0 are zero) with one
 * uniform from rng; -1 when w has no mass. */
int sprig_sample_weights(const float *w, int n, sprig_rng *rng);

#endif
