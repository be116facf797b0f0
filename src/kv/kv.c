/*
 * kv/kv — the cache-kind-independent half of the KV interface: argument
 * validation and vtable dispatch.
 *
 * Every rollback call from the speculative round loop comes through here, so
 * a bad selection (out of range, not strictly increasing, a tail longer than
 * the cache) is refused once, with the argument named, before any cache kind
 * sees it. The kinds then only implement the data movement and keep `len`
 * untouched; this file moves `len` after a kind reports success, so the
 * length bookkeeping is identical for every kind.
 */
#include "kv/kv.h"

#include <stdio.h>
#include <string.h>

/* A view's second value segment lives in the view itself. */
static void link_view(sprig_kv_view *vw)
{
    if (vw->v_next.stride) vw->v.next = &vw->v_next;
}

/* ------------------------------------------------------------------ modes */

#define SEED_V 0x5EEDC0DEu
#define SEED_K (SEED_V + 0x4B5F5345u)

static const struct {
    const char *name;
    int kfmt, vfmt;     /* enum sprig_kvrows_fmt */
} modes[SPRIG_KV_MODE_COUNT] = {
    [SPRIG_KV_MODE_F32]              = { "f32",              SPRIG_KVROWS_F32, SPRIG_KVROWS_F32 },
    [SPRIG_KV_MODE_F16]              = { "f16",              SPRIG_KVROWS_F16, SPRIG_KVROWS_F16 },
    [SPRIG_KV_MODE_INT8]             = { "int8",             SPRIG_KVROWS_I8,  SPRIG_KVROWS_I8 },
    [SPRIG_KV_MODE_TURBO4]           = { "turbo4",           SPRIG_KVROWS_T4,  SPRIG_KVROWS_T4 },
    [SPRIG_KV_MODE_TURBO4_ASYM]      = { "turbo4-asym",      SPRIG_KVROWS_F16, SPRIG_KVROWS_T4 },
    [SPRIG_KV_MODE_TURBO3_ASYM]      = { "turbo3-asym",      SPRIG_KVROWS_F16, SPRIG_KVROWS_T3 },
    [SPRIG_KV_MODE_TURBO4_DELEGATED] = { "turbo4-delegated", SPRIG_KVROWS_F16, SPRIG_KVROWS_T4 },
};

const char *sprig_kv_mode_name(int mode)
{
    return mode >= 0 && mode < SPRIG_KV_MODE_COUNT ? modes[mode].name : NULL;
}

static bool mode_built(int mode) { return mode >= 0 && mode < SPRIG_KV_MODE_COUNT && modes[mode].name; }

int sprig_kv_mode_from_name(const char *name)
{
    for (int m = 0; name && m < SPRIG_KV_MODE_COUNT; m++)
        if (mode_built(m) && !strcmp(name, modes[m].name)) return m;
    return -1;
}

const char *sprig_kv_mode_list(void)
{
    static char list[160];
    if (!list[0])
        for (int m = 0; m < SPRIG_KV_MODE_COUNT; m++) {
            if (!mode_built(m)) continue;
            if (m) strcat(list, "|");
            strcat(list, modes[m].name);
        }
    return list;
}

sprig_status sprig_kv_mode_codecs(int mode, int hd, sprig_kv_codec *kc, sprig_kv_codec *vc, sprig_error *err)
{
    if (!mode_built(mode))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv mode: %d is not a mode (%s)", mode, sprig_kv_mode_list());
    sprig_error e;
    if (sprig_kv_codec_init(kc, modes[mode].kfmt, hd, SEED_K, &e) || sprig_kv_codec_init(vc, modes[mode].vfmt, hd, SEED_V, &e))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv mode %s: %s", modes[mode].name, e.msg);
    return SPRIG_OK;
}

int64_t sprig_kv_mode_slot_bytes(int mode, int n_kv_head, int hd)
{
    if (!mode_built(mode)) return 0;
    return (sprig_kvrows_record_bytes(modes[mode].kfmt, hd) + sprig_kvrows_record_bytes(modes[mode].vfmt, hd)) * n_kv_head;
}

