/*
 * spec/joint — one shared verify step's rows, allocated across the batch's
 * sequences at once (tree auto under continuous batching, spec/batch.h).
 *
 * Why. A shared forward's time depends on everyone's rows together, and on
 * a CPU it is not smooth: on a 2-core Xeon (family 6 model 207, AVX-512)
 * the 1B Q8_0 target's forward of 16 rows takes 65 ms and of 20 rows 93 ms
 * (the 16-row tile's weights are read once; past it every panel runs as
 * two half-tiles). When each sequence chose its own rows against the
 * others' rows of the step before, all of them decided at once: each saw
 * the room left under the step and each took it, so at 8 sequences the
 * steps held 27 rows on average where a fixed chain of one draft held 16,
 * and auto ran at 0.78x of that chain.
 *
 * What. Each planning sequence offers its candidates' expected tokens best
 * first (gain[0] = 1: the bonus row, always verified; then the calibrated
 * path acceptance of its drafts in spec/shape.h's best-first order, each no
 * more than the one before). Drafts are granted level by level: every
 * sequence's first draft before any sequence's second, and so on, and
 * within a level the larger gains first; a sequence whose list is spent
 * drops out. So each sequence verifies a prefix of its own list (a tree),
 * and no sequence gets two rows more than another that has drafts left:
 * a fixed chain of L drafts is the allocation at K = L x the sequences,
 * and the plan may stop anywhere between two levels. K, the drafts the
 * step verifies, maximises the batch's expected tokens per millisecond,
 *
 *     (E_fixed + sum_i 1 + sum of the first K gains in that order) / (T(R_fixed + n + K) + step_ms)
 *
 * where T is the shared forwards' measured cost per total row count
 * (spec/costs.h), E_fixed and R_fixed the tokens and rows of the members
 * that do not plan this step (prompt chunks, fixed shapes, a sequence that
 * planned late), and step_ms what a step costs besides the forward (the
 * drafting and the gap between forwards). A sequence is granted 1 + the
 * number of its drafts among the K.
 *
 * Measured, not only modelled. When every member plans, the step runs
 * whole levels (sprig_joint_grant_level: every sequence its first L drafts,
 * as a fixed chain of L would, each as a tree if its runner-ups beat its
 * deeper drafts), and L is the level whose steps have emitted the most
 * tokens per ms (sprig_joint_rates: each step's realised rate, windowed
 * medians per level and per count of sequences, a neighbouring level tried
 * every 8th step). The model above gives the level to start from and
 * allocates the steps that include members that do not plan. Why: the
 * model's two halves are both estimates, the acceptance from calibrated
 * draft probabilities and T from per-count forward times, and on a shared
 * machine whose speed drifts by 1.5x within minutes the forward times of
 * two counts measured at different moments disagree by more than the
 * difference the choice turns on; the realised rate of a level is what a
 * fixed chain is judged by.
 *
 * Why level by level, not the K best gains of the whole batch: that order
 * maximises each step's tokens, but it gives a sequence whose drafts the
 * target rejects (a hard text) no rows while the easy ones take them, and
 * a request's time is its own steps. Measured on the Xeon above, 8
 * clients of 2 x 128 tokens: in order of gain the two hardest requests took
 * 117 and 121 steps where one draft each took 83, the last requests ran
 * nearly alone for seconds, and the run ended later than the fixed chain's
 * although its steps emitted as many tokens.
 * Deterministic; no allocation.
 */
#ifndef SPRIG_SPEC_JOINT_H
#define SPRIG_SPEC_JOINT_H

#include "spec/costs.h"

#include <stdint.h>

#define SPRIG_JOINT_MAX 64   /* offers one step allocates at most (a batch's members: SPRIG_FORWARD_MAX_SEQS) */

/* One sequence's offer: gain[0..n) as above (n >= 1), and the rows it is granted (set by sprig_joint_allocate). */
typedef struct sprig_joint_offer {
    const double *gain;
    int n;
    int m;
} sprig_joint_offer;

/* Grant each offer its first `level` drafts (o[i].m = min(o[i].n, 1 + level)); the rows granted are returned. */
int sprig_joint_grant_level(sprig_joint_offer *o, int n_offer, int level);

