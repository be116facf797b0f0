/*
 * spec/draft_mtp — an MTP head as the drafter (see drafters.h). Two kinds of
 * head, one row each in `heads`, chosen by the file: sprig's assistant head
 * (model/mtp.h) and Gemma 4's published assistant (model/assistant.h,
 * general.architecture gemma4-assistant). Each round: h = the target's
 * final-norm hidden state of the row that predicted the bonus t (handed
 * over by the target's finalize); k-1 head steps at a frozen position over
 * the target's cache, each feeding its h' and drafted token to the next.
 * No drafter cache, so nothing to roll back.
 */
#include "spec/drafters.h"
#include "model/assistant.h"
#include "model/mtp.h"
#include "base/log.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

/* One kind of head: step(head, state, pool, target cache, h_in, token, h_out, logits). */
struct head_ops {
    const char *name;
    sprig_status (*step)(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                         float *h_out, float *logits, sprig_error *err);
    void (*free_head)(void *head);
    void (*free_state)(void *state);
};

/* sprig's head: position p = n_past - 1 (model/mtp.h) */
static sprig_status mtp_step(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                             float *h_out, float *logits, sprig_error *err)
{
    return sprig_mtp_step(head, state, pool, kv, h_in, token, sprig_kv_len(kv) - 1, h_out, logits, err);
}
static void mtp_free_head(void *h) { sprig_mtp_free(h); }
static void mtp_free_state(void *s) { sprig_mtp_state_free(s); }

/* Gemma 4's assistant: position n_past (model/assistant.h) */
static sprig_status as_step(const void *head, void *state, sprig_pool *pool, const sprig_kv *kv, const float *h_in, int32_t token,
                            float *h_out, float *logits, sprig_error *err)
{
    return sprig_assistant_step(head, state, pool, kv, h_in, token, h_out, logits, err);
}
static void as_free_head(void *h) { sprig_assistant_free(h); }
static void as_free_state(void *s) { sprig_assistant_state_free(s); }

static const struct head_ops heads[] = {
    { "mtp", mtp_step, mtp_free_head, mtp_free_state },
    { "gemma4-assistant", as_step, as_free_head, as_free_state },
};

typedef struct mtp_drafter {
    sprig_drafter base;
    const struct head_ops *ops;
    void *head;                /* owned */
    void *state;               /* owned */
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
    memcpy(md->h, st->hidden, (size_t)md->dim * sizeof(float));
    int32_t tok = c->bonus;
    for (int j = 0; j < k - 1; j++) {
        sprig_status s = md->ops->step(md->head, md->state, md->pool, st->kv, md->h, tok, md->h, md->logits, err);
        if (s) return s;
        int32_t best, second;
        float margin;
        sprig_top2(md->logits, md->n_vocab, &best, &second, &margin);
        SPRIG_LOGD("%s draft: step %d after %d cached: %d (runner-up %d, margin %.4f)", md->ops->name, j, st->n_past, best, second,
                   (double)margin);
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
    if (md->ops) {
        md->ops->free_state(md->state);
        md->ops->free_head(md->head);
    }
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
    if (sprig_assistant_file_is(path)) {
        sprig_assistant *a = NULL;
        if (sprig_assistant_load(path, target, &a, err)) { free(md); return NULL; }
        md->ops = &heads[1];
        md->head = a;
        md->state = sprig_assistant_state_create(a, n_ctx, err);
    } else {
        sprig_mtp *h = NULL;
        if (sprig_mtp_load(path, target, &h, err)) { free(md); return NULL; }
        md->ops = &heads[0];
        md->head = h;
        md->state = sprig_mtp_state_create(h, n_ctx, err);
    }
    md->h = sprig_calloc_aligned((size_t)md->dim, sizeof(float));
    md->logits = sprig_calloc_aligned((size_t)md->n_vocab, sizeof(float));
    if (!md->state || !md->h || !md->logits) {
        mtp_destroy(&md->base);
        sprig_err(err, SPRIG_E_NOMEM, "MTP drafter: out of memory");
        return NULL;
    }
    return &md->base;
}
