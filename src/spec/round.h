/*
 * spec/round — the decoding session: plain decoding and speculative rounds
 * (chain or tree) over a target and an optional drafter (DESIGN §6).
 *
 * begin(prompt): the target prefills the prompt; its output picks the first
 * token (argmax, or a draw when sampling), which is emitted. Then each
 * step() is one verify round:
 *   1. tree gate (tree mode on and a drafter): ask the target EVERY round,
 *      before drafting, whether a tree round can run now;
 *   2. draft: a tree (draft_tree, default = chain + runner-up leaves) or a
 *      chain (draft_block); plain sessions draft nothing;
 *   3. verify forward of [bonus, drafts] or of the tree;
 *   4. walk: greedy (walk.h) or lossless sampling (accept.h);
 *   5. finalize (rollback to the accepted path);
 *   6. emit the walk's tokens one at a time, checking EOS, the token budget
 *      and the callback per token;
 *   7. drafter hook (accept / accept_tree; skipped with one warning on tree
 *      rounds when the drafter has no tree form).
 * Plain decoding is the same round with no drafts (block 1), so emission,
 * EOS, budget and statistics are one code path for all three modes.
 *
 * Block size per round: k = min(block, tokens left in the budget, free
 * cache slots); a tree gets at most min(k + tree_branches, free slots)
 * nodes. A full cache ends the session (stop "context").
 *
 * Tree mode is OFF by default: params.tree = SPRIG_TREE_FROM_ENV reads env
 * SPRIG_TREE (1/true/on/yes, case-insensitive, turn it on); SPRIG_TREE_OFF /
 * SPRIG_TREE_ON override the environment. The session logs once (info)
 * which path ran and warns once when tree mode is on but the target
 * declined (with the target's reason).
 *
 * Nothing allocates after create: buffers are sized for the largest block
 * (block + tree_branches rows) and the target's context (a grammar's tables
 * grow the first time a state is visited, bounded: grammar/match.h). Not thread-safe;
 * one session drives one target and one drafter at a time. After an error
 * the target cache is in an unspecified state: clear it before reuse.
 */
#ifndef SPRIG_SPEC_ROUND_H
#define SPRIG_SPEC_ROUND_H

#include "spec/drafter.h"
#include "spec/stats.h"

/* SPRIG_TREE_FROM_ENV / SPRIG_TREE_OFF / SPRIG_TREE_ON: enum sprig_tree_switch in sprig.h */

/* Called for each emitted token (EOS is never passed unless ignore_eos);
 * top: the top_logprobs most likely tokens of the row that produced it (the
 * prefill's row for the first token, then the accepted path's verify rows),
 * NULL when top_logprobs is 0. Return false to stop. */
typedef bool (*sprig_token_fn)(void *user, int32_t token, const sprig_logprob *top);