/* The measured side: a step's realised tokens per millisecond (everyone's
 * emitted tokens between two plans, over the time between them: forward,
 * drafting, walks, emission), per level and per count of planning
 * sequences, in windows of the last SPRIG_COSTS_WINDOW. */
#define SPRIG_JOINT_LEVELS 12
typedef struct sprig_joint_window {
    double win[SPRIG_COSTS_WINDOW];
    uint8_t n_win, next;
    int64_t last;                           /* the step of its last sample (0: none) */
} sprig_joint_window;
typedef struct sprig_joint_rates {
    sprig_joint_window at[SPRIG_JOINT_MAX + 1][SPRIG_JOINT_LEVELS + 1];   /* [planning sequences][level] */
    int64_t steps;                          /* plans made */
    int64_t explored;                       /* of them, a neighbour of the best level tried */
} sprig_joint_rates;

void sprig_joint_rates_add(sprig_joint_rates *r, int n_offer, int level, double tok_per_ms);
/* The level the next step of n_offer planning sequences runs (0..max_level): `predicted`, the cost model's level
 * (its forward costs are the measured ones on one scale: spec/costs.h's prior), until that level has
 * SPRIG_JOINT_MIN_SAMPLES samples at this count of sequences; then the measured level whose window's median rate
 * beats the model's level's by SPRIG_JOINT_OVERRIDE, if any, else the model's. A neighbour of it (one more
 * draft, then one less) is tried when its own window has fewer than SPRIG_JOINT_MIN_SAMPLES or is
 * SPRIG_JOINT_STALE steps old, at most every SPRIG_JOINT_EXPLORE steps (every other step while this count of
 * sequences has fewer than 4 x SPRIG_JOINT_MIN_SAMPLES samples). Why the model leads: on a machine whose speed
 * drifts by 1.5x within minutes, medians of two levels measured at different moments differed by more than the
 * 6% between 12 and 16 rows at 4 sequences, and the measured choice flipped between them; measured alone, a
 * level tried once and lucky led the exploration up a level a step (25, 30, 35 rows at 5 sequences), and a
 * level borrowed from another count ran 8 sequences at 40 rows. The measurements still overrule a model that
 * is clearly wrong (it once ran 19 rows at 134 ms where 16 took 89). */
#define SPRIG_JOINT_OVERRIDE 1.15   /* a measured level replaces the model's when its median beats the model's by this */
#define SPRIG_JOINT_PLAUSIBLE 0.85   /* a neighbour is tried only if the model prices it at this share of the best or more */
#define SPRIG_JOINT_STALE 48
#define SPRIG_JOINT_EXPLORE 8
#define SPRIG_JOINT_MIN_SAMPLES 3   /* a level counts as measured (it may lead, or the model's may stand) with this many */
int sprig_joint_rates_choose(sprig_joint_rates *r, int n_offer, int predicted, int max_level, const double *model);
/* model (NULL: none): the cost model's tokens per ms of each level 0..max_level (sprig_joint_level_rates); a
 * neighbour it prices below SPRIG_JOINT_PLAUSIBLE x the best level's is not tried: at 8 sequences on the stair
 * above, 24 rows (level 2) and 8 rows (level 0) are priced 0.8x and 0.7x of 16, and each try cost a step at
 * that rate while a run was short. */
/* The cost model's tokens per ms of each level 0..max_level (out[max_level + 1]): everyone's gains up to the
 * level over T(their rows) + step_ms. */
void sprig_joint_level_rates(const sprig_joint_offer *o, int n_offer, const sprig_costs *c, double step_ms, int max_level,
                             double *out);
/* A level's median rate for n_offer sequences (0: none), and its samples. */
double sprig_joint_rates_median(const sprig_joint_rates *r, int n_offer, int level, int *samples);

/* Grant each of n_offer <= SPRIG_JOINT_MAX offers its rows (o[i].m in 1..o[i].n) against the cost table c; the total rows the step will verify
 * (fixed_rows included, at most max_total when that is larger than the bonus rows alone) is returned. */
int sprig_joint_allocate(sprig_joint_offer *o, int n_offer, int fixed_rows, double fixed_emit, const sprig_costs *c,
                         double step_ms, int max_total);

#endif
