/*
 * tests/test-tree.c — draft trees (spec/tree), the greedy walks (spec/walk)
 * and the runner-up branching helper (spec/drafter), model-free.
 *
 * The equivalences that let the tree path stand in for the chain: a linear
 * tree masks exactly as the causal mask (with and without history) and walks
 * exactly as speculative_walk at every accept length and every budget. Then
 * the tree-only behaviour: siblings never see each other, the walk follows
 * the agreeing branch, duplicate siblings give one path, a fully rejected
 * round emits the target's token, the budget clamps, depths, and refusal of
 * bad parents without aborting.
 */
#include "test.h"
#include "base/rng.h"
#include "spec/drafter.h"
#include "spec/dyntree.h"
#include "spec/joint.h"
#include "spec/shape.h"
#include "spec/routes.h"

#include <math.h>
#include "spec/tree.h"
#include "spec/walk.h"

#define BLOCKED (-1e9f)

static bool causal_equal(const float *m, int n, int offset)
{
    for (int q = 0; q < n; q++)
        for (int c = 0; c < offset + n; c++) {
            float want = c <= offset + q ? 0.0f : BLOCKED;
            if (m[q * (offset + n) + c] != want) return false;
        }
    return true;
}

static void test_linear_mask_is_causal(void)
{
    sprig_error err;
    static float m[SPRIG_TREE_MAX * (SPRIG_TREE_MAX + 16)];
    const int32_t drafts[8] = { 5, 9, 9, 1, 0, 7, 3, 2 };
    for (int d = 0; d <= 8; d++) {
        sprig_tree t;
        CHECK_EQ_INT(sprig_tree_linear(&t, 42, drafts, d, &err), SPRIG_OK);
        CHECK_EQ_INT(t.n, d + 1);
        CHECK(sprig_tree_is_linear(&t));
        sprig_tree_mask(&t, BLOCKED, m);
        CHECKF(causal_equal(m, t.n, 0), "drafts %d", d);
        for (int off = 0; off <= 13; off += 13 / 3 + 1) {
            CHECK_EQ_INT(sprig_tree_mask_with_history(&t, off, BLOCKED, m, &err), SPRIG_OK);
            CHECKF(causal_equal(m, t.n, off), "drafts %d offset %d", d, off);
        }
    }
    sprig_tree t;
    sprig_tree_root(&t, 1);
    CHECK_EQ_INT(sprig_tree_mask_with_history(&t, -1, BLOCKED, m, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "offset") != NULL);
}

/* root 0; children 1, 2, 3 of the root; 4 child of 1; 5 child of 2; 6 child of 4 */
static void branching(sprig_tree *t)
{
    sprig_error err;
    sprig_tree_root(t, 100);
    const int parents[6] = { 0, 0, 0, 1, 2, 4 };
    const int32_t toks[6] = { 10, 20, 30, 11, 21, 12 };
    for (int i = 0; i < 6; i++) {
        int idx = -1;
        CHECK_EQ_INT(sprig_tree_push_child(t, parents[i], toks[i], &idx, &err), SPRIG_OK);
        CHECK_EQ_INT(idx, i + 1);
    }
}

static void test_siblings_never_see_each_other(void)
{
    sprig_tree t;
    branching(&t);
    float m[7 * 7];
    sprig_tree_mask(&t, BLOCKED, m);
    for (int q = 0; q < t.n; q++)
        for (int k = 0; k < t.n; k++) {
            float want = sprig_tree_is_ancestor_or_self(&t, k, q) ? 0.0f : BLOCKED;
            CHECKF(m[q * 7 + k] == want, "q %d k %d", q, k);
        }
    /* explicit: the siblings 1, 2, 3 and the cousins 4, 5 */
    CHECK(m[1 * 7 + 2] == BLOCKED && m[2 * 7 + 1] == BLOCKED && m[3 * 7 + 1] == BLOCKED);
    CHECK(m[4 * 7 + 5] == BLOCKED && m[5 * 7 + 4] == BLOCKED);
    CHECK(m[6 * 7 + 0] == 0.0f && m[6 * 7 + 1] == 0.0f && m[6 * 7 + 4] == 0.0f && m[6 * 7 + 6] == 0.0f);
    CHECK(m[6 * 7 + 2] == BLOCKED && m[6 * 7 + 5] == BLOCKED);
    /* with history: history open, tree block keeps its shape */
    float h[7 * 10];
    sprig_error err;
    CHECK_EQ_INT(sprig_tree_mask_with_history(&t, 3, -7.0f, h, &err), SPRIG_OK);
    sprig_tree_mask(&t, -7.0f, m);
    bool ok = true;
    for (int q = 0; q < 7; q++) {
        for (int c = 0; c < 3; c++) ok &= h[q * 10 + c] == 0.0f;
        for (int k = 0; k < 7; k++) ok &= h[q * 10 + 3 + k] == m[q * 7 + k];
    }
    CHECK(ok);
    float h0[49];
    CHECK_EQ_INT(sprig_tree_mask_with_history(&t, 0, -7.0f, h0, &err), SPRIG_OK);
    CHECK(memcmp(h0, m, sizeof h0) == 0);
}

static void test_queries(void)
{
    sprig_tree t;
    branching(&t);
    int c[8];
    CHECK_EQ_INT(sprig_tree_children(&t, 0, c, 8), 3);
    CHECK(c[0] == 1 && c[1] == 2 && c[2] == 3);
    CHECK_EQ_INT(sprig_tree_children(&t, 0, c, 2), 3);   /* count even when cap is short */
    CHECK_EQ_INT(sprig_tree_children(&t, 4, c, 8), 1);
    CHECK_EQ_INT(c[0], 6);
    CHECK_EQ_INT(sprig_tree_children(&t, 6, c, 8), 0);
    CHECK_EQ_INT(sprig_tree_children(&t, 7, c, 8), 0);
    int d[7];
    sprig_tree_depths(&t, d);
    const int want[7] = { 0, 1, 1, 1, 2, 2, 3 };
    CHECK(memcmp(d, want, sizeof want) == 0);
    CHECK_EQ_INT(sprig_tree_max_depth(&t), 3);
    int p[SPRIG_TREE_MAX];
    CHECK_EQ_INT(sprig_tree_path_to(&t, 6, p), 4);
    CHECK(p[0] == 0 && p[1] == 1 && p[2] == 4 && p[3] == 6);
    CHECK_EQ_INT(sprig_tree_path_to(&t, 0, p), 1);
    CHECK_EQ_INT(sprig_tree_path_to(&t, 9, p), 0);
    CHECK(!sprig_tree_is_ancestor_or_self(&t, 1, 5));
    CHECK(sprig_tree_is_ancestor_or_self(&t, 2, 5));
    CHECK(sprig_tree_is_ancestor_or_self(&t, 5, 5));
    CHECK(!sprig_tree_is_ancestor_or_self(&t, 5, 2));
    CHECK(!sprig_tree_is_ancestor_or_self(&t, -1, 2));
    CHECK(!sprig_tree_is_linear(&t));

    /* path_to agrees with is_ancestor_or_self on random trees */
    sprig_rng r;
    sprig_rng_seed(&r, 3);
    for (int rep = 0; rep < 200; rep++) {
        sprig_tree x;
        sprig_tree_root(&x, 0);
        int n = 1 + (int)(sprig_rng_u64(&r) % SPRIG_TREE_MAX);
        while (x.n < n) sprig_tree_push_child(&x, (int)(sprig_rng_u64(&r) % (uint64_t)x.n), x.n, NULL, NULL);
        int depth[SPRIG_TREE_MAX];
        sprig_tree_depths(&x, depth);
        bool ok = true;
        for (int node = 0; node < x.n; node++) {
            int len = sprig_tree_path_to(&x, node, p);
            ok &= len == depth[node] + 1 && p[0] == 0 && p[len - 1] == node;
            for (int a = 0; a < x.n; a++) {
                bool on = false;
                for (int i = 0; i < len; i++) on |= p[i] == a;
                ok &= on == sprig_tree_is_ancestor_or_self(&x, a, node);
            }
        }
        CHECK(ok);
        CHECK_EQ_INT(sprig_tree_validate(&x, 0, NULL), SPRIG_OK);
    }
}

