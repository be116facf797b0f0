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
