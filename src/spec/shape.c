/*
 * spec/shape — see shape.h.
 */
#include "spec/shape.h"
#include "model/moe.h"
#include "spec/routes.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void sprig_shape_init(sprig_shape *s)
{
    memset(s, 0, sizeof *s);
    sprig_costs_init(&s->cost, SPRIG_TREE_MAX);
}

int sprig_shape_profile_need(int cap)
{
    static const int sizes[] = SPRIG_SHAPE_PROFILE_SIZES;
    int need = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && sizes[i] <= cap; i++) need = sizes[i];
    return need;
}

void sprig_shape_cost(sprig_shape *s, int n, double ms, bool profile)
{
    if (profile) sprig_costs_provisional(&s->cost, n, ms);
    else sprig_costs_add(&s->cost, n, ms);
}

static void ema(double *x, double v)
{
    *x = *x > 0 ? *x + 0.25 * (v - *x) : v;
}

void sprig_shape_draft_cost(sprig_shape *s, double ms)
{
    if (!(ms >= 0)) return;
    ema(&s->draft_ms, ms);
    ema(&s->draft_w_ms[s->width_now > 1], ms);
}

/* The drafter's time per round at width 1 (wide false) or wider: its own
 * average once measured, else every round's */
static double draft_at(const sprig_shape *s, bool wide)
{
    return s->draft_w_ms[wide] > 0 ? s->draft_w_ms[wide] : s->draft_ms;
}

void sprig_shape_set_experts(sprig_shape *s, const sprig_expert_load *el)
{
    if (!el || el->layers < 1 || el->n_expert < 1 || el->n_used < 1 || el->n_used > el->n_expert) return;
    s->moe.on = true;
    s->moe.layers = el->layers;
    s->moe.e = el->n_expert;
    s->moe.k = el->n_used;
    s->moe.expert_bytes = el->expert_bytes > 0 ? el->expert_bytes : 0;
    s->moe.dense_bytes = el->dense_bytes > 0 ? el->dense_bytes : 0;
}

double sprig_shape_union_random(const sprig_shape *s, double x)
{
    if (!s->moe.on || !(x > 0)) return 0;
    return s->moe.layers * s->moe.e * (1.0 - pow(1.0 - s->moe.k / s->moe.e, x));
}

double sprig_shape_alpha(const sprig_shape *s)
{
    return (s->moe.alpha_sum + 2.0) / (s->moe.alpha_w + 2.0);   /* prior: unrelated rows, weight 2 */
}

double sprig_shape_union(const sprig_shape *s, int n)
{
    return sprig_shape_union_random(s, 1.0 + sprig_shape_alpha(s) * (n - 1));
}

/* T(n) of rows with random routing: the profile's and the rounds' times as it stands */
static double t_random(const sprig_shape *s, int n);

double sprig_shape_expert_ms(const sprig_shape *s)
{
    if (!s->moe.on || !(s->moe.expert_bytes > 0)) return 0;
    const double one = s->moe.layers * s->moe.k * s->moe.expert_bytes;   /* a row's expert bytes */
    return t_random(s, 1) * s->moe.expert_bytes / (s->moe.dense_bytes + one);
}

void sprig_shape_cost_round(sprig_shape *s, int n, double ms, double experts)
{
    if (!s->moe.on || !(experts > 0) || n < 1) {
        sprig_shape_cost(s, n, ms, false);
        return;
    }
    s->moe.u_sum += experts;
    s->moe.u_n += 1;
    const double u1 = s->moe.layers * s->moe.k, cap = s->moe.layers * s->moe.e;
    if (n >= 2 && s->moe.k < s->moe.e) {   /* the x unrelated rows this union is worth: alpha = (x - 1) / (n - 1) */
        const double u = experts < u1 ? u1 : experts > cap * 0.999 ? cap * 0.999 : experts;
        const double x = log(1.0 - u / cap) / log(1.0 - s->moe.k / s->moe.e);
        double a = (x - 1.0) / (n - 1);
        a = a < 0 ? 0 : a > 1.5 ? 1.5 : a;
        s->moe.alpha_sum += a;
        s->moe.alpha_w += 1;
        if (s->moe.alpha_w > 64) {   /* a moving estimate: the last ~64 rounds */
            s->moe.alpha_sum *= 64.0 / s->moe.alpha_w;
            s->moe.alpha_w = 64;
        }
    }
    /* into the profile as the time random routing would have taken */
    const double c = sprig_shape_expert_ms(s);
    sprig_shape_cost(s, n, ms + c * (sprig_shape_union_random(s, n) - experts), false);
}

