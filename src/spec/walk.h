/*
 * spec/walk — greedy acceptance: which drafted tokens the target agrees
 * with, and what the round emits (DESIGN §3).
 *
 * Chain: speculative_walk(draft[k-1], target[k], budget). target[i] is the
 * target's argmax after block row i (row 0 is the bonus). accepted = the
 * first i with draft[i] != target[i] (k-1 if none); the round emits
 * draft[0..accepted) and then target[accepted] as the next bonus.
 *
 * Tree: walk(tree, target[n], budget). Start at node 0; among the current
 * node's children (insertion order) take the first whose token equals
 * target[current]; descend; stop when none matches and emit target[stop] as
 * the bonus. The accepted set is always a PATH (one argmax per position, so
 * at most one child can match; duplicate siblings resolve to the first).
 *
 * Budget: at most `budget` tokens are emitted. Both walks stop descending
 * when one more accepted draft would not fit, so accepted + 1 == n_emit
 * whenever budget >= 1, and the kept cache rows (path) always match what was
 * emitted. budget <= 0 emits nothing (accepted 0, path [0]).
 *
 * One result shape serves both, so emission, statistics and rollback see
 * the same thing: a chain's path is [0, 1, .., accepted].
 */
#ifndef SPRIG_SPEC_WALK_H
#define SPRIG_SPEC_WALK_H

#include "spec/tree.h"

typedef struct sprig_walk {
    int accepted;                    /* drafts accepted: n_path - 1 */
    int n_path;                      /* accepted + 1 */
    int path[SPRIG_TREE_MAX];        /* [n_path] node indices, path[0] = 0 */
    int n_emit;                      /* tokens emitted: min(accepted + 1, budget) */
    int32_t emit[SPRIG_TREE_MAX];    /* [n_emit] accepted drafts, then the bonus */
} sprig_walk;

/* k >= 1 block rows (k - 1 drafts), k <= SPRIG_TREE_MAX (asserted). */
void sprig_speculative_walk(const int32_t *draft, const int32_t *target, int k, int budget, sprig_walk *out);
/* target[t->n]: the target's argmax after each node. */
void sprig_tree_walk(const sprig_tree *t, const int32_t *target, int budget, sprig_walk *out);

#endif
