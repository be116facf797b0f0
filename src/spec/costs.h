/*
 * spec/costs — what a forward of n rows costs on this machine, learned online
 * from the forwards themselves and kept honest: tree auto's verify cost T(n)
 * of one sequence (spec/shape.h) and a batch's shared forwards against all
 * sequences' rows (spec/batch.h) are each one of these.
 *
 *   samples:    per row count, the last SPRIG_COSTS_WINDOW measured times (a
 *               ring); the estimate is their median, so a forward slowed by
 *               a neighbour moves nothing and a lasting change wins within
 *               half a window. A provisional time (a profile's synthetic
 *               rows, best of its repetitions, or the value a cache file
 *               kept) stands only until the first real measurement at that
 *               count, which replaces it: a profile measured under a
 *               disturbance is believed no longer than the rounds allow.
 *   stale:      a count whose last real measurement is more than
 *               SPRIG_COSTS_STALE measurements old (or that has none) is
 *               priced at no more than any fresh count above it (more rows
 *               never cost less), nor than the chord through the two
 *               largest fresh counts below it, extended. A forward's cost is convex
 *               in its rows (flat while the weights' reads dominate, then a
 *               row's compute each), so the extension is a lower bound: an
 *               estimate wrong high looks cheap again, gets chosen, is
 *               measured and heals; one that is right costs one forward per
 *               SPRIG_COSTS_STALE to check.
 *   monotone:   more rows never cost less: the per-count estimates are
 *               projected onto a non-decreasing sequence (pool adjacent
 *               violators, each count weighted by its window's samples),
 *               then read linearly between the blocks' knots (a count on
 *               its own; counts pooled together at their weighted centre,
 *               so noise that pooled them reads as a slope, not as a flat
 *               run and a step whose rows would look free below it and
 *               dear past it), flat below the first and along the mean
 *               slope from the first past the last (for a convex cost a
 *               lower bound there, so counts past those measured are tried;
 *               one count alone: by rows; nothing known: n ms for n rows).
 *   prior:      optionally, a cost curve measured elsewhere (a batch's shared
 *               forwards take a lone session's profile: the same forward,
 *               fewer sequences). Every count it covers (the least of the
 *               prior's times at that count and past it: a step may sit
 *               anywhere between two sizes, and a size timed high beside a
 *               disturbance is no dearer than those past it) is then priced at the prior times the
 *               median ratio of measured to prior over the last
 *               SPRIG_COSTS_WINDOW measurements, whatever their counts:
 *               the prior gives the curve's shape (a step where the rows
 *               outgrow a kernel tile, say), the latest measurements
 *               together its level (a machine whose speed drifts, as a
 *               shared one's does by 1.5x within minutes, moves every
 *               count at once); a count's own median overrides it only
 *               with a whole fresh window more than SPRIG_COSTS_PRIOR_TOL
 *               off (a prior wrong there heals; noise and drift do not
 *               move it). Measured
 *               per count alone, a batch's forwards (+-15% between
 *               neighbours as requests start beside them) made the
 *               neighbours' chord steep and the stair's edge wander, and a
 *               step of the best size looked dearer than one past it.
 * The projection is recomputed at each measurement (O(cap)), so reads are a
 * table lookup. No allocation: the whole estimator is this struct.
 */
#ifndef SPRIG_SPEC_COSTS_H
#define SPRIG_SPEC_COSTS_H

#include <stdbool.h>
#include <stdint.h>

#define SPRIG_COSTS_MAX 256     /* row counts tracked: 1..SPRIG_COSTS_MAX (larger ones are read off the slope past them) */
#define SPRIG_COSTS_WINDOW 9    /* measurements per count the median is taken over */
#define SPRIG_COSTS_STALE 32    /* measurements after which a count's own is old (see above) */
#define SPRIG_COSTS_PRIOR_TOL 0.25   /* a count's own full window overrides the prior when 25% off it (see above) */

typedef struct sprig_costs_count {
    double win[SPRIG_COSTS_WINDOW];  /* [n_win] the last times, ms (a ring from next) */
    uint8_t n_win, next;
    bool provisional;                /* win holds one provisional time, no real measurement yet */
    int64_t samples;                 /* every time ever taken at this count (a cache file's count included) */
    int64_t last;                    /* the tick of its last real measurement (0: none) */
} sprig_costs_count;

typedef struct sprig_costs {
    int cap;                                  /* counts tracked, 1..cap */
    int64_t tick;                             /* real measurements so far */
    sprig_costs_count c[SPRIG_COSTS_MAX + 1];
    double fit[SPRIG_COSTS_MAX + 1];          /* the projection at every count 1..cap */
    double slope;                             /* past cap: ms per row more */
    double prior[SPRIG_COSTS_MAX + 1];        /* the prior's time per count (0: none there; see above) */
    int n_prior;                              /* counts with a prior */
    struct { int n; double ms; } recent[SPRIG_COSTS_WINDOW];   /* the last real measurements, any count (a ring) */
    int n_recent, next_recent;
} sprig_costs;

/* Empty, for counts 1..cap (clamped to [1, SPRIG_COSTS_MAX]). */
void sprig_costs_init(sprig_costs *c, int cap);
/* A real measurement: `ms` for a forward of n rows (ignored outside 1..cap or unless ms > 0). */
void sprig_costs_add(sprig_costs *c, int n, double ms);
/* A provisional time (a profile's: the least of those given, until a real one arrives). */
void sprig_costs_provisional(sprig_costs *c, int n, double ms);
/* A cache file's time for n with the samples it stood for: provisional, its count kept. */
void sprig_costs_load(sprig_costs *c, int n, double ms, int64_t samples);
/* The prior's time for n rows (costs.h); ignored outside 1..cap or unless ms > 0. */
void sprig_costs_prior(sprig_costs *c, int n, double ms);
/* The estimate for n rows (n >= 1; the projection, staleness applied). */
double sprig_costs_t(const sprig_costs *c, int n);
/* The median of x[0..m) (0 when m < 1; at most SPRIG_COSTS_MAX values). */
double sprig_costs_median_of(const double *x, int m);
/* n's own median (0: nothing at n), and the samples behind it. */
double sprig_costs_median(const sprig_costs *c, int n);
int64_t sprig_costs_samples(const sprig_costs *c, int n);
/* Whether n has a real measurement within the last SPRIG_COSTS_STALE. */
bool sprig_costs_fresh(const sprig_costs *c, int n);

#endif
