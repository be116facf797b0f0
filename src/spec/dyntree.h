/*
 * spec/dyntree — dynamic draft trees (EAGLE-2's recipe) for a model
 * drafter: grow candidates from the root by expanding, depth by depth, the
 * frontier nodes with the highest cumulative draft log-probability (top-w
 * children each), then keep the best M candidates overall as the tree to
 * verify. The drafter does the forwards (all of one depth's expansions in
 * one batch under its own tree mask); this file keeps the candidates and
 * chooses.
 *
 * A candidate's score is the sum of its path's draft log-probabilities (the
 * root's is 0), so a child never outscores its parent and the best M form
 * a tree. The tree lists nodes by depth, each node's children best first:
 * the first chain is the most probable path (what a hybrid target steps in
 * place, and what a chain would have drafted).
 *
 * Sampled drafts (spec/draftq.h): a node's children are DRAWN without
 * replacement from the drafter's q, in draw order. The acceptance is then
 * lossless only if no drawn child is dropped for its own value, so the
 * selection ranks a sampled child by an estimate fixed before it was drawn:
 * its parent's path log-probability plus the log of the i-th largest q
 * (the i-th draw's slot), in `score`; its own path log-probability, which
 * decides its own children (the frontier) and its children's estimates, is
 * `real`. Those estimates fall with the slot, so the best M keep every
 * node's draws as a prefix, in draw order. One-hot expansions have
 * real == score.
 */
#ifndef SPRIG_SPEC_DYNTREE_H
#define SPRIG_SPEC_DYNTREE_H

#include "sprig.h"
#include "spec/draftq.h"
#include "spec/tree.h"

#define SPRIG_DYNTREE_CAP 1024   /* candidates */
#define SPRIG_DYNTREE_MAX_WIDTH 8

typedef struct sprig_dyntree {
    int n;
    int32_t token[SPRIG_DYNTREE_CAP];
    int16_t parent[SPRIG_DYNTREE_CAP];    /* root: -1 */
    int16_t depth[SPRIG_DYNTREE_CAP];
    int16_t slot[SPRIG_DYNTREE_CAP];      /* the drafter's row when it fed the node (expanded), else -1 */
    float score[SPRIG_DYNTREE_CAP];       /* cumulative draft log-probability: what the selection ranks by */
    float real[SPRIG_DYNTREE_CAP];        /* the node's own path log-probability (the frontier ranks by it) */
    int16_t qrow[SPRIG_DYNTREE_CAP];      /* sampled: the q row its children were drawn from, else -1 */
} sprig_dyntree;

void sprig_dyntree_init(sprig_dyntree *t, int32_t root);
/* Add node's w (<= SPRIG_DYNTREE_MAX_WIDTH) most likely children from its
 * logits[n_vocab] (log-softmax; ids < n_vocab), best first; stops at the
 * capacity. Returns how many were added. */
int sprig_dyntree_expand(sprig_dyntree *t, int node, const float *logits, int n_vocab, int w);
/* Add one child of node with conditional log-probability logq (<= 0), after
 * node's children so far (so it ranks below them); returns its index, or -1
 * (no such node, no room). For drafters that propose tokens without logits. */
int sprig_dyntree_add(sprig_dyntree *t, int node, int32_t token, float logq);
/* Add node's children drawn without replacement from row r of q (w draws,
 * at most; fewer past the capacity or when q runs out of mass), draw order
 * (see top). Returns how many were added. */
int sprig_dyntree_expand_sampled(sprig_dyntree *t, int node, sprig_draft_q *q, int r, int w);
/* Sampled trees, one depth: nodes[nf] were fed and rows[j] is node j's q
 * row (-1: none). Of the pairs (node j, its i-th draw), i < w, the `slots`
 * best by estimate (real[node] + log of row j's i-th largest q) are opened,
 * decided before anything is drawn; then each node draws its pairs' count
 * (expand_sampled). Returns the children added. A drafter that grows a
 * depth at a time with this and keeps every node (sprig_dyntree_select with
 * max_nodes = t->n) verifies a tree that no draw shaped for itself. */
int sprig_dyntree_grow_sampled(sprig_dyntree *t, const int *nodes, const int *rows, int nf, sprig_draft_q *q, int w,
                               int slots);
/* Up to w not-yet-expanded nodes at `depth`, highest real score first, into out[w]. */
int sprig_dyntree_frontier(const sprig_dyntree *t, int depth, int w, int *out);
/* The best max_nodes candidates (the root included) of depth <= max_depth
 * as a tree; map[i] = the candidate of tree node i (map may be NULL). */
void sprig_dyntree_select(const sprig_dyntree *t, int max_nodes, int max_depth, sprig_tree *out, int *map);
/* The same ranked by key[t->n] (log-space; a child's key never above its
 * parent's) instead of the score. */
void sprig_dyntree_select_by(const sprig_dyntree *t, const float *key, int max_nodes, int max_depth, sprig_tree *out, int *map);
/* The tree of candidates chosen[n] (chosen[0] = 0, each one's parent before
 * it), by depth, each node's children best first by key. */
void sprig_dyntree_tree_of(const sprig_dyntree *t, const float *key, const int *chosen, int n, sprig_tree *out, int *map);
/* The best max_nodes candidates (root first) by key, best first, into chosen[]; returns the count. */
int sprig_dyntree_best(const sprig_dyntree *t, const float *key, int max_nodes, int max_depth, int *chosen);
/* Sampled trees: q->row[i] = the q row of tree node i's children (map from a select). */
void sprig_dyntree_set_q(const sprig_dyntree *t, const sprig_tree *tree, const int *map, sprig_draft_q *q);

#endif
