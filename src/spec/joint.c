/*
 * spec/joint — see joint.h.
 */
#include "spec/joint.h"

/* The next draft granted: of the offers with the fewest rows so far (at[i]) and one left, the one whose next draft
 * has the largest gain; -1 when every list is spent. Ties: the lower index. */
static int next_best(const sprig_joint_offer *o, int n_offer, const int *at)
{
    int best = -1;
    for (int i = 0; i < n_offer; i++) {
        if (at[i] >= o[i].n) continue;
        if (best < 0 || at[i] < at[best] || (at[i] == at[best] && o[i].gain[at[i]] > o[best].gain[at[best]])) best = i;
    }
    return best;
}

int sprig_joint_allocate(sprig_joint_offer *o, int n_offer, int fixed_rows, double fixed_emit, const sprig_costs *c,
                         double step_ms, int max_total)
{
    int at[SPRIG_JOINT_MAX];   /* the next draft of each list */
    for (int i = SPRIG_JOINT_MAX; i < n_offer; i++) o[i].m = 1;   /* past the limit: the bonus alone */
    if (n_offer > SPRIG_JOINT_MAX) n_offer = SPRIG_JOINT_MAX;
    if (step_ms < 0) step_ms = 0;
    const int rows0 = fixed_rows + n_offer;
    double e = fixed_emit;
    for (int i = 0; i < n_offer; i++) {
        at[i] = 1;
        o[i].m = 1;
        e += o[i].n >= 1 ? o[i].gain[0] : 1.0;
    }
    double best = e / (sprig_costs_t(c, rows0 > 0 ? rows0 : 1) + step_ms);
    int best_k = 0;
    for (int k = 1; rows0 + k <= max_total; k++) {
        const int i = next_best(o, n_offer, at);
        if (i < 0) break;
        e += o[i].gain[at[i]++];
        const double rate = e / (sprig_costs_t(c, rows0 + k) + step_ms);
        if (rate > best) { best = rate; best_k = k; }
    }
    for (int i = 0; i < n_offer; i++) at[i] = 1;   /* the merge again, to the best count */
    for (int k = 0; k < best_k; k++) {
        const int i = next_best(o, n_offer, at);
        at[i]++;
        o[i].m++;
    }
    return rows0 + best_k;
}

int sprig_joint_grant_level(sprig_joint_offer *o, int n_offer, int level)
{
    int rows = 0;
    for (int i = 0; i < n_offer; i++) {
        o[i].m = o[i].n < 1 + level ? (o[i].n < 1 ? 1 : o[i].n) : 1 + level;
        rows += o[i].m;
    }
    return rows;
}

void sprig_joint_rates_add(sprig_joint_rates *r, int n_offer, int level, double tok_per_ms)
{
    if (n_offer < 1 || n_offer > SPRIG_JOINT_MAX || level < 0 || level > SPRIG_JOINT_LEVELS || !(tok_per_ms >= 0) ||
        !(tok_per_ms < 1e9))
        return;
    sprig_joint_window *w = &r->at[n_offer][level];
    w->win[w->next] = tok_per_ms;
    w->next = (uint8_t)((w->next + 1) % SPRIG_COSTS_WINDOW);
    if (w->n_win < SPRIG_COSTS_WINDOW) w->n_win++;
    w->last = r->steps > 0 ? r->steps : 1;
}

double sprig_joint_rates_median(const sprig_joint_rates *r, int n_offer, int level, int *samples)
{
    if (samples) *samples = 0;
    if (n_offer < 1 || n_offer > SPRIG_JOINT_MAX || level < 0 || level > SPRIG_JOINT_LEVELS) return 0;
    const sprig_joint_window *w = &r->at[n_offer][level];
    if (samples) *samples = w->n_win;
    return sprig_costs_median_of(w->win, w->n_win);
}

void sprig_joint_level_rates(const sprig_joint_offer *o, int n_offer, const sprig_costs *c, double step_ms, int max_level,
                             double *out)
{
    for (int l = 0; l <= max_level; l++) {
        double e = 0;
        int rows = 0;
        for (int i = 0; i < n_offer; i++) {
            const int m = o[i].n < l + 1 ? o[i].n : l + 1;
            for (int k = 0; k < m; k++) e += o[i].gain[k];
            rows += m;
        }
        const double t = sprig_costs_t(c, rows) + step_ms;
        out[l] = t > 0 ? e / t : 0;
    }
}

int sprig_joint_rates_choose(sprig_joint_rates *r, int n_offer, int predicted, int max_level, const double *model)
{
    if (max_level > SPRIG_JOINT_LEVELS) max_level = SPRIG_JOINT_LEVELS;
    if (max_level < 0) max_level = 0;
    if (predicted > max_level) predicted = max_level;
    if (predicted < 0) predicted = 0;
    r->steps++;
    if (n_offer < 1 || n_offer > SPRIG_JOINT_MAX) return predicted;
    /* the model's level stands until it is measured; a measured level replaces it only when its median beats
     * the model's by SPRIG_JOINT_OVERRIDE (levels measured at different moments of a drifting machine differ
     * by more than the choice between neighbours turns on; the model's forward costs share one scale) */
    int ka = 0;
    const double va = sprig_joint_rates_median(r, n_offer, predicted, &ka);
    if (ka < SPRIG_JOINT_MIN_SAMPLES) return predicted;
    int best = predicted;
    double bv = va * SPRIG_JOINT_OVERRIDE;
    for (int l = 0; l <= max_level; l++) {   /* levels with a few samples only: one lucky step does not lead */
        int k = 0;
        const double v = sprig_joint_rates_median(r, n_offer, l, &k);
        if (l != predicted && k >= SPRIG_JOINT_MIN_SAMPLES && v > bv) { best = l; bv = v; }
    }
    int have = 0;   /* samples at this count: while few, neighbours are tried every other step */
    for (int l = 0; l <= max_level; l++) have += r->at[n_offer][l].n_win;
    if (r->steps % (have < 4 * SPRIG_JOINT_MIN_SAMPLES ? 2 : SPRIG_JOINT_EXPLORE) == 0) {   /* a neighbour not measured
                                                                                        lately: one more draft, then one less */
        const int up = best + 1, dn = best - 1;
        /* and not one the model prices far below the best: the forward's stair is known to it */
        const bool up_old = up <= max_level && (!model || model[up] >= SPRIG_JOINT_PLAUSIBLE * model[best]) &&
                            (r->at[n_offer][up].n_win < SPRIG_JOINT_MIN_SAMPLES || r->steps - r->at[n_offer][up].last > SPRIG_JOINT_STALE);
        const bool dn_old = dn >= 0 && (!model || model[dn] >= SPRIG_JOINT_PLAUSIBLE * model[best]) &&
                            (r->at[n_offer][dn].n_win < SPRIG_JOINT_MIN_SAMPLES || r->steps - r->at[n_offer][dn].last > SPRIG_JOINT_STALE);
        if (up_old) { r->explored++; return up; }
        if (dn_old) { r->explored++; return dn; }
    }
    return best;
}
