/*
 * spec/draftq — sampled drafts: the drafter's proposal distributions q for
 * the q-aware acceptance rules (accept.h), and the draws from them.
 *
 * With one-hot drafts (the default) a drafter proposes its argmax and the
 * walk treats every draft as certain. With sampled drafts (session
 * draft_sampling = Q, temperature > 0) a drafter turns its logits into q
 * through the TARGET's sampler (same temperature, top-k, top-p, min-p), and
 * draws a node's children from q one after another WITHOUT replacement;
 * the walk then accepts child x with min(1, r(x)/q'(x)) where r is the
 * residual and q' is q minus the siblings already examined (SpecInfer's
 * multi-candidate rule as Sequoia states it for draws without replacement;
 * for one child it is the classic min(1, p/q) with residual (p - q)+).
 *
 * The rows live here, one per node that has sampled children: row[node] is
 * the index of the distribution its children were drawn from, in child
 * order, or -1 when its children are one-hot drafts. Lossless only if the
 * NUMBER of children a node gets is fixed before they are drawn (it may
 * depend on anything drawn earlier, never on the children's own values):
 * drafters keep every child they draw.
 *
 * Allocated once for SPRIG_TREE_MAX rows of the target's vocabulary (the
 * drafter's logits may be shorter: ids past them get no mass).
 */
#ifndef SPRIG_SPEC_DRAFTQ_H
#define SPRIG_SPEC_DRAFTQ_H

#include "base/rng.h"
#include "sample/sample.h"
#include "spec/tree.h"

typedef struct sprig_draft_q {
    sprig_sampler *sampler;           /* borrowed: the target's sampler (its transform, not its draws) */
    int n_vocab;                      /* the target's */
    int n_rows;                       /* rows in use this round */
    float *rows;                      /* [SPRIG_TREE_MAX][n_vocab] proposal distributions (sum 1) */
    float *pad;                       /* [n_vocab] logits padded to the target's vocabulary */
    float *left;                      /* [n_vocab] what a draw without replacement has left */
    int16_t row[SPRIG_TREE_MAX];      /* tree node -> row its children were drawn from, or -1 */
    sprig_rng rng;                    /* the draws (apart from the acceptance's) */
} sprig_draft_q;

sprig_status sprig_draft_q_init(sprig_draft_q *q, sprig_sampler *sampler, int n_vocab, uint64_t seed, sprig_error *err);
void sprig_draft_q_free(sprig_draft_q *q);
/* A new round: no rows, every node one-hot. */
void sprig_draft_q_reset(sprig_draft_q *q);
/* q = the sampler's distribution of logits[n_logits] (ids >= n_logits get
 * none) as a new row; returns its index, or -1 when all rows are in use. */
int sprig_draft_q_add(sprig_draft_q *q, const float *logits, int n_logits);
/* Draw up to w distinct tokens from row r without replacement into out[w]
 * (first draw first); fewer only when the row has fewer tokens with mass.
 * Returns the count. */
int sprig_draft_q_draw(sprig_draft_q *q, int r, int w, int32_t *out);
/* One chain step (node j = the bonus or draft step j - 1's token): a row
 * from logits[n_logits], recorded as node j's (row[j]), and its first two
 * draws: *first, *second (-1 when q has one token), *margin = q(first) -
 * q(second). Returns the draws made (0: no row left or no mass). */
int sprig_draft_q_draw_step(sprig_draft_q *q, int j, const float *logits, int n_logits, int32_t *first, int32_t *second,
                            float *margin);
/* q(x) of row r */
static inline float sprig_draft_q_prob(const sprig_draft_q *q, int r, int32_t x)
{
    return q->rows[(size_t)r * (size_t)q->n_vocab + (size_t)x];
}

#endif
