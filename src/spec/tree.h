/*
 * spec/tree — a draft token tree: topology, RoPE depths and attention masks
 * (DESIGN §3).
 *
 * A tree is tokens[n] + parents[n] in topological order: parents[i] < i for
 * i > 0, node 0 is the root — the bonus token the target emitted last round —
 * with parents[0] = 0. Children of a node are ordered by insertion (index).
 * The verify block is the nodes in index order, so node i is block row i and,
 * in the cache, slot offset + i; its RoPE position is offset + depth[i].
 *
 * Masks are additive with a caller-chosen blocking value (the forward uses
 * -1e9, never -inf): within the block a node sees its ancestors and itself,
 * never a sibling or a cousin; the history columns are all open. A linear
 * tree's mask is exactly the causal mask.
 *
 * Trees have a fixed maximum size so a round never allocates; a tree is a
 * plain value (copyable, no pointers). Construction never aborts: a bad
 * parent or a full tree is refused with an error.
 */
#ifndef SPRIG_SPEC_TREE_H
#define SPRIG_SPEC_TREE_H

#include "base/err.h"

#define SPRIG_TREE_MAX 64   /* nodes, root included */

typedef struct sprig_tree {
    int n;                              /* nodes, 1..SPRIG_TREE_MAX once built */
    int32_t tokens[SPRIG_TREE_MAX];     /* [n] */
    int32_t parents[SPRIG_TREE_MAX];    /* [n]; parents[0] = 0, parents[i] < i */
} sprig_tree;

/* A tree of just the root. */
void sprig_tree_root(sprig_tree *t, int32_t bonus);
/* The chain bonus, drafts[0..n_drafts): parents[i] = i - 1.
 * Refuses n_drafts < 0 or n_drafts + 1 > SPRIG_TREE_MAX. */
sprig_status sprig_tree_linear(sprig_tree *t, int32_t bonus, const int32_t *drafts, int n_drafts, sprig_error *err);
/* Append a child of `parent` (must be an existing node) holding `token`;
 * its index (the new n - 1) goes to *index (may be NULL). Refuses a bad
 * parent and a full tree, leaving the tree unchanged. */
sprig_status sprig_tree_push_child(sprig_tree *t, int parent, int32_t token, int *index, sprig_error *err);

/* Check the invariants of a tree that was filled in by hand (a drafter's
 * output): 1 <= n <= SPRIG_TREE_MAX, parents[0] == 0, 0 <= parents[i] < i,
 * tokens in [0, n_vocab) when n_vocab > 0. The message names the node. */
sprig_status sprig_tree_validate(const sprig_tree *t, int n_vocab, sprig_error *err);

/* Children of `node` in insertion order into out[cap]; returns the count
 * (which may exceed cap; only cap are written). 0 for a bad node. */
int  sprig_tree_children(const sprig_tree *t, int node, int *out, int cap);
/* depths[n]: depth[0] = 0, depth[i] = depth[parents[i]] + 1. */
void sprig_tree_depths(const sprig_tree *t, int *depths);
/* Largest depth (0 for a root-only tree): the most drafts one path can accept. */
int  sprig_tree_max_depth(const sprig_tree *t);
/* Node indices root -> node inclusive into path[SPRIG_TREE_MAX]; returns the
 * length (depth + 1), or 0 for a bad node. */
int  sprig_tree_path_to(const sprig_tree *t, int node, int *path);
/* Is a == node or an ancestor of node? false for bad indices. */
bool sprig_tree_is_ancestor_or_self(const sprig_tree *t, int a, int node);
/* Is the tree a single chain (parents[i] == i - 1)? */
bool sprig_tree_is_linear(const sprig_tree *t);

/* mask[n][n]: 0 where key k is an ancestor-or-self of query q, else `blocked`. */
void sprig_tree_mask(const sprig_tree *t, float blocked, float *mask);
/* mask[n][offset + n]: the first `offset` columns (the cached history) are 0,
 * the last n follow sprig_tree_mask. Refuses offset < 0. */
sprig_status sprig_tree_mask_with_history(const sprig_tree *t, int offset, float blocked, float *mask,
                                          sprig_error *err);

#endif
