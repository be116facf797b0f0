/*
 * kv/kv_ring — the sliding-window cache: per layer either the full history
 * (window 0, like the dense cache) or a rotating buffer of the last slots a
 * window-W layer can still attend to, with a speculative buffer.
 *
 * A sliding layer holds `cap` slots and the logical slots [start, len):
 *   ring mode (no buffer): cap = W - 1 + max_batch; slot j lives at j mod
 *     cap, so writing past cap overwrites the oldest and the ring has
 *     WRAPPED (start > 0). Attention reads it in logical order through a
 *     rotated view (tensor/kvrows.h ring_cap / ring_rot).
 *   buffered (sprig_kv_ring_set_buffer(slack)): cap = W - 1 + max_batch +
 *     slack; slot j lives at j - start, always in logical order. When a
 *     forward would not fit, the slots no future query can see (older than
 *     len - W + 1, less up to max_batch kept so that a trim of that many
 *     still finds its window, as in ring mode) are dropped from the front
 *     and the rest moved down once — every `slack` tokens or so, never per
 *     token.
 * Every query of a forward of n <= max_batch tokens at positions >= len
 * finds its W - 1 predecessors held, in both modes.
 *
 * Rollback: a verify tail sits in logical order when the layer is buffered
 * or its ring has not wrapped (tail_is_in_logical_order); then gathers move
 * records exactly as the dense cache does, else they are refused naming the
 * layer, and tree_round_is_available (which asks can_gather) says no. A trim
 * or gather is refused when the result would need slots the window already
 * dropped. Full layers behave as the dense cache.
 */
#include "kv/kv.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ring_layer {
    int window;          /* 0 = full history */
    int cap;             /* slots held */
    int start;           /* oldest logical slot held */
    int nkv, hd;         /* this layer's kv heads and head size; nkv 0: no cache (a layer sharing another's) */
    sprig_kv_codec kc, vc;
    int64_t ks, vs;      /* bytes per slot: keys, values */
    uint8_t *k, *v;      /* [cap][ks or vs] */
};

struct kv_ring {
    sprig_kv base;
    int max_batch;
    int slack;           /* 0: ring mode; > 0: buffered */
    struct ring_layer *L;
};

static bool wrapped(const struct kv_ring *r, const struct ring_layer *L)
{
    return L->window && !r->slack && L->start > 0;
}

/* Physical slot of logical slot j (j in [start, len + pending)). */
static int phys(const struct kv_ring *r, const struct ring_layer *L, int j)
{
    if (!L->window) return j;
    return r->slack ? j - L->start : j % L->cap;
}

static void ring_destroy(sprig_kv *kv)
{
    struct kv_ring *r = (struct kv_ring *)kv;
    if (r->L)
        for (int l = 0; l < kv->p.n_layer; l++) {
            sprig_free_aligned(r->L[l].k);
            sprig_free_aligned(r->L[l].v);
        }
    free(r->L);
    free(r);
}

static bool ring_tail_in_order(const sprig_kv *kv)
{
    const struct kv_ring *r = (const struct kv_ring *)kv;
    for (int l = 0; l < kv->p.n_layer; l++)
        if (wrapped(r, &r->L[l])) return false;
    return true;
}

static bool ring_can_gather(const sprig_kv *kv, char *reason, size_t cap)
{
    const struct kv_ring *r = (const struct kv_ring *)kv;
    for (int l = 0; l < kv->p.n_layer; l++)
        if (wrapped(r, &r->L[l])) {
            if (reason && cap)
                snprintf(reason, cap, "layer %d: its sliding-window ring (window %d, %d slots) has wrapped; gathers need "
                         "the speculative buffer", l, r->L[l].window, r->L[l].cap);
            return false;
        }
    if (reason && cap) reason[0] = 0;
    return true;
}

/* Room for n more slots: the batch must fit a layer's slack; a buffered layer
 * that would overflow drops what no query can see and moves down once. */
