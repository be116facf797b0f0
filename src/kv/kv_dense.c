/*
 * kv/kv_dense — the dense KV cache: per layer one key buffer and one value
 * buffer of [n_ctx][kv_dim] elements, stored as f32 or f16.
 *
 * Rows are written once per forward (converted from f32 by the type table's
 * reference conversion) and read in place by attention through a view.
 * Rollback moves whole rows: a gather copies each kept slot down to its new
 * index in ascending order, which is safe in place because a kept slot's
 * source index is never below its destination (selections are strictly
 * increasing). Trim only moves the length (kv.c), so it costs nothing, and
 * the allocation never changes after creation.
 */
#include "kv/kv.h"
#include "base/mem.h"
#include "tensor/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kv_dense {
    sprig_kv base;
    size_t elt;          /* bytes per element */
    size_t row_bytes;    /* kv_dim * elt */
    void **k, **v;       /* [n_layer] -> [n_ctx][kv_dim] */
};

static void dense_destroy(sprig_kv *kv)
{
    struct kv_dense *d = (struct kv_dense *)kv;
    for (int l = 0; l < kv->p.n_layer; l++) {
        if (d->k) sprig_free_aligned(d->k[l]);
        if (d->v) sprig_free_aligned(d->v[l]);
    }
    free(d->k);
    free(d->v);
    free(d);
}

static void put_rows(const struct kv_dense *d, void *dst, const float *src, int n)
{
    int64_t count = (int64_t)n * d->base.p.kv_dim;
    if (d->base.p.type == SPRIG_TYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
    } else {
        sprig_f16 *h = dst;
        for (int64_t i = 0; i < count; i++) h[i] = sprig_f32_to_f16(src[i]);
    }
}

static void dense_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    struct kv_dense *d = (struct kv_dense *)kv;
    size_t off = (size_t)kv->len * d->row_bytes;
    put_rows(d, (char *)d->k[layer] + off, k, n);
    put_rows(d, (char *)d->v[layer] + off, v, n);
}

static sprig_kv_view dense_view(const sprig_kv *kv, int layer)
{
    const struct kv_dense *d = (const struct kv_dense *)kv;
    return (sprig_kv_view){ .k = d->k[layer], .v = d->v[layer], .type = kv->p.type, .stride = kv->p.kv_dim };
}

static bool dense_can_gather(const sprig_kv *kv, char *reason, size_t cap)
{
    (void)kv;
    if (reason && cap) reason[0] = 0;
    return true;
}

/* Copy row src -> dst (src >= dst; distinct rows never overlap) in every
 * per-slot buffer of every layer. */
static void move_row(struct kv_dense *d, int dst, int src)
{
    if (dst == src) return;
    size_t rb = d->row_bytes;
    for (int l = 0; l < d->base.p.n_layer; l++) {
        memcpy((char *)d->k[l] + (size_t)dst * rb, (char *)d->k[l] + (size_t)src * rb, rb);
        memcpy((char *)d->v[l] + (size_t)dst * rb, (char *)d->v[l] + (size_t)src * rb, rb);
    }
}

static sprig_status dense_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err)
{
    (void)err;
    struct kv_dense *d = (struct kv_dense *)kv;
    for (int i = 0; i < n; i++) move_row(d, i, slots[i]);
    return SPRIG_OK;
}

static sprig_status dense_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept,
                                             sprig_error *err)
{
    (void)err;
    struct kv_dense *d = (struct kv_dense *)kv;
    int base = kv->len - tail_len;
    for (int i = 0; i < n_kept; i++) move_row(d, base + i, base + kept[i]);
    return SPRIG_OK;
}

static const struct sprig_kv_vt dense_vt = {
    .kind = "dense",
    .destroy = dense_destroy,
    .write = dense_write,
    .view = dense_view,
    .trim = NULL,                 /* only the length moves */
    .can_gather = dense_can_gather,
    .gather_positions = dense_gather_positions,
    .gather_within_tail = dense_gather_within_tail,
    .clear = NULL,
};

sprig_kv *sprig_kv_create_dense(const struct sprig_kv_params *p, sprig_error *err)
{
    if (!p) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv dense: params is NULL"); return NULL; }
    if (p->n_layer < 1) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv dense: n_layer = %d must be >= 1", p->n_layer); return NULL; }
    if (p->n_ctx < 1) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv dense: n_ctx = %d must be >= 1", p->n_ctx); return NULL; }
    if (p->kv_dim < 1) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv dense: kv_dim = %d must be >= 1", p->kv_dim); return NULL; }
    if (p->type != SPRIG_TYPE_F32 && p->type != SPRIG_TYPE_F16) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv dense: type %d (%s) is not f32 or f16", p->type, sprig_type_name(p->type));
        return NULL;
    }
    size_t elt = p->type == SPRIG_TYPE_F32 ? sizeof(float) : sizeof(sprig_f16);
    size_t row_bytes, buf_bytes;
    if (sprig_mul_ovf((size_t)p->kv_dim, elt, &row_bytes) || sprig_mul_ovf(row_bytes, (size_t)p->n_ctx, &buf_bytes)) {
        sprig_err(err, SPRIG_E_NOMEM, "kv dense: n_ctx %d x kv_dim %d overflows a buffer size", p->n_ctx, p->kv_dim);
        return NULL;
    }
    struct kv_dense *d = calloc(1, sizeof *d);
    if (!d) { sprig_err(err, SPRIG_E_NOMEM, "kv dense: out of memory"); return NULL; }
    d->base.vt = &dense_vt;
    d->base.p = *p;
    d->elt = elt;
    d->row_bytes = row_bytes;
    d->k = calloc((size_t)p->n_layer, sizeof *d->k);
    d->v = calloc((size_t)p->n_layer, sizeof *d->v);
    bool ok = d->k && d->v;
    for (int l = 0; ok && l < p->n_layer; l++) {
        d->k[l] = sprig_calloc_aligned(buf_bytes, 1);
        d->v[l] = sprig_calloc_aligned(buf_bytes, 1);
        ok = d->k[l] && d->v[l];
    }
    if (!ok) {
        dense_destroy(&d->base);
        sprig_err(err, SPRIG_E_NOMEM, "kv dense: cannot allocate %d layers x 2 x %zu bytes", p->n_layer, buf_bytes);
        return NULL;
    }
    return &d->base;
}