static void test_depths(void)
{
    sprig_error err;
    sprig_tree t;
    const int32_t dr[3] = { 1, 2, 3 };
    CHECK_EQ_INT(sprig_tree_linear(&t, 0, dr, 3, &err), SPRIG_OK);
    int d[4];
    sprig_tree_depths(&t, d);
    CHECK(d[0] == 0 && d[1] == 1 && d[2] == 2 && d[3] == 3);
    /* chain of three plus a sibling leaf */
    CHECK_EQ_INT(sprig_tree_linear(&t, 0, dr, 2, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_tree_push_child(&t, 0, 9, NULL, &err), SPRIG_OK);
    sprig_tree_depths(&t, d);
    CHECK(d[0] == 0 && d[1] == 1 && d[2] == 2 && d[3] == 1);
}

static void test_bad_parents_refused(void)
{
    sprig_error err;
    sprig_tree t;
    sprig_tree_root(&t, 7);
    CHECK_EQ_INT(sprig_tree_push_child(&t, 1, 3, NULL, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "parent 1") != NULL);
    CHECK_EQ_INT(sprig_tree_push_child(&t, -1, 3, NULL, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(t.n, 1);
    for (int i = 1; i < SPRIG_TREE_MAX; i++) CHECK_EQ_INT(sprig_tree_push_child(&t, i - 1, i, NULL, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_tree_push_child(&t, 0, 3, NULL, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "full") != NULL);
    CHECK_EQ_INT(t.n, SPRIG_TREE_MAX);
    int32_t many[SPRIG_TREE_MAX] = { 0 };
    CHECK_EQ_INT(sprig_tree_linear(&t, 0, many, SPRIG_TREE_MAX, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_tree_linear(&t, 0, many, -1, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_tree_linear(&t, 0, NULL, 2, &err), SPRIG_E_INVALID_ARG);

    /* hand-filled trees */
    sprig_tree b;
    branching(&b);
    CHECK_EQ_INT(sprig_tree_validate(&b, 200, &err), SPRIG_OK);
    b.parents[4] = 4;
    CHECK_EQ_INT(sprig_tree_validate(&b, 200, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "node 4") != NULL);
    branching(&b);
    b.parents[0] = 2;
    CHECK_EQ_INT(sprig_tree_validate(&b, 200, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "parents[0]") != NULL);
    branching(&b);
    b.tokens[3] = 200;
    CHECK_EQ_INT(sprig_tree_validate(&b, 200, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "node 3") != NULL);
    b.n = 0;
    CHECK_EQ_INT(sprig_tree_validate(&b, 200, &err), SPRIG_E_INVALID_ARG);
    b.n = SPRIG_TREE_MAX + 1;
    CHECK_EQ_INT(sprig_tree_validate(&b, 200, &err), SPRIG_E_INVALID_ARG);
}

static bool walks_equal(const sprig_walk *a, const sprig_walk *b)
{
    if (a->accepted != b->accepted || a->n_path != b->n_path || a->n_emit != b->n_emit) return false;
    for (int i = 0; i < a->n_path; i++)
        if (a->path[i] != b->path[i]) return false;
    for (int i = 0; i < a->n_emit; i++)
        if (a->emit[i] != b->emit[i]) return false;
    return true;
}

static void test_linear_walk_equals_chain(void)
{
    sprig_error err;
    const int32_t drafts[7] = { 4, 8, 15, 16, 23, 42, 99 };
    int checked_lengths = 0;
    for (int d = 0; d <= 7; d++) {
        sprig_tree t;
        CHECK_EQ_INT(sprig_tree_linear(&t, 1, drafts, d, &err), SPRIG_OK);
        for (int a = 0; a <= d; a++) {
            /* target agrees with the first a drafts, then says 500 + a */
            int32_t target[8];
            for (int i = 0; i <= d; i++) target[i] = i < a ? drafts[i] : 500 + i;
            sprig_walk wc, wt;
            sprig_speculative_walk(drafts, target, d + 1, 1000, &wc);
            sprig_tree_walk(&t, target, 1000, &wt);
            CHECK_EQ_INT(wc.accepted, a);
            CHECK(walks_equal(&wc, &wt));
            bool ok = wt.n_path == a + 1 && wt.n_emit == a + 1;
            for (int i = 0; i <= a; i++) ok &= wt.path[i] == i;
            for (int i = 0; i < a; i++) ok &= wt.emit[i] == drafts[i];
            ok &= wt.emit[a] == target[a];
            CHECKF(ok, "drafts %d accept %d", d, a);
            checked_lengths++;
            /* every budget clamps the same way on both walks */
            for (int budget = -1; budget <= d + 2; budget++) {
                sprig_speculative_walk(drafts, target, d + 1, budget, &wc);
                sprig_tree_walk(&t, target, budget, &wt);
                CHECKF(walks_equal(&wc, &wt), "drafts %d accept %d budget %d", d, a, budget);
                int want = budget <= 0 ? 0 : SPRIG_MIN(a + 1, budget);
                CHECK_EQ_INT(wc.n_emit, want);
                if (budget >= 1) CHECK_EQ_INT(wc.accepted + 1, wc.n_emit);
            }
        }
    }
    CHECK_EQ_INT(checked_lengths, 36);
}

static void test_walk_follows_agreeing_branch(void)
{
    sprig_tree t;
    branching(&t);   /* 0:100 -> {1:10 -> 4:11 -> 6:12, 2:20 -> 5:21, 3:30} */
    int32_t target[7] = { 20, 0, 21, 0, 0, 77, 0 };
    sprig_walk w;
    sprig_tree_walk(&t, target, 100, &w);
    CHECK_EQ_INT(w.accepted, 2);
    CHECK(w.n_path == 3 && w.path[0] == 0 && w.path[1] == 2 && w.path[2] == 5);
    CHECK(w.n_emit == 3 && w.emit[0] == 20 && w.emit[1] == 21 && w.emit[2] == 77);
    /* the other deep branch */
    int32_t t2[7] = { 10, 11, 0, 0, 12, 0, 55 };
    sprig_tree_walk(&t, t2, 100, &w);
    CHECK(w.n_path == 4 && w.path[1] == 1 && w.path[2] == 4 && w.path[3] == 6);
    CHECK(w.n_emit == 4 && w.emit[3] == 55);
    /* a leaf sibling */
    int32_t t3[7] = { 30, 0, 0, 66, 0, 0, 0 };
    sprig_tree_walk(&t, t3, 100, &w);
    CHECK(w.accepted == 1 && w.path[1] == 3 && w.emit[0] == 30 && w.emit[1] == 66);
    /* fully rejected: the target's token is emitted */
    int32_t t4[7] = { 31, 0, 0, 0, 0, 0, 0 };
    sprig_tree_walk(&t, t4, 100, &w);
    CHECK(w.accepted == 0 && w.n_path == 1 && w.path[0] == 0 && w.n_emit == 1 && w.emit[0] == 31);
    /* budget clamps mid-branch */
    sprig_tree_walk(&t, t2, 2, &w);
    CHECK(w.accepted == 1 && w.n_emit == 2 && w.emit[0] == 10 && w.emit[1] == 11);
    sprig_tree_walk(&t, t2, 1, &w);
    CHECK(w.accepted == 0 && w.n_emit == 1 && w.emit[0] == 10);
    sprig_tree_walk(&t, t2, 0, &w);
    CHECK(w.accepted == 0 && w.n_emit == 0 && w.n_path == 1);
}

static void test_duplicate_siblings_one_path(void)
{
    sprig_error err;
    sprig_tree t;
    sprig_tree_root(&t, 1);
    CHECK_EQ_INT(sprig_tree_push_child(&t, 0, 5, NULL, &err), SPRIG_OK);   /* 1 */
    CHECK_EQ_INT(sprig_tree_push_child(&t, 0, 5, NULL, &err), SPRIG_OK);   /* 2, same token */
    CHECK_EQ_INT(sprig_tree_push_child(&t, 2, 6, NULL, &err), SPRIG_OK);   /* 3 under the second twin */
    CHECK_EQ_INT(sprig_tree_push_child(&t, 1, 7, NULL, &err), SPRIG_OK);   /* 4 under the first twin */
    int32_t target[5] = { 5, 7, 6, 0, 9 };
    sprig_walk w;
    sprig_tree_walk(&t, target, 100, &w);
    /* first in insertion order wins: 0 -> 1 -> 4 */
    CHECK(w.n_path == 3 && w.path[1] == 1 && w.path[2] == 4);
    CHECK(w.n_emit == 3 && w.emit[0] == 5 && w.emit[1] == 7 && w.emit[2] == 9);
}

/* Random trees and targets: the walk's path is a chain of agreeing children
 * and stops where no child agrees. */
static void test_walk_property(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 99);
    int reps = test_quick() ? 300 : 3000;
    for (int rep = 0; rep < reps; rep++) {
        sprig_tree t;
        sprig_tree_root(&t, 0);
        int n = 1 + (int)(sprig_rng_u64(&r) % 20);
        while (t.n < n) sprig_tree_push_child(&t, (int)(sprig_rng_u64(&r) % (uint64_t)t.n), (int32_t)(sprig_rng_u64(&r) % 3), NULL, NULL);
        int32_t target[SPRIG_TREE_MAX];
        for (int i = 0; i < n; i++) target[i] = (int32_t)(sprig_rng_u64(&r) % 3);
        sprig_walk w;
        sprig_tree_walk(&t, target, 1000, &w);
        bool ok = w.path[0] == 0 && w.n_emit == w.n_path;
        for (int i = 1; i < w.n_path; i++) {
            int c = w.path[i], p = w.path[i - 1];
            ok &= t.parents[c] == p && t.tokens[c] == target[p];
            /* no earlier sibling matched */
            for (int s = p + 1; s < c; s++) ok &= !(t.parents[s] == p && t.tokens[s] == target[p]);
            ok &= w.emit[i - 1] == t.tokens[c];
        }
        int stop = w.path[w.n_path - 1];
        for (int c = stop + 1; c < t.n; c++) ok &= !(t.parents[c] == stop && t.tokens[c] == target[stop]);
        ok &= w.emit[w.n_emit - 1] == target[stop];
        CHECKF(ok, "rep %d", rep);
        if (!ok) break;
    }
}

static void test_tree_from_draft(void)
{
    sprig_error err;
    sprig_draft d = { .n = 4, .tokens = { 10, 11, 12, 13 }, .runner_up = { 20, -1, 12, 23 } };
    sprig_tree t;
    /* step 0 has a runner-up; step 1 none; step 2's equals the draft; step 3 counts */
    CHECK_EQ_INT(sprig_tree_from_draft(&t, 1, &d, 2, &err), SPRIG_OK);
    CHECK_EQ_INT(t.n, 7);
    CHECK(t.tokens[5] == 20 && t.parents[5] == 0);
    CHECK(t.tokens[6] == 23 && t.parents[6] == 3);
    CHECK_EQ_INT(sprig_tree_validate(&t, 100, &err), SPRIG_OK);
    int dep[7];
    sprig_tree_depths(&t, dep);
    CHECK(dep[5] == 1 && dep[6] == 4);
    CHECK_EQ_INT(sprig_tree_from_draft(&t, 1, &d, 1, &err), SPRIG_OK);
    CHECK_EQ_INT(t.n, 6);
    CHECK_EQ_INT(sprig_tree_from_draft(&t, 1, &d, 0, &err), SPRIG_OK);
    CHECK_EQ_INT(t.n, 5);
    CHECK(sprig_tree_is_linear(&t));
    CHECK_EQ_INT(sprig_tree_from_draft(&t, 1, &d, -1, &err), SPRIG_E_INVALID_ARG);
    /* the chain child comes first: a target agreeing with the chain takes it */
    CHECK_EQ_INT(sprig_tree_from_draft(&t, 1, &d, 2, &err), SPRIG_OK);
    int32_t target[7] = { 20, 0, 0, 0, 0, 44, 0 };
    sprig_walk w;
    sprig_tree_walk(&t, target, 100, &w);
    CHECK(w.accepted == 1 && w.path[1] == 5 && w.emit[0] == 20 && w.emit[1] == 44);
}

/* dynamic trees (spec/dyntree): random logits for every expanded node; the
 * selection is the best max_nodes candidates of depth <= D, a valid tree by
 * depth whose nodes' children come best first, and every chosen node's
 * parent outscores it */
static void test_dyntree_select(void)
{
    enum { V = 50 };
    static sprig_dyntree t;
    float logits[V];
    sprig_rng rng;
    sprig_rng_seed(&rng, 11);
    for (int trial = 0; trial < 200; trial++) {
        const int w = 1 + trial % 4, D = 1 + trial % 6, M = 2 + trial % 30;
        sprig_dyntree_init(&t, 7);
        for (int i = 0; i < V; i++) logits[i] = (float)sprig_rng_normal(&rng);
        sprig_dyntree_expand(&t, 0, logits, V, w);
        for (int depth = 1; depth < D; depth++) {
            int batch[SPRIG_DYNTREE_MAX_WIDTH];
            int nf = sprig_dyntree_frontier(&t, depth, w, batch);
            for (int j = 1; j < nf; j++) CHECK(t.score[batch[j - 1]] >= t.score[batch[j]]);
            for (int j = 0; j < nf; j++) {
                t.slot[batch[j]] = (int16_t)j;
                for (int i = 0; i < V; i++) logits[i] = (float)sprig_rng_normal(&rng);
                CHECK_EQ_INT(sprig_dyntree_expand(&t, batch[j], logits, V, w), w);
            }
        }
        sprig_tree out;
        int map[SPRIG_TREE_MAX];
        sprig_dyntree_select(&t, M, D, &out, map);
        sprig_error err = { 0 };
        CHECK(sprig_tree_validate(&out, V, &err) == SPRIG_OK);
        CHECK(out.n <= M && out.tokens[0] == 7 && map[0] == 0);
        int eligible = 0;   /* candidates of depth <= D: the tree takes min(M, all of them) */
        for (int i = 0; i < t.n; i++) eligible += t.depth[i] <= D;
        CHECK_EQ_INT(out.n, eligible < M ? eligible : M);
        int depths[SPRIG_TREE_MAX];
        sprig_tree_depths(&out, depths);
        float worst_in = 1e30f;
        bool picked[SPRIG_DYNTREE_CAP] = { false };
        for (int i = 0; i < out.n; i++) {
            CHECK_EQ_INT(depths[i], t.depth[map[i]]);
            CHECK(i == 0 || depths[i] >= depths[i - 1]);   /* by depth */
            if (i) CHECK(map[out.parents[i]] == t.parent[map[i]] && t.score[map[out.parents[i]]] >= t.score[map[i]]);
            if (i > 1 && out.parents[i] == out.parents[i - 1]) CHECK(t.score[map[i - 1]] >= t.score[map[i]]);   /* best first */
            if (t.score[map[i]] < worst_in) worst_in = t.score[map[i]];
            picked[map[i]] = true;
        }
        for (int i = 0; i < t.n; i++)   /* nothing left out beats what was taken (when it could have been taken) */
            if (!picked[i] && t.depth[i] <= D && picked[t.parent[i]]) CHECK(t.score[i] <= worst_in);
    }
}

/* tree auto's choice (spec/shape): a confident chain of drafts (q = 0.9
 * per step, calibrated to 0.9 by observations) is verified whole when rows
 * are free, not at all when each row costs a whole forward, and in between
 * where the expected tokens per millisecond peak; observations move the
 * calibration toward what the target accepted */
static void test_shape_choice(void)
{
    enum { V = 8, D = 6 };
    static sprig_dyntree t;
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = i == 3 ? logf(0.9f) : logf(0.1f / (V - 1));   /* q = 0.9 on token 3 */
    sprig_dyntree_init(&t, 1);
    sprig_dyntree_expand(&t, 0, logits, V, 2);
    for (int depth = 1; depth < D; depth++) {
        int batch[SPRIG_DYNTREE_MAX_WIDTH];
        int nf = sprig_dyntree_frontier(&t, depth, 1, batch);
        t.slot[batch[0]] = 0;
        CHECK(nf == 1 && sprig_dyntree_expand(&t, batch[0], logits, V, 2) == 2);
    }
    sprig_shape s;
    sprig_shape_init(&s);
    for (int i = 0; i < 200; i++) {   /* calibrate: the 0.9 bucket accepted 9 times in 10, the low one never */
        s.trials[14] += 1; s.hits[14] += i % 10 != 0;
        s.trials[0] += 1;
    }
    CHECK(fabs(sprig_shape_accept(&s, 0.9) - 0.9) < 0.01 && sprig_shape_accept(&s, 0.01) < 0.01);
    sprig_tree out;
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0, true);   /* rows are free */
    sprig_shape_select(&s, &t, 12, D, &out, NULL);
    CHECK_EQ_INT(out.n, 12);   /* all of the chain, then the low leaves too (they add a little for nothing) */
    CHECK(sprig_tree_max_depth(&out) == D);
    sprig_shape_init(&s);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0 * n, true);   /* a row costs a forward */
    sprig_shape_select(&s, &t, 12, D, &out, NULL);
    CHECK_EQ_INT(out.n, 1);
    sprig_shape_init(&s);
    for (int i = 0; i < 200; i++) { s.trials[14] += 1; s.hits[14] += i % 10 != 0; s.trials[0] += 1; }
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, n <= 4 ? 10.0 : 10.0 + 5.0 * (n - 4), true);
    sprig_shape_select(&s, &t, 12, D, &out, NULL);
    /* chain of 0.9^d: E(m) = 1 + .9 + .81 + ..., T(m) flat to 4 rows then +5 ms a row: the best is 4 */
    CHECK_EQ_INT(out.n, 4);
    CHECK(sprig_tree_is_linear(&out));
    CHECK(fabs(sprig_shape_t(&s, 6) - 20.0) < 1e-9 && fabs(sprig_shape_t(&s, 64) - 310.0) < 1e-9);
    /* observe: the target took the first two drafts, not the third */
    sprig_walk w = { .accepted = 2, .n_path = 3, .path = { 0, 1, 2 }, .n_emit = 3 };
    const double before = s.trials[14];
    sprig_shape_observe(&s, &out, &w);
    CHECK(s.trials[14] == before + 3 && s.hits[14] == 180 + 2);
}

/* A mixture-of-experts target: rows are priced by the experts they read.
 * Random routing's union is the profile's; the rounds teach the rows'
 * locality, which prices every size (also those never chosen), and a round
 * enters the profile as its random-routing equivalent. */
/* A drafter without a tree of its own (n-gram, the oracle): under tree auto
 * its chain and runner-ups are candidates the shape chooses from by the
 * measured costs, not a fixed chain-plus-branches tree. */
static sprig_status blk_draft(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    (void)d; (void)c; (void)err;
    out->n = k - 1;
    for (int j = 0; j < out->n; j++) {
        out->tokens[j] = 10 + j;
        out->runner_up[j] = 40 + j;
        out->margin[j] = 1.0f;
    }
    return SPRIG_OK;
}

static void test_block_drafter_tree_auto(void)
{
    static const struct sprig_drafter_vt vt = { .name = "block", .draft_block = blk_draft };
    sprig_drafter d = { .vt = &vt };
    sprig_error err = { 0 };
    static sprig_shape s;
    sprig_shape_init(&s);
    sprig_draft_ctx c = { .bonus = 7, .tree_width = 1, .shape = &s };
    enum { K = 6, MAX = 10 };
    sprig_tree t;
    /* rows that cost nothing: every candidate, the chain (5) and each step's runner-up (5), within MAX */
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0, true);
    CHECK(sprig_drafter_draft_tree(&d, &c, K, MAX, 100, &t, &err) == SPRIG_OK);
    CHECK_EQ_INT(t.n, MAX);
    CHECK(t.tokens[0] == 7 && sprig_tree_max_depth(&t) == K - 1);
    int ru = 0;
    for (int i = 1; i < t.n; i++) ru += t.tokens[i] >= 40;
    CHECK_EQ_INT(ru, MAX - K);   /* the chain first (q 0.8), then the runner-ups (q 0.1) */
    /* rows that cost a whole step each: no draft pays, the bonus is verified alone */
    sprig_shape_init(&s);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0 * n, true);
    CHECK(sprig_drafter_draft_tree(&d, &c, K, MAX, 100, &t, &err) == SPRIG_OK);
    CHECK_EQ_INT(t.n, 1);
    /* in between (each row 20% of a step): the chain's first drafts, no runner-up */
    sprig_shape_init(&s);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0 + 2.0 * (n - 1), true);
    CHECK(sprig_drafter_draft_tree(&d, &c, K, MAX, 100, &t, &err) == SPRIG_OK);
    CHECKF(t.n > 1 && t.n < K, "%d nodes", t.n);
    for (int i = 1; i < t.n; i++) CHECK(t.tokens[i] == 10 + i - 1 && t.parents[i] == i - 1);
    /* without tree auto: the fixed tree, the chain plus MAX - K runner-up leaves */
    c.shape = NULL;
    CHECK(sprig_drafter_draft_tree(&d, &c, K, MAX, 100, &t, &err) == SPRIG_OK);
    CHECK_EQ_INT(t.n, MAX);
}