sprig_status sprig_kv_params_check(const struct sprig_kv_params *p, const char *who, sprig_error *err)
{
    if (!p) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: params is NULL", who);
    if (p->n_layer < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n_layer = %d must be >= 1", who, p->n_layer);
    if (p->n_ctx < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n_ctx = %d must be >= 1", who, p->n_ctx);
    if (p->n_kv_head < 1 || p->n_kv_head > 4096)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n_kv_head = %d must be in [1, 4096]", who, p->n_kv_head);
    if (p->head_dim < 1 || p->head_dim > SPRIG_KV_CODEC_MAX_HD)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: head_dim = %d must be in [1, %d]", who, p->head_dim, SPRIG_KV_CODEC_MAX_HD);
    if (!mode_built(p->mode))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: mode = %d is not a kv mode (%s)", who, p->mode, sprig_kv_mode_list());
    for (int l = 0; l < p->n_layer; l++) {
        if (p->layer_kv_head && (p->layer_kv_head[l] < 0 || p->layer_kv_head[l] > 4096))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: layer_kv_head[%d] = %d must be in [0, 4096]", who, l, p->layer_kv_head[l]);
        if (p->layer_hd && (p->layer_hd[l] < 1 || p->layer_hd[l] > SPRIG_KV_CODEC_MAX_HD))
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: layer_hd[%d] = %d must be in [1, %d]", who, l, p->layer_hd[l],
                             SPRIG_KV_CODEC_MAX_HD);
    }
    return SPRIG_OK;
}

bool sprig_kv_params_uniform(const struct sprig_kv_params *p)
{
    for (int l = 0; l < p->n_layer; l++)
        if ((p->layer_kv_head && p->layer_kv_head[l] != p->n_kv_head) || (p->layer_hd && p->layer_hd[l] != p->head_dim))
            return false;
    return true;
}

sprig_kv *sprig_kv_create(const struct sprig_kv_params *p, sprig_error *err)
{
    if (p && p->mode == SPRIG_KV_MODE_TURBO4_DELEGATED) return sprig_kv_create_delegated(p, err);
    return sprig_kv_create_dense(p, err);
}

void sprig_kv_attend(sprig_pool *pool, const sprig_kv *kv, int layer, float *q, const int32_t *pos, sprig_attn_args *a)
{
    sprig_kv_view vw = sprig_kv_view_layer(kv, layer);
    link_view(&vw);
    a->q = q;
    if (vw.kc && sprig_kv_codec_rotates(vw.kc)) sprig_kv_codec_rotate(vw.kc, q, a->n * a->n_head, false);
    if (!kv->vt->epoch) {
        a->kr = &vw.k;
        a->vr = &vw.v;
        sprig_attention(pool, a);
    } else {
        /* one attention per distinct epoch among the rows; each row keeps the
         * output of its own (rows are independent: attention's contract) */
        const int n = a->n, width = a->n_head * a->hd;
        float *out = a->out, *alt = kv->vt->alt_out(kv);
        SPRIG_ASSERT(n <= (kv->p.max_batch > 0 ? kv->p.max_batch : 1) && n <= 4096);
        uint64_t done[4096 / 64] = { 0 };
#define EPOCH(i) kv->vt->epoch(kv, pos ? pos[i] : kv->len + (i))
        bool first = true;
        for (int i0 = 0; i0 < n; i0++) {
            if (done[i0 >> 6] >> (i0 & 63) & 1) continue;
            const int e = EPOCH(i0);
            sprig_kv_view ve = kv->vt->view_at(kv, layer, e);
            link_view(&ve);
            a->kr = &ve.k;
            a->vr = &ve.v;
            a->out = first ? out : alt;
            sprig_attention(pool, a);
            for (int i = i0; i < n; i++) {
                if ((done[i >> 6] >> (i & 63) & 1) || EPOCH(i) != e) continue;
                done[i >> 6] |= 1ull << (i & 63);
                if (!first) memcpy(out + (size_t)i * width, alt + (size_t)i * width, sizeof(float) * (size_t)width);
            }
            first = false;
        }
#undef EPOCH
        a->out = out;
    }
    a->kr = a->vr = NULL;
    if (vw.vc && sprig_kv_codec_rotates(vw.vc)) sprig_kv_codec_rotate(vw.vc, a->out, a->n * a->n_head, true);
}

/* ------------------------------------------------------------------ the interface */

void sprig_kv_free(sprig_kv *kv)
{
    if (kv) kv->vt->destroy(kv);
}

const char *sprig_kv_kind(const sprig_kv *kv) { return kv->vt->kind; }

void sprig_kv_write(sprig_kv *kv, int layer, int n, const float *k, const float *v)
{
    SPRIG_ASSERT(layer >= 0 && layer < kv->p.n_layer);
    SPRIG_ASSERT(n >= 0 && n <= kv->p.n_ctx - kv->len);
    if (n == 0) return;
    kv->vt->write(kv, layer, n, k, v);
}

sprig_kv_view sprig_kv_view_layer(const sprig_kv *kv, int layer)
{
    SPRIG_ASSERT(layer >= 0 && layer < kv->p.n_layer);
    return kv->vt->view(kv, layer);
}


bool sprig_kv_tail_is_in_logical_order(const sprig_kv *kv)
{
    return !kv->vt->tail_in_order || kv->vt->tail_in_order(kv);
}

sprig_status sprig_kv_reserve(sprig_kv *kv, int n, sprig_error *err)
{
    if (n < 0 || n > kv->p.n_ctx - kv->len)
        return sprig_err(err, SPRIG_E_CONTEXT_FULL, "kv: %d cached + %d new slots exceed the capacity of %d", kv->len, n,
                         kv->p.n_ctx);
    return kv->vt->reserve ? kv->vt->reserve(kv, n, err) : SPRIG_OK;
}

void sprig_kv_commit(sprig_kv *kv, int n)
{
    SPRIG_ASSERT(n >= 0 && n <= kv->p.n_ctx - kv->len);
    kv->len += n;
}

sprig_status sprig_kv_trim(sprig_kv *kv, int n, sprig_error *err)
{
    if (n < 0 || n > kv->len)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv trim: n = %d is outside [0, len = %d]", n, kv->len);
    if (n == 0) return SPRIG_OK;
    if (kv->vt->trim) {
        sprig_status st = kv->vt->trim(kv, n, err);
        if (st) return st;
    }
    kv->len -= n;
    return SPRIG_OK;
}

bool sprig_kv_can_gather(const sprig_kv *kv, char *reason, size_t cap)
{
    if (!kv->vt->can_gather || !kv->vt->gather_positions || !kv->vt->gather_within_tail) {
        if (reason && cap) snprintf(reason, cap, "kv cache kind '%s' cannot gather positions", kv->vt->kind);
        return false;
    }
    return kv->vt->can_gather(kv, reason, cap);
}

/* Check sel[n] is strictly increasing with every entry in [0, limit). */
static sprig_status check_selection(const char *what, const char *arg, const int *sel, int n, int limit,
                                    sprig_error *err)
{
    if (n > 0 && !sel) return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: %s is NULL with %d entries", what, arg, n);
    for (int i = 0; i < n; i++) {
        if (sel[i] < 0 || sel[i] >= limit)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: %s[%d] = %d is outside [0, %d)", what, arg, i, sel[i], limit);
        if (i > 0 && sel[i] <= sel[i - 1])
            return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: %s is not strictly increasing at index %d (%d after %d)",
                             what, arg, i, sel[i], sel[i - 1]);
    }
    return SPRIG_OK;
}

