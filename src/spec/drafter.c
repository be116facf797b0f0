/*
 * spec/drafter — checked entry points into a drafter and the default tree
 * (see drafter.h).
 *
 * The default draft_tree is the chain a drafter already proposes plus its
 * runner-up tokens as sibling leaves: the drafter computed those scores
 * anyway, so branching costs verify positions, not drafter forwards. Every
 * answer a drafter gives is checked here (counts, vocabulary, tree shape)
 * so a broken drafter becomes an error naming it, never a bad verify block.
 * The grammar helpers let drafters with logits propose only what a grammar
 * allows (one-hot drafts).
 */
#include "spec/drafter.h"
#include "grammar/match.h"
#include "spec/drafters.h"
#include "spec/shape.h"

#include <math.h>

static const char *dname(const sprig_drafter *d) { return d->vt && d->vt->name ? d->vt->name : "?"; }

sprig_status sprig_tree_from_draft(sprig_tree *t, int32_t bonus, const sprig_draft *draft, int branches,
                                   sprig_error *err)
{
    if (branches < 0) return sprig_err(err, SPRIG_E_INVALID_ARG, "tree from draft: branches = %d must be >= 0", branches);
    sprig_status st = sprig_tree_linear(t, bonus, draft->tokens, draft->n, err);
    if (st) return st;
    int added = 0;
    for (int j = 0; j < draft->n && added < branches && t->n < SPRIG_TREE_MAX; j++) {
        int32_t r = draft->runner_up[j];
        if (r < 0 || r == draft->tokens[j]) continue;
        /* step j's token is node j + 1, a child of node j */
        if ((st = sprig_tree_push_child(t, j, r, NULL, err))) return st;
        added++;
    }
    return SPRIG_OK;
}

static sprig_status check_k(const sprig_drafter *d, int k, int max_nodes, sprig_error *err)
{
    if (k < 1 || k > SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "drafter '%s': k = %d is outside [1, %d]", dname(d), k, SPRIG_TREE_MAX);
    if (max_nodes < k || max_nodes > SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "drafter '%s': max_nodes = %d is outside [k = %d, %d]", dname(d),
                         max_nodes, k, SPRIG_TREE_MAX);
    return SPRIG_OK;
}

void sprig_drafter_free(sprig_drafter *d)
{
    if (d && d->vt && d->vt->destroy) d->vt->destroy(d);
}

sprig_status sprig_drafter_draft_block(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int n_vocab,
                                       sprig_draft *out, sprig_error *err)
{
    sprig_status st = check_k(d, k, k, err);
    if (st) return st;
    out->n = 0;
    for (int i = 0; i < SPRIG_TREE_MAX; i++) {
        out->runner_up[i] = -1;
        out->margin[i] = 0.0f;
    }
    if (k == 1) return SPRIG_OK;   /* nothing to propose */
    if ((st = d->vt->draft_block(d, ctx, k, out, err))) return st;
    if (out->n < 0 || out->n > k - 1)
        return sprig_err(err, SPRIG_E_INTERNAL, "drafter '%s': drafted %d tokens, at most %d were asked", dname(d), out->n,
                         k - 1);
    for (int i = 0; i < out->n; i++) {
        if (out->tokens[i] < 0 || out->tokens[i] >= n_vocab)
            return sprig_err(err, SPRIG_E_INTERNAL, "drafter '%s': draft[%d] = %d is outside the vocabulary [0, %d)",
                             dname(d), i, out->tokens[i], n_vocab);
        if (out->runner_up[i] < -1 || out->runner_up[i] >= n_vocab)
            return sprig_err(err, SPRIG_E_INTERNAL, "drafter '%s': runner_up[%d] = %d is outside the vocabulary [0, %d)",
                             dname(d), i, out->runner_up[i], n_vocab);
    }
    return SPRIG_OK;
}

sprig_status sprig_drafter_runner_up_tree(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int max_nodes, sprig_tree *out,
                                          sprig_error *err)
{
    sprig_draft dr = { 0 };
    for (int i = 0; i < SPRIG_TREE_MAX; i++) dr.runner_up[i] = -1;
    sprig_status st = d->vt->draft_block(d, ctx, k, &dr, err);
    return st ? st : sprig_tree_from_draft(out, ctx->bonus, &dr, max_nodes - k, err);
}

/* A block draft as candidates for tree auto: its chain, each step's
 * runner-up a sibling ranked below it. Such a drafter gives no
 * probabilities, so every chain step is offered at BLOCK_Q_CHAIN and every
 * runner-up at BLOCK_Q_RUNNER_UP: two q buckets whose calibration, with the
 * depth and rank corrections, learns from the rounds how often each is
 * accepted (spec/shape.h); the shape then keeps the nodes that pay. */
