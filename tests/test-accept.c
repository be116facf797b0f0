/*
 * tests/test-accept.c — lossless sampling acceptance (spec/accept), tested
 * statistically against a mock target with known distributions.
 *
 * The mock target over an 8-token vocabulary has a fixed distribution for
 * every prefix (a hash of the prefix seeds its logits; small probabilities
 * are filtered to exactly zero, as top-p / min-p would). A deterministic mock
 * drafter proposes trees of several shapes (chain, chain + runner-up leaves,
 * a wide tree, duplicate siblings, a child the target gives zero mass).
 * Generation repeats rounds (build a tree at the current prefix, walk it)
 * until three tokens came out; over many runs the empirical distribution of
 * those three tokens must match the target's exact joint distribution
 * (chi-square over the 512 cells, sparse cells pooled). Two deliberately
 * biased rules run through the same harness and must FAIL it, so the test
 * can tell a wrong rule from a right one. Also: with one-hot distributions
 * the sampling walk is the greedy walk; the chain form equals the linear
 * tree; bad rows are refused. Sampled drafts (drawn from a mock drafter's
 * q, siblings without replacement) go through the same harness with the
 * q-aware rule, and two wrong walks of them (q ignored, the wrong q) must
 * fail it.
 */
#include "test.h"
#include "base/rng.h"
#include "spec/accept.h"

#define V 8
#define L 3

/* ---------------------------------------------------------------- mock target */

static uint64_t hash_seq(const int32_t *s, int n, uint64_t salt)
{
    uint64_t h = 0x243F6A8885A308D3ull ^ salt;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)s[i] + 0x9E3779B97F4A7C15ull;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return h;
}

/* Memo of computed distributions keyed by the 64-bit prefix hash (the
 * functions are pure; this only saves time). */
#define MEMO (1 << 16)
static struct memo { uint64_t key; bool used; float p[V]; } memo_p[MEMO], memo_r[MEMO];

static struct memo *memo_slot(struct memo *tab, uint64_t key, bool *hit)
{
    for (uint64_t i = key;; i++) {
        struct memo *m = &tab[i & (MEMO - 1)];
        if (!m->used || m->key == key) {
            *hit = m->used;
            m->used = true;
            m->key = key;
            return m;
        }
    }
}

static void target_p_compute(const int32_t *s, int n, float *p);

/* The target's distribution after prefix s[n]: softmax of seeded logits,
 * entries below 0.03 set to exactly 0, renormalised. */
static void target_p(const int32_t *s, int n, float *p)
{
    bool hit;
    struct memo *m = memo_slot(memo_p, hash_seq(s, n, 1), &hit);
    if (!hit) target_p_compute(s, n, m->p);
    memcpy(p, m->p, sizeof m->p);
}

static void target_p_compute(const int32_t *s, int n, float *p)
{
    sprig_rng r;
    sprig_rng_seed(&r, hash_seq(s, n, 1));
    double z[V], mx = -1e30, sum = 0;
    for (int v = 0; v < V; v++) { z[v] = 1.6 * sprig_rng_normal(&r); mx = z[v] > mx ? z[v] : mx; }
    for (int v = 0; v < V; v++) { z[v] = exp(z[v] - mx); sum += z[v]; }
    double kept = 0;
    for (int v = 0; v < V; v++) { z[v] /= sum; if (z[v] < 0.03) z[v] = 0; kept += z[v]; }
    for (int v = 0; v < V; v++) p[v] = (float)(z[v] / kept);
}

/* The drafter's deterministic ranking after prefix s[n]: the target's logits
 * perturbed, so its top choice is often but not always the target's. */
static void draft_rank_compute(const int32_t *s, int n, int32_t *rank);

static void draft_rank(const int32_t *s, int n, int32_t *rank)
{
    bool hit;
    struct memo *m = memo_slot(memo_r, hash_seq(s, n, 2), &hit);
    if (!hit) {
        int32_t r[V];
        draft_rank_compute(s, n, r);
        for (int i = 0; i < V; i++) m->p[i] = (float)r[i];
    }
    for (int i = 0; i < V; i++) rank[i] = (int32_t)m->p[i];
}