static sprig_status refuse_if_cannot(const sprig_kv *kv, const char *what, sprig_error *err)
{
    char reason[256];
    if (!sprig_kv_can_gather(kv, reason, sizeof reason))
        return sprig_err(err, SPRIG_E_REFUSED, "%s: %s", what, reason);
    return SPRIG_OK;
}

sprig_status sprig_kv_gather_positions(sprig_kv *kv, const int *slots, int n, sprig_error *err)
{
    static const char what[] = "kv gather_positions";
    if (n < 0 || n > kv->len)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n = %d is outside [0, len = %d]", what, n, kv->len);
    sprig_status st = check_selection(what, "slots", slots, n, kv->len, err);
    if (st) return st;
    if ((st = refuse_if_cannot(kv, what, err))) return st;
    /* Strictly increasing entries in [0, len) with slots[n-1] == n-1 is the
     * prefix [0, n): identity or a trim, no data moves. */
    if (n == 0 || slots[n - 1] == n - 1) return sprig_kv_trim(kv, kv->len - n, err);
    if ((st = kv->vt->gather_positions(kv, slots, n, err))) return st;
    kv->len = n;
    return SPRIG_OK;
}

sprig_status sprig_kv_gather_within_tail(sprig_kv *kv, int tail_len, const int *kept, int n_kept, sprig_error *err)
{
    static const char what[] = "kv gather_within_tail";
    if (tail_len < 0 || tail_len > kv->len)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: tail_len = %d is outside [0, len = %d]", what, tail_len, kv->len);
    if (n_kept < 0 || n_kept > tail_len)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "%s: n_kept = %d is outside [0, tail_len = %d]", what, n_kept, tail_len);
    sprig_status st = check_selection(what, "kept", kept, n_kept, tail_len, err);
    if (st) return st;
    if ((st = refuse_if_cannot(kv, what, err))) return st;
    /* A prefix of the tail: identity or a trim. */
    if (n_kept == 0 || kept[n_kept - 1] == n_kept - 1) return sprig_kv_trim(kv, tail_len - n_kept, err);
    if ((st = kv->vt->gather_within_tail(kv, tail_len, kept, n_kept, err))) return st;
    kv->len -= tail_len - n_kept;
    return SPRIG_OK;
}