static void test_shape_experts(void)
{
    sprig_shape s;
    sprig_shape_init(&s);
    CHECK(sprig_shape_union_random(&s, 4) == 0 && sprig_shape_expert_ms(&s) == 0);   /* dense: off */
    /* 4 layers of 64 experts, 4 per row; 1 MB an expert, 4 MB of other weights: a row reads 20 MB */
    const sprig_expert_load el = { .layers = 4, .n_expert = 64, .n_used = 4, .expert_bytes = 1e6, .dense_bytes = 4e6, .last = -1 };
    sprig_shape_set_experts(&s, &el);
    CHECK(fabs(sprig_shape_union_random(&s, 1) - 16.0) < 1e-9);            /* one row: k per layer */
    CHECK(fabs(sprig_shape_union_random(&s, 2) - 4 * 64 * (1 - pow(60.0 / 64, 2))) < 1e-9);
    /* the profile: T(n) = 10 ms + 0.5 ms per expert past one row's (c = T(1) * 1 MB / 20 MB = 0.5) */
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0 + 0.5 * (sprig_shape_union_random(&s, n) - 16), true);
    CHECK(fabs(sprig_shape_expert_ms(&s) - 0.5) < 1e-9);
    CHECK(fabs(sprig_shape_alpha(&s) - 1.0) < 1e-9);   /* the prior: rows route as unrelated ones */
    CHECK(fabs(sprig_shape_t(&s, 8) - (10.0 + 0.5 * (sprig_shape_union_random(&s, 8) - 16))) < 1e-9);
    /* a chain of 0.9 drafts: with random routing's price the rows cost too much */
    enum { V = 8, D = 10 };
    static sprig_dyntree t;
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = i == 3 ? logf(0.9f) : logf(0.1f / (V - 1));
    sprig_dyntree_init(&t, 1);
    sprig_dyntree_expand(&t, 0, logits, V, 1);
    for (int depth = 1; depth < D; depth++) {
        int batch[SPRIG_DYNTREE_MAX_WIDTH];
        CHECK(sprig_dyntree_frontier(&t, depth, 1, batch) == 1);
        t.slot[batch[0]] = 0;
        CHECK(sprig_dyntree_expand(&t, batch[0], logits, V, 1) == 1);
    }
    for (int i = 0; i < 200; i++) { s.trials[14] += 1; s.hits[14] += i % 10 != 0; }
    sprig_tree before, after;
    sprig_shape_select(&s, &t, 16, D, &before, NULL);
    /* rounds of 8 rows that share experts: the union of 1 + 0.1 * 7 unrelated rows */
    const double t8 = sprig_shape_t(&s, 8), u8 = sprig_shape_union_random(&s, 1.7);
    for (int i = 0; i < 100; i++) sprig_shape_cost_round(&s, 8, 10.0 + 0.5 * (u8 - 16), u8);
    CHECKF(fabs(sprig_shape_alpha(&s) - (64 * 0.1 + 2) / 66) < 1e-6, "alpha %.4f", sprig_shape_alpha(&s));
    /* the profile kept its random-routing time at 8 rows (the rounds entered as their equivalent) */
    const double tr8 = 10.0 + 0.5 * (sprig_shape_union_random(&s, 8) - 16);
    CHECKF(fabs(sprig_costs_median(&s.cost, 8) - tr8) < 1e-5, "T_random(8) %.4f, expected %.4f", sprig_costs_median(&s.cost, 8), tr8);
    /* every size is priced by the locality: 8 rows now as the rounds measured, 16 (never run) below random's */
    CHECKF(sprig_shape_t(&s, 8) < t8 && fabs(sprig_shape_t(&s, 8) - (10.0 + 0.5 * (sprig_shape_union(&s, 8) - 16))) < 1e-6,
           "T(8) %.3f", sprig_shape_t(&s, 8));
    CHECK(sprig_shape_t(&s, 16) < sprig_costs_median(&s.cost, 16) && sprig_shape_t(&s, 16) >= sprig_shape_t(&s, 1));
    sprig_shape_select(&s, &t, 16, D, &after, NULL);
    CHECKF(after.n > before.n, "rows sharing experts must buy a longer chain: %d then %d nodes", before.n, after.n);
    /* a dense round (experts unknown) is the plain cost */
    sprig_shape d;
    sprig_shape_init(&d);
    sprig_shape_cost_round(&d, 4, 12.0, -1);
    CHECK(sprig_costs_median(&d.cost, 4) == 12.0 && sprig_costs_fresh(&d.cost, 4));
}