static sprig_status ring_reserve(sprig_kv *kv, int n, sprig_error *err)
{
    struct kv_ring *r = (struct kv_ring *)kv;
    const int len = kv->len;
    if (n > r->max_batch + r->slack)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: a forward of %d slots exceeds the sliding layers' slack of %d",
                         n, r->max_batch + r->slack);
    for (int l = 0; l < kv->p.n_layer; l++) {
        struct ring_layer *L = &r->L[l];
        if (!L->window) continue;
        if (!r->slack) {
            if (len + n - L->cap > L->start) L->start = len + n - L->cap;   /* the oldest are overwritten */
            continue;
        }
        if (len + n - L->start <= L->cap) continue;
        /* keep the window and, room permitting, max_batch more (a trim of up
         * to max_batch slots stays possible, as in ring mode) */
        const int extra = r->max_batch < r->max_batch + r->slack - n ? r->max_batch : r->max_batch + r->slack - n;
        const int keep_from = len - L->window + 1 - extra > L->start ? len - L->window + 1 - extra : L->start;
        const int drop = keep_from - L->start, held = len - L->start;
        memmove(L->k, L->k + (int64_t)drop * L->ks, (size_t)(held - drop) * (size_t)L->ks);
        memmove(L->v, L->v + (int64_t)drop * L->vs, (size_t)(held - drop) * (size_t)L->vs);
        L->start = keep_from;
    }
    return SPRIG_OK;
}

static void ring_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    struct kv_ring *r = (struct kv_ring *)kv;
    struct ring_layer *L = &r->L[layer];
    const int nkv = L->nkv, hd = L->hd;
    SPRIG_ASSERT(nkv > 0);   /* a layer without a cache is never written */
    SPRIG_ASSERT(!L->window || kv->len + n - L->start <= L->cap);   /* sprig_kv_reserve ran */
    for (int i = 0; i < n; i++) {
        const int p = phys(r, L, kv->len + i);
        for (int g = 0; g < nkv; g++) {
            sprig_kv_codec_encode(&L->kc, k + ((size_t)i * nkv + g) * hd, L->k + p * L->ks + g * L->kc.rec_bytes);
            sprig_kv_codec_encode(&L->vc, v + ((size_t)i * nkv + g) * hd, L->v + p * L->vs + g * L->vc.rec_bytes);
        }
    }
}

static sprig_kv_view ring_view(const sprig_kv *kv, int layer)
{
    const struct kv_ring *r = (const struct kv_ring *)kv;
    const struct ring_layer *L = &r->L[layer];
    SPRIG_ASSERT(L->nkv > 0);   /* a layer sharing another's cache reads that layer's view */
    sprig_kv_view vw = {
        .k = { .fmt = L->kc.fmt, .base = L->k, .stride = L->ks, .head_bytes = L->kc.rec_bytes, .codebook = L->kc.codebook },
        .v = { .fmt = L->vc.fmt, .base = L->v, .stride = L->vs, .head_bytes = L->vc.rec_bytes, .codebook = L->vc.codebook },
        .kc = &L->kc, .vc = &L->vc, .first = L->start,
    };
    if (L->window && !r->slack) {   /* logical order through the rotation */
        vw.k.ring_cap = vw.v.ring_cap = L->cap;
        vw.k.ring_rot = vw.v.ring_rot = L->start % L->cap;
    }
    return vw;
}

/* A layer still holds what a sequence of new_len slots needs next. */
static sprig_status check_kept(const struct kv_ring *r, int new_len, const char *what, sprig_error *err)
{
    for (int l = 0; l < r->base.p.n_layer; l++) {
        const struct ring_layer *L = &r->L[l];
        if (!L->window) continue;
        const int need = new_len - L->window + 1 > 0 ? new_len - L->window + 1 : 0;
        if (L->start > need)
            return sprig_err(err, SPRIG_E_REFUSED, "kv ring %s: layer %d (window %d) dropped slots before %d; %d slots need "
                             "slot %d on", what, l, L->window, L->start, new_len, need);
    }
    return SPRIG_OK;
}

static sprig_status ring_trim(sprig_kv *kv, int n, sprig_error *err)
{
    return check_kept((struct kv_ring *)kv, kv->len - n, "trim", err);
}

static void move_slot(struct kv_ring *r, int dst, int src)
{
    for (int l = 0; l < r->base.p.n_layer; l++) {
        struct ring_layer *L = &r->L[l];
        const int pd = phys(r, L, dst), ps = phys(r, L, src);
        if (pd == ps || !L->nkv) continue;
        memcpy(L->k + pd * L->ks, L->k + ps * L->ks, (size_t)L->ks);
        memcpy(L->v + pd * L->vs, L->v + ps * L->vs, (size_t)L->vs);
    }
}

static sprig_status ring_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept, sprig_error *err)
{
    struct kv_ring *r = (struct kv_ring *)kv;
    const int base = kv->len - tail_len;
    for (int l = 0; l < kv->p.n_layer; l++)
        if (r->L[l].window && r->L[l].start > base)
            return sprig_err(err, SPRIG_E_REFUSED, "kv ring gather: the tail from slot %d reaches before layer %d's oldest "
                             "held slot %d", base, l, r->L[l].start);
    sprig_status st = check_kept(r, base + n_kept, "gather", err);
    if (st) return st;
    for (int i = 0; i < n_kept; i++)
        if (kept[i] != i) move_slot(r, base + i, base + kept[i]);
    return SPRIG_OK;
}

