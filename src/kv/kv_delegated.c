/*
 * kv/kv_delegated — mode turbo4-delegated: keys in f16 for every slot;
 * values split into a packed cold body (4-bit rotated codes, format T4) for
 * old slots and an f16 hot ring (the rows rotated by the value codec, f16)
 * for recent ones.
 *
 * Which representation a query reads is a function of the query's position
 * p only: slots below B(p) = FOLD * floor(p / FOLD) - HOT (at least 0) are
 * read cold, the others hot — between HOT and HOT + FOLD recent slots stay
 * f16. A verify block whose rows straddle a multiple of FOLD therefore holds
 * rows of two epochs; sprig_kv_attend runs one attention per epoch and each
 * row keeps its own output, so every row reads exactly what plain decoding
 * of that position reads (greedy speculation stays byte-identical).
 *
 * Folding: before a forward (reserve), the cold records of the slots every
 * query of the forward will read cold are encoded from their hot rows
 * (sprig_kv_encode_turbo_rotated — the rows are already rotated), which the
 * ring still holds: the ring keeps the last HOT_CAP >= HOT + FOLD + the
 * largest forward slots. Cold records depend only on their hot row, so they
 * are rebuilt, not trusted, after a rollback moved the hot rows under them:
 * a gather re-encodes, at once, the cold records from the first slot whose
 * hot row changed (a selection crossing the hot/cold boundary rebuilds it),
 * so at every moment the records a query at any position <= len reads cold
 * are current (cold_valid >= B(len)) — the MTP drafter reads the target's
 * cache right after a rollback.
 *
 * Rollback: trim moves the length; gather_within_tail moves f16 keys and hot
 * rows of the tail (and invalidates any cold record at or after the tail);
 * gather_positions does the same for any selection, and is refused, naming
 * the slot, only when a kept slot must be read hot afterwards but its hot
 * row has left the ring: its f16 row cannot be recovered from its 4-bit
 * code, so no cache could hold what plain decoding would.
 */
#include "kv/kv.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FOLD = 128, HOT = 128 };

struct kv_deleg {
    sprig_kv base;
    sprig_kv_codec kc, vc;       /* f16 keys; T4 values (its rotation is the hot rows' basis) */
    sprig_kv_codec hc;           /* f16 records of the hot rows */
    int64_t ks, cs, hs;          /* bytes per slot: keys, cold values, hot values */
    int hot_cap;                 /* ring slots */
    int cold_valid;              /* cold records of slots [0, cold_valid) are current */
    uint8_t **k, **cold, **hot;  /* [n_layer] -> [n_ctx][ks], [n_ctx][cs], [hot_cap][hs] */
    float *alt;                  /* [max_batch][n_head*hd] other epochs' outputs */
};

static int boundary(int pos)
{
    const int b = (pos / FOLD) * FOLD - HOT;
    return b > 0 ? b : 0;
}

static void deleg_destroy(sprig_kv *kv)
{
    struct kv_deleg *d = (struct kv_deleg *)kv;
    for (int l = 0; l < kv->p.n_layer; l++) {
        if (d->k) sprig_free_aligned(d->k[l]);
        if (d->cold) sprig_free_aligned(d->cold[l]);
        if (d->hot) sprig_free_aligned(d->hot[l]);
    }
    free(d->k);
    free(d->cold);
    free(d->hot);
    sprig_free_aligned(d->alt);
    free(d);
}

static uint8_t *hot_row(const struct kv_deleg *d, int l, int j) { return d->hot[l] + (int64_t)(j % d->hot_cap) * d->hs; }

/* Encode the cold records of slots [cold_valid, upto) from their hot rows. */
static void fold_to(struct kv_deleg *d, int upto)
{
    const int nkv = d->base.p.n_kv_head, hd = d->base.p.head_dim;
    float x[SPRIG_KV_CODEC_MAX_HD];
    for (int j = d->cold_valid; j < upto; j++)
        for (int l = 0; l < d->base.p.n_layer; l++)
            for (int g = 0; g < nkv; g++) {
                sprig_kvrows hr = { .fmt = SPRIG_KVROWS_F16 };
                sprig_kvrows_decode_ref(&hr, hot_row(d, l, j) + g * d->hc.rec_bytes, hd, x);
                sprig_kv_encode_turbo_rotated(&d->vc, x, d->cold[l] + (int64_t)j * d->cs + g * d->vc.rec_bytes);
            }
    if (upto > d->cold_valid) d->cold_valid = upto;
}