static void draft_rank_compute(const int32_t *s, int n, int32_t *rank)
{
    float p[V];
    target_p(s, n, p);
    sprig_rng r;
    sprig_rng_seed(&r, hash_seq(s, n, 2));
    double sc[V];
    for (int v = 0; v < V; v++) sc[v] = log(p[v] + 1e-3) + 1.2 * sprig_rng_normal(&r);
    for (int i = 0; i < V; i++) rank[i] = i;
    for (int i = 0; i < V; i++)
        for (int j = i + 1; j < V; j++)
            if (sc[rank[j]] > sc[rank[i]]) { int32_t t = rank[i]; rank[i] = rank[j]; rank[j] = t; }
}

enum { SHAPE_CHAIN, SHAPE_RUNNERUP, SHAPE_WIDE, SHAPE_DUPES, SHAPE_COUNT };
static const char *const shape_names[SHAPE_COUNT] = { "chain", "chain+runner-up", "wide", "duplicates+zero-mass" };

/* Context of node i: prefix (ending with the root token) + path tokens below the root. */
static int node_ctx(const sprig_tree *t, int node, const int32_t *prefix, int np, int32_t *ctx)
{
    memcpy(ctx, prefix, (size_t)np * sizeof *ctx);
    int path[SPRIG_TREE_MAX];
    int len = sprig_tree_path_to(t, node, path);
    for (int i = 1; i < len; i++) ctx[np++] = t->tokens[path[i]];
    return np;
}

static void add_child(sprig_tree *t, int parent, int32_t tok)
{
    if (sprig_tree_push_child(t, parent, tok, NULL, NULL)) CHECK(!"push_child refused a valid parent");
}

/* Build the drafter's tree at the prefix and fill probs[n][V]. */
static void build_round(int shape, const int32_t *prefix, int np, sprig_tree *t, float *probs)
{
    int32_t ctx[64], rank[V];
    sprig_tree_root(t, prefix[np - 1]);
    switch (shape) {
    case SHAPE_CHAIN:
    case SHAPE_RUNNERUP:
        for (int d = 0; d < 3; d++) {
            int n = node_ctx(t, d, prefix, np, ctx);
            draft_rank(ctx, n, rank);
            add_child(t, d, rank[0]);            /* chain node d + 1 */
        }
        if (shape == SHAPE_RUNNERUP)
            for (int d = 0; d < 2; d++) {
                int n = node_ctx(t, d, prefix, np, ctx);
                draft_rank(ctx, n, rank);
                add_child(t, d, rank[1]);        /* runner-up leaf beside chain node d + 1 */
            }
        break;
    case SHAPE_WIDE: {
        draft_rank(prefix, np, rank);
        for (int j = 0; j < 3; j++) add_child(t, 0, rank[j]);
        for (int j = 1; j <= 3; j++) {
            int n = node_ctx(t, j, prefix, np, ctx);
            int32_t r2[V];
            draft_rank(ctx, n, r2);
            add_child(t, j, r2[0]);
            add_child(t, j, r2[1]);
        }
        break;
    }
    case SHAPE_DUPES: {
        float p[V];
        target_p(prefix, np, p);
        draft_rank(prefix, np, rank);
        int32_t zero = -1;
        for (int v = 0; v < V; v++) if (p[v] == 0.0f) zero = v;
        add_child(t, 0, rank[0]);
        add_child(t, 0, rank[0]);                /* a twin: must never be taken after its twin's rejection */
        if (zero >= 0) add_child(t, 0, zero);    /* no mass: never accepted */
        add_child(t, 0, rank[1]);
        int n = node_ctx(t, 2, prefix, np, ctx);
        draft_rank(ctx, n, rank);
        add_child(t, 2, rank[0]);                /* only reachable through the second twin */
        add_child(t, 1, rank[0]);
        break;
    }
    }
    for (int i = 0; i < t->n; i++) {
        int n = node_ctx(t, i, prefix, np, ctx);
        target_p(ctx, n, probs + i * V);
    }
}

