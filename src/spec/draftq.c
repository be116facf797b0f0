/*
 * spec/draftq — see draftq.h.
 */
#include "spec/draftq.h"
#include "spec/accept.h"
#include "base/mem.h"

#include <math.h>
#include <string.h>

sprig_status sprig_draft_q_init(sprig_draft_q *q, sprig_sampler *sampler, int n_vocab, uint64_t seed, sprig_error *err)
{
    memset(q, 0, sizeof *q);
    if (!sampler || n_vocab < 1 || sprig_sampler_n_vocab(sampler) != n_vocab)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "sampled drafts: a sampler of the target's %d tokens is required", n_vocab);
    q->sampler = sampler;
    q->n_vocab = n_vocab;
    q->rows = sprig_calloc_aligned((size_t)SPRIG_TREE_MAX * (size_t)n_vocab, sizeof(float));
    q->pad = sprig_calloc_aligned((size_t)n_vocab, sizeof(float));
    q->left = sprig_calloc_aligned((size_t)n_vocab, sizeof(float));
    if (!q->rows || !q->pad || !q->left) {
        sprig_draft_q_free(q);
        return sprig_err(err, SPRIG_E_NOMEM, "sampled drafts: out of memory for %d rows of %d tokens", SPRIG_TREE_MAX, n_vocab);
    }
    sprig_rng_seed(&q->rng, seed);
    sprig_draft_q_reset(q);
    return SPRIG_OK;
}

void sprig_draft_q_free(sprig_draft_q *q)
{
    if (!q) return;
    sprig_free_aligned(q->rows);
    sprig_free_aligned(q->pad);
    sprig_free_aligned(q->left);
    q->rows = q->pad = q->left = NULL;
}

void sprig_draft_q_reset(sprig_draft_q *q)
{
    q->n_rows = 0;
    for (int i = 0; i < SPRIG_TREE_MAX; i++) q->row[i] = -1;
}

int sprig_draft_q_add(sprig_draft_q *q, const float *logits, int n_logits)
{
    if (q->n_rows >= SPRIG_TREE_MAX) return -1;
    const int V = q->n_vocab;
    const float *l = logits;
    if (n_logits < V) {   /* a shorter drafter vocabulary: the rest gets no mass */
        memcpy(q->pad, logits, (size_t)n_logits * sizeof(float));
        for (int i = n_logits; i < V; i++) q->pad[i] = -INFINITY;
        l = q->pad;
    }
    const int r = q->n_rows++;
    sprig_sampler_probs(q->sampler, l, q->rows + (size_t)r * (size_t)V);
    return r;
}

int sprig_draft_q_draw(sprig_draft_q *q, int r, int w, int32_t *out)
{
    const int V = q->n_vocab;
    memcpy(q->left, q->rows + (size_t)r * (size_t)V, (size_t)V * sizeof(float));
    int n = 0;
    while (n < w) {
        int x = sprig_sample_weights(q->left, V, &q->rng);
        if (x < 0) break;   /* no mass left */
        out[n++] = x;
        q->left[x] = 0.0f;
    }
    return n;
}

int sprig_draft_q_draw_step(sprig_draft_q *q, int j, const float *logits, int n_logits, int32_t *first, int32_t *second,
                            float *margin)
{
    int32_t two[2] = { -1, -1 };
    const int r = j >= 0 && j < SPRIG_TREE_MAX ? sprig_draft_q_add(q, logits, n_logits) : -1;
    const int n = r >= 0 ? sprig_draft_q_draw(q, r, 2, two) : 0;
    if (n > 0) q->row[j] = (int16_t)r;
    *first = two[0];
    *second = two[1];
    *margin = n > 1 ? sprig_draft_q_prob(q, r, two[0]) - sprig_draft_q_prob(q, r, two[1]) : n ? 1.0f : 0.0f;
    return n;
}
