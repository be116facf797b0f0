/*
 * spec/shape — the tree to verify, chosen each round from measured costs
 * (`--tree auto`): how much a verify of n rows costs the target on this
 * machine, and how often a draft the drafter gave probability q is what the
 * target emits.
 *
 *   cost:     T(n), the target's verify forward of n rows, profiled once
 *             (target time_rows; cached per model file and machine by
 *             spec/profile.h, with what the rounds taught since) and then
 *             learned from every round (spec/costs.h: a windowed median per
 *             n that replaces the profile's time at the first round of n
 *             rows, stale sizes re-tried, monotone in n); plus the
 *             drafter's time per round.
 *             A mixture-of-experts target (spec/target.h, expert_load)
 *             prices rows by the experts they read: n rows read the union
 *             of their routed experts, u(n) <= n * k per layer. The profile
 *             times rows of unrelated ids, whose union is random routing's,
 *             U(x) = layers * E * (1 - (1 - k/E)^x) for x rows; a round's
 *             rows are related (a draft continues its text) and may share
 *             experts, read as x = 1 + alpha (n - 1) independent rows with
 *             alpha learned from the unions the rounds read (a prior of 1,
 *             weight 2). One expert read costs c = T(1) * expert_bytes /
 *             (the bytes a one-row forward reads); so T(n) = T_random(n) -
 *             c * (U(n) - U(1 + alpha (n - 1))), and a round's time enters
 *             the profile as its random-routing equivalent, ms + c * (U(n)
 *             - its union). Sizes never chosen are priced from what the
 *             chosen ones taught about the experts.
 *   accept:   the drafter's conditional probability q of a node's token is
 *             mapped to the chance the target accepts it given its parent
 *             was accepted, by counting, per bucket of q, the verified
 *             children of accepted nodes (a prior of q itself, weight 2);
 *             then corrected by the node's depth and its sibling rank (the
 *             drafter's first, second, third-or-later child of its parent):
 *             per depth and per rank, accepted / expected, where expected
 *             sums the q-calibrated chance of each node counted there when
 *             it was verified (a prior of 1, weight 4). A drafter whose
 *             runner-ups are accepted less often than their q says (the
 *             target agrees with its top choice on other grounds), or whose
 *             deep drafts are overconfident (a head fed its own hidden
 *             states), is believed accordingly.
 *             With the target's routings remembered per token
 *             (spec/routes.h), a tree is grown for its experts: from the
 *             root, the candidate whose parent is in with the most path
 *             acceptance per the time it adds (a row's dense share, plus c
 *             times the experts its token routed to that the tree does not
 *             read yet; an unknown token: random routing's expected new
 *             ones) comes next, so at equal acceptance a draft that shares
 *             the tree's experts wins; T(m) of the grown prefix is its
 *             dense part plus c times its predicted union.
 *   choice:   candidates best first by their path's calibrated acceptance
 *             v (a child's v never exceeds its parent's, so every prefix is
 *             a tree); the number of nodes m maximises expected emitted
 *             tokens per time, (1 + sum of the first m-1 v) / (T(m) + draft);
 *             m = 1 verifies the bonus alone (no draft pays this round).
 *             In a shared forward (spec/batch.h) the rate is everyone's:
 *             (E_others + 1 + sum) / (T(R_others + m) + max(draft, gap)),
 *             gap = the measured time between shared forwards and T the
 *             shared forwards' own times per row count (spec/costs.h, kept
 *             by the batch: their rows are compute-bound and cost more than
 *             a lone forward's profile says), so a node is verified only
 *             when it adds more tokens than the time its row adds costs all
 *             the sequences in the batch. With the batch's joint plan
 *             (spec/joint.h) the count is not chosen here: the sequence
 *             offers its candidates' values best first and verifies the m
 *             rows the step granted it: level by level across the
 *             sequences, at the level whose steps measured the most tokens
 *             per ms (each choosing alone against the others' last rows,
 *             all of them took the same room under a step at once).
 *   chain:    the tree is then weighed against the chain the same drafter
 *             proposes (its first choice at every depth, each length up to
 *             the depth allowed) at the same rate; the chain wins ties. So
 *             when no side node pays its row (rows compute-bound, runner-ups
 *             weak), each round verifies the best chain length, never a
 *             tree that the estimates say emits fewer tokens per ms.
 * Deterministic given the same observations; it never changes what is
 * emitted, only how many nodes are verified.
 */
