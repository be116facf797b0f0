/*
 * spec/costs — see costs.h.
 */
#include "spec/costs.h"

#include <math.h>
#include <string.h>

double sprig_costs_median_of(const double *x, int m)
{
    double v[SPRIG_COSTS_MAX];
    if (m > SPRIG_COSTS_MAX) m = SPRIG_COSTS_MAX;
    if (m < 1) return 0;
    for (int i = 0; i < m; i++) {   /* insertion sort: a window, or the counts */
        int j = i;
        for (; j > 0 && v[j - 1] > x[i]; j--) v[j] = v[j - 1];
        v[j] = x[i];
    }
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

double sprig_costs_median(const sprig_costs *c, int n)
{
    if (n < 1 || n > c->cap || !c->c[n].n_win) return 0;
    return sprig_costs_median_of(c->c[n].win, c->c[n].n_win);
}

int64_t sprig_costs_samples(const sprig_costs *c, int n)
{
    return n >= 1 && n <= c->cap ? c->c[n].samples : 0;
}

bool sprig_costs_fresh(const sprig_costs *c, int n)
{
    return n >= 1 && n <= c->cap && c->c[n].last > 0 && c->tick - c->c[n].last < SPRIG_COSTS_STALE;
}

/* The estimate a count stands at before the projection: its median; when its own is stale, no more than any fresh
 * count above it (above_min[n]: the least fresh median past n), nor than the chord of the fresh counts below it
 * extended (costs.h). med[i] and fresh[i] are every count's, taken once per projection. */
static double own(const sprig_costs *c, int n, const double *med, const bool *fresh, const double *above_min)
{
    if (fresh[n]) return med[n];
    double m = above_min[n] < med[n] ? above_min[n] : med[n];
    int lo = 0, lo2 = 0;
    for (int i = n - 1; i >= 1 && !lo2; i--)
        if (fresh[i]) {
            if (!lo) lo = i;
            else lo2 = i;
        }
    if (!lo) return m;
    if (!lo2)   /* one fresh count: the chord from the smallest known count below it, if any */
        for (int i = 1; i < lo && !lo2; i++) if (c->c[i].n_win) lo2 = i;
    double slope = lo2 ? (med[lo] - med[lo2]) / (lo - lo2) : 0;
    if (!(slope > 0)) slope = 0;
    const double chord = med[lo] + slope * (n - lo);
    return chord < m ? chord : m;
}

/* The prior at every count 1..cap up to its last: the least of its times at that count and past it (more rows never
 * cost less: between two sizes the next one's time is the most a count can cost, as a step may sit anywhere between
 * them, the 16-row tile's edge between 16 and 20; and a size timed high beside a disturbance is no more than the
 * sizes past it); 0 past the last */
static void prior_curve(const sprig_costs *c, double *pr)
{
    double least = 0;
    for (int n = c->cap; n >= 1; n--) {
        if (c->prior[n] > 0 && (!(least > 0) || c->prior[n] < least)) least = c->prior[n];
        pr[n] = least;
    }
}

/* The median ratio of measured to prior over the last measurements whose counts have a prior (0: none) */
static double prior_scale(const sprig_costs *c, const double *pr)
{
    double r[SPRIG_COSTS_WINDOW];
    int m = 0;
    for (int i = 0; i < c->n_recent; i++) {
        const int n = c->recent[i].n;
        if (!(pr[n] > 0)) continue;
        r[m++] = c->recent[i].ms / pr[n];
    }
    return sprig_costs_median_of(r, m);
}

/* Pool adjacent violators over the known counts, then the table through the blocks' centres (costs.h) */
static void project(sprig_costs *c)
{
    double med[SPRIG_COSTS_MAX + 2], above_min[SPRIG_COSTS_MAX + 2];
    bool fresh[SPRIG_COSTS_MAX + 2];
    above_min[c->cap + 1] = above_min[c->cap] = 1e300;
    for (int n = c->cap; n >= 1; n--) {   /* each window sorted once; the least fresh median past each count */
        med[n] = sprig_costs_median(c, n);
        fresh[n] = sprig_costs_fresh(c, n);
        if (n > 1) above_min[n - 1] = fresh[n] && med[n] < above_min[n] ? med[n] : above_min[n];
    }
    double val[SPRIG_COSTS_MAX], w[SPRIG_COSTS_MAX], xw[SPRIG_COSTS_MAX];   /* blocks: value, weight, sum of count x weight */
    int span[SPRIG_COSTS_MAX], nb = 0;                                        /* and how many counts each pools */
    double pr[SPRIG_COSTS_MAX + 2];
    prior_curve(c, pr);
    const double scale = c->n_prior ? prior_scale(c, pr) : 0;
    for (int n = 1; n <= c->cap; n++) {
        /* with a prior: its shape at the measured level, unless a whole fresh window of n's own says otherwise */
        const double p = pr[n] > 0 ? pr[n] * (scale > 0 ? scale : 1.0) : 0;
        const bool own_wins = fresh[n] && c->c[n].n_win == SPRIG_COSTS_WINDOW && fabs(med[n] - p) > SPRIG_COSTS_PRIOR_TOL * p;
        const bool by_prior = p > 0 && !own_wins;
        if (!c->c[n].n_win && !by_prior) continue;
        val[nb] = by_prior ? p : own(c, n, med, fresh, above_min);
        w[nb] = by_prior ? 1 : c->c[n].n_win;
        xw[nb] = n * w[nb];
        span[nb] = 1;
        nb++;
        while (nb > 1 && val[nb - 2] > val[nb - 1]) {   /* merge the violating pair */
            const double ww = w[nb - 2] + w[nb - 1];
            val[nb - 2] = (val[nb - 2] * w[nb - 2] + val[nb - 1] * w[nb - 1]) / ww;
            w[nb - 2] = ww;
            xw[nb - 2] += xw[nb - 1];
            span[nb - 2] += span[nb - 1];
            nb--;
        }
    }
    if (!nb) {
        for (int n = 1; n <= c->cap; n++) c->fit[n] = n;
        c->slope = 1;
        return;
    }
    double kx[SPRIG_COSTS_MAX];   /* a block's knot: its weighted centre (a pooled block is a slope, not a step) */
    for (int b = 0; b < nb; b++) kx[b] = xw[b] / w[b];
    /* past the last knot: the mean slope from the first (for a convex cost no steeper than the truth, so the counts
       past what was measured get tried rather than priced out by the last two knots' noise); one count alone: by
       rows; a pooled block alone: flat */
    double slope = nb > 1 ? (val[nb - 1] - val[0]) / (kx[nb - 1] - kx[0]) : span[0] > 1 ? 0 : val[0] / kx[0];
    c->slope = slope > 0 ? slope : 0;
    int k = 0;
    for (int n = 1; n <= c->cap; n++) {
        while (k + 1 < nb && kx[k + 1] <= n) k++;
        if (n <= kx[0]) c->fit[n] = val[0];
        else if (n >= kx[nb - 1]) c->fit[n] = val[nb - 1] + c->slope * (n - kx[nb - 1]);
        else c->fit[n] = val[k] + (val[k + 1] - val[k]) * (n - kx[k]) / (kx[k + 1] - kx[k]);
    }
}

void sprig_costs_init(sprig_costs *c, int cap)
{
    memset(c, 0, sizeof *c);
    c->cap = cap < 1 ? 1 : cap > SPRIG_COSTS_MAX ? SPRIG_COSTS_MAX : cap;
    project(c);
}

void sprig_costs_add(sprig_costs *c, int n, double ms)
{
    if (n < 1 || n > c->cap || !(ms > 0) || !(ms < 1e9)) return;
    sprig_costs_count *k = &c->c[n];
    if (k->provisional) k->n_win = k->next = 0, k->provisional = false;
    k->win[k->next] = ms;
    k->next = (uint8_t)((k->next + 1) % SPRIG_COSTS_WINDOW);
    if (k->n_win < SPRIG_COSTS_WINDOW) k->n_win++;
    k->samples++;
    k->last = ++c->tick;
    c->recent[c->next_recent].n = n;
    c->recent[c->next_recent].ms = ms;
    c->next_recent = (c->next_recent + 1) % SPRIG_COSTS_WINDOW;
    if (c->n_recent < SPRIG_COSTS_WINDOW) c->n_recent++;
    project(c);
}

void sprig_costs_load(sprig_costs *c, int n, double ms, int64_t samples)
{
    if (n < 1 || n > c->cap || !(ms > 0) || !(ms < 1e9) || samples < 1) return;
    sprig_costs_count *k = &c->c[n];
    if (k->n_win && !k->provisional) {   /* measured already: the file adds only its count */
        k->samples += samples;
        return;
    }
    const bool less = !k->n_win || ms < k->win[0];
    if (less) k->win[0] = ms;
    k->n_win = 1;
    k->next = 1 % SPRIG_COSTS_WINDOW;
    k->provisional = true;
    k->samples += samples;
    if (less) project(c);
}

void sprig_costs_provisional(sprig_costs *c, int n, double ms)
{
    sprig_costs_load(c, n, ms, 1);
}

void sprig_costs_prior(sprig_costs *c, int n, double ms)
{
    if (n < 1 || n > c->cap || !(ms > 0) || !(ms < 1e9)) return;
    c->n_prior += !(c->prior[n] > 0);
    c->prior[n] = ms;
    project(c);
}

double sprig_costs_t(const sprig_costs *c, int n)
{
    if (n < 1) n = 1;
    if (n <= c->cap) return c->fit[n];
    return c->fit[c->cap] + c->slope * (n - c->cap);
}