/* ---------------------------------------------------------------- walks under test */

enum { RULE_LOSSLESS, RULE_BIAS_FULL_P_BONUS, RULE_BIAS_NO_RENORM, RULE_COUNT };
static const char *const rule_names[RULE_COUNT] = { "lossless", "biased: bonus from full p", "biased: no renormalisation" };

/* Deliberately wrong rules, written here so the harness can be shown to fail them. */
static void biased_walk(int rule, const sprig_tree *t, const float *probs, int budget, sprig_rng *r, sprig_walk *w)
{
    int cur = 0;
    w->n_path = 1;
    w->path[0] = 0;
    w->n_emit = 0;
    for (;;) {
        const float *p = probs + cur * V;
        int next = -1;
        float resid[V];
        memcpy(resid, p, sizeof resid);
        if (w->n_path < budget) {
            double mass = 1.0;
            for (int c = cur + 1; c < t->n && next < 0; c++) {
                if (t->parents[c] != cur) continue;
                int32_t x = t->tokens[c];
                double thr = rule == RULE_BIAS_NO_RENORM ? p[x] : resid[x] / mass;
                if (sprig_rng_uniform(r) < thr) next = c;
                else { mass -= resid[x]; resid[x] = 0; }
            }
        }
        if (next < 0) {
            const float *from = rule == RULE_BIAS_FULL_P_BONUS ? p : resid;
            int y = sprig_sample_weights(from, V, r);
            if (y < 0) y = sprig_sample_weights(p, V, r);
            for (int i = 1; i < w->n_path; i++) w->emit[w->n_emit++] = t->tokens[w->path[i]];
            w->emit[w->n_emit++] = y;
            w->accepted = w->n_path - 1;
            return;
        }
        w->path[w->n_path++] = next;
        cur = next;
    }
}

/* One run: rounds until L tokens; returns the cell index of the first L. */
static int generate(int rule, int shape, sprig_rng *r, float *scratch, int64_t *accepted_total)
{
    int32_t prefix[64] = { 3 };
    int np = 1, out = 0;
    int32_t toks[L + SPRIG_TREE_MAX];
    while (out < L) {
        sprig_tree t;
        float probs[SPRIG_TREE_MAX * V];
        build_round(shape, prefix, np, &t, probs);
        sprig_walk w;
        if (rule == RULE_LOSSLESS) {
            sprig_error err;
            sprig_status st = sprig_tree_walk_sample(&t, probs, V, L - out, NULL, r, scratch, &w, &err);
            if (st) { CHECKF(0, "%s", err.msg); return 0; }
        } else {
            biased_walk(rule, &t, probs, L - out, r, &w);
        }
        *accepted_total += w.accepted;
        for (int i = 0; i < w.n_emit; i++) { toks[out++] = w.emit[i]; prefix[np++] = w.emit[i]; }
    }
    int cell = 0;
    for (int i = 0; i < L; i++) cell = cell * V + toks[i];
    return cell;
}

static void exact_joint(double *pj)
{
    int32_t s[8] = { 3 };
    float p1[V], p2[V], p3[V];
    target_p(s, 1, p1);
    for (int a = 0; a < V; a++) {
        s[1] = a;
        target_p(s, 2, p2);
        for (int b = 0; b < V; b++) {
            s[2] = b;
            target_p(s, 3, p3);
            for (int c = 0; c < V; c++) pj[(a * V + b) * V + c] = (double)p1[a] * p2[b] * p3[c];
        }
    }
}

/* Chi-square of counts against expected probabilities; cells with an
 * expected count under 5 are pooled into one bin. Returns the statistic and
 * the degrees of freedom; also the largest |freq - prob|. */