/* With the target's routings remembered, at equal acceptance the draft whose
 * token routed to the experts the tree already reads is verified, not the
 * one that brings new experts; swapping the routings swaps the choice, and
 * without routings the choice is by acceptance alone (the drafter's order). */
static void test_shape_shared_experts(void)
{
    for (int swap = 0; swap < 3; swap++) {
        sprig_shape s;
        sprig_shape_init(&s);
        const sprig_expert_load el = { .layers = 4, .n_expert = 64, .n_used = 4, .expert_bytes = 1e6, .dense_bytes = 4e6, .last = -1 };
        sprig_shape_set_experts(&s, &el);
        for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 10.0 + 0.5 * (sprig_shape_union_random(&s, n) - 16), true);
        for (int i = 0; i < 200; i++) { s.trials[7] += 1; s.hits[7] += i % 20 < 9; }   /* q 0.45: 0.45 */
        static sprig_routes R;
        CHECK(sprig_routes_init(&R, 4, 64, 4, NULL) == SPRIG_OK);
        int16_t same[4][4], fresh[4][4];
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < 4; j++) { same[l][j] = (int16_t)j; fresh[l][j] = (int16_t)(40 + j); }
        const int32_t root = 10, a = 11, b = 12;
        sprig_routes_note(&R, &root, 1, &same[0][0], 4, 4);
        sprig_routes_note(&R, &a, 1, swap == 1 ? &fresh[0][0] : &same[0][0], 4, 4);
        sprig_routes_note(&R, &b, 1, swap == 1 ? &same[0][0] : &fresh[0][0], 4, 4);
        CHECK(sprig_routes_get(&R, 11) && !sprig_routes_get(&R, 11 + SPRIG_ROUTES_CAP));
        s.routes = swap == 2 ? NULL : &R;
        enum { V = 16 };
        static sprig_dyntree t;
        float logits[V];
        for (int i = 0; i < V; i++) logits[i] = i == a || i == b ? logf(0.45f) : logf(0.1f / (V - 2));
        sprig_dyntree_init(&t, root);
        CHECK(sprig_dyntree_expand(&t, 0, logits, V, 2) == 2);   /* a first (equal q: the lower id) */
        sprig_tree out;
        sprig_shape_select(&s, &t, 2, 1, &out, NULL);
        if (swap == 2) {   /* priced as random routing: a 0.45 draft does not pay for 15 more experts */
            CHECK_EQ_INT(out.n, 1);
            CHECK_EQ_INT((int)s.moe.by_experts, 0);
            sprig_routes_free(&R);
            continue;
        }
        CHECK_EQ_INT(out.n, 2);   /* a draft that reads no new expert costs a row's dense share only */
        const int32_t want = swap == 1 ? b : a;
        CHECKF(out.tokens[1] == want, "routings %s: verified draft %d, expected %d", swap == 0 ? "a shares" : swap == 1 ? "b shares" : "none",
               out.tokens[1], want);
        CHECK_EQ_INT((int)s.moe.by_experts, 1);
        /* sampled drafts (the root's children drawn from q) are never chosen by their own tokens */
        t.qrow[0] = 0;
        sprig_shape_select(&s, &t, 2, 1, &out, NULL);
        CHECK_EQ_INT((int)s.moe.by_experts, 1);
        sprig_routes_free(&R);
    }
}

/* Candidates for the shape tests: every node's children are a 0.6 and a 0.3
 * draft; the 0.6 one is expanded, depth after depth, to `depth`. */
static void chain_06_03_width(sprig_dyntree *t, int depth, int w)
{
    enum { V = 8 };
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = i == 3 ? logf(0.6f) : i == 5 ? logf(0.3f) : logf(0.1f / (V - 2));
    sprig_dyntree_init(t, 1);
    sprig_dyntree_expand(t, 0, logits, V, w);
    for (int d = 1; d < depth; d++) {
        int batch[SPRIG_DYNTREE_MAX_WIDTH];
        CHECK(sprig_dyntree_frontier(t, d, 1, batch) == 1);
        t->slot[batch[0]] = 0;
        CHECK(sprig_dyntree_expand(t, batch[0], logits, V, w) == w);
    }
}

static void chain_06_03(sprig_dyntree *t, int depth)
{
    chain_06_03_width(t, depth, 2);
}

/* A fresh shape whose q buckets are honest: 0.6 accepted 6 in 10, 0.3 3 in 10. */
static void honest_06_03(sprig_shape *s)
{
    sprig_shape_init(s);
    for (int i = 0; i < 1000; i++) {
        s->trials[9] += 1; s->hits[9] += i % 10 < 6;
        s->trials[4] += 1; s->hits[4] += i % 10 < 3;
    }
}

/* the depth and sibling-rank corrections: a runner-up the target never
 * takes stops being verified though its q alone would earn it a row, and
 * observe counts each verified node under its depth and rank */