double sprig_shape_t(const sprig_shape *s, int n)
{
    const double t = t_random(s, n);
    if (!s->moe.on || n < 2) return t;
    const double c = sprig_shape_expert_ms(s), saved = c * (sprig_shape_union_random(s, n) - sprig_shape_union(s, n));
    const double t1 = t_random(s, 1);
    return t - saved > t1 ? t - saved : t1;   /* never cheaper than one row */
}

static double t_random(const sprig_shape *s, int n)
{
    return sprig_costs_t(&s->cost, n);
}

static int bin_of(double q)
{
    int b = (int)(q * SPRIG_SHAPE_BINS);
    return b < 0 ? 0 : b >= SPRIG_SHAPE_BINS ? SPRIG_SHAPE_BINS - 1 : b;
}

double sprig_shape_accept(const sprig_shape *s, double q)
{
    const int b = bin_of(q);
    const double prior = (b + 0.5) / SPRIG_SHAPE_BINS;
    return (s->hits[b] + 2.0 * prior) / (s->trials[b] + 2.0);
}

static int depth_class(int depth)
{
    return depth < 1 ? 0 : depth > SPRIG_SHAPE_DEPTHS ? SPRIG_SHAPE_DEPTHS - 1 : depth - 1;
}

static int rank_class(int rank)
{
    return rank < 0 ? 0 : rank >= SPRIG_SHAPE_RANKS ? SPRIG_SHAPE_RANKS - 1 : rank;
}

/* accepted / expected, with a prior of 1 at weight 4 */
static double correction(double hits, double expected)
{
    return (hits + 4.0) / (expected + 4.0);
}

double sprig_shape_accept_at(const sprig_shape *s, double q, int depth, int rank)
{
    const int d = depth_class(depth), r = rank_class(rank);
    const double a = sprig_shape_accept(s, q) * correction(s->d_hits[d], s->d_exp[d]) * correction(s->r_hits[r], s->r_exp[r]);
    return a < 1.0 ? a : 1.0;
}

/* The verify forward of `rows` rows: in a shared forward (others > 0) the
 * line the batch measured, once it has one; else this machine's profile. */
static double step_t(const sprig_shape *s, int others, int rows)
{
    const sprig_shared_cost *sc = &s->shared;
    const int m = rows - others;
    return others > 0 && sc->known && m >= 1 && m <= SPRIG_TREE_MAX ? sc->t_ms[m] : sprig_shape_t(s, rows);
}

/* The experts' bitsets of the tree being grown: one row of words per layer remembered */
#define EX_WORDS 8   /* experts per layer <= 512 */
struct ex_set {
    uint64_t bits[SPRIG_MOE_ROUTE_LAYERS][EX_WORDS];
    double known;   /* distinct experts the known rows read, over the layers remembered */
    double unknown; /* rows whose tokens have no routing remembered */
};

/* New experts a row of routing r (NULL: unknown) brings, over the layers remembered */
static double ex_new(const struct sprig_routes *R, const struct ex_set *x, const int16_t *r)
{
    if (!r) return R->layers * R->k * (1.0 - x->known / (R->layers * (double)R->e));
    int fresh = 0;
    for (int l = 0; l < R->layers; l++)
        for (int j = 0; j < R->k; j++) {
            const int e = r[l * R->k + j];
            if (e >= 0 && e < R->e && !(x->bits[l][e >> 6] >> (e & 63) & 1)) {
                bool dup = false;   /* counted once if the row names it twice */
                for (int i = 0; i < j && !dup; i++) dup = r[l * R->k + i] == e;
                fresh += !dup;
            }
        }
    return fresh;
}

static void ex_add(const struct sprig_routes *R, struct ex_set *x, const int16_t *r)
{
    if (!r) {
        x->unknown += 1;
        return;
    }
    for (int l = 0; l < R->layers; l++)
        for (int j = 0; j < R->k; j++) {
            const int e = r[l * R->k + j];
            if (e < 0 || e >= R->e) continue;
            uint64_t *w = &x->bits[l][e >> 6];
            if (!(*w >> (e & 63) & 1)) {
                *w |= (uint64_t)1 << (e & 63);
                x->known += 1;
            }
        }
}