static double chi_square(const int64_t *cnt, const double *pj, int cells, int64_t n, int *dof, double *maxdev)
{
    double chi = 0, pool_o = 0, pool_e = 0;
    int bins = 0;
    *maxdev = 0;
    for (int i = 0; i < cells; i++) {
        double e = pj[i] * (double)n, o = (double)cnt[i];
        double dev = fabs(o / (double)n - pj[i]);
        if (dev > *maxdev) *maxdev = dev;
        if (e < 5) { pool_o += o; pool_e += e; continue; }
        chi += (o - e) * (o - e) / e;
        bins++;
    }
    if (pool_e > 0) {
        chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
        bins++;
    } else if (pool_o > 0) {
        chi += 1e9;   /* mass where the target has none */
    }
    *dof = bins - 1;
    return chi;
}

static void test_joint_distribution(void)
{
    static double pj[V * V * V];
    exact_joint(pj);
    double tot = 0;
    for (int i = 0; i < V * V * V; i++) tot += pj[i];
    CHECK_NEAR(tot, 1.0, 1e-5);
    int64_t n_lossless = test_quick() ? 40000 : 400000;
    float scratch[V];
    for (int rule = 0; rule < RULE_COUNT; rule++)
        for (int shape = 0; shape < SHAPE_COUNT; shape++) {
            /* the biased rules fail by orders of magnitude; fewer runs do */
            int64_t n = rule == RULE_LOSSLESS ? n_lossless : n_lossless / 4;
            static int64_t cnt[V * V * V];
            memset(cnt, 0, sizeof cnt);
            sprig_rng r;
            sprig_rng_seed(&r, 1000 + (uint64_t)(rule * 10 + shape));
            int64_t acc = 0;
            for (int64_t i = 0; i < n; i++) cnt[generate(rule, shape, &r, scratch, &acc)]++;
            int dof;
            double maxdev;
            double chi = chi_square(cnt, pj, V * V * V, n, &dof, &maxdev);
            /* ~6 standard deviations of a chi-square with dof degrees */
            double limit = dof + 6.0 * sqrt(2.0 * dof);
            fprintf(stderr, "  %-28s %-22s chi2 %9.1f (dof %d, limit %.1f) max|dev| %.4f accepted/run %.3f\n",
                    rule_names[rule], shape_names[shape], chi, dof, limit, maxdev, (double)acc / (double)n);
            if (rule == RULE_LOSSLESS) {
                CHECKF(chi < limit, "%s on %s: chi2 %.1f >= %.1f", rule_names[rule], shape_names[shape], chi, limit);
                CHECK(acc > 0);   /* drafts were actually accepted, so the rule was exercised */
            } else if (shape != SHAPE_CHAIN || rule == RULE_BIAS_FULL_P_BONUS) {
                /* the no-renormalisation bug only shows with several children at one node */
                CHECKF(chi > limit, "%s on %s passed the harness (chi2 %.1f < %.1f)", rule_names[rule],
                       shape_names[shape], chi, limit);
            }
        }
}

/* One-hot distributions: the sampling walk is the greedy walk. */
static void test_one_hot_is_greedy(void)
{
    sprig_rng r, rr;
    sprig_rng_seed(&r, 8);
    sprig_rng_seed(&rr, 9);
    float scratch[V];
    for (int rep = 0; rep < 2000; rep++) {
        sprig_tree t;
        sprig_tree_root(&t, 0);
        int n = 1 + (int)(sprig_rng_u64(&r) % 16);
        while (t.n < n) sprig_tree_push_child(&t, (int)(sprig_rng_u64(&r) % (uint64_t)t.n), (int32_t)(sprig_rng_u64(&r) % 3), NULL, NULL);
        int32_t target[SPRIG_TREE_MAX];
        float probs[SPRIG_TREE_MAX * V] = { 0 };
        for (int i = 0; i < n; i++) {
            target[i] = (int32_t)(sprig_rng_u64(&r) % 3);
            probs[i * V + target[i]] = 1.0f;
        }
        int budget = 1 + (int)(sprig_rng_u64(&r) % 8);
        sprig_walk g, s;
        sprig_tree_walk(&t, target, budget, &g);
        CHECK_EQ_INT(sprig_tree_walk_sample(&t, probs, V, budget, NULL, &rr, scratch, &s, NULL), SPRIG_OK);
        bool ok = g.accepted == s.accepted && g.n_emit == s.n_emit && g.n_path == s.n_path;
        for (int i = 0; ok && i < g.n_path; i++) ok &= g.path[i] == s.path[i];
        for (int i = 0; ok && i < g.n_emit; i++) ok &= g.emit[i] == s.emit[i];
        CHECKF(ok, "rep %d", rep);
        if (!ok) break;
    }
}

