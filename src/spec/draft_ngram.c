/*
 * spec/draft_ngram — prompt lookup as the drafter (see drafters.h,
 * spec/ngram.h). The index follows the session history (append-only) plus
 * the current bonus, which is always the next history token, so the index
 * only ever grows. An alternative continuation seen after another
 * occurrence is reported as the first step's runner-up, so `--tree-branches`
 * can verify both.
 */
#include "spec/drafters.h"
#include "spec/ngram.h"

#include <stdlib.h>

typedef struct ngram_drafter {
    sprig_drafter base;
    sprig_ngram *g;            /* owned */
} ngram_drafter;

static sprig_status ng_draft_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    ngram_drafter *nd = (ngram_drafter *)d;
    int have = sprig_ngram_len(nd->g);
    if (have > c->n_history + 1)
        return sprig_err(err, SPRIG_E_INTERNAL, "n-gram drafter: index holds %d tokens, history only %d", have, c->n_history + 1);
    if (have < c->n_history) sprig_ngram_push(nd->g, c->history + have, c->n_history - have);
    if (sprig_ngram_len(nd->g) == c->n_history) sprig_ngram_push(nd->g, &c->bonus, 1);
    int32_t alt;
    int alt_at;
    out->n = sprig_ngram_draft(nd->g, out->tokens, k - 1, &alt, &alt_at);
    if (out->n > 0 && alt >= 0 && alt_at >= 0 && alt_at < out->n) out->runner_up[alt_at] = alt;
    return SPRIG_OK;
}

static sprig_status ng_begin(sprig_drafter *d, const sprig_draft_ctx *c, sprig_error *err)
{
    (void)c;
    (void)err;
    sprig_ngram_reset(((ngram_drafter *)d)->g);
    return SPRIG_OK;
}

static void ng_destroy(sprig_drafter *d)
{
    ngram_drafter *nd = (ngram_drafter *)d;
    if (!nd) return;
    sprig_ngram_free(nd->g);
    free(nd);
}

static const struct sprig_drafter_vt ngram_drafter_vt = {
    .name = "ngram",
    .draft_block = ng_draft_block,
    .begin = ng_begin,
    .destroy = ng_destroy,
};

sprig_drafter *sprig_draft_ngram_create(int n_min, int n_max, int capacity, sprig_error *err)
{
    ngram_drafter *nd = calloc(1, sizeof *nd);
    if (!nd) { sprig_err(err, SPRIG_E_NOMEM, "n-gram drafter: out of memory"); return NULL; }
    nd->base.vt = &ngram_drafter_vt;
    nd->g = sprig_ngram_create(n_min, n_max, capacity, err);
    if (!nd->g) { free(nd); return NULL; }
    return &nd->base;
}
