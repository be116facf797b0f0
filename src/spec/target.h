/*
 * spec/target — the target model as the round loop sees it (DESIGN §5): a
 * struct of function pointers, embedded first in each implementation the
 * way kv caches embed sprig_kv.
 *
 * Cache protocol (n_past = slots in the target's KV cache):
 *   prefill(prompt[n])       appends n slots; row 0 of `rows` is the target's
 *                            output after the last prompt token.
 *   verify_forward(block[n]) appends n slots (block[0] is the bonus the
 *                            session emitted last, block[1..] the drafts);
 *                            row i is the output after block[0..i].
 *   verify_finalize(a, n)    keeps the first a + 1 of those n slots (the bonus
 *                            and the a accepted drafts): n_past = before + a + 1.
 *   verify_forward_tree(t)   appends t->n slots in node order (node i at slot
 *                            n_past + i, RoPE position n_past + depth[i],
 *                            attention under the tree mask with history);
 *                            row i is the output after the root->i path.
 *   verify_finalize_tree(path[a+1], n)
 *                            keeps exactly the path's slots, in path order,
 *                            closing up (kv gather_within_tail(n, path)):
 *                            n_past = before + a + 1. For a linear tree the
 *                            path is [0..a] and this must equal finalize(a, n).
 * The token the session emits last (the new bonus) is never in the cache:
 * the next round's block starts with it.
 *
 * Outputs (sprig_rows): greedy sessions ask for argmax[i] (first maximum on
 * ties); sampling sessions ask for probs[i][n_vocab], the sampler's final
 * distribution of row i's logits (sprig_sampler_probs with rows->sampler).
 * Either may also ask for the top_n most likely tokens of every row with
 * their log-probabilities (rows->top_n > 0; a target that cannot refuses).
 *
 * State: *st is written only by prefill and the finalizes; on entry it holds
 * the state before the round (the forward does not touch it), so after a
 * finalize st->n_past must be exactly the old n_past + accepted + 1.
 *
 * Capture: verify_forward* fills *cap with what the matching finalize needs
 * (e.g. the block's final-norm hidden rows for an MTP drafter); the session
 * passes the same cap to exactly one finalize, which consumes it. Pointers in
 * cap and in sprig_target_state are target-owned and valid until the next
 * call into the target.
 *
 * Optional slots: the three tree slots may be NULL; NULL means "refuse"
 * (SPRIG_E_REFUSED with a reason), never a silent fallback — flattening a
 * tree through a layer that cannot see the mask (a recurrent state) would
 * answer wrongly with no signal. tree_round_is_available is asked EVERY
 * round BEFORE drafting: once a tree block is in the cache only a tree-aware
 * rollback can take it off, so a target that answers yes must be able to
 * finish that round. A refusal from a tree slot after a yes ends the session.
 */
#ifndef SPRIG_SPEC_TARGET_H
#define SPRIG_SPEC_TARGET_H

#include "kv/kv.h"
#include "sample/sample.h"
#include "spec/tree.h"

/* What one step of a shared verify forward costs (continuous batching): the
 * time between two shared forwards (everyone's drafting, walks, emission and
 * the lockstep), and the forward itself as the batch measured it per row
 * count (spec/costs.h): t_ms[m] = a forward of the other sequences' rows
 * plus m, m = 1..SPRIG_TREE_MAX; known false until the batch has timed
 * shared forwards. */
struct sprig_costs;   /* spec/costs.h */

typedef struct sprig_shared_cost {
    double gap_ms;
    bool known;
    double t_ms[SPRIG_TREE_MAX + 1];
} sprig_shared_cost;

/* A mixture-of-experts target's reading (sprig_target_vt.expert_load): a
 * verify's price depends on the experts its rows route to, not on the rows
 * alone. */
typedef struct sprig_expert_load {
    int layers;              /* layers with routed experts */
    int n_expert, n_used;    /* experts per layer; experts one row runs */
    double expert_bytes;     /* the weights of one expert (mean) */
    double dense_bytes;      /* what one row's forward reads besides its experts */
    double last;             /* distinct experts the last forward read, summed over layers (-1: unknown) */
} sprig_expert_load;