static void test_chain_form_and_edges(void)
{
    sprig_error err;
    float scratch[V], probs[4 * V];
    int32_t prefix[8] = { 3 };
    for (int i = 0; i < 4; i++) { prefix[i + 1] = (int32_t)i; target_p(prefix, i + 1, probs + i * V); }
    const int32_t draft[3] = { 0, 1, 2 };
    sprig_tree t;
    CHECK_EQ_INT(sprig_tree_linear(&t, 3, draft, 3, &err), SPRIG_OK);
    for (int seed = 0; seed < 200; seed++) {
        sprig_rng a, b;
        sprig_rng_seed(&a, (uint64_t)seed);
        sprig_rng_seed(&b, (uint64_t)seed);
        sprig_walk wa, wb;
        CHECK_EQ_INT(sprig_chain_walk_sample(draft, 4, probs, V, 10, NULL, &a, scratch, &wa, &err), SPRIG_OK);
        CHECK_EQ_INT(sprig_tree_walk_sample(&t, probs, V, 10, NULL, &b, scratch, &wb, &err), SPRIG_OK);
        bool ok = wa.accepted == wb.accepted && wa.n_emit == wb.n_emit;
        for (int i = 0; ok && i < wa.n_emit; i++) ok &= wa.emit[i] == wb.emit[i];
        CHECK(ok);
        CHECK_EQ_INT(wa.n_emit, wa.accepted + 1);
    }
    sprig_rng r;
    sprig_rng_seed(&r, 1);
    sprig_walk w;
    CHECK_EQ_INT(sprig_chain_walk_sample(draft, 4, probs, V, 0, NULL, &r, scratch, &w, &err), SPRIG_OK);
    CHECK(w.n_emit == 0 && w.accepted == 0);
    CHECK_EQ_INT(sprig_chain_walk_sample(draft, 4, probs, V, 1, NULL, &r, scratch, &w, &err), SPRIG_OK);
    CHECK(w.n_emit == 1 && w.accepted == 0);
    /* a row with no mass is refused, naming the row */
    float bad[4 * V];
    memcpy(bad, probs, sizeof bad);
    for (int v = 0; v < V; v++) bad[v] = v == 5 ? NAN : -1.0f;
    CHECK_EQ_INT(sprig_chain_walk_sample(draft, 4, bad, V, 10, NULL, &r, scratch, &w, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "row 0") != NULL);
    CHECK_EQ_INT(sprig_chain_walk_sample(draft, 4, probs, 0, 10, NULL, &r, scratch, &w, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_chain_walk_sample(draft, 0, probs, V, 10, NULL, &r, scratch, &w, &err), SPRIG_E_INVALID_ARG);
    float zero[V] = { 0 };
    CHECK_EQ_INT(sprig_sample_weights(zero, V, &r), -1);

    /* the budget stop draws the bonus from the full p: its marginal is p */
    int64_t cnt[V] = { 0 };
    int n = test_quick() ? 20000 : 100000;
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(sprig_chain_walk_sample(draft, 4, probs, V, 1, NULL, &r, scratch, &w, NULL), SPRIG_OK);
        cnt[w.emit[0]]++;
    }
    double chi = 0;
    int bins = 0;
    for (int v = 0; v < V; v++) {
        double e = probs[v] * (double)n;
        if (e == 0) { CHECK_EQ_INT(cnt[v], 0); continue; }
        chi += (cnt[v] - e) * (cnt[v] - e) / e;
        bins++;
    }
    CHECKF(chi < (bins - 1) + 6.0 * sqrt(2.0 * (bins - 1)), "chi2 %.1f", chi);
}

