/*
 * spec/dyntree — see dyntree.h.
 */
#include "spec/dyntree.h"
#include "sample/sample.h"

#include <stdlib.h>

void sprig_dyntree_init(sprig_dyntree *t, int32_t root)
{
    t->n = 1;
    t->token[0] = root;
    t->parent[0] = -1;
    t->depth[0] = 0;
    t->slot[0] = -1;
    t->score[0] = 0.0f;
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
        t->score[i] = t->score[node] + top[j].logprob;
        added++;
    }
    return added;
}

/* a before b: higher key (the score unless given), then shallower, then older */
static bool better_by(const sprig_dyntree *t, const float *key, int a, int b)
{
    if (key[a] != key[b]) return key[a] > key[b];
    if (t->depth[a] != t->depth[b]) return t->depth[a] < t->depth[b];
    return a < b;
}
static bool better(const sprig_dyntree *t, int a, int b) { return better_by(t, t->score, a, b); }

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
    static _Thread_local int16_t in_tree[SPRIG_DYNTREE_CAP];   /* candidate -> tree node + 1, or 0 */
    int chosen[SPRIG_TREE_MAX];
    const int n = sprig_dyntree_best(t, key, max_nodes, max_depth, chosen);
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
