/*
 * spec/dyntree — see dyntree.h.
 */
#include "spec/dyntree.h"
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>

void sprig_dyntree_init(sprig_dyntree *t, int32_t root)
{
    t->n = 1;
    t->token[0] = root;
    t->parent[0] = -1;
    t->depth[0] = 0;
    t->slot[0] = -1;
    t->score[0] = 0.0f;
    t->real[0] = 0.0f;
    t->qrow[0] = -1;
}

int sprig_dyntree_add(sprig_dyntree *t, int node, int32_t token, float logq)
{
    if (node < 0 || node >= t->n || t->n >= SPRIG_DYNTREE_CAP || !(logq <= 0.0f)) return -1;
    const int i = t->n++;
    t->token[i] = token;
    t->parent[i] = (int16_t)node;
    t->depth[i] = (int16_t)(t->depth[node] + 1);
    t->slot[i] = -1;
    t->score[i] = t->real[i] = t->real[node] + logq;
    t->qrow[i] = -1;
    return i;
}

int sprig_dyntree_expand(sprig_dyntree *t, int node, const float *logits, int n_vocab, int w)
{
    sprig_logprob top[SPRIG_DYNTREE_MAX_WIDTH];
    if (w > SPRIG_DYNTREE_MAX_WIDTH) w = SPRIG_DYNTREE_MAX_WIDTH;
    if (w > n_vocab) w = n_vocab;
    if (w < 1 || node < 0 || node >= t->n) return 0;
    sprig_top_logprobs(logits, n_vocab, w, top);
    int added = 0;
    for (int j = 0; j < w && t->n < SPRIG_DYNTREE_CAP; j++) {
        if (top[j].id < 0) break;
        int i = t->n++;
        t->token[i] = top[j].id;
        t->parent[i] = (int16_t)node;
        t->depth[i] = (int16_t)(t->depth[node] + 1);
        t->slot[i] = -1;
        t->score[i] = t->real[i] = t->real[node] + top[j].logprob;
        t->qrow[i] = -1;
        added++;
    }
    return added;
}

static int top_q(const sprig_draft_q *q, int r, int w, float *big);

int sprig_dyntree_expand_sampled(sprig_dyntree *t, int node, sprig_draft_q *q, int r, int w)
{
    if (w > SPRIG_DYNTREE_MAX_WIDTH) w = SPRIG_DYNTREE_MAX_WIDTH;
    if (w > SPRIG_DYNTREE_CAP - t->n) w = SPRIG_DYNTREE_CAP - t->n;   /* fixed before drawing */
    if (w < 1 || node < 0 || node >= t->n || r < 0) return 0;
    /* the slot estimates: the w largest q, from the row alone */
    float big[SPRIG_DYNTREE_MAX_WIDTH];
    const int nb = top_q(q, r, w, big);
    int32_t drawn[SPRIG_DYNTREE_MAX_WIDTH];
    const int n = sprig_draft_q_draw(q, r, w, drawn);
    t->qrow[node] = (int16_t)r;
    for (int j = 0; j < n; j++) {
        int i = t->n++;
        t->token[i] = drawn[j];
        t->parent[i] = (int16_t)node;
        t->depth[i] = (int16_t)(t->depth[node] + 1);
        t->slot[i] = -1;
        t->score[i] = t->real[node] + logf(big[j < nb ? j : nb - 1]);
        t->real[i] = t->real[node] + logf(sprig_draft_q_prob(q, r, drawn[j]));
        t->qrow[i] = -1;
    }
    return n;
}

/* the w largest entries of row r, largest first; returns how many have mass */
static int top_q(const sprig_draft_q *q, int r, int w, float *big)
{
    int nb = 0;
    const float *row = q->rows + (size_t)r * (size_t)q->n_vocab;
    for (int v = 0; v < q->n_vocab; v++) {
        const float x = row[v];
        if (!(x > 0.0f) || (nb == w && x <= big[w - 1])) continue;
        int j = nb < w ? nb++ : w - 1;
        while (j > 0 && x > big[j - 1]) { big[j] = big[j - 1]; j--; }
        big[j] = x;
    }
    return nb;
}