/* ---------------------------------------------------------------- sampled drafts (q-aware rules) */

static struct memo memo_q[MEMO];

/* The drafter's distribution q after prefix s[n]: the target's perturbed,
 * with its own zeros (so q > 0 where p = 0 and the reverse both happen). */
static void draft_q(const int32_t *s, int n, float *q)
{
    bool hit;
    struct memo *m = memo_slot(memo_q, hash_seq(s, n, 3), &hit);
    if (!hit) {
        float p[V];
        target_p(s, n, p);
        sprig_rng r;
        sprig_rng_seed(&r, hash_seq(s, n, 3));
        double z[V], sum = 0, kept = 0;
        for (int v = 0; v < V; v++) { z[v] = exp(0.8 * log(p[v] + 0.01) + 0.9 * sprig_rng_normal(&r)); sum += z[v]; }
        for (int v = 0; v < V; v++) { z[v] /= sum; if (z[v] < 0.04) z[v] = 0; kept += z[v]; }
        for (int v = 0; v < V; v++) m->p[v] = (float)(z[v] / kept);
    }
    memcpy(q, m->p, sizeof m->p);
}

enum { SQ_CHAIN, SQ_TREE, SQ_MIXED, SQ_COUNT };
static const char *const sq_names[SQ_COUNT] = { "sampled chain", "sampled tree", "sampled + one-hot" };
enum { QR_LOSSLESS, QR_ONE_HOT, QR_BIAS_FULL_P_BONUS, QR_BIAS_WRONG_Q, QR_COUNT };
static const char *const qr_names[QR_COUNT] = { "q-aware", "one-hot rule, same drafts", "biased: bonus from full p",
                                                "biased: another q" };

/* A deliberately wrong q-aware walk: right acceptance, but the bonus after
 * rejections is drawn from the full p instead of the residual. */
static void biased_q_walk(const sprig_tree *t, const float *probs, const sprig_draft_q *q, int budget, sprig_rng *r,
                          sprig_walk *w)
{
    int cur = 0;
    w->n_path = 1;
    w->path[0] = 0;
    w->n_emit = 0;
    for (;;) {
        const float *p = probs + cur * V;
        int next = -1;
        double resid[V], left[V], qm = 0;
        for (int v = 0; v < V; v++) { resid[v] = p[v]; left[v] = q->row[cur] >= 0 ? q->rows[q->row[cur] * V + v] : 0; qm += left[v]; }
        for (int c = cur + 1; c < t->n && next < 0 && w->n_path < budget; c++) {
            if (t->parents[c] != cur) continue;
            int x = t->tokens[c];
            double rx = resid[x], qx = q->row[cur] >= 0 ? left[x] / qm : 1.0, m = 0;
            if (qx > 0 && sprig_rng_uniform(r) * qx < rx) { next = c; break; }
            for (int v = 0; v < V; v++) {
                double d = resid[v] - (q->row[cur] >= 0 ? left[v] / qm : v == x);
                resid[v] = d > 0 ? d : 0;
                m += resid[v];
            }
            for (int v = 0; v < V; v++) resid[v] /= m;
            if (q->row[cur] >= 0) { qm -= left[x]; left[x] = 0; }
        }
        if (next < 0) {
            int y = sprig_sample_weights(p, V, r);
            for (int i = 1; i < w->n_path; i++) w->emit[w->n_emit++] = t->tokens[w->path[i]];
            w->emit[w->n_emit++] = y;
            w->accepted = w->n_path - 1;
            return;
        }
        w->path[w->n_path++] = next;
        cur = next;
    }
}