static sprig_status deleg_reserve(sprig_kv *kv, int n, sprig_error *err)
{
    struct kv_deleg *d = (struct kv_deleg *)kv;
    const int mb = kv->p.max_batch > 0 ? kv->p.max_batch : 1;
    if (n > mb)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv delegated: a forward of %d slots exceeds max_batch %d", n, mb);
    /* every query of this forward sits at a position < len + n */
    fold_to(d, boundary(kv->len + n - 1));
    return SPRIG_OK;
}

static void deleg_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    struct kv_deleg *d = (struct kv_deleg *)kv;
    const int nkv = kv->p.n_kv_head, hd = kv->p.head_dim;
    float x[SPRIG_KV_CODEC_MAX_HD];
    for (int i = 0; i < n; i++) {
        const int j = kv->len + i;
        for (int g = 0; g < nkv; g++) {
            sprig_kv_codec_encode(&d->kc, k + ((size_t)i * nkv + g) * hd, d->k[layer] + (int64_t)j * d->ks + g * d->kc.rec_bytes);
            memcpy(x, v + ((size_t)i * nkv + g) * hd, sizeof(float) * (size_t)hd);
            sprig_kv_codec_rotate(&d->vc, x, 1, false);
            sprig_kv_codec_encode(&d->hc, x, hot_row(d, layer, j) + g * d->hc.rec_bytes);
        }
    }
}

static int deleg_epoch(const sprig_kv *kv, int pos)
{
    (void)kv;
    return boundary(pos);
}

static sprig_kv_view deleg_view_at(const sprig_kv *kv, int layer, int b)
{
    const struct kv_deleg *d = (const struct kv_deleg *)kv;
    SPRIG_ASSERT(b <= d->cold_valid);   /* folded by reserve */
    sprig_kv_view vw = {
        .k = { .fmt = SPRIG_KVROWS_F16, .base = d->k[layer], .stride = d->ks, .head_bytes = d->kc.rec_bytes },
        .v = { .fmt = SPRIG_KVROWS_T4, .base = d->cold[layer], .stride = d->cs, .head_bytes = d->vc.rec_bytes,
               .codebook = d->vc.codebook, .split = b },
        /* slots >= b: the hot ring, slot b at physical b mod hot_cap */
        .v_next = { .fmt = SPRIG_KVROWS_F16, .base = d->hot[layer], .stride = d->hs, .head_bytes = d->hc.rec_bytes,
                    .ring_cap = d->hot_cap, .ring_rot = b % d->hot_cap },
        .kc = &d->kc, .vc = &d->vc,
    };
    return vw;
}

/* The plain view (no position given): what a query at the current length reads. */
static sprig_kv_view deleg_view(const sprig_kv *kv, int layer)
{
    return deleg_view_at(kv, layer, boundary(kv->len));
}

static float *deleg_alt(const sprig_kv *kv) { return ((const struct kv_deleg *)kv)->alt; }

static bool deleg_can_gather(const sprig_kv *kv, char *reason, size_t cap)
{
    (void)kv;
    if (reason && cap) reason[0] = 0;
    return true;
}

static sprig_status deleg_trim(sprig_kv *kv, int n, sprig_error *err)
{
    (void)err;
    struct kv_deleg *d = (struct kv_deleg *)kv;
    if (d->cold_valid > kv->len - n) d->cold_valid = kv->len - n;
    return SPRIG_OK;
}

static void move_slot(struct kv_deleg *d, int dst, int src)
{
    for (int l = 0; l < d->base.p.n_layer; l++) {
        memcpy(d->k[l] + (int64_t)dst * d->ks, d->k[l] + (int64_t)src * d->ks, (size_t)d->ks);
        memcpy(hot_row(d, l, dst), hot_row(d, l, src), (size_t)d->hs);
    }
}