/* The union the set reads, summed over all the target's expert layers: its known rows' experts, and its
 * unknown rows as alpha * unknown unrelated rows more on each layer */
static double ex_union(const sprig_shape *s, const struct sprig_routes *R, const struct ex_set *x)
{
    const double e = R->e, per = x->known / R->layers, k = R->k;
    const double more = x->unknown > 0 ? (e - per) * (1.0 - pow(1.0 - k / e, sprig_shape_alpha(s) * x->unknown)) : 0;
    return (per + more) * R->layers * R->scale;
}

/* The dense share of T(m): the profile's random-routing time less its experts */
static double t_dense(const sprig_shape *s, int m)
{
    return t_random(s, m) - sprig_shape_expert_ms(s) * sprig_shape_union_random(s, m);
}

/* Grow the candidates for their experts (shape.h); chosen[] in order, t_pred[m] = T of the first m. */
static int grow_by_experts(sprig_shape *s, const sprig_dyntree *t, const float *key, int max_nodes, int max_depth, int *chosen,
                           double *t_pred)
{
    if (max_nodes > SPRIG_TREE_MAX) max_nodes = SPRIG_TREE_MAX;
    struct sprig_routes *R = s->routes;
    static _Thread_local bool in[SPRIG_DYNTREE_CAP];
    static _Thread_local const int16_t *rt[SPRIG_DYNTREE_CAP];
    static _Thread_local struct ex_set x;
    memset(&x, 0, sizeof x);
    const double c = sprig_shape_expert_ms(s);
    for (int i = 0; i < t->n; i++) {
        in[i] = false;
        rt[i] = sprig_routes_get(R, t->token[i]);
        s->moe.known += rt[i] != NULL;
    }
    s->moe.candidates += t->n;
    in[0] = true;
    chosen[0] = 0;
    ex_add(R, &x, rt[0]);
    t_pred[1] = t_dense(s, 1) + c * ex_union(s, R, &x);
    int n = 1;
    while (n < max_nodes) {
        const double dt = t_dense(s, n + 1) - t_dense(s, n), row = dt > 1e-6 ? dt : 1e-6;
        int best = -1;
        double best_v = 0;
        for (int i = 1; i < t->n; i++) {
            if (in[i] || t->depth[i] > max_depth || !in[t->parent[i]]) continue;
            const double v = exp((double)key[i]) / (row + c * ex_new(R, &x, rt[i]) * R->scale);
            if (best < 0 || v > best_v) { best = i; best_v = v; }
        }
        if (best < 0) break;
        in[best] = true;
        chosen[n++] = best;
        ex_add(R, &x, rt[best]);
        t_pred[n] = t_dense(s, n) + c * ex_union(s, R, &x);
    }
    return n;
}

/* key[i]: the log of candidate i's path's calibrated acceptance; rank[i]: its rank among its parent's children
 * in the drafter's order (a node's children are added together, best or first drawn first) */
static void path_keys(const sprig_shape *s, const sprig_dyntree *t, float *key, uint8_t *rank)
{
    key[0] = 0.0f;
    rank[0] = 0;
    for (int i = 1; i < t->n; i++) {
        const double q = exp((double)t->score[i] - (double)t->real[t->parent[i]]);
        const int r = i > 1 && t->parent[i - 1] == t->parent[i] ? rank[i - 1] + 1 : 0;
        rank[i] = (uint8_t)(r < 255 ? r : 255);
        key[i] = key[t->parent[i]] + (float)log(sprig_shape_accept_at(s, q, t->depth[i], r));
    }
}