static void test_shape_rank_depth(void)
{
    enum { D = 5 };
    static sprig_dyntree t;
    chain_06_03(&t, D);
    sprig_shape s;
    honest_06_03(&s);
    CHECK(fabs(sprig_shape_accept_at(&s, 0.6, 1, 0) - sprig_shape_accept(&s, 0.6)) < 1e-12);   /* nothing seen: no correction */
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, n <= 4 ? 10.0 : 10.0 + 50.0 * (n - 4), true);
    sprig_tree out;
    int map[SPRIG_TREE_MAX];
    sprig_shape_select(&s, &t, 8, D, &out, map);
    /* four rows: the root, the 0.6 draft (0.6), its 0.6 child (0.36) and the 0.3 runner-up (0.3) beat depth 3 (0.216) */
    CHECK_EQ_INT(out.n, 4);
    CHECK(!sprig_tree_is_linear(&out));
    /* nodes by depth, children best first: 1 = the 0.6 draft, 2 = the runner-up, 3 = the 0.6 draft's child */
    CHECK(s.qr[1] == 0 && s.qd[1] == 1 && s.qr[2] == 1 && s.qd[2] == 1 && s.qr[3] == 0 && s.qd[3] == 2);
    /* observe: the target took the runner-up (node 2, a child of the root) */
    sprig_walk w = { .accepted = 1, .n_path = 2, .path = { 0, 2 }, .n_emit = 2 };
    sprig_shape_observe(&s, &out, &w);
    CHECK(s.r_trials[0] == 1 && s.r_hits[0] == 0 && s.r_trials[1] == 1 && s.r_hits[1] == 1);
    CHECK(s.d_trials[0] == 2 && s.d_hits[0] == 1 && s.d_trials[1] == 0);
    CHECK(fabs(s.r_exp[1] - sprig_shape_accept(&s, 0.3)) < 0.01);
    /* runner-ups never taken since: 0 of 100 where 30 were expected */
    s.r_hits[1] = 0; s.r_exp[1] = 30.0; s.r_trials[1] = 100;
    const double a1 = sprig_shape_accept_at(&s, 0.3, 1, 1), a0 = sprig_shape_accept_at(&s, 0.3, 1, 0);
    const double dcorr = (s.d_hits[0] + 4.0) / (s.d_exp[0] + 4.0);
    CHECK(fabs(a1 - sprig_shape_accept(&s, 0.3) * 4.0 / 34.0 * dcorr) < 1e-12);
    CHECK(fabs(a0 - sprig_shape_accept(&s, 0.3) * 4.0 / (4.0 + s.r_exp[0]) * dcorr) < 1e-12);
    CHECK(a1 < 0.05);
    sprig_shape_select(&s, &t, 8, D, &out, NULL);
    CHECK_EQ_INT(out.n, 4);
    CHECK(sprig_tree_is_linear(&out));   /* the chain's third draft instead */
    /* deep drafts overconfident: depth 2 taken 0 times where 40 were expected; depth 1 as expected */
    honest_06_03(&s);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, n <= 3 ? 10.0 : 10.0 + 50.0 * (n - 3), true);
    sprig_shape_select(&s, &t, 8, D, &out, NULL);
    CHECK_EQ_INT(out.n, 3);
    CHECK(sprig_tree_is_linear(&out));   /* uncorrected: the 0.6 draft and its child (0.36) beat the runner-up (0.3) */
    s.d_hits[0] = 60; s.d_exp[0] = 60; s.d_trials[0] = 100;
    s.d_hits[1] = 0; s.d_exp[1] = 40; s.d_trials[1] = 100;
    CHECK(fabs(sprig_shape_accept_at(&s, 0.6, 1, 0) - sprig_shape_accept(&s, 0.6)) < 1e-12);
    CHECK(sprig_shape_accept_at(&s, 0.6, 2, 0) < 0.07);
    sprig_shape_select(&s, &t, 8, D, &out, NULL);
    /* depth 2 is now worth 0.6 x 0.055: the root's two children instead */
    CHECK_EQ_INT(out.n, 3);
    CHECK(sprig_tree_max_depth(&out) == 1);
    char line[1280];
    sprig_shape_summary(&s, line, sizeof line);
    CHECK(strstr(line, "by depth: 1 60/100 (x1.00) 2 0/100 (x0.09)") != NULL);
}

/* spec/costs: a median per row count that outliers do not move; a
 * provisional time replaced by the first real one; more rows never cheaper;
 * a count measured long ago, or only provisionally, priced no higher than
 * the chord of the fresh counts below it; bad input ignored */
static void test_costs(void)
{
    static sprig_costs c;
    sprig_costs_init(&c, 64);
    CHECK(sprig_costs_t(&c, 5) == 5.0);   /* nothing known: by rows */
    for (int i = 0; i < 9; i++) sprig_costs_add(&c, 4, i % 4 == 1 ? 100.0 : 20.0);   /* three slowed forwards of nine */
    CHECK(sprig_costs_median(&c, 4) == 20.0 && sprig_costs_samples(&c, 4) == 9);
    for (int i = 0; i < 5; i++) sprig_costs_add(&c, 4, 30.0);   /* a lasting change wins within half a window */
    CHECK(sprig_costs_median(&c, 4) == 30.0);
    sprig_costs_add(&c, 4, NAN);
    sprig_costs_add(&c, 4, -1);
    sprig_costs_add(&c, 0, 5);
    sprig_costs_add(&c, 65, 5);
    CHECK(sprig_costs_samples(&c, 4) == 14 && c.tick == 14);
    CHECK(sprig_costs_t(&c, 1) == 30.0 && sprig_costs_t(&c, 64) == 30.0 * 16);   /* flat below, proportional past one count */
    sprig_costs_provisional(&c, 8, 50);
    sprig_costs_provisional(&c, 8, 45);   /* a profile: the best of its repetitions */
    sprig_costs_provisional(&c, 8, 47);
    CHECK(sprig_costs_median(&c, 8) == 45.0 && !sprig_costs_fresh(&c, 8) && sprig_costs_samples(&c, 8) == 3);
    sprig_costs_add(&c, 8, 60);   /* the first real one replaces it */
    CHECK(sprig_costs_median(&c, 8) == 60.0 && sprig_costs_fresh(&c, 8) && sprig_costs_samples(&c, 8) == 4);
    CHECK(fabs(sprig_costs_t(&c, 6) - 45.0) < 1e-9 && fabs(sprig_costs_t(&c, 10) - 75.0) < 1e-9);   /* linear, then the last slope */
    sprig_costs_add(&c, 12, 50);   /* cheaper than 8: the two are pooled (one sample each), 55 ms at their centre, 10 rows */
    CHECK(fabs(sprig_costs_t(&c, 10) - 55.0) < 1e-9);
    CHECK(fabs(sprig_costs_t(&c, 7) - (30.0 + 25.0 * 3 / 6)) < 1e-9 && fabs(sprig_costs_t(&c, 12) - (55.0 + 25.0 * 2 / 6)) < 1e-9);
    sprig_costs_add(&c, 12, 50);   /* two to one: 160/3 ms at 32/3 rows */
    CHECK(fabs(sprig_costs_t(&c, 4) - 30.0) < 1e-9 && fabs(sprig_costs_t(&c, 8) - (30.0 + (160.0 / 3 - 30.0) * 4 / (32.0 / 3 - 4))) < 1e-9);
    for (int n = 1; n < 64; n++) CHECK(sprig_costs_t(&c, n + 1) >= sprig_costs_t(&c, n));
    /* stale: 16 rows provisionally 200 ms; 8 and 12 fresh: priced at their chord extended, 60 + 0 * 4 ... */
    static sprig_costs d;
    sprig_costs_init(&d, 64);
    sprig_costs_add(&d, 4, 30);
    sprig_costs_add(&d, 8, 40);
    sprig_costs_provisional(&d, 16, 200);
    CHECK(fabs(sprig_costs_t(&d, 16) - 60.0) < 1e-9);   /* 40 + (40 - 30) / 4 * 8 */
    for (int i = 0; i < SPRIG_COSTS_STALE; i++) sprig_costs_add(&d, 4, 30);   /* 8 goes stale too: the chord from 4 and 1's absence */
    CHECK(!sprig_costs_fresh(&d, 8) && sprig_costs_fresh(&d, 4));
    CHECK(fabs(sprig_costs_t(&d, 8) - 30.0) < 1e-9 && fabs(sprig_costs_t(&d, 16) - 30.0) < 1e-9);   /* one fresh count, nothing below */
    sprig_costs_add(&d, 16, 80);   /* tried and measured: its own again */
    CHECK(fabs(sprig_costs_t(&d, 16) - 80.0) < 1e-9);
}

/* The convergence of item "a profile measured under a disturbance heals":
 * a shape seeded with a profile wrong high past 4 rows (t(6) 97 ms where a
 * row costs 1.5 ms) plans short; rounds whose verify times are injected from
 * the true cost (every seventh slowed 3x by a neighbour) bring its plan to
 * the one the true profile gives, and keep it there. Prints the trace. */