/* Node `parent` draws n children from q at its context (without replacement), recording its row */
static void draw_children(sprig_tree *t, int parent, int n, const int32_t *prefix, int np, sprig_draft_q *q, bool lie)
{
    int32_t ctx[64], drawn[V];
    int nc = node_ctx(t, parent, prefix, np, ctx);
    const int r = q->n_rows++;
    draft_q(ctx, nc, q->rows + r * V);
    int got = sprig_draft_q_draw(q, r, n, drawn);
    q->row[parent] = (int16_t)r;
    for (int i = 0; i < got; i++) add_child(t, parent, drawn[i]);
    if (lie) {   /* the walk is told a different q than the draws came from */
        ctx[nc] = 7;
        draft_q(ctx, nc + 1, q->rows + r * V);
    }
}

static void build_sampled(int shape, bool lie, const int32_t *prefix, int np, sprig_tree *t, float *probs, sprig_draft_q *q)
{
    sprig_tree_root(t, prefix[np - 1]);
    sprig_draft_q_reset(q);
    switch (shape) {
    case SQ_CHAIN:
        for (int d = 0; d < 3; d++) draw_children(t, d, 1, prefix, np, q, lie);
        break;
    case SQ_TREE:   /* counts fixed before drawing: 3 at the root, 2 under its first two, 1 below */
        draw_children(t, 0, 3, prefix, np, q, lie);
        draw_children(t, 1, 2, prefix, np, q, lie);
        draw_children(t, 2, 2, prefix, np, q, lie);
        draw_children(t, 4, 1, prefix, np, q, lie);
        break;
    case SQ_MIXED: {   /* sampled at the root, one-hot (ranked) under its first child */
        draw_children(t, 0, 2, prefix, np, q, lie);
        int32_t ctx[64], rank[V];
        int n = node_ctx(t, 1, prefix, np, ctx);
        draft_rank(ctx, n, rank);
        add_child(t, 1, rank[0]);
        add_child(t, 1, rank[1]);
        break;
    }
    }
    for (int i = 0; i < t->n; i++) {
        int32_t ctx[64];
        int n = node_ctx(t, i, prefix, np, ctx);
        target_p(ctx, n, probs + i * V);
    }
}

static int generate_sampled(int rule, int shape, sprig_rng *r, sprig_draft_q *q, float *scratch, int64_t *accepted_total)
{
    int32_t prefix[64] = { 3 };
    int np = 1, out = 0;
    int32_t toks[L + SPRIG_TREE_MAX];
    while (out < L) {
        sprig_tree t;
        float probs[SPRIG_TREE_MAX * V];
        build_sampled(shape, rule == QR_BIAS_WRONG_Q, prefix, np, &t, probs, q);
        sprig_walk w;
        sprig_error err;
        if (rule == QR_BIAS_FULL_P_BONUS) {
            biased_q_walk(&t, probs, q, L - out, r, &w);
        } else if (sprig_tree_walk_sample(&t, probs, V, L - out, rule == QR_ONE_HOT ? NULL : q, r, scratch, &w, &err)) {
            CHECKF(0, "%s", err.msg);
            return 0;
        }
        *accepted_total += w.accepted;
        for (int i = 0; i < w.n_emit; i++) { toks[out++] = w.emit[i]; prefix[np++] = w.emit[i]; }
    }
    int cell = 0;
    for (int i = 0; i < L; i++) cell = cell * V + toks[i];
    return cell;
}

/* Drafts drawn from q (chain, a tree of siblings drawn without replacement,
 * sampled and one-hot nodes mixed): the three tokens follow the target's
 * joint exactly with the q-aware rule. The one-hot rule on the same drafts
 * is lossless too (it holds for any drafts the acceptance's draws did not
 * choose) but accepts less; the harness fails a walk that draws the bonus
 * from the full p and one told the wrong q. */