bool sprig_shape_draft_deeper(sprig_shape *s, const sprig_dyntree *t, const int *frontier, int nf, int max_nodes, int max_depth)
{
    if (nf < 1 || s->n_depths < 8 || s->n_depths % 8 == 0) return nf >= 1;   /* warm-up and exploration: as deep as allowed */
    if (s->others_rows > 0 || s->moe.on) return true;   /* a shared step's level, or the experts' growth, decides */
    static _Thread_local float key[SPRIG_DYNTREE_CAP];
    static _Thread_local uint8_t rank[SPRIG_DYNTREE_CAP];
    path_keys(s, t, key, rank);
    if (max_nodes > SPRIG_TREE_MAX) max_nodes = SPRIG_TREE_MAX;
    double g = 0;   /* no candidate deeper than the frontier is worth more than the best frontier node's path */
    for (int j = 0; j < nf; j++) {
        const double v = exp((double)key[frontier[j]]);
        if (v > g) g = v;
    }
    int chosen[SPRIG_TREE_MAX];
    const int n = sprig_dyntree_best(t, key, max_nodes, max_depth, chosen);
    const double d = draft_at(s, s->width_now > 1);
    double T[SPRIG_TREE_MAX + 1], E[SPRIG_TREE_MAX + 1], best = 0;
    for (int m = 1; m <= max_nodes; m++) T[m] = sprig_shape_t(s, m) + d;
    E[1] = 1.0;
    for (int m = 1; m <= n; m++) {
        if (m > 1) E[m] = E[m - 1] + exp((double)key[chosen[m - 1]]);
        if (E[m] / T[m] > best) best = E[m] / T[m];
    }
    /* k more nodes, each worth at most g, beside the best m already drafted: the only way a deeper node is chosen */
    for (int m = 1; m <= n; m++)
        for (int k = 1; m + k <= max_nodes; k++)
            if ((E[m] + k * g) / T[m + k] > best) return true;
    s->draft_stops++;
    return false;
}