#ifndef SPRIG_SPEC_SHAPE_H
#define SPRIG_SPEC_SHAPE_H

#include "spec/costs.h"
#include "spec/dyntree.h"
#include "spec/target.h"
#include "spec/walk.h"

#define SPRIG_SHAPE_BINS 16
#define SPRIG_SHAPE_DEPTHS 8   /* depth classes 1..7, then 8 and deeper */
#define SPRIG_SHAPE_RANKS 3    /* sibling ranks: first, second, third or later */

typedef struct sprig_shape {
    sprig_costs cost;                       /* T(n), n = 1..SPRIG_TREE_MAX: the profile's and the rounds' (costs.h) */
    double draft_ms;                        /* the drafter's time per round (moving average) */
    double draft_w_ms[2];                   /* the same at width 1 ([0]) and wider ([1]); 0 = none yet */
    int width_now;                          /* the width sprig_shape_expand_width last handed out (0: none) */
    double hits[SPRIG_SHAPE_BINS], trials[SPRIG_SHAPE_BINS];
    /* the corrections: accepted, expected (sum of the q-calibrated chances) and verified, per depth class and
       per sibling rank */
    double d_hits[SPRIG_SHAPE_DEPTHS], d_exp[SPRIG_SHAPE_DEPTHS], d_trials[SPRIG_SHAPE_DEPTHS];
    double r_hits[SPRIG_SHAPE_RANKS], r_exp[SPRIG_SHAPE_RANKS], r_trials[SPRIG_SHAPE_RANKS];
    float q[SPRIG_TREE_MAX];                /* the last tree's nodes' drafter probabilities (root: 1) */
    uint8_t qd[SPRIG_TREE_MAX], qr[SPRIG_TREE_MAX];   /* and their depths and sibling ranks */
    int last_n;
    int64_t chosen[SPRIG_TREE_MAX + 1];     /* rounds that verified n nodes */
    int64_t plan_chains, plan_trees;        /* choices that were a chain (or the bare bonus), and branching trees */
    bool profiled;                          /* the target's T(n) was measured (or loaded: spec/profile.h) */
    double others_rows, others_emit;        /* continuous batching: the other sequences' rows in the shared forward
                                               and their tokens per round (0, 0 alone; set before each choice) */
    sprig_shared_cost shared;               /* and what a shared step costs (spec/target.h) */
    sprig_target *joint;                    /* a target whose rows are allocated with the batch's (spec/joint.h),
                                               set before each choice; NULL: the choice is this sequence's own */
    int64_t plan_joint;                     /* choices whose rows the batch allocated */
    uint8_t depths[8];                      /* the depth of the last 8 chosen trees (ring; 0 = none yet) */
    int n_depths;
    double wide_edge;                       /* what drafting wide earned (moving average over the rounds that
                                               did): the chosen tree's rate over the rate of the chain a width-1
                                               draft would have given, each with its own drafting time, less 1 */
    int64_t wide_n;                         /* the rounds drafted wide that taught it */
    int64_t draft_stops;                    /* drafts stopped before their depth cap (sprig_shape_draft_deeper) */
    struct {                                /* a mixture-of-experts target (sprig_shape_set_experts), else off */
        bool on;
        double layers, e, k;                /* expert layers, experts per layer, experts a row runs */
        double expert_bytes, dense_bytes;   /* one expert's weights; a row's other weights */
        double alpha_sum, alpha_w;          /* the rows' routing locality: sum of observations and their weight */
        double u_sum, u_n;                  /* unions read by the rounds (for the summary) */
        int64_t by_experts;                 /* rounds whose tree the experts' prediction chose */
        int64_t known, candidates;          /* of their candidates, those whose token's routing was remembered */
    } moe;
    struct sprig_routes *routes;            /* the target's tokens' last routings (spec/routes.h), set before each
                                               choice; NULL: none */
} sprig_shape;

/* The sizes a profile measures: each of these up to the largest block a session verifies. */
#define SPRIG_SHAPE_PROFILE_SIZES { 1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64 }
/* The largest profiled size a session whose blocks reach `cap` rows needs. */
int sprig_shape_profile_need(int cap);

/* One line: the sizes chosen (n x rounds), T(n) at a few sizes and the drafter's time. */
void sprig_shape_summary(const sprig_shape *s, char *buf, size_t cap);

