/*
 * spec/draft_model — a separate small model as the drafter (see drafters.h).
 *
 * The draft cache holds `fed[0..n_fed)`. Each round the sequence to continue
 * is the session history (everything the target accepted, in cache order)
 * plus the bonus; the drafter keeps the longest prefix of its cache that
 * matches, trims the rest, feeds what is missing as one batch, then drafts
 * k-1 tokens greedily, one forward per token. Because re-syncing is by
 * prefix, it needs no accept hook and is right after chain and tree rounds
 * alike (a path through a sibling leaf just shortens the shared prefix).
 */
#include "spec/drafters.h"
#include "base/log.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

typedef struct model_drafter {
    sprig_drafter base;
    sprig_model *dm;           /* owned */
    sprig_ctx *ctx;            /* owned */
    int32_t *fed;              /* [n_ctx] tokens in the draft cache */
    int n_fed;
    float *logits;             /* [n_vocab] */
    int n_common;              /* ids both models have (a padded vocabulary may be longer) */
} model_drafter;

static sprig_status md_draft_block(sprig_drafter *d, const sprig_draft_ctx *c, int k, sprig_draft *out, sprig_error *err)
{
    model_drafter *md = (model_drafter *)d;
    sprig_kv *kv = sprig_ctx_kv(md->ctx);
    int n_seq = c->n_history + 1;
    int room = sprig_ctx_n_ctx(md->ctx);
    /* longest common prefix of the cache and history + bonus, leaving at
     * least the last token to feed (its logits are what we draft from) */
    int common = 0;
    while (common < md->n_fed && common < n_seq - 1 &&
           md->fed[common] == (common < c->n_history ? c->history[common] : c->bonus))
        common++;
    sprig_status st = sprig_kv_trim(kv, md->n_fed - common, err);
    if (st) return st;
    md->n_fed = common;
    int need = n_seq - common;
    if (common + need + k > room) {           /* not enough room to draft: propose nothing */
        out->n = 0;
        return SPRIG_OK;
    }
    for (int i = common; i < n_seq; i++) md->fed[i] = i < c->n_history ? c->history[i] : c->bonus;
    if ((st = sprig_prefill(md->ctx, md->fed + common, need, md->logits, NULL, err))) return st;
    md->n_fed = n_seq;
    int V = md->n_common;   /* never propose an id the target does not have */
    for (int j = 0; j < k - 1; j++) {
        int32_t best, second;
        float margin;
        sprig_top2(md->logits, V, &best, &second, &margin);
        out->tokens[j] = best;
        out->runner_up[j] = second;
        out->margin[j] = margin;
        out->n = j + 1;
        if (j == k - 2) break;
        struct sprig_fwd f = { .n = 1, .tokens = &best, .n_out = 1, .logits = md->logits };
        if ((st = sprig_forward(md->ctx, &f, err))) return st;
        md->fed[md->n_fed++] = best;
    }
    return SPRIG_OK;
}

static sprig_status md_begin(sprig_drafter *d, const sprig_draft_ctx *c, sprig_error *err)
{
    (void)c;
    model_drafter *md = (model_drafter *)d;
    sprig_kv_clear(sprig_ctx_kv(md->ctx));
    md->n_fed = 0;
    (void)err;
    return SPRIG_OK;
}

static void md_free(model_drafter *md)
{
    sprig_ctx_free(md->ctx);
    sprig_model_free(md->dm);
    sprig_free_aligned(md->fed);
    sprig_free_aligned(md->logits);
    free(md);
}

static void md_destroy(sprig_drafter *d) { md_free((model_drafter *)d); }

static const struct sprig_drafter_vt model_drafter_vt = {
    .name = "draft-model",
    .draft_block = md_draft_block,
    .begin = md_begin,
    .destroy = md_destroy,
};

sprig_drafter *sprig_draft_model_create(const char *path, const sprig_model *target, sprig_pool *pool,
                                        int n_ctx, sprig_error *err)
{
    model_drafter *md = calloc(1, sizeof *md);
    if (!md) { sprig_err(err, SPRIG_E_NOMEM, "draft model: out of memory"); return NULL; }
    md->base.vt = &model_drafter_vt;
    if (sprig_model_load(path, &md->dm, err)) {
        sprig_err_prefix(err, "draft model");
        free(md);
        return NULL;
    }
    if (md->dm->hp.n_recurrent) {   /* its trims would need the recurrent states rolled back */
        sprig_err(err, SPRIG_E_REFUSED, "%s: a draft model with recurrent layers (%d) cannot roll back its drafts yet", path,
                  md->dm->hp.n_recurrent);
        md_free(md);
        return NULL;
    }
    int diff = sprig_tokenizer_first_difference(target->tok, md->dm->tok);
    if (diff >= 0) {
        size_t la = 0, lb = 0;
        const char *pa = sprig_tokenizer_piece(target->tok, diff, &la);
        const char *pb = sprig_tokenizer_piece(md->dm->tok, diff, &lb);
        sprig_err(err, SPRIG_E_INVALID_ARG, "%s: the draft model's vocabulary differs from the target's at token id %d ('%.*s' vs '%.*s')",
                  path, diff, (int)(lb > 40 ? 40 : lb), pb, (int)(la > 40 ? 40 : la), pa);
        md_free(md);
        return NULL;
    }
    md->n_common = md->dm->hp.n_vocab < target->hp.n_vocab ? md->dm->hp.n_vocab : target->hp.n_vocab;
    int nt = sprig_tokenizer_n_vocab(target->tok), nd = sprig_tokenizer_n_vocab(md->dm->tok);
    if (nt != nd)
        SPRIG_LOGI("draft model: %d tokens against the target's %d; the first %d agree (padding ignored)", nd, nt, nt < nd ? nt : nd);
    struct sprig_ctx_params cp = { .n_ctx = n_ctx, .n_batch = 64 };
    if (sprig_ctx_create(md->dm, pool, &cp, &md->ctx, err)) {
        sprig_err_prefix(err, "draft model");
        md_free(md);
        return NULL;
    }
    md->fed = sprig_calloc_aligned((size_t)n_ctx, sizeof(int32_t));
    md->logits = sprig_calloc_aligned((size_t)md->dm->hp.n_vocab, sizeof(float));
    if (!md->fed || !md->logits) {
        md_free(md);
        sprig_err(err, SPRIG_E_NOMEM, "draft model: out of memory");
        return NULL;
    }
    return &md->base;
}