int sprig_dyntree_grow_sampled(sprig_dyntree *t, const int *nodes, const int *rows, int nf, sprig_draft_q *q, int w,
                               int slots)
{
    enum { MAXF = SPRIG_TREE_MAX };
    if (w > SPRIG_DYNTREE_MAX_WIDTH) w = SPRIG_DYNTREE_MAX_WIDTH;
    if (nf > MAXF) nf = MAXF;
    if (slots > SPRIG_DYNTREE_CAP - t->n) slots = SPRIG_DYNTREE_CAP - t->n;
    float big[MAXF][SPRIG_DYNTREE_MAX_WIDTH];
    int nb[MAXF], count[MAXF];
    for (int j = 0; j < nf; j++) {
        nb[j] = rows[j] >= 0 && w > 0 ? top_q(q, rows[j], w, big[j]) : 0;
        count[j] = 0;
    }
    /* open the best slots; a node's next slot never beats its previous one, so counts grow as prefixes */
    for (int s = 0; s < slots; s++) {
        int best = -1;
        float bv = 0.0f;
        for (int j = 0; j < nf; j++) {
            if (count[j] >= nb[j]) continue;
            const float v = t->real[nodes[j]] + logf(big[j][count[j]]);
            if (best < 0 || v > bv) { best = j; bv = v; }
        }
        if (best < 0) break;
        count[best]++;
    }
    int added = 0;
    for (int j = 0; j < nf; j++)
        if (count[j]) added += sprig_dyntree_expand_sampled(t, nodes[j], q, rows[j], count[j]);
    return added;
}

void sprig_dyntree_set_q(const sprig_dyntree *t, const sprig_tree *tree, const int *map, sprig_draft_q *q)
{
    for (int i = 0; i < tree->n; i++) q->row[i] = t->qrow[map[i]];
}

/* a before b: higher key (the score unless given), then shallower, then older */
static bool better_by(const sprig_dyntree *t, const float *key, int a, int b)
{
    if (key[a] != key[b]) return key[a] > key[b];
    if (t->depth[a] != t->depth[b]) return t->depth[a] < t->depth[b];
    return a < b;
}
static bool better(const sprig_dyntree *t, int a, int b) { return better_by(t, t->real, a, b); }

int sprig_dyntree_frontier(const sprig_dyntree *t, int depth, int w, int *out)
{
    int k = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->depth[i] != depth || t->slot[i] >= 0) continue;
        if (k == w && !better(t, i, out[w - 1])) continue;
        int j = k < w ? k++ : w - 1;
        while (j > 0 && better(t, i, out[j - 1])) { out[j] = out[j - 1]; j--; }
        out[j] = i;
    }
    return k;
}

void sprig_dyntree_select(const sprig_dyntree *t, int max_nodes, int max_depth, sprig_tree *out, int *map)
{
    sprig_dyntree_select_by(t, t->score, max_nodes, max_depth, out, map);
}

int sprig_dyntree_best(const sprig_dyntree *t, const float *key, int max_nodes, int max_depth, int *chosen)
{
    if (max_nodes > SPRIG_TREE_MAX) max_nodes = SPRIG_TREE_MAX;
    static _Thread_local bool in[SPRIG_DYNTREE_CAP];
    for (int i = 0; i < t->n; i++) in[i] = false;
    in[0] = true;
    chosen[0] = 0;
    int n = 1;
    while (n < max_nodes) {
        int best = -1;
        for (int i = 1; i < t->n; i++)
            if (!in[i] && t->depth[i] <= max_depth && in[t->parent[i]] && (best < 0 || better_by(t, key, i, best))) best = i;
        if (best < 0) break;
        in[best] = true;
        chosen[n++] = best;
    }
    return n;
}

void sprig_dyntree_select_by(const sprig_dyntree *t, const float *key, int max_nodes, int max_depth, sprig_tree *out, int *map)
{
    /* the best candidates whose parent is already in: a child never outranks its parent,
     * so taking them best first keeps the set a tree */
    int chosen[SPRIG_TREE_MAX];
    const int n = sprig_dyntree_best(t, key, max_nodes, max_depth, chosen);
    sprig_dyntree_tree_of(t, key, chosen, n, out, map);
}

void sprig_dyntree_tree_of(const sprig_dyntree *t, const float *key, const int *chosen, int n, sprig_tree *out, int *map)
{
    static _Thread_local int16_t in_tree[SPRIG_DYNTREE_CAP];   /* candidate -> tree node + 1, or 0 */
    for (int i = 0; i < t->n; i++) in_tree[i] = 0;
    for (int j = 0; j < n; j++) in_tree[chosen[j]] = 1;
    /* by depth, each node's children best first: breadth-first over the chosen set */
    int order[SPRIG_TREE_MAX], head = 0, m = 1;
    order[0] = 0;
    in_tree[0] = 1;
    while (head < m) {
        const int v = order[head++];
        int kids[SPRIG_TREE_MAX], nk = 0;
        for (int j = 1; j < n; j++)
            if (t->parent[chosen[j]] == v) {
                int c = chosen[j], p = nk++;
                while (p > 0 && better_by(t, key, c, kids[p - 1])) { kids[p] = kids[p - 1]; p--; }
                kids[p] = c;
            }
        for (int j = 0; j < nk; j++) {
            in_tree[kids[j]] = (int16_t)(m + 1);
            order[m++] = kids[j];
        }
    }
    out->n = m;
    for (int i = 0; i < m; i++) {
        out->tokens[i] = t->token[order[i]];
        out->parents[i] = i ? in_tree[t->parent[order[i]]] - 1 : 0;
        if (map) map[i] = order[i];
    }
}
