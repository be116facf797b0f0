/*
 * spec/round — see round.h. One function per phase; the chain and the tree
 * differ at exactly four points (draft, verify, walk, finalize) and share
 * everything after the walk: the walk result (spec/walk.h) is one shape for
 * both, so emission, EOS, budget, history and statistics cannot drift apart
 * between the paths. A plain session is a chain session whose block is the
 * bonus alone.
 */
#include "spec/round.h"
#include "spec/dyntree.h"
#include "spec/shape.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timer.h"
#include "spec/accept.h"
#include "grammar/match.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sprig_spec_session {
    sprig_target *t;
    sprig_drafter *d;                  /* NULL: plain decoding */
    struct sprig_spec_params p;
    bool tree_mode;
    sprig_rows rows;                   /* argmax [cap], probs [cap][n_vocab] */
    float *scratch;                    /* [n_vocab] residual for the sampling walk ([2][n_vocab] with q) */
    sprig_draft_q q;                   /* sampled drafts' proposal rows (p.draft_q), else unused */
    bool use_q;
    int32_t *history;                  /* [n_ctx] tokens this session fed the target */
    int n_history;
    sprig_rng rng;
    sprig_target_state st;
    sprig_capture cap;
    sprig_tree blk;                    /* this round's verify block (chain: linear) */
    sprig_draft draft;
    sprig_walk walk;
    int32_t bonus;
    bool begun, done;
    bool said_tree, said_chain, warned_decline, warned_hook;
    sprig_spec_stats stats;
    sprig_shape *shape;                /* tree auto (p.shape, borrowed), else NULL */
    int32_t gstate;                    /* the grammar's state after the tokens emitted so far (p.grammar) */
    int32_t *gst;                      /* [cap] each block node's grammar state */
};

struct sprig_spec_params sprig_spec_default_params(void)
{
    return (struct sprig_spec_params){
        .block = 4, .tree_branches = 0, .tree = SPRIG_TREE_FROM_ENV, .max_tokens = 128,
    };
}

bool sprig_spec_parse_switch(const char *value)
{
    static const char *const on[] = { "1", "true", "on", "yes" };
    if (!value) return false;
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        if (!strcasecmp(value, on[i])) return true;
    return false;
}

bool sprig_spec_resolve_tree(int option, const char *env_value)
{
    if (option == SPRIG_TREE_ON) return true;
    if (option == SPRIG_TREE_OFF) return false;
    return sprig_spec_parse_switch(env_value);
}

void sprig_spec_free(sprig_spec_session *s)
{
    if (!s) return;
    sprig_free_aligned(s->rows.argmax);
    sprig_free_aligned(s->rows.probs);
    sprig_free_aligned(s->rows.top);
    sprig_free_aligned(s->scratch);
    sprig_free_aligned(s->history);
    sprig_free_aligned(s->gst);
    sprig_draft_q_free(&s->q);
    free(s);
}

static sprig_status check_params(const sprig_target *t, const sprig_drafter *d, const struct sprig_spec_params *p,
                                 sprig_error *err)
{
    sprig_status st = sprig_target_check(t, err);
    if (st) return st;
    if (d && (!d->vt || !d->vt->draft_block))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: drafter has no draft_block");
    if (p->block < 1 || p->block > SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: block = %d is outside [1, %d]", p->block, SPRIG_TREE_MAX);
    if (p->shape && (p->tree_width < 1 || !d))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: tree_auto needs a drafter and a dynamic tree (tree_width >= 1)");
    if (p->tree_width < 0 || p->tree_width > SPRIG_DYNTREE_MAX_WIDTH)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: tree_width = %d is outside [0, %d]", p->tree_width,
                         SPRIG_DYNTREE_MAX_WIDTH);
    if (p->tree_branches < 0 || p->tree_branches > SPRIG_TREE_MAX - p->block)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: tree_branches = %d is outside [0, %d] (block %d + branches <= %d)",
                         p->tree_branches, SPRIG_TREE_MAX - p->block, p->block, SPRIG_TREE_MAX);
    if (p->tree < SPRIG_TREE_FROM_ENV || p->tree > SPRIG_TREE_ON)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: tree = %d is not FROM_ENV (-1), OFF (0) or ON (1)", p->tree);
    if (p->draft_q && (!p->sampling || !p->sampler))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: draft_q (sampled drafts) needs sampling and a sampler");
    if (p->max_tokens < 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: max_tokens = %d must be >= 1", p->max_tokens);
    if (p->top_logprobs < 0 || p->top_logprobs > SPRIG_TOP_LOGPROBS_MAX || p->top_logprobs > t->n_vocab)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "session: top_logprobs = %d is outside [0, %d]", p->top_logprobs,
                         SPRIG_TOP_LOGPROBS_MAX < t->n_vocab ? SPRIG_TOP_LOGPROBS_MAX : t->n_vocab);
    return SPRIG_OK;
}