#define SPRIG_TARGET_MAX_EOS 16

/* Per-row outputs of a forward; buffers are session-owned, sized at
 * session start for `cap` rows. */
typedef struct sprig_rows {
    bool sampling;              /* false: fill argmax[]; true: fill probs[] */
    sprig_sampler *sampler;     /* sampling: turns a row's logits into probs (may be NULL
                                   only for a target that makes probabilities itself) */
    int cap;                    /* rows the buffers hold (>= every request's n) */
    int32_t *argmax;            /* [cap] */
    float *probs;               /* [cap][n_vocab]; NULL when greedy */
    int top_n;                  /* 0, or also fill top[i][top_n] (sprig_top_logprobs of row i's logits) */
    sprig_logprob *top;         /* [cap][top_n]; NULL when top_n is 0 */
    struct sprig_gmatch *grammar;   /* non-NULL: row i's choice is limited to the tokens its state allows */
    const int32_t *gstate;      /* [cap] row i's grammar state (negative: none, the row is left as it is) */
    int64_t masked;             /* rows whose whole mask was applied (the argmax alone was not allowed, or sampling) */
} sprig_rows;

/* What drafters may read after prefill / finalize. */
typedef struct sprig_target_state {
    int n_past;                 /* slots in the target cache; the bonus sits at position n_past */
    const float *hidden;        /* [n_embd] final-norm hidden state at slot n_past - 1 (the
                                   last kept node), or NULL when the target does not expose it */
    int n_embd;
    const float *kept_hidden;   /* [n_kept][n_embd] the final-norm hidden rows of the slots the last
                                   prefill / finalize added (n_past - n_kept .. n_past - 1; `hidden`
                                   is the last), or NULL. A prefill gives every prompt row only when
                                   the session asked (sprig_target.all_hidden), else its last */
    int n_kept;
    const sprig_kv *kv;         /* the target's cache (read-only), or NULL */
} sprig_target_state;

/* Filled by a verify forward, consumed by its finalize. */
typedef struct sprig_capture {
    int block;                  /* slots the forward appended */
    bool tree;                  /* true after verify_forward_tree */
    const float *hidden;        /* [block][n_embd] final-norm hidden rows, or NULL */
    void *priv;                 /* anything else the target keeps for finalize */
} sprig_capture;

typedef struct sprig_target sprig_target;

