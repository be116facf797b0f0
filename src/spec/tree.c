/*
 * spec/tree — see tree.h. Topology queries are linear scans: trees hold tens
 * of nodes, and a scan over a parents[] array is cheaper than keeping child
 * lists in sync. Because parents[i] < i, depths and ancestry are one forward
 * pass or a walk up the parent chain.
 */
#include "spec/tree.h"

#include <string.h>

void sprig_tree_root(sprig_tree *t, int32_t bonus)
{
    t->n = 1;
    t->tokens[0] = bonus;
    t->parents[0] = 0;
}

sprig_status sprig_tree_linear(sprig_tree *t, int32_t bonus, const int32_t *drafts, int n_drafts, sprig_error *err)
{
    if (n_drafts < 0 || n_drafts > SPRIG_TREE_MAX - 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree linear: n_drafts = %d is outside [0, %d]", n_drafts,
                         SPRIG_TREE_MAX - 1);
    if (n_drafts > 0 && !drafts)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree linear: drafts is NULL with %d drafts", n_drafts);
    sprig_tree_root(t, bonus);
    for (int i = 0; i < n_drafts; i++) {
        t->tokens[i + 1] = drafts[i];
        t->parents[i + 1] = i;
    }
    t->n = n_drafts + 1;
    return SPRIG_OK;
}

sprig_status sprig_tree_push_child(sprig_tree *t, int parent, int32_t token, int *index, sprig_error *err)
{
    if (t->n < 1 || t->n > SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree push_child: tree has %d nodes (not built?)", t->n);
    if (parent < 0 || parent >= t->n)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree push_child: parent %d is not a node (tree has %d)", parent, t->n);
    if (t->n == SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree push_child: tree is full (%d nodes)", SPRIG_TREE_MAX);
    int i = t->n++;
    t->tokens[i] = token;
    t->parents[i] = parent;
    if (index) *index = i;
    return SPRIG_OK;
}

sprig_status sprig_tree_validate(const sprig_tree *t, int n_vocab, sprig_error *err)
{
    if (t->n < 1 || t->n > SPRIG_TREE_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree: n = %d is outside [1, %d]", t->n, SPRIG_TREE_MAX);
    if (t->parents[0] != 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree: parents[0] = %d, the root's parent must be 0", t->parents[0]);
    for (int i = 1; i < t->n; i++)
        if (t->parents[i] < 0 || t->parents[i] >= i)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "tree: node %d has parent %d, must be in [0, %d)", i,
                             t->parents[i], i);
    if (n_vocab > 0)
        for (int i = 0; i < t->n; i++)
            if (t->tokens[i] < 0 || t->tokens[i] >= n_vocab)
                return sprig_err(err, SPRIG_E_INVALID_ARG, "tree: node %d has token %d outside the vocabulary [0, %d)",
                                 i, t->tokens[i], n_vocab);
    return SPRIG_OK;
}

int sprig_tree_children(const sprig_tree *t, int node, int *out, int cap)
{
    if (node < 0 || node >= t->n) return 0;
    int c = 0;
    for (int i = node + 1; i < t->n; i++)
        if (t->parents[i] == node) {
            if (c < cap) out[c] = i;
            c++;
        }
    return c;
}

void sprig_tree_depths(const sprig_tree *t, int *depths)
{
    depths[0] = 0;
    for (int i = 1; i < t->n; i++) depths[i] = depths[t->parents[i]] + 1;
}

int sprig_tree_max_depth(const sprig_tree *t)
{
    int d[SPRIG_TREE_MAX], m = 0;
    sprig_tree_depths(t, d);
    for (int i = 0; i < t->n; i++) m = d[i] > m ? d[i] : m;
    return m;
}

int sprig_tree_path_to(const sprig_tree *t, int node, int *path)
{
    if (node < 0 || node >= t->n) return 0;
    int rev[SPRIG_TREE_MAX], len = 0;
    for (int i = node;; i = t->parents[i]) {
        rev[len++] = i;
        if (i == 0) break;
    }
    for (int k = 0; k < len; k++) path[k] = rev[len - 1 - k];
    return len;
}

bool sprig_tree_is_ancestor_or_self(const sprig_tree *t, int a, int node)
{
    if (a < 0 || a >= t->n || node < 0 || node >= t->n) return false;
    /* ancestors have smaller indices: walk up until we pass a */
    for (int i = node; i >= a; i = t->parents[i]) {
        if (i == a) return true;
        if (i == 0) break;
    }
    return false;
}

bool sprig_tree_is_linear(const sprig_tree *t)
{
    for (int i = 1; i < t->n; i++)
        if (t->parents[i] != i - 1) return false;
    return true;
}

/* One row of the in-block mask: row[k] = 0 for k on the root -> q path. */
static void mask_row(const sprig_tree *t, int q, float blocked, float *row)
{
    for (int k = 0; k < t->n; k++) row[k] = blocked;
    for (int i = q;; i = t->parents[i]) {
        row[i] = 0.0f;
        if (i == 0) break;
    }
}

void sprig_tree_mask(const sprig_tree *t, float blocked, float *mask)
{
    for (int q = 0; q < t->n; q++) mask_row(t, q, blocked, mask + (size_t)q * t->n);
}

sprig_status sprig_tree_mask_with_history(const sprig_tree *t, int offset, float blocked, float *mask,
                                          sprig_error *err)
{
    if (offset < 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "tree mask: offset = %d must be >= 0", offset);
    size_t w = (size_t)offset + (size_t)t->n;
    for (int q = 0; q < t->n; q++) {
        float *row = mask + (size_t)q * w;
        memset(row, 0, (size_t)offset * sizeof(float));
        mask_row(t, q, blocked, row + offset);
    }
    return SPRIG_OK;
}