struct sprig_spec_params {
    int block;              /* verify block for chains: bonus + block-1 drafts; [1, SPRIG_TREE_MAX]; default 4 */
    int tree_branches;      /* extra tree nodes per round (runner-up leaves); >= 0,
                               block + tree_branches <= SPRIG_TREE_MAX; default 0 */
    int tree;               /* SPRIG_TREE_FROM_ENV (default), SPRIG_TREE_OFF or SPRIG_TREE_ON */
    int tree_width;         /* 0: runner-up trees; 1..SPRIG_DYNTREE_MAX_WIDTH: dynamic trees of block - 1
                               depths and block + tree_branches nodes (sprig_draft_ctx.tree_width) */
    struct sprig_shape *shape;  /* tree auto (with tree_width): each round's tree (or chain, or the bonus
                               alone) chosen from measured costs (spec/shape.h); borrowed, so what it
                               learns outlives the session; the target is profiled once per shape */
    int max_tokens;         /* tokens to emit, the first one included; >= 1; default 128 */
    bool ignore_eos;        /* keep going through end-of-sequence tokens */
    bool sampling;          /* false: greedy; true: the target returns probabilities */
    sprig_sampler *sampler; /* handed to the target in sampling mode (see sprig_rows) */
    uint64_t seed;          /* seeds the acceptance / first-token draws (and the sampled drafts') */
    bool draft_q;           /* sampling: drafts are drawn from the drafter's distribution and accepted by the
                               q-aware rules (spec/draftq.h, accept.h); false: one-hot drafts (its argmax) */
    int top_logprobs;       /* 0..SPRIG_TOP_LOGPROBS_MAX (<= n_vocab): candidates per emitted token */
    sprig_token_fn on_token;
    void *user;
    void (*on_round)(void *user, const sprig_tree *block, const sprig_walk *walk, bool tree);   /* after each walk; may be NULL */
    void *round_user;
    struct sprig_gmatch *grammar;   /* non-NULL: every emitted token is one the grammar allows (grammar/match.h;
                                       borrowed). Each verify row gets the state its node's path leads to. With a
                                       drafter, drafters with logits propose only tokens it allows (draft ctx); drafts
                                       it refuses are cut (with their subtrees) before the verify and text it forces
                                       extends the first chain while the block has room (one-hot drafts; sampled
                                       drafts are left to the acceptance rule, which refuses them exactly) */
    bool grammar_blind_drafts;      /* the drafter ignores the grammar: no masked drafting, no cuts, no forced text */
    int (*tokenize)(void *user, const char *text, size_t n, int32_t *out, int cap);   /* forced text -> tokens */
    void *tokenize_user;
};

typedef struct sprig_spec_session sprig_spec_session;

struct sprig_spec_params sprig_spec_default_params(void);

/* Is a SPRIG_TREE value "on"? (1, true, on, yes; case-insensitive) */
bool sprig_spec_parse_switch(const char *value);
/* Resolve params.tree against an environment value (NULL = unset). */
bool sprig_spec_resolve_tree(int option, const char *env_value);

/* drafter NULL = plain decoding. The target and drafter are borrowed: they
 * must outlive the session. Validates params (naming the field). */
sprig_spec_session *sprig_spec_create(sprig_target *target, sprig_drafter *drafter,
                                      const struct sprig_spec_params *p, sprig_error *err);
void sprig_spec_free(sprig_spec_session *s);

/* Prefill prompt[n] (appended to whatever the target cache holds), emit the
 * first token, reset the statistics. May be called again for a new run. */
sprig_status sprig_spec_begin(sprig_spec_session *s, const int32_t *prompt, int n, sprig_error *err);
/* The same when the target cache already holds prompt[0..n_cached) (a
 * previous generation's, kept): only the rest is prefilled; the drafters see
 * the whole prompt as history. 0 <= n_cached < n. */
sprig_status sprig_spec_begin_cached(sprig_spec_session *s, const int32_t *prompt, int n, int n_cached, sprig_error *err);
/* One round; a no-op once done. */
sprig_status sprig_spec_step(sprig_spec_session *s, sprig_error *err);
bool sprig_spec_done(const sprig_spec_session *s);
/* begin + step until done. */
sprig_status sprig_spec_generate(sprig_spec_session *s, const int32_t *prompt, int n, sprig_error *err);
sprig_status sprig_spec_generate_cached(sprig_spec_session *s, const int32_t *prompt, int n, int n_cached, sprig_error *err);
/* The tokens fed to the target, in cache order: after a generation (or a stop, a cancel), exactly what its cache
 * holds. */
const int32_t *sprig_spec_history(const sprig_spec_session *s, int *n);

const sprig_spec_stats *sprig_spec_get_stats(const sprig_spec_session *s);
/* Verify rows whose whole grammar mask was applied since begin (p.grammar). */
int64_t sprig_spec_rows_masked(const sprig_spec_session *s);
/* Did the switch resolve to tree mode? (Whether tree rounds ran is stats.path.) */
bool sprig_spec_tree_mode(const sprig_spec_session *s);

#endif