struct sprig_target_vt {
    const char *name;
    /* Required. Append tokens[n] (n >= 1); fill row 0 of rows; fill *st. */
    sprig_status (*prefill)(sprig_target *t, const int32_t *tokens, int n, sprig_rows *rows,
                            sprig_target_state *st, sprig_error *err);
    /* Required. Append block[n] (1 <= n <= rows->cap); fill rows 0..n-1 and *cap.
     * A refusal (context full, bad token) appends nothing. */
    sprig_status (*verify_forward)(sprig_target *t, const int32_t *block, int n, sprig_rows *rows,
                                   sprig_capture *cap, sprig_error *err);
    /* Required. Keep accepted + 1 of the block's n slots; fill *st. */
    sprig_status (*verify_finalize)(sprig_target *t, int accepted, int n, sprig_capture *cap,
                                    sprig_target_state *st, sprig_error *err);
    /* Optional (NULL = false). Can a tree round run now (forward AND rollback)?
     * On false, reason[cap] names the cause. */
    bool (*tree_round_is_available)(sprig_target *t, char *reason, size_t cap);
    /* Optional (NULL = refuse). Append the tree's nodes; fill rows 0..tree->n-1 and *cap. */
    sprig_status (*verify_forward_tree)(sprig_target *t, const sprig_tree *tree, sprig_rows *rows,
                                        sprig_capture *cap, sprig_error *err);
    /* Optional (NULL = refuse). Keep the path's slots (path[0] = 0, strictly
     * increasing, < n); fill *st. */
    sprig_status (*verify_finalize_tree)(sprig_target *t, const int *path, int n_path, int n,
                                         sprig_capture *cap, sprig_target_state *st, sprig_error *err);
    /* Optional (NULL = unknown). Milliseconds of one verify forward of n rows on the current cache,
     * undone after (for tree auto's cost profile); negative when it cannot. */
    double (*time_rows)(sprig_target *t, int n);
    /* Optional (NULL = alone). The other sequences whose rows share this target's verify forwards
     * (continuous batching, spec/batch.h): their rows per forward and tokens emitted per round, summed,
     * and what a shared step costs (tree auto weighs its own rows against everyone's tokens). */
    void (*shared_load)(sprig_target *t, double *rows, double *emitted, sprig_shared_cost *cost);
    /* Optional (NULL = alone). Rows for the next verify, allocated with the other sequences' (spec/joint.h):
     * gain[0..n) the candidates' expected tokens best first (gain[0] = 1, the bonus row); 1..n, or 0 when
     * this target plans alone (spec/batch.h, sprig_batch_plan; lone: the session's own verify times). */
    int (*shared_plan)(sprig_target *t, const double *gain, int n, double draft_ms, const struct sprig_costs *lone);
    /* Optional (NULL = a dense target). Its experts: shape, bytes and what the last forward read. */
    bool (*expert_load)(sprig_target *t, sprig_expert_load *out);
    /* Optional (NULL = none). Each token's last routing (spec/routes.h), to price drafts by their experts. */
    struct sprig_routes *(*routes)(sprig_target *t);
};

/* Common header every target embeds first. */
struct sprig_target {
    const struct sprig_target_vt *vt;
    int n_vocab;                        /* token ids are [0, n_vocab) */
    int n_ctx;                          /* cache capacity in slots */
    int n_eos;                          /* end-of-sequence ids, 0..SPRIG_TARGET_MAX_EOS */
    int32_t eos[SPRIG_TARGET_MAX_EOS];
    bool all_hidden;                    /* set by the session for a drafter that reads every row's hidden
                                           state (sprig_drafter.reads_all_hidden): prefill then exposes
                                           all prompt rows in kept_hidden */
};

/* The session calls the target only through these. They validate the
 * arguments (naming them), turn a NULL optional slot into a refusal with a
 * reason naming the target, and check the target's answers (row values in
 * the vocabulary, cap->block and cap->tree set, n_past moved by exactly
 * accepted + 1) so a broken target is an error, not a wrong token. */
sprig_status sprig_target_check(const sprig_target *t, sprig_error *err);   /* header + required slots */
bool sprig_target_is_eos(const sprig_target *t, int32_t tok);
sprig_status sprig_target_prefill(sprig_target *t, const int32_t *tokens, int n, sprig_rows *rows,
                                  sprig_target_state *st, sprig_error *err);
sprig_status sprig_target_verify_forward(sprig_target *t, const int32_t *block, int n, sprig_rows *rows,
                                         sprig_capture *cap, sprig_error *err);
sprig_status sprig_target_verify_finalize(sprig_target *t, int accepted, int n, sprig_capture *cap,
                                          sprig_target_state *st, sprig_error *err);
bool sprig_target_tree_round_is_available(sprig_target *t, char *reason, size_t cap);
/* shared_load, or zeros for a target that verifies alone */
void sprig_target_shared_load(sprig_target *t, double *rows, double *emitted, sprig_shared_cost *cost);
/* shared_plan, or 0 for a target that verifies alone */
int sprig_target_shared_plan(sprig_target *t, const double *gain, int n, double draft_ms, const struct sprig_costs *lone);
sprig_status sprig_target_verify_forward_tree(sprig_target *t, const sprig_tree *tree, sprig_rows *rows,
                                              sprig_capture *cap, sprig_error *err);
sprig_status sprig_target_verify_finalize_tree(sprig_target *t, const int *path, int n_path, int n,
                                               sprig_capture *cap, sprig_target_state *st, sprig_error *err);

#endif