void sprig_shape_select(sprig_shape *s, const sprig_dyntree *t, int max_nodes, int max_depth, sprig_tree *out, int *map_out)
{
    static _Thread_local float key[SPRIG_DYNTREE_CAP];   /* log of the path's calibrated acceptance */
    static _Thread_local uint8_t rank[SPRIG_DYNTREE_CAP];   /* among its parent's children, the drafter's order */
    path_keys(s, t, key, rank);
    int chosen[SPRIG_TREE_MAX];
    double t_pred[SPRIG_TREE_MAX + 1];
    const int others = (int)(s->others_rows + 0.5);   /* a shared forward: everyone's tokens per everyone's time */
    /* alone on a mixture of experts whose routings are remembered: grown for the experts. Not for
     * sampled drafts: a drawn child must be kept or dropped on its slot's estimate alone (dyntree.h),
     * never on its own token, or the acceptance would no longer keep the target's distribution */
    bool sampled = false;
    for (int i = 0; i < t->n && !sampled; i++) sampled = t->qrow[i] >= 0;
    const bool experts = s->moe.on && s->routes && others == 0 && !sampled && sprig_shape_expert_ms(s) > 0;
    const int n = experts ? grow_by_experts(s, t, key, max_nodes, max_depth, chosen, t_pred)
                          : sprig_dyntree_best(t, key, max_nodes, max_depth, chosen);
    /* m nodes: expected emitted 1 + sum of the first m - 1 values, per T(m) + the drafter's time (spent
     * this round whatever m is, so the bare bonus pays it too) */
    const double gap = others > 0 ? s->shared.gap_ms : 0, dw = draft_at(s, s->width_now > 1), dn = draft_at(s, false);
    const double fixed = gap > dw ? gap : dw, fixed_n = gap > dn ? gap : dn;   /* this round's width, and width 1 */
    double e = 1.0 + s->others_emit, best = e / ((experts ? t_pred[1] : step_t(s, others, others + 1)) + fixed);
    int m = 1;
    for (int j = 1; j < n; j++) {
        e += exp((double)key[chosen[j]]);
        const double rate = e / ((experts ? t_pred[j + 1] : step_t(s, others, others + j + 1)) + fixed);
        if (rate > best) { best = rate; m = j + 1; }
    }
    int granted = 0;
    double cbest_n = 0, got = 0;   /* the best chain's rate had this round drafted at width 1 (0: not compared),
                                      and the chosen one's at this round's width */
    if (!experts && others > 0 && s->joint) {   /* the batch allocates the step's rows (shape.h) */
        double gain[SPRIG_TREE_MAX];
        gain[0] = 1.0;
        for (int j = 1; j < n; j++) gain[j] = exp((double)key[chosen[j]]);
        granted = sprig_target_shared_plan(s->joint, gain, n, s->draft_ms, s->profiled ? &s->cost : NULL);
        if (granted > n) granted = n;
        if (granted >= 1) {
            m = granted;
            s->plan_joint++;
        }
    }
    if (!experts) {   /* the chain the drafter proposes, each length at the same rate; it wins ties (shape.h) */
        int chain[SPRIG_TREE_MAX], len = 1, at = 1, cur = 0, cm = 1;
        const int cap = max_nodes < SPRIG_TREE_MAX ? max_nodes : SPRIG_TREE_MAX;
        double ec = 1.0 + s->others_emit, cbest = ec / (step_t(s, others, others + 1) + fixed), et = 1.0;
        cbest_n = ec / (step_t(s, others, others + 1) + fixed_n);
        for (int j = 1; j < m; j++) et += exp((double)key[chosen[j]]);
        chain[0] = 0;
        while (len < (granted ? m : cap)) {
            int next = -1;   /* cur's first child in the drafter's order (children come after their parent) */
            for (int i = at; i < t->n && next < 0; i++) if (t->parent[i] == cur) next = i;
            if (next < 0 || t->depth[next] > max_depth) break;
            chain[len++] = cur = next;
            at = next + 1;
            ec += exp((double)key[next]);
            const double tl = step_t(s, others, others + len), rate = ec / (tl + fixed), rate_n = ec / (tl + fixed_n);
            if (rate > cbest) { cbest = rate; cm = len; }
            if (rate_n > cbest_n) cbest_n = rate_n;
        }
        if (granted) best = (et + s->others_emit) / (step_t(s, others, others + m) + fixed);
        got = best;
        if (granted ? len == m && ec >= et - 1e-12 * et : cbest >= best) {   /* granted m rows: the chain of m if it emits as much */
            memcpy(chosen, chain, (size_t)(granted ? m : cm) * sizeof *chain);
            m = granted ? m : cm;
            got = granted ? ec / (step_t(s, others, others + m) + fixed) : cbest;
        }
    }
    int map[SPRIG_TREE_MAX];
    sprig_dyntree_tree_of(t, key, chosen, m, out, map);
    s->moe.by_experts += experts;
    s->last_n = out->n;
    for (int i = 0; i < out->n; i++) {
        s->q[i] = i ? (float)exp((double)t->score[map[i]] - (double)t->real[t->parent[map[i]]]) : 1.0f;
        s->qd[i] = (uint8_t)(t->depth[map[i]] < 255 ? t->depth[map[i]] : 255);
        s->qr[i] = rank[map[i]];
    }
    if (map_out) memcpy(map_out, map, (size_t)out->n * sizeof *map);
    s->chosen[out->n]++;
    const bool linear = sprig_tree_is_linear(out);
    if (linear) s->plan_chains++;
    else s->plan_trees++;
    if (s->width_now > 1 && (cbest_n > 0 || experts)) {   /* what drafting wide earned this round: a mean, then a moving one
                                                             (grown for its experts, the tree is not weighed against a
                                                             chain: a branching choice counts as earning) */
        const double edge = experts ? (linear ? -1.0 : 1.0) : got / cbest_n - 1.0;
        s->wide_n++;
        s->wide_edge += (s->wide_n < 4 ? 1.0 / s->wide_n : 0.25) * (edge - s->wide_edge);
    }
    const int d = sprig_tree_max_depth(out);
    s->depths[s->n_depths++ % 8] = (uint8_t)(d < 255 ? d : 255);
}

int sprig_shape_expand_depth(const sprig_shape *s, int max_depth)
{
    if (s->n_depths < 8) return max_depth;
    int deepest = 0;
    for (int i = 0; i < 8; i++) if (s->depths[i] > deepest) deepest = s->depths[i];
    const bool cheap = s->draft_ms < 0.05 * sprig_shape_t(s, 1);   /* drafting is a small share of a round */
    const int d = deepest + (cheap || s->n_depths % 8 == 0 ? 2 : 1);
    return d < max_depth ? d : max_depth;
}

int sprig_shape_expand_width(sprig_shape *s, int max_width)
{
    const int narrow = max_width < 1 ? max_width : 1;
    if (s->n_depths < 8) return s->width_now = max_width;
    const bool explore = s->n_depths % 8 == 0;
    return s->width_now = (s->wide_edge > 0) != explore ? max_width : narrow;
}

