/*
 * spec/target — the checked entry points into a target (see target.h).
 *
 * Every call the round loop makes into a target goes through here, so the
 * refusal defaults live in one place (a NULL tree slot is "no", with the
 * target's name in the reason) and so do the checks on what a target hands
 * back: argmax rows inside the vocabulary, a capture that says how many slots
 * the forward appended and whether it was a tree, and a cache that moved by
 * exactly accepted + 1 slots on finalize. A target that breaks its contract
 * produces an error naming it instead of a silently wrong token.
 */
#include "spec/target.h"

#include <stdio.h>

static const char *tname(const sprig_target *t) { return t->vt && t->vt->name ? t->vt->name : "?"; }

sprig_status sprig_target_check(const sprig_target *t, sprig_error *err)
{
    if (!t || !t->vt) return sprig_err(err, SPRIG_E_INVALID_ARG, "target: NULL target or vtable");
    if (!t->vt->prefill || !t->vt->verify_forward || !t->vt->verify_finalize)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s': prefill, verify_forward and verify_finalize are required",
                         tname(t));
    if (t->n_vocab < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s': n_vocab = %d must be >= 1", tname(t), t->n_vocab);
    if (t->n_ctx < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s': n_ctx = %d must be >= 1", tname(t), t->n_ctx);
    if (t->n_eos < 0 || t->n_eos > SPRIG_TARGET_MAX_EOS)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s': n_eos = %d is outside [0, %d]", tname(t), t->n_eos,
                         SPRIG_TARGET_MAX_EOS);
    return SPRIG_OK;
}

bool sprig_target_is_eos(const sprig_target *t, int32_t tok)
{
    for (int i = 0; i < t->n_eos; i++)
        if (t->eos[i] == tok) return true;
    return false;
}

static sprig_status check_rows_request(const sprig_target *t, const char *what, int n, const sprig_rows *rows,
                                       sprig_error *err)
{
    if (!rows) return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: rows is NULL", tname(t), what);
    if (n < 1 || n > rows->cap)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: %d rows requested, buffers hold %d", tname(t), what, n,
                         rows->cap);
    if (rows->sampling ? !rows->probs : !rows->argmax)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: rows has no %s buffer", tname(t), what,
                         rows->sampling ? "probs" : "argmax");
    if (rows->top_n < 0 || rows->top_n > SPRIG_TOP_LOGPROBS_MAX || rows->top_n > t->n_vocab || (rows->top_n && !rows->top))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: top_n = %d is outside [0, %d] or has no buffer", tname(t),
                         what, rows->top_n, SPRIG_TOP_LOGPROBS_MAX);
    return SPRIG_OK;
}

static sprig_status check_tokens(const sprig_target *t, const char *what, const int32_t *tok, int n, sprig_error *err)
{
    if (!tok) return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: tokens is NULL", tname(t), what);
    for (int i = 0; i < n; i++)
        if (tok[i] < 0 || tok[i] >= t->n_vocab)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: token[%d] = %d is outside the vocabulary [0, %d)",
                             tname(t), what, i, tok[i], t->n_vocab);
    return SPRIG_OK;
}

static sprig_status check_rows_answer(const sprig_target *t, const char *what, int n, const sprig_rows *rows,
                                      sprig_error *err)
{
    if (rows->sampling) return SPRIG_OK;   /* probabilities are checked by the walk (a row with no mass) */
    for (int i = 0; i < n; i++)
        if (rows->argmax[i] < 0 || rows->argmax[i] >= t->n_vocab)
            return sprig_err(err, SPRIG_E_INTERNAL, "target '%s' %s: argmax[%d] = %d is outside the vocabulary [0, %d)",
                             tname(t), what, i, rows->argmax[i], t->n_vocab);
    return SPRIG_OK;
}