sprig_spec_session *sprig_spec_create(sprig_target *target, sprig_drafter *drafter,
                                      const struct sprig_spec_params *p, sprig_error *err)
{
    if (!p) { sprig_err(err, SPRIG_E_INVALID_ARG, "session: params is NULL"); return NULL; }
    if (check_params(target, drafter, p, err)) return NULL;
    sprig_spec_session *s = calloc(1, sizeof *s);
    if (!s) { sprig_err(err, SPRIG_E_NOMEM, "session: out of memory"); return NULL; }
    s->t = target;
    s->d = drafter;
    s->p = *p;
    target->all_hidden = drafter && drafter->reads_all_hidden;
    if (drafter && p->tree_width && !drafter->vt->draft_tree && !p->shape)
        SPRIG_LOGW("drafter '%s' grows no dynamic trees: its tree rounds add runner-up leaves", drafter->vt->name);
    s->shape = drafter ? p->shape : NULL;
    s->tree_mode = sprig_spec_resolve_tree(p->tree, getenv("SPRIG_TREE"));
    int cap = drafter ? p->block + p->tree_branches : 1;
    size_t n_vocab = (size_t)target->n_vocab, probs_n;
    s->rows.sampling = p->sampling;
    s->rows.sampler = p->sampler;
    s->rows.cap = cap;
    s->rows.argmax = sprig_calloc_aligned((size_t)cap, sizeof(int32_t));
    s->history = sprig_calloc_aligned((size_t)target->n_ctx, sizeof(int32_t));
    s->gst = sprig_calloc_aligned((size_t)cap, sizeof(int32_t));
    bool ok = s->rows.argmax && s->history && s->gst;
    s->rows.grammar = p->grammar;
    s->rows.gstate = s->gst;
    if (ok && p->top_logprobs) {
        s->rows.top_n = p->top_logprobs;
        s->rows.top = sprig_calloc_aligned((size_t)cap * (size_t)p->top_logprobs, sizeof(sprig_logprob));
        ok = s->rows.top != NULL;
    }
    if (ok && p->sampling) {
        ok = !sprig_mul_ovf((size_t)cap, n_vocab, &probs_n);
        s->rows.probs = ok ? sprig_calloc_aligned(probs_n, sizeof(float)) : NULL;
        s->scratch = sprig_calloc_aligned(2 * n_vocab, sizeof(float));
        ok = s->rows.probs && s->scratch;
    }
    if (ok && p->draft_q && drafter) {
        if (sprig_draft_q_init(&s->q, p->sampler, target->n_vocab, p->seed ^ 0x5851f42d4c957f2dull, err)) {
            sprig_spec_free(s);
            return NULL;
        }
        s->use_q = true;
    }
    if (!ok) {
        sprig_spec_free(s);
        sprig_err(err, SPRIG_E_NOMEM, "session: cannot allocate buffers for %d rows x %d vocabulary, context %d", cap,
                  target->n_vocab, target->n_ctx);
        return NULL;
    }
    sprig_rng_seed(&s->rng, p->seed);
    sprig_stats_reset(&s->stats, drafter ? SPRIG_PATH_CHAIN : SPRIG_PATH_PLAIN);
    return s;
}

const sprig_spec_stats *sprig_spec_get_stats(const sprig_spec_session *s) { return &s->stats; }
bool sprig_spec_tree_mode(const sprig_spec_session *s) { return s->tree_mode; }
int64_t sprig_spec_rows_masked(const sprig_spec_session *s) { return s->rows.masked; }
bool sprig_spec_done(const sprig_spec_session *s) { return s->done; }

static void stop(sprig_spec_session *s, int why)
{
    s->done = true;
    s->stats.stop = why;
}

static sprig_status fail(sprig_spec_session *s, sprig_status st)
{
    stop(s, SPRIG_STOP_ERROR);
    return st;
}

/* Deliver one token, produced by rows row `row`; false when the session
 * stopped (EOS, budget, cancel). */