static void test_profile_heals(void)
{
    enum { D = 8, NODES = 12, ROUNDS = 64 };
    static sprig_dyntree t;
    chain_06_03(&t, D);
    sprig_shape truth, s;
    honest_06_03(&truth);
    honest_06_03(&s);
#define TRUE_MS(n) (40.0 + 1.5 * ((n) - 1))
    static const int sizes[] = SPRIG_SHAPE_PROFILE_SIZES;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int n = sizes[i];
        sprig_shape_cost(&truth, n, TRUE_MS(n), true);
        const double wrong = n <= 4 ? TRUE_MS(n) : n == 6 ? 97 : n == 8 ? 99 : n == 10 ? 90 : n <= 16 ? 100 : 100 + 2.0 * (n - 16);
        sprig_shape_cost(&s, n, wrong, true);
    }
    sprig_tree out;
    sprig_shape_select(&truth, &t, NODES, D, &out, NULL);
    const int want = out.n;
    sprig_shape_select(&s, &t, NODES, D, &out, NULL);
    CHECKF(want >= 8 && out.n <= 5, "the true profile plans %d nodes, the wrong one %d", want, out.n);
    char trace[512];
    int o = snprintf(trace, sizeof trace, "nodes per round:"), healed = -1, off_after = 0;
    for (int r = 0; r < ROUNDS; r++) {
        sprig_shape_select(&s, &t, NODES, D, &out, NULL);
        if (o < (int)sizeof trace - 8) o += snprintf(trace + o, sizeof trace - (size_t)o, " %d", out.n);
        if (out.n == want && healed < 0) healed = r;
        off_after += healed >= 0 && out.n != want;
        sprig_shape_cost(&s, out.n, TRUE_MS(out.n) * (r % 7 == 6 ? 3.0 : 1.0), false);
    }
    printf("  profile heals: true plan %d nodes; %s; the true plan from round %d, off it %d rounds after; T(6) %.1f ms "
           "(profile 97), T(8) %.1f (99), T(10) %.1f (90)\n",
           want, trace, healed, off_after, sprig_shape_t(&s, 6), sprig_shape_t(&s, 8), sprig_shape_t(&s, 10));
    CHECKF(healed >= 0 && healed < 24, "the plan reached %d nodes at round %d", want, healed);
    CHECKF(off_after <= ROUNDS / 8, "%d rounds off the true plan after it was reached", off_after);
    for (int n = 1; n <= 16; n++)
        CHECKF(fabs(sprig_shape_t(&s, n) - TRUE_MS(n)) < 0.1 * TRUE_MS(n) || n > want + 2, "T(%d) %.1f ms, true %.1f", n,
               sprig_shape_t(&s, n), TRUE_MS(n));
#undef TRUE_MS
}

/* Tree auto in a shared forward prices rows by the batch's own table, not
 * the lone profile; and with weak side nodes and compute-bound rows it plans
 * the chain of the best length: the length a brute force over the chain's
 * lengths finds, never a tree */
static void test_shared_plans_chain(void)
{
    enum { D = 6 };
    static sprig_dyntree t;
    chain_06_03(&t, D);
    sprig_shape s;
    honest_06_03(&s);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 40.0 + 0.5 * n, true);   /* alone: 0.5 ms a row */
    s.others_rows = 12; s.others_emit = 8; s.shared.gap_ms = 5;
    sprig_tree out;
    sprig_shape_select(&s, &t, 8, D, &out, NULL);
    CHECK_EQ_INT(out.n, 8);   /* at 0.5 ms a row every candidate pays */
    s.shared.known = true;   /* the shared forwards measured 2.15 ms a row */
    for (int m = 1; m <= SPRIG_TREE_MAX; m++) s.shared.t_ms[m] = 30 + 2.15 * (12 + m);
    sprig_shape_select(&s, &t, 8, D, &out, NULL);
    /* worth a row now: v > rate x 2.15 ms ~ 0.32 tokens: the 0.6 draft and its 0.6 child (0.36) only */
    CHECK_EQ_INT(out.n, 3);
    CHECK(sprig_tree_is_linear(&out));
    const int64_t chains = s.plan_chains;
    for (int slope = 1; slope <= 6; slope++) {   /* steeper rows: never a tree, always the best chain length */
        for (int m = 1; m <= SPRIG_TREE_MAX; m++) s.shared.t_ms[m] = 30 + 0.75 * slope * (12 + m);
        double e = 1 + s.others_emit, v = 1, best = e / (s.shared.t_ms[1] + 5);
        int len = 1;
        for (int m = 2; m <= D + 1; m++) {
            v *= 0.6;
            e += v;
            const double rate = e / (s.shared.t_ms[m] + 5);
            if (rate > best) { best = rate; len = m; }
        }
        sprig_shape_select(&s, &t, 8, D, &out, NULL);
        const bool tree_pays = slope <= 2;   /* at 0.75 and 1.5 ms a row the 0.3 runner-up pays too */
        if (!tree_pays) {
            CHECKF(sprig_tree_is_linear(&out) && out.n == len, "%.2f ms a row: %d nodes (%s), the best chain %d",
                   0.75 * slope, out.n, sprig_tree_is_linear(&out) ? "chain" : "tree", len);
        }
    }
    CHECK(s.plan_chains > chains);
    s.others_rows = 0; s.others_emit = 0;   /* alone again: the profile */
    sprig_shape_select(&s, &t, 8, D, &out, NULL);
    CHECK_EQ_INT(out.n, 8);
}

/* No offer two rows past another whose list has drafts left */
static bool joint_balanced(const sprig_joint_offer *o, const int *m, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (m[i] > m[j] + 1 && m[j] < o[j].n) return false;
    return true;
}

/* The rate of a step that verifies m[i] rows of each offer */
static double joint_rate(const sprig_joint_offer *o, const int *m, int n, int fixed, double emit, const sprig_costs *c,
                         double step)
{
    int rows = fixed;
    for (int i = 0; i < n; i++) {
        rows += m[i];
        for (int j = 0; j < m[i]; j++) emit += o[i].gain[j];
    }
    return emit / (sprig_costs_t(c, rows) + step);
}

/* The batch's joint plan (spec/joint.h). On a staircase cost (a forward of
 * up to 16 rows 55-65 ms, past it 95 and up: the weights' tile) eight
 * sequences whose drafts are each worth 0.8, 0.64, ... fill the step to 16
 * rows, one draft each, where each sequence choosing against the others'
 * last rows settles at 48; a weak sequence keeps its row at each level the
 * step reaches, and a strong one gets the rows a short list leaves.
 * Property: on random small batches (1-4 offers of 1-5 rows, random
 * non-increasing gains, random fixed rows and tokens, convex and staircase
 * costs) the grant is balanced (no sequence two rows past another that has
 * drafts left) and the best rate of EVERY balanced allocation of prefixes,
 * each grant within its offer, the total returned as granted. */
static void test_joint_allocate(void)
{
    static sprig_costs c;
    sprig_costs_init(&c, 64);
    for (int n = 1; n <= 64; n++) sprig_costs_provisional(&c, n, 40 + 1.5 * n + 30 * ((n - 1) / 16));   /* 16: 64 ms, 17: 95.5 */
    double g[8][6];
    sprig_joint_offer o[8];
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 6; j++) g[i][j] = pow(0.8, j);
        o[i] = (sprig_joint_offer){ .gain = g[i], .n = 6 };
    }
    CHECK_EQ_INT(sprig_joint_allocate(o, 8, 0, 0, &c, 1.0, 64), 16);
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(o[i].m, 2);
    /* each sequence choosing its rows against the others' rows and tokens of the step before, all at once: from the
       bare bonus each sees room under the stair and takes it, and past the stair each one's rows look cheap, so the
       steps stay at 48 rows (14.9 tokens per 100 ms against 22 at 16) */
    int last = 1, off = 0;
    char swing[64] = "";
    for (int step = 0; step < 6; step++) {
        double e7 = 0, best = 0;
        for (int j = 0; j < last; j++) e7 += 7 * g[0][j];
        int m = 1;
        for (int k = 1; k <= 6; k++) {
            double e = e7;
            for (int j = 0; j < k; j++) e += g[0][j];
            const double r = e / (sprig_costs_t(&c, 7 * last + k) + 1.0);
            if (r > best) { best = r; m = k; }
        }
        last = m;
        off += 8 * m != 16;
        snprintf(swing + strlen(swing), sizeof swing - strlen(swing), " %d", 8 * m);
    }
    CHECKF(off >= 3, "choosing alone, the steps held%s rows", swing);
    fprintf(stderr, "  eight sequences on a 16-row stair: choosing alone the steps held%s rows; jointly 16\n", swing);
    /* a strong sequence and a weak one beside 8 rows of prompt chunks and fixed shapes: level by level, the weak
       one's row at each level too, until its list is spent */
    const double strong[6] = { 1, 0.95, 0.9, 0.85, 0.8, 0.75 }, weak[6] = { 1, 0.3, 0.15, 0.05, 0.02, 0.01 };
    o[0] = (sprig_joint_offer){ .gain = strong, .n = 6 };
    o[1] = (sprig_joint_offer){ .gain = weak, .n = 6 };
    CHECK_EQ_INT(sprig_joint_allocate(o, 2, 8, 6.0, &c, 1.0, 64), 15);   /* the weak one's third draft (0.05) does not pay */
    CHECK_EQ_INT(o[0].m, 4);
    CHECK_EQ_INT(o[1].m, 3);
    o[1].n = 2;   /* its drafter proposed one draft */
    CHECK_EQ_INT(sprig_joint_allocate(o, 2, 8, 6.0, &c, 1.0, 64), 16);
    CHECK_EQ_INT(o[0].m, 6);
    CHECK_EQ_INT(o[1].m, 2);
    CHECK_EQ_INT(sprig_joint_allocate(o, 2, 8, 6.0, &c, 1.0, 12), 12);   /* at most 12 rows in all */
    CHECK_EQ_INT(o[0].m, 2);
    CHECK_EQ_INT(o[1].m, 2);
    /* every allocation of prefixes, on random small batches */
    sprig_rng rng;
    sprig_rng_seed(&rng, 20261206);
    static sprig_costs r;
    int worse = 0, cases = 0;
    for (int trial = 0; trial < 400; trial++) {
        sprig_costs_init(&r, 64);
        const double base = 20 + 40 * sprig_rng_uniform(&rng), slope = 0.2 + 6 * sprig_rng_uniform(&rng);
        const int stair = 4 + (int)(sprig_rng_u64(&rng) % 12);
        const bool steps = trial % 2;
        for (int n = 1; n <= 64; n++)
            sprig_costs_provisional(&r, n, base + slope * n + (steps && n > stair ? base * 0.5 : 0) + 0.01 * n * n);
        const int n = 1 + (int)(sprig_rng_u64(&rng) % 4), fixed = (int)(sprig_rng_u64(&rng) % 6);
        const double emit = fixed * sprig_rng_uniform(&rng), step = 5 * sprig_rng_uniform(&rng);
        double rg[4][5];
        for (int i = 0; i < n; i++) {
            o[i] = (sprig_joint_offer){ .gain = rg[i], .n = 1 + (int)(sprig_rng_u64(&rng) % 5) };
            rg[i][0] = 1.0;
            for (int j = 1; j < 5; j++) rg[i][j] = rg[i][j - 1] * sprig_rng_uniform(&rng);
        }
        const int total = sprig_joint_allocate(o, n, fixed, emit, &r, step, 64);
        int m[4], sum = fixed;
        for (int i = 0; i < n; i++) {
            CHECK(o[i].m >= 1 && o[i].m <= o[i].n);
            m[i] = o[i].m;
            sum += m[i];
        }
        CHECK_EQ_INT(total, sum);
        const double got = joint_rate(o, m, n, fixed, emit, &r, step);
        CHECK(joint_balanced(o, m, n));
        int k[4] = { 1, 1, 1, 1 };
        for (;;) {   /* odometer over every m[i] in 1..n_i */
            cases += joint_balanced(o, k, n);
            if (joint_balanced(o, k, n) && joint_rate(o, k, n, fixed, emit, &r, step) > got * (1 + 1e-12)) worse++;
            int i = 0;
            while (i < n && ++k[i] > o[i].n) k[i++] = 1;
            if (i == n) break;
        }
    }
    CHECKF(worse == 0, "%d of %d balanced allocations beat the joint plan", worse, cases);
    CHECK(cases > 1000);
}