static void test_sampled_drafts(void)
{
    static double pj[V * V * V];
    exact_joint(pj);
    static float rows[SPRIG_TREE_MAX * V];
    float left[V], scratch[2 * V];
    sprig_draft_q q = { .n_vocab = V, .rows = rows, .left = left };
    int64_t n_lossless = test_quick() ? 40000 : 400000;
    double acc_rate[QR_COUNT][SQ_COUNT];
    for (int rule = 0; rule < QR_COUNT; rule++)
        for (int shape = 0; shape < SQ_COUNT; shape++) {
            int64_t n = rule <= QR_ONE_HOT ? n_lossless : n_lossless / 4;
            static int64_t cnt[V * V * V];
            memset(cnt, 0, sizeof cnt);
            sprig_rng r;
            sprig_rng_seed(&r, 2000 + (uint64_t)(rule * 10 + shape));
            sprig_rng_seed(&q.rng, 3000 + (uint64_t)(rule * 10 + shape));
            int64_t acc = 0;
            for (int64_t i = 0; i < n; i++) cnt[generate_sampled(rule, shape, &r, &q, scratch, &acc)]++;
            int dof;
            double maxdev;
            double chi = chi_square(cnt, pj, V * V * V, n, &dof, &maxdev);
            double limit = dof + 6.0 * sqrt(2.0 * dof);
            fprintf(stderr, "  %-28s %-22s chi2 %9.1f (dof %d, limit %.1f) max|dev| %.4f accepted/run %.3f\n",
                    qr_names[rule], sq_names[shape], chi, dof, limit, maxdev, (double)acc / (double)n);
            acc_rate[rule][shape] = (double)acc / (double)n;
            if (rule <= QR_ONE_HOT) {
                CHECKF(chi < limit, "%s on %s: chi2 %.1f >= %.1f", qr_names[rule], sq_names[shape], chi, limit);
                CHECK(acc > n / 4);   /* drafts were accepted: the rule ran */
                if (rule == QR_ONE_HOT) CHECK(acc_rate[QR_ONE_HOT][shape] < acc_rate[QR_LOSSLESS][shape]);
            } else {
                CHECKF(chi > limit, "%s on %s passed the harness (chi2 %.1f < %.1f)", qr_names[rule], sq_names[shape], chi,
                       limit);
            }
        }
}

/* q == p: every sampled draft is accepted (min(1, p/q) = 1), the bonus is a plain draw */
static void test_sampled_q_equals_p(void)
{
    static float rows[SPRIG_TREE_MAX * V];
    float left[V], scratch[2 * V];
    sprig_draft_q q = { .n_vocab = V, .rows = rows, .left = left };
    sprig_rng_seed(&q.rng, 5);
    sprig_rng r;
    sprig_rng_seed(&r, 6);
    for (int rep = 0; rep < 500; rep++) {
        int32_t prefix[8] = { 3, (int32_t)(rep % V) };
        sprig_tree t;
        float probs[SPRIG_TREE_MAX * V];
        sprig_tree_root(&t, prefix[1]);
        sprig_draft_q_reset(&q);
        for (int d = 0; d < 3; d++) {
            int32_t ctx[64], x;
            int nc = node_ctx(&t, d, prefix, 2, ctx);
            q.n_rows = d + 1;
            target_p(ctx, nc, rows + d * V);
            q.row[d] = (int16_t)d;
            CHECK_EQ_INT(sprig_draft_q_draw(&q, d, 1, &x), 1);
            add_child(&t, d, x);
        }
        for (int i = 0; i < t.n; i++) {
            int32_t ctx[64];
            int nc = node_ctx(&t, i, prefix, 2, ctx);
            target_p(ctx, nc, probs + i * V);
        }
        sprig_walk w;
        CHECK_EQ_INT(sprig_tree_walk_sample(&t, probs, V, 10, &q, &r, scratch, &w, NULL), SPRIG_OK);
        CHECK_EQ_INT(w.accepted, 3);
    }
}

int main(void)
{
    RUN(test_one_hot_is_greedy);
    RUN(test_chain_form_and_edges);
    RUN(test_joint_distribution);
    RUN(test_sampled_q_equals_p);
    RUN(test_sampled_drafts);
    return test_summary("test-accept");
}
