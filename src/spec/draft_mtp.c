/*
 * spec/draft_mtp — the MTP assistant head as the drafter (see drafters.h,
 * model/mtp.h). Each round: h = the target's final-norm hidden state at the
 * last kept slot p = n_past - 1 (handed over by the target's finalize), t =
 * the bonus; k-1 head steps at the frozen position p over the target's
 * cached layer-`kv_layer` K/V. No drafter cache, so nothing to roll back.
 */
#include "spec/drafters.h"
#include "model/mtp.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

typedef struct mtp_drafter {
    sprig_drafter base;
    sprig_mtp *head;           /* owned */
    sprig_mtp_state *state;    /* owned */
    sprig_pool *pool;          /* borrowed */
    int n_vocab, dim;
    float *h;                  /* [dim] */
    float *logits;             /* [n_vocab] */
} mtp_drafter;

static sprig_status mtp_draft_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    mtp_drafter *md = (mtp_drafter *)d;
    const sprig_target_state *st = c->target;
    if (!st || !st->hidden || !st->kv || st->n_embd != md->dim || st->n_past < 1)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP drafter: the target does not expose its hidden state and KV cache");
    int p = st->n_past - 1;
    memcpy(md->h, st->hidden, (size_t)md->dim * sizeof(float));
    int32_t tok = c->bonus;
    for (int j = 0; j < k - 1; j++) {
        sprig_status s = sprig_mtp_step(md->head, md->state, md->pool, st->kv, md->h, tok, p, md->h, md->logits, err);
        if (s) return s;
        int32_t best, second;
        float margin;
        sprig_top2(md->logits, md->n_vocab, &best, &second, &margin);
        out->tokens[j] = best;
        out->runner_up[j] = second;
        out->margin[j] = margin;
        out->n = j + 1;
        tok = best;
    }
    return SPRIG_OK;
}

static void mtp_destroy(sprig_drafter *d)
{
    mtp_drafter *md = (mtp_drafter *)d;
    if (!md) return;
    sprig_mtp_state_free(md->state);
    sprig_mtp_free(md->head);
    sprig_free_aligned(md->h);
    sprig_free_aligned(md->logits);
    free(md);
}

static const struct sprig_drafter_vt mtp_drafter_vt = {
    .name = "mtp",
    .draft_block = mtp_draft_block,
    .destroy = mtp_destroy,
};

sprig_drafter *sprig_draft_mtp_create(const char *path, const sprig_model *target, sprig_pool *pool,
                                      int n_ctx, sprig_error *err)
{
    mtp_drafter *md = calloc(1, sizeof *md);
    if (!md) { sprig_err(err, SPRIG_E_NOMEM, "MTP drafter: out of memory"); return NULL; }
    md->base.vt = &mtp_drafter_vt;
    md->pool = pool;
    md->n_vocab = target->hp.n_vocab;
    md->dim = target->hp.dim;
    if (sprig_mtp_load(path, target, &md->head, err)) {
        free(md);
        return NULL;
    }
    md->state = sprig_mtp_state_create(md->head, n_ctx, err);
    md->h = sprig_calloc_aligned((size_t)md->dim, sizeof(float));
    md->logits = sprig_calloc_aligned((size_t)md->n_vocab, sizeof(float));
    if (!md->state || !md->h || !md->logits) {
        mtp_destroy(&md->base);
        sprig_err(err, SPRIG_E_NOMEM, "MTP drafter: out of memory");
        return NULL;
    }
    return &md->base;
}