/* A prior (a batch's shared forwards take a session's profile): every count
 * priced at the prior's lower envelope times the ratio the latest
 * measurements show, so a step between two profiled sizes is priced at the
 * larger one and a size profiled high beside a disturbance at the sizes
 * past it; a whole fresh window 25% off the scaled prior overrides it; noise
 * and a machine's drift do not. */
static void test_costs_prior(void)
{
    static sprig_costs c;
    sprig_costs_init(&c, 64);
    /* profiled at 1, 12, 16, 20, 32: 40 + 1.5 n to 16, then a step; 11 timed high beside another process */
    const int at[] = { 1, 11, 12, 16, 20, 32 };
    const double ms[] = { 41.5, 110, 58, 64, 100, 118 };
    for (int i = 0; i < 6; i++) sprig_costs_prior(&c, at[i], ms[i]);
    CHECK(fabs(sprig_costs_t(&c, 11) - 58) < 1e-9);    /* no more than the sizes past it */
    CHECK(fabs(sprig_costs_t(&c, 14) - 64) < 1e-9);    /* between 12 and 16: 16's */
    CHECK(fabs(sprig_costs_t(&c, 17) - 100) < 1e-9);   /* past the step: 20's, not a line from 16 */
    /* the machine runs 1.25x slower now: measurements at 12 and 16, with +-10% noise, scale every count */
    for (int i = 0; i < 9; i++) sprig_costs_add(&c, i % 2 ? 12 : 16, (i % 2 ? 58 : 64) * 1.25 * (i % 3 == 0 ? 1.1 : 0.95));
    for (int n = 1; n <= 32; n++) CHECK(sprig_costs_t(&c, n + 1) >= sprig_costs_t(&c, n));
    const double s = sprig_costs_t(&c, 20) / 100;
    CHECKF(s > 1.15 && s < 1.35, "scale %.3f", s);
    CHECK(fabs(sprig_costs_t(&c, 32) - 118 * s) < 1e-9 && fabs(sprig_costs_t(&c, 16) - 64 * s) < 1e-9);
    /* 20 rows really cost 60% more than the prior says at this level: a whole window of it overrides */
    for (int i = 0; i < 9; i++) sprig_costs_add(&c, 20, 100 * s * 1.6);
    CHECKF(sprig_costs_t(&c, 20) > 100 * s * 1.5, "T(20) %.1f, prior x scale %.1f", sprig_costs_t(&c, 20), 100 * s);
}

/* The measured levels of a batch's joint plan (spec/joint.h): the cost
 * model's level stands until it is measured, a measured level replaces it
 * only when clearly better (SPRIG_JOINT_OVERRIDE; a 10% edge measured at
 * other moments does not), a neighbour is tried while it has few samples or
 * is stale, a count of sequences with nothing measured runs the model's
 * level, and a level tried once does not lead. */
static void test_joint_rates(void)
{
    static sprig_joint_rates r;
    memset(&r, 0, sizeof r);
    CHECK_EQ_INT(sprig_joint_rates_choose(&r, 8, 3, 6, NULL), 3);   /* nothing measured: the model's */
    CHECK_EQ_INT(sprig_joint_rates_choose(&r, 8, 9, 6, NULL), 6);   /* within the offers */
    for (int i = 0; i < 5; i++) {
        sprig_joint_rates_add(&r, 8, 1, 0.16 + 0.01 * (i % 2));
        sprig_joint_rates_add(&r, 8, 0, 0.12 + 0.05 * (i == 0));   /* one lucky step */
        sprig_joint_rates_add(&r, 8, 3, 0.10);                      /* the model's level, clearly worse */
    }
    sprig_joint_rates_add(&r, 8, 2, 0.30);   /* one lucky step alone does not make level 2 the best */
    int picks[4] = { 0 };
    for (int step = 0; step < 64; step++) {
        const int l = sprig_joint_rates_choose(&r, 8, 3, 6, NULL);
        CHECK(l >= 0 && l <= 2);
        if (l >= 0 && l <= 2) picks[l]++;
        if (l == 2) sprig_joint_rates_add(&r, 8, 2, 0.10);   /* the neighbour above tried, and found worse */
    }
    CHECKF(picks[1] >= 52 && picks[2] >= SPRIG_JOINT_MIN_SAMPLES - 1 && picks[2] <= 8, "levels 0-2 picked %d %d %d times",
           picks[0], picks[1], picks[2]);
    r.steps = 2;   /* the next is not an exploring step */
    CHECK_EQ_INT(sprig_joint_rates_choose(&r, 8, 0, 6, NULL), 1);   /* level 1 beats the model's 0 by 1.33x: it leads */
    CHECK_EQ_INT(sprig_joint_rates_choose(&r, 7, 4, 6, NULL), 4);   /* seven sequences, nothing measured: the model's */
    /* a level tried once does not lead, however lucky: the exploration stays beside the model's level until
     * a neighbour has its samples and beats it */
    static sprig_joint_rates u;
    memset(&u, 0, sizeof u);
    int most = 0, at2 = 0;
    for (int step = 0; step < 40; step++) {
        const int l = sprig_joint_rates_choose(&u, 5, 2, 8, NULL);
        if (l > most) most = l;
        at2 += l == 2;
        sprig_joint_rates_add(&u, 5, l, l == 2 ? 0.15 : u.at[5][l].n_win == 0 ? 0.30 : 0.10);   /* each lucky once */
    }
    CHECKF(most <= 3 && at2 >= 24, "levels up to %d tried, level 2 %d times of 40", most, at2);
    /* a neighbour the model prices far below the best is not tried; one it prices near is */
    static sprig_joint_rates v;
    memset(&v, 0, sizeof v);
    const double model[4] = { 0.10, 0.16, 0.12, 0.15 };   /* level 0 at 0.63x of level 1, level 2 at 0.75x */
    int tried[4] = { 0 };
    for (int step = 0; step < 64; step++) {
        const int l = sprig_joint_rates_choose(&v, 8, 1, 3, model);
        if (l >= 0 && l <= 3) tried[l]++;
        sprig_joint_rates_add(&v, 8, l, 0.16);
    }
    CHECKF(tried[0] == 0 && tried[2] == 0 && tried[1] == 64, "levels tried %d %d %d %d", tried[0], tried[1], tried[2], tried[3]);
    const double near[4] = { 0.15, 0.16, 0.12, 0.15 };   /* level 0 at 0.94x: tried */
    memset(&v, 0, sizeof v);
    memset(tried, 0, sizeof tried);
    for (int step = 0; step < 64; step++) {
        const int l = sprig_joint_rates_choose(&v, 8, 1, 3, near);
        if (l >= 0 && l <= 3) tried[l]++;
        sprig_joint_rates_add(&v, 8, l, l == 1 ? 0.16 : 0.12);
    }
    CHECKF(tried[0] >= SPRIG_JOINT_MIN_SAMPLES && tried[0] <= 8 && tried[2] == 0, "levels tried %d %d %d %d", tried[0], tried[1], tried[2],
           tried[3]);
    static sprig_joint_rates t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < 3; i++) { sprig_joint_rates_add(&t, 4, 2, 0.2); sprig_joint_rates_add(&t, 4, 3, 0.2); }
    t.steps = 2;   /* the next is not an exploring step */
    CHECK_EQ_INT(sprig_joint_rates_choose(&t, 4, 3, 6, NULL), 3);   /* a tie: the model's */
    for (int i = 0; i < 3; i++) sprig_joint_rates_add(&t, 4, 1, 0.21);
    t.steps = 2;
    CHECK_EQ_INT(sprig_joint_rates_choose(&t, 4, 2, 6, NULL), 2);   /* 1.05x measured at other moments: not enough */
    int k = 0;
    CHECK(fabs(sprig_joint_rates_median(&t, 4, 3, &k) - 0.2) < 1e-12 && k == 3);
    sprig_joint_rates_add(&t, 0, 1, 1);   /* out of range: ignored */
    sprig_joint_rates_add(&t, 4, SPRIG_JOINT_LEVELS + 1, 1);
    sprig_joint_rates_add(&t, 4, 5, NAN);
    CHECK(sprig_joint_rates_median(&t, 4, 5, &k) == 0 && k == 0);
}

