/*
 * spec/walk — see walk.h. Pure integer comparison over at most
 * SPRIG_TREE_MAX entries; no allocation.
 */
#include "spec/walk.h"

void sprig_speculative_walk(const int32_t *draft, const int32_t *target, int k, int budget, sprig_walk *out)
{
    SPRIG_ASSERT(k >= 1 && k <= SPRIG_TREE_MAX);
    int a = 0;
    /* descend while the draft matches and one more accepted token still
     * leaves room for the bonus within the budget */
    while (a < k - 1 && draft[a] == target[a] && a + 1 < budget) a++;
    out->accepted = a;
    out->n_path = a + 1;
    for (int i = 0; i <= a; i++) out->path[i] = i;
    out->n_emit = 0;
    if (budget <= 0) return;
    for (int i = 0; i < a; i++) out->emit[out->n_emit++] = draft[i];
    out->emit[out->n_emit++] = target[a];
}

void sprig_tree_walk(const sprig_tree *t, const int32_t *target, int budget, sprig_walk *out)
{
    SPRIG_ASSERT(t->n >= 1 && t->n <= SPRIG_TREE_MAX);
    int cur = 0;
    out->n_path = 0;
    out->path[out->n_path++] = 0;
    while (out->n_path < budget) {
        int next = -1;
        for (int i = cur + 1; i < t->n; i++)
            if (t->parents[i] == cur && t->tokens[i] == target[cur]) { next = i; break; }
        if (next < 0) break;
        out->path[out->n_path++] = next;
        cur = next;
    }
    out->accepted = out->n_path - 1;
    out->n_emit = 0;
    if (budget <= 0) return;
    for (int i = 1; i < out->n_path; i++) out->emit[out->n_emit++] = t->tokens[out->path[i]];
    out->emit[out->n_emit++] = target[cur];
}