static sprig_status deleg_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept, sprig_error *err)
{
    struct kv_deleg *d = (struct kv_deleg *)kv;
    const int base = kv->len - tail_len;
    if (base < kv->len - d->hot_cap)   /* cannot happen for a verify tail (<= max_batch) */
        return sprig_err(err, SPRIG_E_REFUSED, "kv delegated gather: a tail of %d slots is longer than the hot ring (%d)",
                         tail_len, d->hot_cap);
    int first_moved = -1;
    for (int i = 0; i < n_kept; i++)
        if (kept[i] != i) {
            if (first_moved < 0) first_moved = base + i;
            move_slot(d, base + i, base + kept[i]);
        }
    const int keep_cold = first_moved >= 0 ? first_moved : base + n_kept, cv_old = d->cold_valid;
    if (d->cold_valid > keep_cold) {
        d->cold_valid = keep_cold;
        fold_to(d, cv_old < base + n_kept ? cv_old : base + n_kept);   /* rebuild what the move changed */
    }
    return SPRIG_OK;
}

static sprig_status deleg_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err)
{
    struct kv_deleg *d = (struct kv_deleg *)kv;
    const int cv_old = d->cold_valid, oldest_hot = kv->len - d->hot_cap > 0 ? kv->len - d->hot_cap : 0;
    /* new slot i keeps a current cold record iff its source had one (a prefix) */
    int cv = 0;
    while (cv < n && slots[cv] < cv_old) cv++;
    /* from hot_from on, slots are read hot or folded from their hot row later */
    const int b = boundary(n), hot_from = cv < b ? cv : b;
    for (int i = hot_from; i < n; i++)
        if (slots[i] < oldest_hot)
            return sprig_err(err, SPRIG_E_REFUSED,
                             "kv delegated gather: slot %d (kept as %d) would be read in f16 but only its 4-bit code is left "
                             "(the hot ring holds slots %d..%d)", slots[i], i, oldest_hot, kv->len - 1);
    /* hot rows first, through a copy: ring positions of sources and destinations may alias */
    const size_t per = (size_t)d->hs * (size_t)kv->p.n_layer;
    uint8_t *tmp = n > hot_from ? malloc(per * (size_t)(n - hot_from)) : NULL;
    if (n > hot_from && !tmp) return sprig_err(err, SPRIG_E_NOMEM, "kv delegated gather: out of memory");
    for (int i = hot_from; i < n; i++)
        for (int l = 0; l < kv->p.n_layer; l++) memcpy(tmp + (size_t)(i - hot_from) * per + (size_t)l * d->hs, hot_row(d, l, slots[i]), (size_t)d->hs);
    for (int i = hot_from; i < n; i++)
        for (int l = 0; l < kv->p.n_layer; l++) memcpy(hot_row(d, l, i), tmp + (size_t)(i - hot_from) * per + (size_t)l * d->hs, (size_t)d->hs);
    free(tmp);
    /* keys and cold records: ascending, in place (sources never below destinations) */
    for (int i = 0; i < n; i++) {
        if (slots[i] == i) continue;
        for (int l = 0; l < kv->p.n_layer; l++) {
            memcpy(d->k[l] + (int64_t)i * d->ks, d->k[l] + (int64_t)slots[i] * d->ks, (size_t)d->ks);
            if (i < cv) memcpy(d->cold[l] + (int64_t)i * d->cs, d->cold[l] + (int64_t)slots[i] * d->cs, (size_t)d->cs);
        }
    }
    d->cold_valid = cv;
    fold_to(d, boundary(n));   /* what a query at n reads cold, from the moved hot rows */
    return SPRIG_OK;
}

static void deleg_clear(sprig_kv *kv) { ((struct kv_deleg *)kv)->cold_valid = 0; }

