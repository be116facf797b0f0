/*
 * spec/drafter — the drafter as the round loop sees it (DESIGN §5): a
 * struct of function pointers, embedded first in each implementation.
 *
 * Each round the session hands the drafter a sprig_draft_ctx: the bonus
 * token (the token the session emitted last, at position target->n_past,
 * not yet in the target cache), the tokens this session fed the target
 * (prompt + accepted path tokens, in cache order) and the target's state
 * after its last prefill/finalize (hidden row at n_past - 1 and the cache,
 * for a drafter that reads the target, e.g. an MTP head).
 *
 * Drafts are deterministic functions of what the drafter has seen (an
 * argmax, a runner-up, an n-gram continuation): the sampling acceptance
 * (accept.h) treats every draft as proposed with probability one, which is
 * what keeps sampled output on the target's distribution. The exception is
 * ctx->q (sampled drafts): a drafter may then draw a node's children from
 * its q without replacement, keeping every child it draws, and say so in
 * q->row[node]; the acceptance uses q there (draftq.h). In the chain form
 * node j is the bonus (j = 0) or draft step j's token, and step j's token
 * and runner-up are its first and second draws.
 *
 * Slots:
 *   draft_block  required. Propose up to k - 1 tokens continuing the bonus
 *                (fewer, even 0, is fine: the round verifies what there is).
 *                Optionally per step the runner-up token (-1 = none) and the
 *                top-1 minus top-2 score margin, used to grow branching trees
 *                without extra drafter forwards.
 *   draft_tree   optional. Propose a tree rooted at the bonus with at most
 *                max_nodes nodes and depth at most k - 1. NULL: the session
 *                calls draft_block(k) and attaches runner-ups as sibling
 *                leaves at the first max_nodes - k draft steps
 *                (sprig_tree_from_draft), i.e. `--tree-branches N`.
 *   begin        optional. Called once per session after the prompt was
 *                prefilled (ctx->bonus is the first emitted token); resets
 *                per-sequence state.
 *   accept       optional. Called after each chain round with what was
 *                verified and accepted (e.g. a draft model trims its own
 *                cache to the accepted prefix).
 *   accept_tree  optional. The same after a tree round. If accept is set
 *                and accept_tree is NULL, the hook is skipped on tree rounds
 *                with one warning per session (its chain semantics, "the
 *                accepted prefix of what I proposed", do not fit a path
 *                through a branching proposal).
 * The drafter owns its memory; it must not call into the target.
 */
#ifndef SPRIG_SPEC_DRAFTER_H
#define SPRIG_SPEC_DRAFTER_H

#include "spec/draftq.h"
#include "spec/dyntree.h"
#include "spec/target.h"
#include "spec/walk.h"

typedef struct sprig_draft_ctx {
    int32_t bonus;                      /* node 0 of the block, at position target->n_past */
    const int32_t *history;             /* [n_history] tokens this session fed the target, in cache order */
    int n_history;
    const sprig_target_state *target;   /* after the last prefill / finalize */
    bool sampling;                      /* the session samples (drafts stay deterministic) */
    int tree_width;                     /* draft_tree: 0 = the runner-up tree (draft_block plus runner-up
                                           leaves); w > 0 = a dynamic tree whose expanded nodes get their
                                           w most likely children, w per depth (spec/dyntree.h) */
    struct sprig_shape *shape;          /* tree auto: a dynamic tree is chosen by sprig_shape_select
                                           (spec/shape.h) from measured costs; NULL: by score, max_nodes */
    sprig_draft_q *q;                   /* sampled drafts (spec/draftq.h): non-NULL asks a drafter that has a
                                           distribution to DRAW its drafts from it and record, per node, the
                                           row its children came from; NULL or ignored: one-hot drafts */
    struct sprig_gmatch *grammar;       /* the session's grammar (grammar/match.h), or NULL: a drafter with
                                           logits proposes (one-hot) only tokens it allows, from gstate on */
    int32_t gstate;                     /* the grammar's state after the bonus */
    bool reuse;                         /* begin: the target kept cached rows of this prompt (prefix reuse), so a
                                           drafter may keep its own cache's matching prefix; false: start empty */
} sprig_draft_ctx;

typedef struct sprig_draft {
    int n;                                   /* drafted tokens, 0..k-1 */
    int32_t tokens[SPRIG_TREE_MAX];          /* [n] */
    int32_t runner_up[SPRIG_TREE_MAX];       /* [n] second-best token per step, or -1 */
    float   margin[SPRIG_TREE_MAX];          /* [n] top-1 minus top-2 score per step, or 0 */
} sprig_draft;

/* What a round did, for the accept hooks. */
typedef struct sprig_round_info {
    bool tree;                          /* a tree round (accept_tree) or a chain round (accept) */
    const sprig_tree *block;            /* what was verified: node i = block row i (chain: linear) */
    const sprig_draft *draft;           /* chain round: what draft_block returned; tree round: NULL */
    const sprig_walk *walk;             /* accepted, node path, tokens the walk emitted */
    const sprig_target_state *target;   /* after finalize */
} sprig_round_info;

