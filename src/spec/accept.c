/*
 * spec/accept — see accept.h. Per visited node: one pass over the row to
 * copy it into the residual and sum its mass, one uniform per examined
 * child, and one more pass to draw the bonus when every child is rejected.
 * Sums are in double so a long vocabulary row does not lose the small
 * probabilities the rejection compares against.
 */
#include "spec/accept.h"

#include <string.h>

int sprig_sample_weights(const float *w, int n, sprig_rng *rng)
{
    double total = 0.0;
    int last = -1;
    for (int i = 0; i < n; i++)
        if (w[i] > 0.0f) { total += w[i]; last = i; }
    if (last < 0) return -1;
    double u = sprig_rng_uniform(rng) * total, c = 0.0;
    for (int i = 0; i < n; i++) {
        if (!(w[i] > 0.0f)) continue;
        c += w[i];
        if (u < c) return i;
    }
    return last;   /* u landed on the rounding edge of the total */
}

/* q-aware multi-candidate rule at node cur (children drawn without replacement from row qr of q):
 * r = scratch (the residual, mass *mass), left = what the draws had left. Returns the accepted child or -1
 * with scratch holding the residual to draw the bonus from. */
static int sampled_children(const sprig_tree *t, int cur, const sprig_draft_q *q, int qr, int n_vocab, sprig_rng *rng,
                            float *scratch, double mass, float *left)
{
    memcpy(left, q->rows + (size_t)qr * (size_t)n_vocab, (size_t)n_vocab * sizeof(float));
    double qmass = 0.0;
    for (int v = 0; v < n_vocab; v++) qmass += left[v] > 0.0f ? left[v] : 0.0f;
    for (int c = cur + 1; c < t->n; c++) {
        if (t->parents[c] != cur) continue;
        int32_t x = t->tokens[c];
        if (x < 0 || x >= n_vocab || !(left[x] > 0.0f) || !(qmass > 0.0)) continue;   /* never drawn from q' */
        /* accept with min(1, r'(x) / q'(x)), both normalised */
        const double rx = scratch[x] > 0.0f ? scratch[x] / mass : 0.0, qx = left[x] / qmass;
        if (rx >= qx || sprig_rng_uniform(rng) * qx < rx) return c;
        /* rejected: r <- (r' - q')+, q' <- q' without x */
        double m = 0.0;
        for (int v = 0; v < n_vocab; v++) {
            double d = (scratch[v] > 0.0f ? scratch[v] / mass : 0.0) - (left[v] > 0.0f ? left[v] / qmass : 0.0);
            scratch[v] = d > 0.0 ? (float)d : 0.0f;
            m += scratch[v];
        }
        qmass -= left[x];
        left[x] = 0.0f;
        if (!(m > 0.0)) return c;   /* r' <= q' everywhere means r' == q': x was certain (rounding guard) */
        mass = m;
    }
    return -1;
}

sprig_status sprig_tree_walk_sample(const sprig_tree *t, const float *probs, int n_vocab, int budget,
                                    const sprig_draft_q *q, sprig_rng *rng, float *scratch, sprig_walk *out,
                                    sprig_error *err)
{
    SPRIG_ASSERT(t->n >= 1 && t->n <= SPRIG_TREE_MAX);
    if (n_vocab < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "sampling walk: n_vocab = %d must be >= 1", n_vocab);
    int cur = 0;
    int32_t bonus;
    out->n_path = 1;
    out->path[0] = 0;
    out->accepted = 0;
    out->n_emit = 0;
    if (budget <= 0) return SPRIG_OK;
    for (;;) {
        const float *row = probs + (size_t)cur * (size_t)n_vocab;
        if (out->n_path >= budget) {
            /* no room for another accepted draft: the bonus is a plain draw */
            bonus = sprig_sample_weights(row, n_vocab, rng);
            if (bonus < 0)
                return sprig_err(err, SPRIG_E_INVALID_ARG, "sampling walk: probability row %d has no mass", cur);
            break;
        }
        double mass = 0.0;
        for (int v = 0; v < n_vocab; v++) {
            float x = row[v] > 0.0f ? row[v] : 0.0f;
            scratch[v] = x;
            mass += x;
        }
        if (!(mass > 0.0))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "sampling walk: probability row %d has no mass", cur);
        int next = -1, last_rejected = -1;
        if (q && q->row[cur] >= 0) {   /* sampled children */
            next = sampled_children(t, cur, q, q->row[cur], n_vocab, rng, scratch, mass, scratch + n_vocab);
            if (next < 0) {
                bonus = sprig_sample_weights(scratch, n_vocab, rng);
                if (bonus < 0)
                    return sprig_err(err, SPRIG_E_INTERNAL, "sampling walk: the residual of row %d has no mass", cur);
                break;
            }
            out->path[out->n_path++] = next;
            cur = next;
            continue;
        }
        for (int c = cur + 1; c < t->n && next < 0; c++) {
            if (t->parents[c] != cur) continue;
            int32_t x = t->tokens[c];
            if (x < 0 || x >= n_vocab || !(scratch[x] > 0.0f)) continue;   /* no mass: never drawn */
            double rx = scratch[x];
            if (rx >= mass || sprig_rng_uniform(rng) * mass < rx) {
                next = c;
            } else {
                mass -= rx;
                scratch[x] = 0.0f;
                last_rejected = c;
            }
        }
        if (next < 0) {
            bonus = sprig_sample_weights(scratch, n_vocab, rng);
            if (bonus >= 0) break;
            /* Rounding guard: the rejected children held all the mass, which
             * in exact arithmetic means the last one was certain. */
            SPRIG_ASSERT(last_rejected >= 0);
            next = last_rejected;
        }
        out->path[out->n_path++] = next;
        cur = next;
    }
    out->accepted = out->n_path - 1;
    for (int i = 1; i < out->n_path; i++) out->emit[out->n_emit++] = t->tokens[out->path[i]];
    out->emit[out->n_emit++] = bonus;
    return SPRIG_OK;
}

sprig_status sprig_chain_walk_sample(const int32_t *draft, int k, const float *probs, int n_vocab, int budget,
                                     const sprig_draft_q *q, sprig_rng *rng, float *scratch, sprig_walk *out,
                                     sprig_error *err)
{
    sprig_tree t;
    /* the bonus token is not read by the walk; -1 marks it as unknown here */
    sprig_status st = sprig_tree_linear(&t, -1, draft, k - 1, err);
    if (st) return st;
    return sprig_tree_walk_sample(&t, probs, n_vocab, budget, q, rng, scratch, out, err);
}