static bool emit_token(sprig_spec_session *s, int32_t tok, bool from_round, int row)
{
    if (!s->p.ignore_eos && sprig_target_is_eos(s->t, tok)) {
        stop(s, SPRIG_STOP_EOS);
        return false;
    }
    s->stats.emitted++;
    if (from_round) s->stats.emitted_rounds++;
    if (s->p.grammar) s->gstate = sprig_gmatch_advance(s->p.grammar, s->gstate, tok);
    const sprig_logprob *top = s->rows.top_n ? s->rows.top + (size_t)row * (size_t)s->rows.top_n : NULL;
    if (s->p.on_token && !s->p.on_token(s->p.user, tok, top)) {
        stop(s, SPRIG_STOP_CANCEL);
        return false;
    }
    if (s->stats.emitted >= s->p.max_tokens) {
        stop(s, SPRIG_STOP_BUDGET);
        return false;
    }
    return true;
}

static sprig_draft_ctx draft_ctx(sprig_spec_session *s)
{
    return (sprig_draft_ctx){
        .bonus = s->bonus, .history = s->history, .n_history = s->n_history, .target = &s->st,
        .sampling = s->p.sampling, .shape = s->shape,
        .tree_width = s->shape && !s->p.sampling ? sprig_shape_expand_width(s->shape, s->p.tree_width) : s->p.tree_width,
        .q = s->use_q ? &s->q : NULL, .grammar = s->p.grammar_blind_drafts ? NULL : s->p.grammar, .gstate = s->gstate,
    };
}

static double ms_since(uint64_t *t0)
{
    uint64_t now = sprig_time_ns();
    double ms = (double)(now - *t0) * 1e-6;
    *t0 = now;
    return ms;
}

sprig_status sprig_spec_begin(sprig_spec_session *s, const int32_t *prompt, int n, sprig_error *err)
{
    return sprig_spec_begin_cached(s, prompt, n, 0, err);
}

sprig_status sprig_spec_begin_cached(sprig_spec_session *s, const int32_t *prompt, int n, int n_cached, sprig_error *err)
{
    sprig_err_clear(err);
    s->begun = true;
    s->done = false;
    s->said_tree = s->said_chain = s->warned_decline = s->warned_hook = false;
    sprig_stats_reset(&s->stats, s->d ? SPRIG_PATH_CHAIN : SPRIG_PATH_PLAIN);
    if (!prompt || n < 1)
        return fail(s, sprig_err(err, SPRIG_E_INVALID_ARG, "session begin: the prompt is empty (n = %d)", n));
    if (n > s->t->n_ctx)
        return fail(s, sprig_err(err, SPRIG_E_CONTEXT_FULL, "session begin: prompt of %d tokens exceeds the context of %d",
                                 n, s->t->n_ctx));
    if (n_cached < 0 || n_cached >= n)
        return fail(s, sprig_err(err, SPRIG_E_INVALID_ARG, "session begin: %d cached tokens of a prompt of %d (at least one is fed)", n_cached, n));
    s->stats.prompt_tokens = n;
    s->stats.cached_tokens = n_cached;
    s->n_history = 0;
    s->rows.masked = 0;
    if (s->p.grammar) s->gst[0] = s->gstate = sprig_gmatch_start(s->p.grammar);
    s->st = (sprig_target_state){ 0 };
    uint64_t t0 = sprig_time_ns();
    if (s->shape && !s->shape->moe.on && s->t->vt->expert_load) {   /* a mixture of experts: rows priced by their experts */
        sprig_expert_load el;
        if (s->t->vt->expert_load(s->t, &el)) sprig_shape_set_experts(s->shape, &el);
    }
    if (s->shape && !s->shape->profiled && s->t->vt->time_rows) {   /* T(n) on this machine, once: the best of two */
        static const int sizes[] = SPRIG_SHAPE_PROFILE_SIZES;
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {   /* as far as the target measures (a batched one:
                                                                          the rows of a shared forward) */
            double ms = s->t->vt->time_rows(s->t, sizes[i]);
            if (ms < 0) break;
            sprig_shape_cost(s->shape, sizes[i], ms, true);
            sprig_shape_cost(s->shape, sizes[i], s->t->vt->time_rows(s->t, sizes[i]), true);
        }
        s->shape->profiled = true;
        s->stats.ms_profile = ms_since(&t0);
        SPRIG_LOGI("tree auto: profiled the target's verify times in %.0f ms (once per session)", s->stats.ms_profile);
    }
    sprig_status st = sprig_target_prefill(s->t, prompt + n_cached, n - n_cached, &s->rows, &s->st, err);   /* after what is cached */
    if (st) return fail(s, st);
    s->stats.ms_prefill += ms_since(&t0);
    memcpy(s->history, prompt, (size_t)n * sizeof *prompt);
    s->n_history = n;
    if (s->p.sampling) {
        s->bonus = sprig_sample_weights(s->rows.probs, s->t->n_vocab, &s->rng);
        if (s->bonus < 0)
            return fail(s, sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' prefill: the probability row has no mass",
                                     s->t->vt->name));
    } else {
        s->bonus = s->rows.argmax[0];
    }
    if (!s->d) SPRIG_LOGI("decoding path: plain (target '%s')", s->t->vt->name);
    if (!emit_token(s, s->bonus, false, 0)) return SPRIG_OK;
    s->stats.ms_emit += ms_since(&t0);
    if (s->d && s->d->vt->begin) {
        sprig_draft_ctx ctx = draft_ctx(s);
        ctx.reuse = n_cached > 0;
        if ((st = s->d->vt->begin(s->d, &ctx, err))) return fail(s, st);
        s->stats.ms_hook += ms_since(&t0);
    }
    return SPRIG_OK;
}