void sprig_shape_init(sprig_shape *s);
/* The target routes its rows to experts (spec/target.h's sprig_expert_load). */
void sprig_shape_set_experts(sprig_shape *s, const sprig_expert_load *el);
/* The union of experts x unrelated rows read (random routing), summed over layers. */
double sprig_shape_union_random(const sprig_shape *s, double x);
/* The union n rows of a round are expected to read (the locality learned). */
double sprig_shape_union(const sprig_shape *s, int n);
/* The rows' locality alpha: n rows read as 1 + alpha (n - 1) unrelated ones. */
double sprig_shape_alpha(const sprig_shape *s);
/* Milliseconds one expert read costs (0 for a dense target). */
double sprig_shape_expert_ms(const sprig_shape *s);
/* A round's verify of n rows that read `experts` distinct experts (summed over
 * layers; < 0 unknown): T(n) learns from it as sprig_shape_cost, an expert
 * target's locality too. */
void sprig_shape_cost_round(sprig_shape *s, int n, double ms, double experts);
/* A measured T(n): a profile's (provisional: the best of its repetitions,
 * until a round measures n) or a round's (costs.h). */
void sprig_shape_cost(sprig_shape *s, int n, double ms, bool profile);
/* The drafter's time this round, at the width sprig_shape_expand_width last
 * handed out: a wide expansion costs more rounds of the drafter (an MTP
 * head's depth is a forward of w rows), so each width keeps its own. */
void sprig_shape_draft_cost(sprig_shape *s, double ms);
/* T(n) from what is known (spec/costs.h: monotone, linear between knots, stale sizes re-tried). */
double sprig_shape_t(const sprig_shape *s, int n);
/* The calibrated chance of a token the drafter gave probability q (the q
 * buckets alone). */
double sprig_shape_accept(const sprig_shape *s, double q);
/* The same for a node at `depth` (>= 1) that is its parent's rank-th child
 * in the drafter's order (0 = its top choice), with the depth and rank
 * corrections; at most 1. */
double sprig_shape_accept_at(const sprig_shape *s, double q, int depth, int rank);
/* Choose the tree from the candidates (at most max_nodes nodes, depth <=
 * max_depth) and remember its nodes' q for observe; map[i] (may be NULL) =
 * the candidate of tree node i. A node's q is exp(score - parent's real):
 * its probability, or a sampled node's slot estimate (dyntree.h), so the
 * choice never reads a sampled node's own draw. */
void sprig_shape_select(sprig_shape *s, const sprig_dyntree *t, int max_nodes, int max_depth, sprig_tree *out, int *map);
/* How deep the drafter should expand this round (<= max_depth): two past
 * the deepest tree chosen in the last 8 rounds, so drafting stops paying
 * for depths the choice never uses and still reaches past them to learn;
 * one past when drafting costs 5% of a one-row verify or more (an MTP
 * head's every depth is a forward of its own), but two every 8th round;
 * max_depth until 8 rounds were chosen. */
int sprig_shape_expand_depth(const sprig_shape *s, int max_depth);
/* Whether the drafter should expand the next depth's `frontier` (nf
 * candidates, the ones it would feed) of t: false when no candidate it
 * could bring would be chosen. Every deeper candidate's path is worth at
 * most the best frontier node's (g), so a deeper node is chosen only if some
 * m of the best already drafted plus k nodes worth g beat the best rate
 * already drafted, E(m) + k g over T(m + k) + the drafting time. True in
 * the warm-up, every 8th round (the deeper nodes' calibration keeps
 * learning), in a shared step (the batch's level decides its depth) and on
 * experts (grown for them). Counts the stops. */
bool sprig_shape_draft_deeper(sprig_shape *s, const sprig_dyntree *t, const int *frontier, int nf, int max_nodes, int max_depth);
/* How wide the drafter should expand this round (<= max_width), and
 * remembered as this round's width: 1 (the chain a fixed configuration
 * drafts, at its cost) while the rounds drafted wide earned less, on
 * average, than their chain drafted at width 1 would have (the tree's rate
 * against the chain's, each with its width's drafting time), but every 8th
 * round at max_width, so the side nodes' calibration keeps learning and a
 * tree that starts to pay is seen; max_width while they earned more, but
 * every 8th round 1, so the width-1 drafting time stays measured;
 * max_width until 8 rounds were chosen. */
int sprig_shape_expand_width(sprig_shape *s, int max_width);
/* After the walk: count each verified child of an accepted node. */
void sprig_shape_observe(sprig_shape *s, const sprig_tree *t, const sprig_walk *w);

#endif