/* The drafter's expansion follows the choices: full width until 8 rounds
 * were chosen, the first choice alone while the wide rounds chose chains
 * (full width again every 8th round, and for good once a wide round's tree
 * earns more than its chain);
 * depth two past the deepest chosen while drafting is cheap, one past once
 * it costs 5% of a one-row verify */
static void test_expand_follows_choices(void)
{
    enum { D = 6 };
    static sprig_dyntree t;
    chain_06_03(&t, D);
    sprig_shape s;
    honest_06_03(&s);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 40.0 + 30.0 * n, true);   /* rows dear: short chains */
    sprig_shape_draft_cost(&s, 0.1);
    sprig_tree out;
    int widths[20], depths[20];
    for (int r = 0; r < 20; r++) {
        widths[r] = sprig_shape_expand_width(&s, 3);
        depths[r] = sprig_shape_expand_depth(&s, D);
        sprig_shape_select(&s, &t, 8, D, &out, NULL);
        CHECK(sprig_tree_is_linear(&out));
    }
    const int deep = sprig_tree_max_depth(&out);
    for (int r = 0; r < 20; r++) {
        CHECKF(widths[r] == (r < 8 || r % 8 == 0 ? 3 : 1), "round %d: width %d", r, widths[r]);
        CHECKF(depths[r] == (r < 8 ? D : deep + 2 < D ? deep + 2 : D), "round %d: depth %d (deepest chosen %d)", r, depths[r], deep);
    }
    sprig_shape_draft_cost(&s, 40.0);   /* drafting now dear: one depth past, two every 8th round */
    const int d1 = sprig_shape_expand_depth(&s, D);
    CHECKF(d1 == (s.n_depths % 8 == 0 ? deep + 2 : deep + 1), "depth %d, deepest %d", d1, deep);
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, 40.0, false);   /* rows free now: a tree pays */
    int w = 1;
    for (int r = 0; r < 8 && w == 1; r++) {   /* at the next wide round, which then sticks */
        w = sprig_shape_expand_width(&s, 3);
        sprig_shape_select(&s, &t, 8, D, &out, NULL);
    }
    CHECK(w == 3 && !sprig_tree_is_linear(&out) && sprig_shape_expand_width(&s, 3) == 3);
}

/* The width pays for its drafting: side nodes that beat the chain when
 * drafting is free stop being drafted once a wide draft costs enough more
 * than a width-1 one (measured per width, the width-1 time learned by the
 * every-8th-round narrow round), and come back once it costs no more */
static void test_width_pays_for_drafting(void)
{
    enum { D = 5 };
    static sprig_dyntree wide, narrow;
    chain_06_03(&wide, D);
    chain_06_03_width(&narrow, D, 1);   /* what a width-1 draft of the same drafter gives */
    sprig_shape s;
    honest_06_03(&s);
    /* 4 rows for the time of one, dear past: the root, 0.6, 0.36 and the 0.3 runner-up (2.26 expected) beat the
     * chain of 4 (2.176) at the same drafting time; at 3 ms wide against 1 ms narrow they do not (2.26 / 13 <
     * 2.176 / 11) */
    for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, n <= 4 ? 10.0 : 10.0 + 50.0 * (n - 4), true);
    enum { R = 240 };
    int widths[R], trees = 0;
    sprig_tree out;
    for (int r = 0; r < R; r++) {
        const double wide_ms = r < 64 ? 3.0 : 1.0;   /* from round 64 a wide draft costs what a narrow one does */
        widths[r] = sprig_shape_expand_width(&s, 2);
        sprig_shape_select(&s, widths[r] > 1 ? &wide : &narrow, 8, D, &out, NULL);
        sprig_shape_draft_cost(&s, widths[r] > 1 ? wide_ms : 1.0);
        trees += !sprig_tree_is_linear(&out);
        if (widths[r] > 1 && r >= 8 && r < 64) CHECKF(!sprig_tree_is_linear(&out), "round %d: the drafted tree still wins its round", r);
    }
    char line[8 * R], *o = line;
    for (int r = 0; r < R; r++) o += sprintf(o, "%d", widths[r]);
    fprintf(stderr, "  widths by round: %s (%d branching trees)\n", line, trees);
    for (int r = 0; r < 8; r++) CHECKF(widths[r] == 2, "warm-up round %d: width %d", r, widths[r]);
    CHECKF(widths[8] == 1, "round 8 measures the width-1 drafting (width %d)", widths[8]);
    for (int r = 17; r < 64; r++) CHECKF(widths[r] == (r % 8 == 0 ? 2 : 1), "round %d: width %d with dear side drafting", r, widths[r]);
    for (int r = R - 24; r < R; r++) CHECKF(widths[r] == (r % 8 == 0 ? 1 : 2), "round %d: width %d once side drafting is free", r, widths[r]);
    CHECK(fabs(s.draft_w_ms[0] - 1.0) < 1e-9 && s.draft_w_ms[1] < 1.2);
}

/* Drafting stops short only when nothing it could bring would be chosen:
 * over random calibrations, costs, widths and drafts, every tree drafted
 * only as deep as sprig_shape_draft_deeper allowed chooses exactly the
 * tree the whole draft chooses (and the stop does happen) */
static void test_draft_deeper_loses_nothing(void)
{
    enum { V = 10, TRIALS = 300 };
    sprig_rng rng;
    sprig_rng_seed(&rng, 909);
    static sprig_dyntree t, cut;
    static sprig_shape s, a, b;
    int stops = 0, compared = 0, deeper_chosen = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
        sprig_shape_init(&s);
        for (int bin = 0; bin < SPRIG_SHAPE_BINS; bin++) {
            s.trials[bin] = (double)(sprig_rng_u64(&rng) % 40);
            s.hits[bin] = s.trials[bin] * sprig_rng_uniform(&rng);
        }
        const double t1 = 20 + 40 * sprig_rng_uniform(&rng), row = 0.5 + 15 * sprig_rng_uniform(&rng);
        const int stair = 4 + (int)(sprig_rng_u64(&rng) % 16);
        for (int n = 1; n <= SPRIG_TREE_MAX; n++) sprig_shape_cost(&s, n, t1 + row * n + (n > stair ? 30 : 0), true);
        s.width_now = 1 + (int)(sprig_rng_u64(&rng) % 3);
        sprig_shape_draft_cost(&s, 10 * sprig_rng_uniform(&rng));
        s.n_depths = 9 + (int)(sprig_rng_u64(&rng) % 7);   /* past the warm-up, not an exploring round */
        const int w = s.width_now, D = 3 + (int)(sprig_rng_u64(&rng) % 6), max_nodes = 4 + (int)(sprig_rng_u64(&rng) % 28);
        const double sharp = 0.5 + 4 * sprig_rng_uniform(&rng);   /* how confident the drafter is */
        float logits[V];
        sprig_dyntree_init(&t, 1);
        bool cut_taken = false;
        for (int d = 0; d < D; d++) {
            int batch[SPRIG_DYNTREE_MAX_WIDTH], nf = 1;
            batch[0] = 0;
            if (d > 0) {
                nf = sprig_dyntree_frontier(&t, d, w, batch);
                if (nf == 0) break;
                if (!cut_taken && !sprig_shape_draft_deeper(&s, &t, batch, nf, max_nodes, D)) {
                    cut = t;
                    cut_taken = true;
                }
            }
            for (int j = 0; j < nf; j++) {
                double z = 0;
                for (int i = 0; i < V; i++) z += exp(logits[i] = (float)(sharp * sprig_rng_normal(&rng)));
                for (int i = 0; i < V; i++) logits[i] -= (float)log(z);
                t.slot[batch[j]] = (int16_t)j;
                sprig_dyntree_expand(&t, batch[j], logits, V, w);
            }
        }
        if (!cut_taken) continue;
        stops++;
        a = s;
        b = s;
        sprig_tree ta, tb;
        sprig_shape_select(&a, &cut, max_nodes, D, &ta, NULL);
        sprig_shape_select(&b, &t, max_nodes, D, &tb, NULL);
        bool same = ta.n == tb.n;
        for (int i = 0; same && i < ta.n; i++) same = ta.tokens[i] == tb.tokens[i] && ta.parents[i] == tb.parents[i];
        CHECKF(same, "trial %d: the short draft chose %d nodes, the whole one %d", trial, ta.n, tb.n);
        compared++;
        deeper_chosen += sprig_tree_max_depth(&tb) > 0;
    }
    fprintf(stderr, "  %d of %d drafts stopped short, each choosing what the whole draft chose\n", stops, TRIALS);
    CHECK(stops >= TRIALS / 10 && compared == stops && deeper_chosen > 0);
    /* the warm-up and every 8th round draft as deep as allowed */
    s.n_depths = 16;
    int batch[1] = { 1 };
    CHECK(sprig_shape_draft_deeper(&s, &t, batch, 1, 8, 8));
}

int main(void)
{
    RUN(test_linear_mask_is_causal);
    RUN(test_shape_rank_depth);
    RUN(test_costs);
    RUN(test_profile_heals);
    RUN(test_shared_plans_chain);
    RUN(test_joint_allocate);
    RUN(test_costs_prior);
    RUN(test_joint_rates);
    RUN(test_expand_follows_choices);
    RUN(test_width_pays_for_drafting);
    RUN(test_draft_deeper_loses_nothing);
    RUN(test_siblings_never_see_each_other);
    RUN(test_queries);
    RUN(test_depths);
    RUN(test_bad_parents_refused);
    RUN(test_linear_walk_equals_chain);
    RUN(test_walk_follows_agreeing_branch);
    RUN(test_duplicate_siblings_one_path);
    RUN(test_walk_property);
    RUN(test_tree_from_draft);
    RUN(test_dyntree_select);
    RUN(test_shape_choice);
    RUN(test_block_drafter_tree_auto);
    RUN(test_shape_experts);
    RUN(test_shape_shared_experts);
    return test_summary("test-tree");
}