void sprig_kv_clear(sprig_kv *kv)
{
    if (kv->vt->clear) kv->vt->clear(kv);
    kv->len = 0;
}

/* ------------------------------------------------------------------ rows as bytes */

bool sprig_kv_rows_portable(const sprig_kv *kv, char *why, size_t cap)
{
    const char *k = kv->vt->kind;
    if (!strcmp(k, "dense") || !strcmp(k, "paged")) return true;
    if (why && cap) snprintf(why, cap, "the %s cache's rows are not saved (only the dense and paged caches are)", k);
    return false;
}

int64_t sprig_kv_row_bytes(const sprig_kv *kv)
{
    const sprig_kv_view vw = sprig_kv_view_layer(kv, 0);
    return (sprig_kvrows_record_bytes(vw.k.fmt, kv->p.head_dim) + sprig_kvrows_record_bytes(vw.v.fmt, kv->p.head_dim)) *
           kv->p.n_kv_head;
}

bool sprig_kv_rows_save(const sprig_kv *kv, int n, FILE *f)
{
    if (!sprig_kv_rows_portable(kv, NULL, 0) || n < 0 || n > kv->len) return false;
    const int hd = kv->p.head_dim;
    for (int l = 0; l < kv->p.n_layer; l++) {
        const sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        const size_t kb = (size_t)sprig_kvrows_record_bytes(vw.k.fmt, hd), vb = (size_t)sprig_kvrows_record_bytes(vw.v.fmt, hd);
        for (int j = 0; j < n; j++) {
            for (int g = 0; g < kv->p.n_kv_head; g++)
                if (fwrite(sprig_kvrows_at(&vw.k, j, g), 1, kb, f) != kb) return false;
            for (int g = 0; g < kv->p.n_kv_head; g++)
                if (fwrite(sprig_kvrows_at(&vw.v, j, g), 1, vb, f) != vb) return false;
        }
    }
    return true;
}

sprig_status sprig_kv_rows_load(sprig_kv *kv, int n, const uint8_t *src, size_t len, sprig_error *err)
{
    char why[160];
    if (!sprig_kv_rows_portable(kv, why, sizeof why)) return sprig_err(err, SPRIG_E_REFUSED, "kv rows: %s", why);
    const int64_t rb = sprig_kv_row_bytes(kv);
    if (n < 0 || n > kv->p.n_ctx) return sprig_err(err, SPRIG_E_INVALID_ARG, "kv rows: %d slots for a cache of %d", n, kv->p.n_ctx);
    if ((uint64_t)len != (uint64_t)rb * (uint64_t)n * (uint64_t)kv->p.n_layer)
        return sprig_err(err, SPRIG_E_FORMAT, "kv rows: %zu bytes for %d slots of %d layers x %lld bytes", len, n, kv->p.n_layer,
                         (long long)rb);
    sprig_kv_clear(kv);
    sprig_status st = sprig_kv_reserve(kv, n, err);
    if (st) return st;
    const int hd = kv->p.head_dim;
    for (int l = 0; l < kv->p.n_layer; l++) {
        const sprig_kv_view vw = sprig_kv_view_layer(kv, l);
        const size_t kb = (size_t)sprig_kvrows_record_bytes(vw.k.fmt, hd), vb = (size_t)sprig_kvrows_record_bytes(vw.v.fmt, hd);
        for (int j = 0; j < n; j++) {
            for (int g = 0; g < kv->p.n_kv_head; g++, src += kb) memcpy((uint8_t *)sprig_kvrows_at(&vw.k, j, g), src, kb);
            for (int g = 0; g < kv->p.n_kv_head; g++, src += vb) memcpy((uint8_t *)sprig_kvrows_at(&vw.v, j, g), src, vb);
        }
    }
    sprig_kv_commit(kv, n);
    return SPRIG_OK;
}