sprig_status sprig_target_prefill(sprig_target *t, const int32_t *tokens, int n, sprig_rows *rows,
                                  sprig_target_state *st, sprig_error *err)
{
    static const char what[] = "prefill";
    if (n < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' prefill: n = %d must be >= 1", tname(t), n);
    sprig_status s;
    if ((s = check_rows_request(t, what, 1, rows, err)) || (s = check_tokens(t, what, tokens, n, err))) return s;
    if ((s = t->vt->prefill(t, tokens, n, rows, st, err))) return s;
    /* the cache may have held earlier tokens: at least the prompt is there */
    if (st->n_past < n || st->n_past > t->n_ctx)
        return sprig_err(err, SPRIG_E_INTERNAL, "target '%s' prefill: cache holds %d slots after a prompt of %d (capacity %d)",
                         tname(t), st->n_past, n, t->n_ctx);
    return check_rows_answer(t, what, 1, rows, err);
}

static sprig_status check_capture(const sprig_target *t, const char *what, const sprig_capture *cap, int n, bool tree,
                                  sprig_error *err)
{
    if (cap->block != n || cap->tree != tree)
        return sprig_err(err, SPRIG_E_INTERNAL, "target '%s' %s: capture says %d slots (tree %d), expected %d (tree %d)",
                         tname(t), what, cap->block, (int)cap->tree, n, (int)tree);
    return SPRIG_OK;
}

sprig_status sprig_target_verify_forward(sprig_target *t, const int32_t *block, int n, sprig_rows *rows,
                                         sprig_capture *cap, sprig_error *err)
{
    static const char what[] = "verify_forward";
    sprig_status s;
    if ((s = check_rows_request(t, what, n, rows, err)) || (s = check_tokens(t, what, block, n, err))) return s;
    *cap = (sprig_capture){ 0 };
    if ((s = t->vt->verify_forward(t, block, n, rows, cap, err))) return s;
    if ((s = check_capture(t, what, cap, n, false, err))) return s;
    return check_rows_answer(t, what, n, rows, err);
}

sprig_status sprig_target_verify_finalize(sprig_target *t, int accepted, int n, sprig_capture *cap,
                                          sprig_target_state *st, sprig_error *err)
{
    static const char what[] = "verify_finalize";
    if (accepted < 0 || accepted >= n)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: accepted = %d is outside [0, n = %d)", tname(t), what,
                         accepted, n);
    sprig_status s;
    if ((s = check_capture(t, what, cap, n, false, err))) return s;
    int before = st->n_past;
    if ((s = t->vt->verify_finalize(t, accepted, n, cap, st, err))) return s;
    *cap = (sprig_capture){ 0 };   /* consumed */
    if (st->n_past != before + accepted + 1)
        return sprig_err(err, SPRIG_E_INTERNAL, "target '%s' %s: cache holds %d slots, expected %d + %d", tname(t), what,
                         st->n_past, before, accepted + 1);
    return SPRIG_OK;
}

bool sprig_target_tree_round_is_available(sprig_target *t, char *reason, size_t cap)
{
    if (reason && cap) reason[0] = 0;
    if (!t->vt->tree_round_is_available || !t->vt->verify_forward_tree || !t->vt->verify_finalize_tree) {
        if (reason && cap) snprintf(reason, cap, "target '%s' has no tree verify", tname(t));
        return false;
    }
    bool ok = t->vt->tree_round_is_available(t, reason, cap);
    if (!ok && reason && cap && !reason[0]) snprintf(reason, cap, "target '%s' declined without a reason", tname(t));
    return ok;
}

sprig_status sprig_target_verify_forward_tree(sprig_target *t, const sprig_tree *tree, sprig_rows *rows,
                                              sprig_capture *cap, sprig_error *err)
{
    static const char what[] = "verify_forward_tree";
    if (!t->vt->verify_forward_tree)
        return sprig_err(err, SPRIG_E_REFUSED, "target '%s' cannot verify a draft tree (no tree forward)", tname(t));
    sprig_status s;
    if ((s = sprig_tree_validate(tree, t->n_vocab, err))) {
        sprig_err_prefix(err, "target '%s' %s", tname(t), what);
        return s;
    }
    if ((s = check_rows_request(t, what, tree->n, rows, err))) return s;
    *cap = (sprig_capture){ 0 };
    if ((s = t->vt->verify_forward_tree(t, tree, rows, cap, err))) return s;
    if ((s = check_capture(t, what, cap, tree->n, true, err))) return s;
    return check_rows_answer(t, what, tree->n, rows, err);
}

sprig_status sprig_target_verify_finalize_tree(sprig_target *t, const int *path, int n_path, int n,
                                               sprig_capture *cap, sprig_target_state *st, sprig_error *err)
{
    static const char what[] = "verify_finalize_tree";
    if (!t->vt->verify_finalize_tree)
        return sprig_err(err, SPRIG_E_REFUSED, "target '%s' cannot roll back a draft tree (no tree finalize)", tname(t));
    if (!path || n_path < 1 || n_path > n || path[0] != 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: path must start at node 0 and hold 1..%d nodes (got %d)",
                         tname(t), what, n, n_path);
    for (int i = 1; i < n_path; i++)
        if (path[i] <= path[i - 1] || path[i] >= n)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "target '%s' %s: path[%d] = %d is not increasing within [0, %d)",
                             tname(t), what, i, path[i], n);
    sprig_status s;
    if ((s = check_capture(t, what, cap, n, true, err))) return s;
    int before = st->n_past;
    if ((s = t->vt->verify_finalize_tree(t, path, n_path, n, cap, st, err))) return s;
    *cap = (sprig_capture){ 0 };
    if (st->n_past != before + n_path)
        return sprig_err(err, SPRIG_E_INTERNAL, "target '%s' %s: cache holds %d slots, expected %d + %d", tname(t), what,
                         st->n_past, before, n_path);
    return SPRIG_OK;
}

void sprig_target_shared_load(sprig_target *t, double *rows, double *emitted, sprig_shared_cost *cost)
{
    *rows = 0;
    *emitted = 0;
    *cost = (sprig_shared_cost){ 0 };
    if (t->vt->shared_load) t->vt->shared_load(t, rows, emitted, cost);
}

int sprig_target_shared_plan(sprig_target *t, const double *gain, int n, double draft_ms, const struct sprig_costs *lone)
{
    return t && t->vt->shared_plan ? t->vt->shared_plan(t, gain, n, draft_ms, lone) : 0;
}