typedef struct sprig_drafter sprig_drafter;

/* A drafter's own KV cache (sprig_drafter_vt.own_cache). */
struct sprig_draft_cache {
    struct sprig_kv *kv;
    int32_t *fed;
    int *n_fed;
    int cap;
    const struct sprig_model *model;
};

struct sprig_drafter_vt {
    const char *name;
    sprig_status (*draft_block)(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, sprig_draft *out,
                                sprig_error *err);
    sprig_status (*draft_tree)(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int max_nodes,
                               sprig_tree *out, sprig_error *err);
    sprig_status (*begin)(sprig_drafter *d, const sprig_draft_ctx *ctx, sprig_error *err);
    sprig_status (*accept)(sprig_drafter *d, const sprig_round_info *info, sprig_error *err);
    sprig_status (*accept_tree)(sprig_drafter *d, const sprig_round_info *info, sprig_error *err);
    /* optional: release the drafter (sprig_drafter_free calls it) */
    void (*destroy)(sprig_drafter *d);
    /* optional: a drafter with a KV cache of its own (a draft model) says where it is, what it holds and its model,
     * for the prompt cache to save and restore it; rows past the tokens it holds (a tree's expansion) are dropped
     * first. The caller that writes rows into kv sets *n_fed (<= cap) and fed[0 .. *n_fed). */
    bool (*own_cache)(sprig_drafter *d, struct sprig_draft_cache *out);
};


/* Common header every drafter embeds first. */
struct sprig_drafter {
    const struct sprig_drafter_vt *vt;
    bool reads_all_hidden;      /* reads the target's hidden row of every position (kept_hidden), so
                                   the target's prefill must expose all of them (an MTP block with
                                   its own cache) */
};

/* Release a drafter through its destroy slot (NULL-safe). */
void sprig_drafter_free(sprig_drafter *d);

/* Checked entry points. draft_block: clears *out (runner_up -1, margin 0)
 * before the call; checks 0 <= n <= k - 1 and every token (and runner-up)
 * in [0, n_vocab). draft_tree: the vtable slot or the default; checks the
 * tree (sprig_tree_validate), its root is the bonus, n <= max_nodes and
 * depth <= k - 1. 1 <= k <= SPRIG_TREE_MAX, k <= max_nodes <= SPRIG_TREE_MAX. */
sprig_status sprig_drafter_draft_block(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int n_vocab,
                                       sprig_draft *out, sprig_error *err);
sprig_status sprig_drafter_draft_tree(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int max_nodes,
                                      int n_vocab, sprig_tree *out, sprig_error *err);

/* The chain bonus, draft->tokens as a linear tree, plus the runner-up of
 * draft step j as a sibling leaf of that step's token (a child of node j)
 * for the first draft steps j that have one (runner_up >= 0 and different
 * from the drafted token), at most `branches` leaves and never past
 * SPRIG_TREE_MAX nodes. The chain child comes first among siblings. */
/* The runner-up tree through the drafter's own draft_block (unchecked: the
 * tree is validated where draft_tree returns): for a draft_tree slot whose
 * dynamic tree is off (tree_width 0) or cannot run. */
sprig_status sprig_drafter_runner_up_tree(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int max_nodes, sprig_tree *out,
                                          sprig_error *err);

/* The dynamic tree to verify from a drafter's candidates (spec/dyntree.h):
 * sampled drafts (ctx->q): every candidate, siblings in draw order, and
 * their q rows; else chosen by tree auto's shape (ctx->shape) or the best
 * max_nodes by score. */
/* Under a grammar: logits[V] changed so that its `want` most likely tokens are ones state s allows (the tokens
 * above them that it refuses get -INFINITY; when too few of the most likely are allowed, the whole mask applies).
 * Costs a few cached steps when the drafter already agrees with the grammar. */
void sprig_drafter_grammar_top(struct sprig_gmatch *g, int32_t s, float *logits, int V, int want);
/* A dynamic tree's node v expanded (sprig_dyntree_expand) under the grammar: logits[V] limited as above with
 * gs[v]'s state, and each child's state recorded in gs (gs[v] < 0 or g NULL: no grammar). Returns the children. */
int sprig_drafter_expand(struct sprig_dyntree *t, int v, float *logits, int V, int w, struct sprig_gmatch *g, int32_t *gs);
/* A chain step's best and runner-up under the grammar from state *gs (then advanced past best; < 0 when best is
 * not allowed or ends the grammar: the chain stops there). */
void sprig_drafter_step(struct sprig_gmatch *g, int32_t *gs, float *logits, int V, int32_t *best, int32_t *second, float *margin);

void sprig_drafter_dyntree_out(const sprig_dyntree *t, const sprig_draft_ctx *ctx, int max_nodes, int max_depth,
                               sprig_tree *out);

sprig_status sprig_tree_from_draft(sprig_tree *t, int32_t bonus, const sprig_draft *draft, int branches,
                                   sprig_error *err);

#endif
