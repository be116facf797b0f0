/*
 * model/nextn — see nextn.h. The block runs through the ordinary context
 * machinery (cache, scratch, the shared output head) on a view model: the
 * target's hyper-parameters with one layer (the MTP block's, reading cache
 * layer 0), its embeddings, head norm and head, and an architecture row
 * copied from the target's with this file's forward.
 */
#include "model/nextn.h"
#include "model/internal.h"
#include "base/mem.h"
#include "tensor/ops.h"

#include <stdlib.h>
#include <string.h>

struct sprig_nextn_ctx {
    sprig_model view;           /* shallow: the target's weights, never freed through it */
    struct sprig_arch arch;     /* the target's row, forward = nextn_forward */
    struct sprig_layer layer;   /* the MTP block, kv_layer 0 */
    const struct sprig_nextn *blk;
    sprig_ctx *ctx;
};

/* x rows = W_eh [RMSNorm(E[t]) enorm ; RMSNorm(h) hnorm], then the block and the head */
static sprig_status nextn_forward(sprig_ctx *c, const struct sprig_fwd *f, sprig_error *err)
{
    const sprig_model *m = c->m;
    const struct sprig_hparams *hp = &m->hp;
    const struct sprig_nextn_ctx *x = (const struct sprig_nextn_ctx *)m;   /* view is the first member */
    const int n = f->n, dim = hp->dim, len = sprig_kv_len(c->kv);
    if (!f->h_in) return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP block: no hidden rows (h_in) for its input pairs");
    float *cat = c->gate;   /* [n][2 * dim]: the context sizes max_ff >= 2 * dim for the view */
    for (int i = 0; i < n; i++) {
        float *e = cat + (size_t)i * 2 * dim;
        sprig_weight_row_f32(&m->tok_embd, f->tokens[i], e);
        sprig_rmsnorm(e, e, x->blk->enorm, 1, dim, hp->eps);
        sprig_rmsnorm(e + dim, f->h_in + (size_t)i * dim, x->blk->hnorm, 1, dim, hp->eps);
    }
    const sprig_weight *w[1] = { &x->blk->eh_proj };
    float *y[1] = { c->x };
    sprig_matmul_rows(c->pool, cat, n, 2 * dim, c->act, c->act_bytes, 1, w, y);
    for (int i = 0; i < n; i++) c->pos[i] = f->pos ? f->pos[i] : len + i;
    sprig_qwen35_rope(c, c->pos, n);
    sprig_qwen35_block(c, &m->layers[0], 0, n, len, c->pos, f->mask);
    sprig_kv_commit(c->kv, n);
    sprig_forward_head(c, f);
    return SPRIG_OK;
}

sprig_status sprig_nextn_create(const sprig_model *target, sprig_pool *pool, int n_ctx, int n_batch, sprig_nextn_ctx **out,
                                sprig_error *err)
{
    *out = NULL;
    if (!target->n_nextn || !target->nextn)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP: the %s model has no MTP block (%s.nextn_predict_layers is absent or 0)",
                         target->arch->name, target->arch->name);
    struct sprig_nextn_ctx *x = calloc(1, sizeof *x);
    if (!x) return sprig_err(err, SPRIG_E_NOMEM, "MTP: out of memory");
    const struct sprig_nextn *b = &target->nextn[0];
    x->blk = b;
    x->arch = *target->arch;
    x->arch.forward = nextn_forward;
    x->layer = b->blk;
    x->layer.kv_layer = 0;
    x->layer.window = 0;
    x->layer.recurrent = false;
    x->view = *target;
    x->view.arch = &x->arch;
    x->view.layers = &x->layer;
    x->view.nextn = NULL;
    x->view.n_nextn = 0;
    x->view.hp.n_layer = 1;
    x->view.hp.n_recurrent = 0;
    x->view.hp.n_nextn = 0;
    x->view.hp.n_kv_start = 1;
    if (x->view.hp.max_ff < 2 * x->view.hp.dim) x->view.hp.max_ff = 2 * x->view.hp.dim;   /* eh_proj's input rows */
    if (b->embed.raw) x->view.tok_embd = b->embed;
    if (b->head_norm) x->view.out_norm = b->head_norm;
    if (b->head.raw) x->view.output = b->head;
    struct sprig_ctx_params cp = { .n_ctx = n_ctx, .n_batch = n_batch };
    sprig_status st = sprig_ctx_create(&x->view, pool, &cp, &x->ctx, err);
    if (st) {
        free(x);
        return st;
    }
    *out = x;
    return SPRIG_OK;
}

void sprig_nextn_free(sprig_nextn_ctx *x)
{
    if (!x) return;
    sprig_ctx_free(x->ctx);
    free(x);
}

int sprig_nextn_len(const sprig_nextn_ctx *x) { return sprig_kv_len(sprig_ctx_kv(x->ctx)); }
int sprig_nextn_n_batch(const sprig_nextn_ctx *x) { return sprig_ctx_n_batch(x->ctx); }

sprig_status sprig_nextn_feed(sprig_nextn_ctx *x, const int32_t *tokens, const float *h, int n, float *h_out, float *logits,
                              sprig_error *err)
{
    struct sprig_fwd f = { .n = n, .tokens = tokens, .h_in = h, .n_out = h_out || logits ? 1 : 0, .logits = logits,
                           .hidden = h_out };
    return sprig_forward(x->ctx, &f, err);
}

sprig_status sprig_nextn_trim(sprig_nextn_ctx *x, int len, sprig_error *err)
{
    int have = sprig_nextn_len(x);
    if (len < 0 || len > have) return sprig_err(err, SPRIG_E_INVALID_ARG, "MTP: cannot keep %d of %d positions", len, have);
    return sprig_kv_trim(sprig_ctx_kv(x->ctx), have - len, err);
}