void sprig_shape_summary(const sprig_shape *s, char *buf, size_t cap)
{
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "nodes x rounds:");
    for (int n = 1; n <= SPRIG_TREE_MAX && o + 32 < cap; n++)
        if (s->chosen[n]) o += (size_t)snprintf(buf + o, cap - o, " %dx%lld", n, (long long)s->chosen[n]);
    if (o + 96 < cap)
        o += (size_t)snprintf(buf + o, cap - o, "; T(n) ms: 1 %.2f, 4 %.2f, 8 %.2f, 16 %.2f; drafter %.2f ms/round (width 1 %.2f, "
                              "wider %.2f; wide rounds' edge %+.3f; %lld drafts stopped short)", sprig_shape_t(s, 1),
                              sprig_shape_t(s, 4), sprig_shape_t(s, 8), sprig_shape_t(s, 16), s->draft_ms, s->draft_w_ms[0],
                              s->draft_w_ms[1], s->wide_edge, (long long)s->draft_stops);
    if (s->moe.on && o + 160 < cap)
        o += (size_t)snprintf(buf + o, cap - o, "; experts: %.3f ms each, %.1f per verify (random routing of 4 / 8 rows: %.1f / %.1f; "
                              "locality alpha %.2f; %lld trees grown for their experts, %lld of %lld candidates' routings known)",
                              sprig_shape_expert_ms(s), s->moe.u_n > 0 ? s->moe.u_sum / s->moe.u_n : 0,
                              sprig_shape_union_random(s, 4), sprig_shape_union_random(s, 8), sprig_shape_alpha(s),
                              (long long)s->moe.by_experts, (long long)s->moe.known, (long long)s->moe.candidates);
    if (o + 32 < cap) o += (size_t)snprintf(buf + o, cap - o, "; accepted/verified by draft q:");
    for (int b = 0; b < SPRIG_SHAPE_BINS && o + 40 < cap; b++)
        if (s->trials[b] > 0)
            o += (size_t)snprintf(buf + o, cap - o, " %.2f-%.2f %.0f/%.0f", (double)b / SPRIG_SHAPE_BINS, (double)(b + 1) / SPRIG_SHAPE_BINS,
                                  s->hits[b], s->trials[b]);
    /* accepted/verified (x the correction: accepted against what the q buckets expected) */
    if (o + 32 < cap) o += (size_t)snprintf(buf + o, cap - o, "; by depth:");
    for (int d = 0; d < SPRIG_SHAPE_DEPTHS && o + 48 < cap; d++)
        if (s->d_trials[d] > 0)
            o += (size_t)snprintf(buf + o, cap - o, " %d%s %.0f/%.0f (x%.2f)", d + 1, d + 1 == SPRIG_SHAPE_DEPTHS ? "+" : "",
                                  s->d_hits[d], s->d_trials[d], correction(s->d_hits[d], s->d_exp[d]));
    if (o + 32 < cap) o += (size_t)snprintf(buf + o, cap - o, "; by sibling rank:");
    for (int r = 0; r < SPRIG_SHAPE_RANKS && o + 48 < cap; r++)
        if (s->r_trials[r] > 0)
            o += (size_t)snprintf(buf + o, cap - o, " %d%s %.0f/%.0f (x%.2f)", r + 1, r + 1 == SPRIG_SHAPE_RANKS ? "+" : "",
                                  s->r_hits[r], s->r_trials[r], correction(s->r_hits[r], s->r_exp[r]));
}

void sprig_shape_observe(sprig_shape *s, const sprig_tree *t, const sprig_walk *w)
{
    if (s->last_n != t->n) return;   /* not the tree select chose */
    const bool whole = w->n_emit == w->accepted + 1;   /* the budget did not cut the walk short */
    for (int i = 0; i < w->n_path; i++) {
        const int v = w->path[i], next = i + 1 < w->n_path ? w->path[i + 1] : -1;
        if (next < 0 && !whole) break;
        for (int c = v + 1; c < t->n; c++)
            if (t->parents[c] == v) {
                const int b = bin_of(s->q[c]), d = depth_class(s->qd[c]), r = rank_class(s->qr[c]);
                const double expect = sprig_shape_accept(s, s->q[c]), hit = c == next;
                s->d_hits[d] += hit; s->d_exp[d] += expect; s->d_trials[d] += 1;
                s->r_hits[r] += hit; s->r_exp[r] += expect; s->r_trials[r] += 1;
                s->trials[b] += 1;
                s->hits[b] += hit;
            }
    }
    s->last_n = 0;
}