/* Forced text from node `from` on, tokenized, appended as a chain below it while the block has room (up to
 * max_nodes); returns the tokens appended. */
static int extend_forced(sprig_spec_session *s, int from, int max_nodes)
{
    if (!s->p.tokenize || s->gst[from] < 0 || s->blk.n >= max_nodes) return 0;
    char text[256];
    const int nt = sprig_gmatch_forced_text(s->p.grammar, s->gst[from], text, (int)sizeof text);
    if (!nt) return 0;
    int32_t toks[64];
    const int n = s->p.tokenize(s->p.tokenize_user, text, (size_t)nt, toks, 64);
    int added = 0;
    for (int i = 0; i < n && i < 64 && s->blk.n < max_nodes; i++) {
        const int32_t st = sprig_gmatch_advance(s->p.grammar, s->gst[from], toks[i]);
        if (st < 0) break;
        s->blk.tokens[s->blk.n] = toks[i];
        s->blk.parents[s->blk.n] = from;
        s->gst[s->blk.n] = st;
        from = s->blk.n++;
        added++;
    }
    s->stats.grammar_forced += added;
    s->stats.grammar_forced_rounds += added > 0;
    return added;
}

/* The block under a grammar: each node's state (its parent's after its token); when `edit`, nodes the grammar
 * refuses are cut with their subtrees (kept in order, parents renumbered) and forced text extends the first chain
 * (the root's first child, its first child, ...). Cutting a one-hot draft the grammar refuses changes nothing the
 * walk would do: its token has no mass under the masked target, so it would be rejected and leave the residual as
 * it was. */
static void grammar_block(sprig_spec_session *s, int max_nodes, bool edit)
{
    sprig_tree *b = &s->blk;
    int map[SPRIG_TREE_MAX];
    map[0] = 0;
    s->gst[0] = s->gstate;
    int n = 1;
    for (int i = 1; i < b->n; i++) {
        const int p = map[b->parents[i]];
        const int32_t ps = p >= 0 ? s->gst[p] : SPRIG_GSTATE_DEAD;
        const int32_t st = ps < 0 ? SPRIG_GSTATE_DEAD : sprig_gmatch_advance(s->p.grammar, ps, b->tokens[i]);
        if (edit && st < 0) {
            map[i] = -1;
            s->stats.grammar_pruned++;
            continue;
        }
        map[i] = n;
        b->tokens[n] = b->tokens[i];
        b->parents[n] = p;
        s->gst[n++] = st;
    }
    b->n = n;
    if (!edit) return;
    int leaf = 0;
    for (int c = 1; c < b->n; c++)
        if (b->parents[c] == leaf) leaf = c;   /* the first child: children follow their parent in index order */
    extend_forced(s, leaf, max_nodes);
}