static sprig_status ring_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err)
{
    struct kv_ring *r = (struct kv_ring *)kv;
    /* a sliding layer must hold every kept slot that the next query can see */
    for (int l = 0; l < kv->p.n_layer; l++) {
        const struct ring_layer *L = &r->L[l];
        if (!L->window) continue;
        const int from = n - L->window + 1 > 0 ? n - L->window + 1 : 0;
        for (int i = from; i < n; i++)
            if (slots[i] < L->start)
                return sprig_err(err, SPRIG_E_REFUSED, "kv ring gather: slot %d (kept as %d) was dropped by layer %d's "
                                 "window %d (oldest held %d)", slots[i], i, l, L->window, L->start);
    }
    /* full layers: as dense. Sliding layers: the kept slots from `from` on
     * move to logical i (physical i - new start), in ascending order (safe in
     * place: sources never sit below destinations). */
    for (int l = 0; l < kv->p.n_layer; l++) {
        struct ring_layer *L = &r->L[l];
        if (!L->nkv) continue;
        if (!L->window) {
            for (int i = 0; i < n; i++)
                if (slots[i] != i) {
                    memcpy(L->k + (int64_t)i * L->ks, L->k + (int64_t)slots[i] * L->ks, (size_t)L->ks);
                    memcpy(L->v + (int64_t)i * L->vs, L->v + (int64_t)slots[i] * L->vs, (size_t)L->vs);
                }
            continue;
        }
        int first = 0;
        while (first < n && slots[first] < L->start) first++;
        const int old_start = L->start;
        for (int i = first; i < n; i++) {
            const int ps = slots[i] - (r->slack ? old_start : 0), pd = i - (r->slack ? first : 0);
            if (ps == pd) continue;
            memcpy(L->k + (int64_t)pd * L->ks, L->k + (int64_t)ps * L->ks, (size_t)L->ks);
            memcpy(L->v + (int64_t)pd * L->vs, L->v + (int64_t)ps * L->vs, (size_t)L->vs);
        }
        L->start = first;
    }
    return SPRIG_OK;
}

static void ring_clear(sprig_kv *kv)
{
    struct kv_ring *r = (struct kv_ring *)kv;
    for (int l = 0; l < kv->p.n_layer; l++) r->L[l].start = 0;
}

static const struct sprig_kv_vt ring_vt = {
    .kind = "ring",
    .destroy = ring_destroy,
    .write = ring_write,
    .view = ring_view,
    .trim = ring_trim,
    .can_gather = ring_can_gather,
    .gather_positions = ring_gather_positions,
    .gather_within_tail = ring_gather_within_tail,
    .clear = ring_clear,
    .reserve = ring_reserve,
    .tail_in_order = ring_tail_in_order,
};

static sprig_status alloc_layer(struct ring_layer *L, int cap, sprig_error *err)
{
    size_t kb, vb;
    if (!L->nkv) { L->cap = 0; return SPRIG_OK; }   /* no cache of its own */
    if (sprig_mul_ovf((size_t)cap, (size_t)L->ks, &kb) || sprig_mul_ovf((size_t)cap, (size_t)L->vs, &vb))
        return sprig_err(err, SPRIG_E_NOMEM, "kv ring: %d slots overflow a buffer size", cap);
    uint8_t *k = sprig_calloc_aligned(kb, 1), *v = sprig_calloc_aligned(vb, 1);
    if (!k || !v) {
        sprig_free_aligned(k);
        sprig_free_aligned(v);
        return sprig_err(err, SPRIG_E_NOMEM, "kv ring: cannot allocate %zu bytes", kb + vb);
    }
    sprig_free_aligned(L->k);
    sprig_free_aligned(L->v);
    L->k = k;
    L->v = v;
    L->cap = cap;
    return SPRIG_OK;
}

