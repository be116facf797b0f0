/*
 * kv/kv_dense — the dense KV cache: per layer one key buffer and one value
 * buffer of [n_ctx] slots, each slot n_kv_head records of the mode's key or
 * value format (kv/codec.h, tensor/kvrows.h) — f32, f16, int8 with its
 * scale, rotated 4/3-bit codes with norm and rescale.
 *
 * Every per-token sidecar (scale, norm, rescale) lives inside its token's
 * record, so the data movement of rollback is the same for every mode: a
 * gather copies each kept slot's records down to its new index in ascending
 * order, which is safe in place because a kept slot's source index is never
 * below its destination (selections are strictly increasing); the sidecars
 * travel with their codes by construction. Trim only moves the length
 * (kv.c), and the allocation never changes after creation.
 */
#include "kv/kv.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kv_dense {
    sprig_kv base;
    sprig_kv_codec kc, vc;
    int64_t ks, vs;            /* bytes per slot: n_kv_head * record bytes */
    uint8_t **k, **v;          /* [n_layer] -> [n_ctx][ks or vs] */
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

/* rows x[n][n_kv_head*hd] -> slots [at, at+n) of one buffer */
static void put_rows(const sprig_kv_codec *c, int n_kv_head, uint8_t *dst, int64_t slot_bytes, const float *x, int n)
{
    const int hd = c->hd;
    for (int i = 0; i < n; i++)
        for (int g = 0; g < n_kv_head; g++)
            sprig_kv_codec_encode(c, x + ((size_t)i * n_kv_head + g) * hd, dst + i * slot_bytes + g * c->rec_bytes);
}

static void dense_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    struct kv_dense *d = (struct kv_dense *)kv;
    const int nkv = kv->p.n_kv_head;
    put_rows(&d->kc, nkv, d->k[layer] + kv->len * d->ks, d->ks, k, n);
    put_rows(&d->vc, nkv, d->v[layer] + kv->len * d->vs, d->vs, v, n);
}

static sprig_kv_view dense_view(const sprig_kv *kv, int layer)
{
    const struct kv_dense *d = (const struct kv_dense *)kv;
    return (sprig_kv_view){
        .k = { .fmt = d->kc.fmt, .base = d->k[layer], .stride = d->ks, .head_bytes = d->kc.rec_bytes, .codebook = d->kc.codebook },
        .v = { .fmt = d->vc.fmt, .base = d->v[layer], .stride = d->vs, .head_bytes = d->vc.rec_bytes, .codebook = d->vc.codebook },
        .kc = &d->kc, .vc = &d->vc,
    };
}

static bool dense_can_gather(const sprig_kv *kv, char *reason, size_t cap)
{
    (void)kv;
    if (reason && cap) reason[0] = 0;
    return true;
}

/* Copy slot src -> dst (src >= dst; distinct slots never overlap) in every
 * buffer of every layer. */
static void move_slot(struct kv_dense *d, int dst, int src)
{
    if (dst == src) return;
    for (int l = 0; l < d->base.p.n_layer; l++) {
        memcpy(d->k[l] + dst * d->ks, d->k[l] + src * d->ks, (size_t)d->ks);
        memcpy(d->v[l] + dst * d->vs, d->v[l] + src * d->vs, (size_t)d->vs);
    }
}

static sprig_status dense_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err)
{
    (void)err;
    struct kv_dense *d = (struct kv_dense *)kv;
    for (int i = 0; i < n; i++) move_slot(d, i, slots[i]);
    return SPRIG_OK;
}

static sprig_status dense_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept,
                                             sprig_error *err)
{
    (void)err;
    struct kv_dense *d = (struct kv_dense *)kv;
    int base = kv->len - tail_len;
    for (int i = 0; i < n_kept; i++) move_slot(d, base + i, base + kept[i]);
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
    if (sprig_kv_params_check(p, "kv dense", err)) return NULL;
    if (!sprig_kv_params_uniform(p)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv dense: layers of different kv heads or head sizes need the per-layer (ring) cache");
        return NULL;
    }
    struct kv_dense *d = calloc(1, sizeof *d);
    if (!d) { sprig_err(err, SPRIG_E_NOMEM, "kv dense: out of memory"); return NULL; }
    if (sprig_kv_mode_codecs(p->mode, p->head_dim, &d->kc, &d->vc, err)) { free(d); return NULL; }
    d->ks = d->kc.rec_bytes * p->n_kv_head;
    d->vs = d->vc.rec_bytes * p->n_kv_head;
    size_t kb, vb;
    if (sprig_mul_ovf((size_t)d->ks, (size_t)p->n_ctx, &kb) || sprig_mul_ovf((size_t)d->vs, (size_t)p->n_ctx, &vb)) {
        sprig_err(err, SPRIG_E_NOMEM, "kv dense: n_ctx %d x %lld bytes per slot overflows a buffer size", p->n_ctx,
                  (long long)(d->ks + d->vs));
        free(d);
        return NULL;
    }
    d->base.vt = &dense_vt;
    d->base.p = *p;
    d->k = calloc((size_t)p->n_layer, sizeof *d->k);
    d->v = calloc((size_t)p->n_layer, sizeof *d->v);
    bool ok = d->k && d->v;
    for (int l = 0; ok && l < p->n_layer; l++) {
        d->k[l] = sprig_calloc_aligned(kb, 1);
        d->v[l] = sprig_calloc_aligned(vb, 1);
        ok = d->k[l] && d->v[l];
    }
    if (!ok) {
        dense_destroy(&d->base);
        sprig_err(err, SPRIG_E_NOMEM, "kv dense: cannot allocate %d layers x %zu bytes", p->n_layer, kb + vb);
        return NULL;
    }
    return &d->base;
}