/* Tree gate, asked every round before drafting; logs the path once. */
static bool choose_tree(sprig_spec_session *s)
{
    bool use_tree = false;
    if (s->d && s->tree_mode) {
        char reason[256];
        use_tree = sprig_target_tree_round_is_available(s->t, reason, sizeof reason);
        if (!use_tree && !s->warned_decline) {
            SPRIG_LOGW("tree mode is on but the target declined a tree round (%s); running chain rounds", reason);
            s->warned_decline = true;
        }
    }
    if (use_tree && !s->said_tree) {
        SPRIG_LOGI("decoding path: tree (target '%s', drafter '%s', block %d, branches %d)", s->t->vt->name,
                   s->d->vt->name, s->p.block, s->p.tree_branches);
        s->said_tree = true;
    } else if (!use_tree && s->d && !s->said_chain) {
        SPRIG_LOGI("decoding path: chain (target '%s', drafter '%s', block %d)", s->t->vt->name, s->d->vt->name,
                   s->p.block);
        s->said_chain = true;
    }
    return use_tree;
}

static sprig_status run_hook(sprig_spec_session *s, bool use_tree, sprig_error *err)
{
    const struct sprig_drafter_vt *vt = s->d->vt;
    sprig_round_info info = {
        .tree = use_tree, .block = &s->blk, .draft = use_tree ? NULL : &s->draft, .walk = &s->walk, .target = &s->st,
    };
    if (!use_tree) return vt->accept ? vt->accept(s->d, &info, err) : SPRIG_OK;
    if (vt->accept_tree) return vt->accept_tree(s->d, &info, err);
    if (vt->accept && !s->warned_hook) {
        SPRIG_LOGW("drafter '%s' has no tree form of its accept hook; skipped on tree rounds", vt->name);
        s->warned_hook = true;
    }
    return SPRIG_OK;
}