sprig_kv *sprig_kv_create_ring(const struct sprig_kv_params *p, const int *windows, int max_batch, sprig_error *err)
{
    if (sprig_kv_params_check(p, "kv ring", err)) return NULL;
    if (!windows) { sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: windows is NULL"); return NULL; }
    if (max_batch < 1 || max_batch > p->n_ctx) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: max_batch = %d must be in [1, n_ctx = %d]", max_batch, p->n_ctx);
        return NULL;
    }
    for (int l = 0; l < p->n_layer; l++)
        if (windows[l] < 0 || windows[l] > p->n_ctx) {
            sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: windows[%d] = %d must be in [0, n_ctx = %d] (0 = full)", l,
                      windows[l], p->n_ctx);
            return NULL;
        }
    struct kv_ring *r = calloc(1, sizeof *r);
    if (!r) { sprig_err(err, SPRIG_E_NOMEM, "kv ring: out of memory"); return NULL; }
    r->base.vt = &ring_vt;
    r->base.p = *p;
    r->base.p.layer_kv_head = r->base.p.layer_hd = NULL;   /* not kept: the caller's arrays */
    r->max_batch = max_batch;
    r->L = calloc((size_t)p->n_layer, sizeof *r->L);
    if (!r->L) { free(r); sprig_err(err, SPRIG_E_NOMEM, "kv ring: out of memory"); return NULL; }
    for (int l = 0; l < p->n_layer; l++) {
        struct ring_layer *L = &r->L[l];
        L->nkv = p->layer_kv_head ? p->layer_kv_head[l] : p->n_kv_head;
        L->hd = p->layer_hd ? p->layer_hd[l] : p->head_dim;
        if (L->nkv && sprig_kv_mode_codecs(p->mode, L->hd, &L->kc, &L->vc, err)) {
            sprig_err_prefix(err, "kv ring layer %d", l);
            ring_destroy(&r->base);
            return NULL;
        }
        L->ks = L->nkv ? L->kc.rec_bytes * L->nkv : 0;
        L->vs = L->nkv ? L->vc.rec_bytes * L->nkv : 0;
        L->window = L->nkv ? windows[l] : 0;
        int cap = p->n_ctx;
        if (L->window && L->window - 1 + max_batch < cap) cap = L->window - 1 + max_batch;
        else L->window = L->window && L->window - 1 + max_batch >= p->n_ctx ? 0 : L->window;   /* never wraps: full */
        if (alloc_layer(L, cap, err)) { ring_destroy(&r->base); return NULL; }
    }
    return &r->base;
}

sprig_status sprig_kv_ring_set_buffer(sprig_kv *kv, int slack, sprig_error *err)
{
    if (kv->vt != &ring_vt) return sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: a '%s' cache has no speculative buffer", kv->vt->kind);
    struct kv_ring *r = (struct kv_ring *)kv;
    if (slack < 0 || slack > kv->p.n_ctx)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: slack = %d must be in [0, n_ctx = %d]", slack, kv->p.n_ctx);
    if (slack == r->slack) return SPRIG_OK;
    if (slack == 0 && r->slack) return sprig_err(err, SPRIG_E_INVALID_ARG, "kv ring: the speculative buffer cannot be turned off");
    const int len = kv->len;
    /* every new buffer first, so a failed allocation changes nothing */
    struct ring_layer *N = calloc((size_t)kv->p.n_layer, sizeof *N);
    if (!N) return sprig_err(err, SPRIG_E_NOMEM, "kv ring: out of memory");
    for (int l = 0; l < kv->p.n_layer; l++) {
        if (!r->L[l].window) continue;
        N[l].nkv = r->L[l].nkv;
        N[l].ks = r->L[l].ks;
        N[l].vs = r->L[l].vs;
        sprig_status st = alloc_layer(&N[l], r->L[l].window - 1 + r->max_batch + slack, err);
        if (st) {
            for (int i = 0; i <= l; i++) { sprig_free_aligned(N[i].k); sprig_free_aligned(N[i].v); }
            free(N);
            return st;
        }
    }
    /* keep [from, len) — what a query can still see — in logical order */
    for (int l = 0; l < kv->p.n_layer; l++) {
        struct ring_layer *L = &r->L[l];
        if (!L->window) continue;
        const int from = len - L->start > L->window - 1 ? len - (L->window - 1) : L->start;
        for (int j = from; j < len; j++) {
            memcpy(N[l].k + (int64_t)(j - from) * L->ks, L->k + (int64_t)phys(r, L, j) * L->ks, (size_t)L->ks);
            memcpy(N[l].v + (int64_t)(j - from) * L->vs, L->v + (int64_t)phys(r, L, j) * L->vs, (size_t)L->vs);
        }
        sprig_free_aligned(L->k);
        sprig_free_aligned(L->v);
        L->k = N[l].k;
        L->v = N[l].v;
        L->cap = N[l].cap;
        L->start = from;
    }
    free(N);
    r->slack = slack;
    return SPRIG_OK;
}
