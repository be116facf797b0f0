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