static const struct sprig_kv_vt deleg_vt = {
    .kind = "delegated",
    .destroy = deleg_destroy,
    .write = deleg_write,
    .view = deleg_view,
    .trim = deleg_trim,
    .can_gather = deleg_can_gather,
    .gather_positions = deleg_gather_positions,
    .gather_within_tail = deleg_gather_within_tail,
    .clear = deleg_clear,
    .reserve = deleg_reserve,
    .epoch = deleg_epoch,
    .view_at = deleg_view_at,
    .alt_out = deleg_alt,
};

sprig_kv *sprig_kv_create_delegated(const struct sprig_kv_params *p, sprig_error *err)
{
    if (sprig_kv_params_check(p, "kv delegated", err)) return NULL;
    if (!sprig_kv_params_uniform(p)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv delegated: layers of different kv heads or head sizes need the per-layer (ring) cache");
        return NULL;
    }
    struct kv_deleg *d = calloc(1, sizeof *d);
    if (!d) { sprig_err(err, SPRIG_E_NOMEM, "kv delegated: out of memory"); return NULL; }
    if (sprig_kv_mode_codecs(p->mode, p->head_dim, &d->kc, &d->vc, err) ||
        sprig_kv_codec_init(&d->hc, SPRIG_KVROWS_F16, p->head_dim, 0, err)) {
        free(d);
        return NULL;
    }
    const int mb = p->max_batch > 0 ? p->max_batch : 1, nh = p->n_head > 0 ? p->n_head : p->n_kv_head;
    if (mb > 4096 || nh % p->n_kv_head) {
        free(d);
        sprig_err(err, SPRIG_E_INVALID_ARG, "kv delegated: max_batch %d (<= 4096) / n_head %d (a multiple of n_kv_head %d)",
                  mb, nh, p->n_kv_head);
        return NULL;
    }
    d->base.vt = &deleg_vt;
    d->base.p = *p;
    d->ks = d->kc.rec_bytes * p->n_kv_head;
    d->cs = d->vc.rec_bytes * p->n_kv_head;
    d->hs = d->hc.rec_bytes * p->n_kv_head;
    /* the ring holds what the next forward reads hot, what it writes, and
     * what a gather of its tail may move: HOT + FOLD + max_batch, rounded up */
    d->hot_cap = 1024;
    while (d->hot_cap < HOT + FOLD + 2 * mb) d->hot_cap *= 2;
    if (d->hot_cap > p->n_ctx) d->hot_cap = p->n_ctx;
    size_t kb, cb, hb, ab;
    if (sprig_mul_ovf((size_t)p->n_ctx, (size_t)d->ks, &kb) || sprig_mul_ovf((size_t)p->n_ctx, (size_t)d->cs, &cb) ||
        sprig_mul_ovf((size_t)d->hot_cap, (size_t)d->hs, &hb) ||
        sprig_mul_ovf((size_t)mb * (size_t)nh, (size_t)p->head_dim, &ab)) {
        free(d);
        sprig_err(err, SPRIG_E_NOMEM, "kv delegated: n_ctx %d overflows a buffer size", p->n_ctx);
        return NULL;
    }
    d->k = calloc((size_t)p->n_layer, sizeof *d->k);
    d->cold = calloc((size_t)p->n_layer, sizeof *d->cold);
    d->hot = calloc((size_t)p->n_layer, sizeof *d->hot);
    d->alt = sprig_calloc_aligned(ab, sizeof(float));
    bool ok = d->k && d->cold && d->hot && d->alt;
    for (int l = 0; ok && l < p->n_layer; l++) {
        d->k[l] = sprig_calloc_aligned(kb, 1);
        d->cold[l] = sprig_calloc_aligned(cb, 1);
        d->hot[l] = sprig_calloc_aligned(hb, 1);
        ok = d->k[l] && d->cold[l] && d->hot[l];
    }
    if (!ok) {
        deleg_destroy(&d->base);
        sprig_err(err, SPRIG_E_NOMEM, "kv delegated: cannot allocate %d layers x %zu bytes", p->n_layer, kb + cb + hb);
        return NULL;
    }
    return &d->base;
}