#define BLOCK_Q_CHAIN 0.8f
#define BLOCK_Q_RUNNER_UP 0.1f
static void block_tree_by_shape(const sprig_draft_ctx *ctx, const sprig_draft *dr, int k, int max_nodes, sprig_tree *out)
{
    sprig_dyntree cand;   /* on the stack: nothing allocated in the round loop */
    sprig_dyntree_init(&cand, ctx->bonus);
    int node[SPRIG_TREE_MAX];
    int prev = 0;
    for (int j = 0; j < dr->n && prev >= 0; j++) prev = node[j] = sprig_dyntree_add(&cand, prev, dr->tokens[j], logf(BLOCK_Q_CHAIN));
    for (int j = 0; j < dr->n; j++) {   /* step j's runner-up: a child of step j's parent (the chain's node j) */
        const int32_t r = dr->runner_up[j];
        if (r >= 0 && r != dr->tokens[j]) sprig_dyntree_add(&cand, j ? node[j - 1] : 0, r, logf(BLOCK_Q_RUNNER_UP));
    }
    sprig_shape_select(ctx->shape, &cand, max_nodes, k - 1, out, NULL);
}

sprig_status sprig_drafter_draft_tree(sprig_drafter *d, const sprig_draft_ctx *ctx, int k, int max_nodes,
                                      int n_vocab, sprig_tree *out, sprig_error *err)
{
    sprig_status st = check_k(d, k, max_nodes, err);
    if (st) return st;
    if (!d->vt->draft_tree) {
        sprig_draft dr;
        if ((st = sprig_drafter_draft_block(d, ctx, k, n_vocab, &dr, err))) return st;
        if (ctx->shape && !ctx->q) {   /* tree auto: the shape chooses among the chain and its runner-ups */
            block_tree_by_shape(ctx, &dr, k, max_nodes, out);
            return SPRIG_OK;
        }
        return sprig_tree_from_draft(out, ctx->bonus, &dr, max_nodes - k, err);
    }
    out->n = 0;
    if ((st = d->vt->draft_tree(d, ctx, k, max_nodes, out, err))) return st;
    if ((st = sprig_tree_validate(out, n_vocab, err))) {
        sprig_err_prefix(err, "drafter '%s'", dname(d));
        if (err) err->code = SPRIG_E_INTERNAL;
        return SPRIG_E_INTERNAL;
    }
    if (out->tokens[0] != ctx->bonus)
        return sprig_err(err, SPRIG_E_INTERNAL, "drafter '%s': tree root is %d, not the bonus %d", dname(d),
                         out->tokens[0], ctx->bonus);
    if (out->n > max_nodes)
        return sprig_err(err, SPRIG_E_INTERNAL, "drafter '%s': tree has %d nodes, at most %d were asked", dname(d), out->n,
                         max_nodes);
    int depth = sprig_tree_max_depth(out);
    if (depth > k - 1)
        return sprig_err(err, SPRIG_E_INTERNAL, "drafter '%s': tree depth %d exceeds k - 1 = %d", dname(d), depth, k - 1);
    return SPRIG_OK;
}

void sprig_drafter_dyntree_out(const sprig_dyntree *t, const sprig_draft_ctx *ctx, int max_nodes, int max_depth,
                               sprig_tree *out)
{
    int map[SPRIG_TREE_MAX];
    if (ctx->q) {   /* nothing drawn is dropped (dyntree.h): the drafter kept within max_nodes */
        sprig_dyntree_select(t, t->n < max_nodes ? t->n : max_nodes, max_depth, out, map);
        sprig_dyntree_set_q(t, out, map, ctx->q);
    } else if (ctx->shape) {
        sprig_shape_select(ctx->shape, t, max_nodes, max_depth, out, NULL);
    } else {
        sprig_dyntree_select(t, max_nodes, max_depth, out, NULL);
    }
}

void sprig_drafter_grammar_top(struct sprig_gmatch *g, int32_t s, float *logits, int V, int want)
{
    enum { TOP = 64 };
    if (!g || s < 0 || want < 1) return;
    int32_t top[TOP];
    int n = 0;
    for (int32_t id = 0; id < V; id++) {   /* the TOP most likely, best first (insertion: TOP is small) */
        const float x = logits[id];
        if (n == TOP && !(x > logits[top[TOP - 1]])) continue;
        int j = n < TOP ? n++ : TOP - 1;
        while (j > 0 && x > logits[top[j - 1]]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = id;
    }
    int legal = 0;
    for (int i = 0; i < n && legal < want; i++) {
        if (sprig_gmatch_advance(g, s, top[i]) != SPRIG_GSTATE_DEAD) legal++;
        else logits[top[i]] = -INFINITY;
    }
    if (legal < want) sprig_gmatch_apply(g, s, logits, NULL);   /* rare: the drafter strays from the grammar */
}

int sprig_drafter_expand(struct sprig_dyntree *t, int v, float *logits, int V, int w, struct sprig_gmatch *g, int32_t *gs)
{
    const int before = t->n;
    const int32_t s = g ? gs[v] : -1;
    sprig_drafter_grammar_top(g, s, logits, V, w);
    const int added = sprig_dyntree_expand(t, v, logits, V, w);
    for (int i = before; i < t->n; i++) gs[i] = s >= 0 ? sprig_gmatch_advance(g, s, t->token[i]) : -1;
    return added;
}

void sprig_drafter_step(struct sprig_gmatch *g, int32_t *gs, float *logits, int V, int32_t *best, int32_t *second, float *margin)
{
    sprig_drafter_grammar_top(g, *gs, logits, V, 2);
    sprig_top2(logits, V, best, second, margin);
    if (g && *gs >= 0) *gs = sprig_gmatch_advance(g, *gs, *best);
}