sprig_status sprig_spec_step(sprig_spec_session *s, sprig_error *err)
{
    if (!s->begun) return sprig_err(err, SPRIG_E_INVALID_ARG, "session step: begin() was not called");
    if (s->done) return SPRIG_OK;
    sprig_target *t = s->t;
    const int n_vocab = t->n_vocab;
    int budget = s->p.max_tokens - (int)s->stats.emitted;
    int room = t->n_ctx - s->st.n_past;
    if (room < 1) {
        SPRIG_LOGI("session: the target cache is full (%d slots)", t->n_ctx);
        stop(s, SPRIG_STOP_CONTEXT);
        return SPRIG_OK;
    }
    int k = s->d ? SPRIG_MIN(SPRIG_MIN(s->p.block, budget), room) : 1;
    uint64_t t0 = sprig_time_ns();
    sprig_status st;

    /* 1-2: gate and draft */
    bool use_tree = choose_tree(s);
    if (s->shape) {
        sprig_target_shared_load(t, &s->shape->others_rows, &s->shape->others_emit, &s->shape->shared);
        s->shape->routes = s->shape->moe.on && t->vt->routes ? t->vt->routes(t) : NULL;
        s->shape->joint = t->vt->shared_plan ? t : NULL;
    }
    if (s->use_q) sprig_draft_q_reset(&s->q);
    sprig_draft_ctx ctx = draft_ctx(s);
    if (!s->d) {
        sprig_tree_root(&s->blk, s->bonus);
    } else if (use_tree) {
        int max_nodes = SPRIG_MIN(k + s->p.tree_branches, room);
        if ((st = sprig_drafter_draft_tree(s->d, &ctx, k, max_nodes, n_vocab, &s->blk, err))) return fail(s, st);
    } else {
        if ((st = sprig_drafter_draft_block(s->d, &ctx, k, n_vocab, &s->draft, err))) return fail(s, st);
        if ((st = sprig_tree_linear(&s->blk, s->bonus, s->draft.tokens, s->draft.n, err))) return fail(s, st);
    }
    if (s->p.grammar)
        grammar_block(s, !s->d ? 1 : use_tree ? SPRIG_MIN(k + s->p.tree_branches, room) : k,
                      s->d && !s->p.grammar_blind_drafts && !(s->use_q && s->q.n_rows));
    const double draft_ms = ms_since(&t0);
    s->stats.ms_draft += draft_ms;
    if (s->use_q && s->q.n_rows) s->stats.sampled_rounds++;
    if (s->shape) sprig_shape_draft_cost(s->shape, draft_ms);
    const int n = s->blk.n;

    /* 3: verify forward */
    if (use_tree) st = sprig_target_verify_forward_tree(t, &s->blk, &s->rows, &s->cap, err);
    else st = sprig_target_verify_forward(t, s->blk.tokens, n, &s->rows, &s->cap, err);
    if (st) return fail(s, st);
    const double verify_ms = ms_since(&t0);
    s->stats.ms_verify += verify_ms;
    if (s->shape && !(s->shape->others_rows > 0)) {   /* alone: T(n) itself (and the experts its rows read) */
        sprig_expert_load el;
        const bool moe = s->shape->moe.on && t->vt->expert_load && t->vt->expert_load(t, &el);
        sprig_shape_cost_round(s->shape, n, verify_ms, moe ? el.last : -1);
    }

    /* 4: walk */
    if (!s->p.sampling) {
        if (use_tree) sprig_tree_walk(&s->blk, s->rows.argmax, budget, &s->walk);
        else sprig_speculative_walk(s->blk.tokens + 1, s->rows.argmax, n, budget, &s->walk);
    } else {
        if (use_tree)
            st = sprig_tree_walk_sample(&s->blk, s->rows.probs, n_vocab, budget, s->use_q ? &s->q : NULL, &s->rng,
                                        s->scratch, &s->walk, err);
        else
            st = sprig_chain_walk_sample(s->blk.tokens + 1, n, s->rows.probs, n_vocab, budget, s->use_q ? &s->q : NULL,
                                         &s->rng, s->scratch, &s->walk, err);
        if (st) {
            sprig_err_prefix(err, "target '%s' verify", t->vt->name);
            return fail(s, st);
        }
    }
    s->stats.ms_walk += ms_since(&t0);
    if (s->p.on_round) s->p.on_round(s->p.round_user, &s->blk, &s->walk, use_tree);
    if (s->shape && use_tree) sprig_shape_observe(s->shape, &s->blk, &s->walk);

    /* 5: finalize (rollback to the accepted path) */
    if (use_tree) st = sprig_target_verify_finalize_tree(t, s->walk.path, s->walk.n_path, n, &s->cap, &s->st, err);
    else st = sprig_target_verify_finalize(t, s->walk.accepted, n, &s->cap, &s->st, err);
    if (st) return fail(s, st);
    s->stats.ms_finalize += ms_since(&t0);

    /* 6: bookkeeping and emission, one shape for both paths; emit[i] is
     * what row path[i] decided (n_emit <= n_path) */
    SPRIG_ASSERT(s->n_history + s->walk.n_path <= t->n_ctx);
    for (int i = 0; i < s->walk.n_path; i++) s->history[s->n_history++] = s->blk.tokens[s->walk.path[i]];
    int max_accept = use_tree ? sprig_tree_max_depth(&s->blk) : n - 1;
    sprig_stats_record_round(&s->stats, n, max_accept, s->walk.accepted, use_tree);
    if (use_tree) s->stats.path = SPRIG_PATH_TREE;
    for (int i = 1; use_tree && i < s->walk.n_path; i++) {   /* left the first chain: not the first child */
        int first = s->walk.path[i - 1] + 1;
        while (first < n && s->blk.parents[first] != s->walk.path[i - 1]) first++;
        if (s->walk.path[i] != first) {
            s->stats.branch_rounds++;
            break;
        }
    }
    SPRIG_ASSERT(s->walk.n_emit >= 1);   /* budget >= 1 here */
    for (int i = 0; i < s->walk.n_emit; i++)
        if (!emit_token(s, s->walk.emit[i], true, s->walk.path[i])) break;
    s->bonus = s->walk.emit[s->walk.n_emit - 1];
    s->stats.ms_emit += ms_since(&t0);

    /* 7: drafter hook */
    if (s->d) {
        if ((st = run_hook(s, use_tree, err))) return fail(s, st);
        s->stats.ms_hook += ms_since(&t0);
    }
    return SPRIG_OK;
}

sprig_status sprig_spec_generate(sprig_spec_session *s, const int32_t *prompt, int n, sprig_error *err)
{
    return sprig_spec_generate_cached(s, prompt, n, 0, err);
}

sprig_status sprig_spec_generate_cached(sprig_spec_session *s, const int32_t *prompt, int n, int n_cached, sprig_error *err)
{
    sprig_status st = sprig_spec_begin_cached(s, prompt, n, n_cached, err);
    while (!st && !s->done) st = sprig_spec_step(s, err);
    return st;
}

const int32_t *sprig_spec_history(const sprig_spec_session *s, int *n)
{
    *n = s->n_history;
    return s->history;
}
