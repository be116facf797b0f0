/*
 * tensor/attention — see attention.h. This file holds the spec (the one-query
 * reference), the plain-C batched kernel (also built as an x86-64-v3 clone),
 * argument checks, scratch sizing, the small-head plan and the threaded
 * driver; attention-avx512.c holds the AVX-512 kernels.
 *
 * The arithmetic, per query i and head h (kv head g = h / group), identical
 * in every kernel, which is what makes a row independent of the batch:
 *   lim    = mask ? n_keys : n_keys - n + i + 1      (keys j < lim exist for it)
 *   s_j    = dot_j * scale (+ mask[i][j]),  dot_j = fmaf over d = 0..hd-1 in
 *            order: acc = fmaf(q[d], k_j[d], acc) from acc = +0
 *   mx     = max_j s_j                                (order-free)
 *   p_j    = sprig_expf_poly(s_j - mx)               (-1e9 masked => exactly 0)
 *   keys with p_j == 0 are skipped; for the others, in key order:
 *            sum += p_j,  o[d] = fmaf(p_j, v_j[d], o[d])  from +0
 *   out[d] = o[d] / sum
 * Why this is batch-independent: a masked key adds +0 to a positive sum and
 * nothing to o, so the result is that of the same query against only the keys
 * it sees, compacted to contiguous slots; there is no partial sum whose lane
 * or chunk depends on a key's slot index, and no online (flash) rescaling.
 * The batched kernels only choose which of these independent chains share a
 * register: lanes = query x head rows of one kv head for the scores (each lane
 * a sequential fmaf chain over d) or, for items of <= 8 rows such as a single
 * decoded token, lanes = 16 keys transposed in registers; lanes = d for the V
 * accumulation. Per lane the operations are exactly the ones above, so every
 * kernel equals sprig_attention_ref bit for bit (tests/test-attention.c).
 * Adding a mask entry of +-0 may be skipped by the SIMD kernel; that can only
 * flip the sign of a zero score, which changes neither mx's value nor any
 * s_j - mx, hence no output bit. Masks should hold finite values (0 / -1e9);
 * -inf works as long as a row keeps one finite entry.
 *
 * Small heads (hd <= 16, AVX-512): lanes = (query row, head) over a chunk
 * of G kv heads for the scores, 2-4 keys per vector when a key fills fewer
 * than 16 lanes (decode), and lanes = (d, head) for the V accumulation —
 * attention.h and attention-avx512.c have the layout; the per-lane
 * arithmetic is again the one above.
 *
 * Parallel split: work items are (kv head, block of <= 64 rows) — for small
 * heads (chunk of kv heads, block of query rows) — taken from an atomic
 * counter; each item streams the keys/values of its kv heads once for all
 * its rows, and each output element is written by one item only. Calls below
 * the parallel threshold run on the calling thread; a threaded small-head
 * call splits by kv-head chunks before rows.
 */
#include "tensor/attention.h"

#include "base/log.h"
#include "tensor/ops.h"
#include "tensor/matmul.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


float sprig_attn_softcap(float s, float c, float inv)
{
    const float e = sprig_expf_poly(2.0f * (s * inv));
    return c * (1.0f - 2.0f / (e + 1.0f));
}

/* ------------------------------------------------------------------ dispatch */

enum { KERN_UNKNOWN = 0, KERN_C = 1, KERN_AVX2 = 2, KERN_AVX512 = 3 };
static bool cpu_has_avx512(void);
static bool cpu_has_avx2(void);
static atomic_int g_kernel = KERN_UNKNOWN;

static int attn_kernel(void)
{
    int k = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (k != KERN_UNKNOWN) return k;
    k = KERN_C;
#if defined(__x86_64__) && defined(__GNUC__)
    const int cap = sprig_kernels_cap();
    k = cap >= SPRIG_KERNELS_AVX512 && cpu_has_avx512() ? KERN_AVX512
      : cap >= SPRIG_KERNELS_AVX2 && cpu_has_avx2()     ? KERN_AVX2 : KERN_C;
#endif
    atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    return k;
}

static const char *const kernel_names[] = { "?", "c", "avx2", "avx512" };

const char *sprig_attention_kernel(void) { return kernel_names[attn_kernel()]; }

static bool cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
#else
    return false;
#endif
}

static bool cpu_has_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
           __builtin_cpu_supports("bmi2");
#else
    return false;
#endif
}

bool sprig_attention_use_kernel(const char *name)
{
    int k;
    if (!name) k = KERN_UNKNOWN;
    else if (!strcmp(name, "c")) k = KERN_C;
    else if (!strcmp(name, "avx2") && cpu_has_avx2()) k = KERN_AVX2;
    else if (!strcmp(name, "avx512") && cpu_has_avx512()) k = KERN_AVX512;
    else return false;
    atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    return true;
}

/* ------------------------------------------------------------------ checks, sizing */

static size_t round16(size_t x) { return (x + 15) & ~(size_t)15; }

/* Rows per item cap for calls of n queries and n_head heads. */
static size_t rows_cap(size_t n, size_t n_head)
{
    size_t rows = n * n_head;
    return round16(rows < SPRIG_ATTN_ROWS ? rows : SPRIG_ATTN_ROWS);
}

static const char *const fmt_names[SPRIG_KVROWS_COUNT] = { "f32", "f16", "i8", "t4", "t3" };

const char *sprig_kvrows_fmt_name(int fmt)
{
    return fmt >= 0 && fmt < SPRIG_KVROWS_COUNT ? fmt_names[fmt] : "?";
}

/* Rows of any format and layout (n_keys, n_kv_head and hd already checked). */
static sprig_status rows_check(const sprig_attn_args *a, const sprig_kvrows *r, int n_keys, const char *name, sprig_error *err)
{
    if (r->next && (r->split < 0 || r->split > a->n_keys || r->next->next))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.split = %d (need 0..n_keys = %d, one level)", name, r->split,
                         a->n_keys);
    if (n_keys < 1) return SPRIG_OK;   /* an empty segment is never read */
    if (r->fmt < 0 || r->fmt >= SPRIG_KVROWS_COUNT)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.fmt = %d is not a row format", name, r->fmt);
    if ((r->fmt == SPRIG_KVROWS_T4 && a->hd % 2) || (r->fmt == SPRIG_KVROWS_T3 && a->hd % 8))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.fmt %s needs hd a multiple of %d (hd = %d)", name,
                         fmt_names[r->fmt], r->fmt == SPRIG_KVROWS_T3 ? 8 : 2, a->hd);
    if ((r->fmt == SPRIG_KVROWS_T4 || r->fmt == SPRIG_KVROWS_T3) && !r->codebook)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.codebook is NULL for %s rows", name, fmt_names[r->fmt]);
    const int64_t rec = sprig_kvrows_record_bytes(r->fmt, a->hd);
    if (r->head_bytes < rec || r->head_bytes > INT32_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.head_bytes %lld (a %s record of hd %d is %lld bytes)",
                         name, (long long)r->head_bytes, fmt_names[r->fmt], a->hd, (long long)rec);
    if (r->stride < r->head_bytes * a->n_kv_head)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.stride %lld < n_kv_head x head_bytes = %lld", name,
                         (long long)r->stride, (long long)(r->head_bytes * a->n_kv_head));
    if (r->ring_cap && (!r->base || r->ring_cap < n_keys || r->ring_rot < 0 || r->ring_rot >= r->ring_cap))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s ring of %d slots from %d cannot hold %d keys (contiguous rows only)",
                         name, r->ring_cap, r->ring_rot, n_keys);
    if (r->base) {
        const int64_t slots = r->ring_cap ? r->ring_cap : n_keys;
        if (r->stride > INT64_MAX / 2 / slots)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.stride %lld x n_keys %d overflows", name,
                             (long long)r->stride, n_keys);
    } else {
        if (!r->pages) return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s has neither base nor pages", name);
        if (r->page_shift < 0 || r->page_shift > 24 || r->stride > INT64_MAX / 2 >> r->page_shift)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.page_shift = %d (need 0..24, pages of bounded size)",
                             name, r->page_shift);
        for (int64_t pg = 0; pg <= (int64_t)(n_keys - 1) >> r->page_shift; pg++)
            if (!r->pages[pg]) return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s.pages[%lld] is NULL", name, (long long)pg);
    }
    return SPRIG_OK;
}

/* The record form of the plain k / v / kv_type / kv_stride arguments. */
static sprig_kvrows rows_plain(const sprig_attn_args *a, const void *base)
{
    const int64_t es = a->kv_type == SPRIG_TYPE_F16 ? 2 : 4;
    return (sprig_kvrows){ .fmt = a->kv_type == SPRIG_TYPE_F16 ? SPRIG_KVROWS_F16 : SPRIG_KVROWS_F32,
                           .base = base, .stride = a->kv_stride * es, .head_bytes = (int64_t)a->hd * es };
}

sprig_status sprig_attn_check(const sprig_attn_args *a, sprig_error *err)
{
    if (!a) return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: args is NULL");
    if (!a->q || !a->out || !a->scratch)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s is NULL", !a->q ? "q" : !a->out ? "out" : "scratch");
    if (a->n < 1) return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: n = %d (need >= 1)", a->n);
    if (a->n_head < 1 || a->n_kv_head < 1 || a->n_head % a->n_kv_head != 0)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: n_head %d is not a positive multiple of n_kv_head %d",
                         a->n_head, a->n_kv_head);
    if (a->hd < 1 || a->hd > SPRIG_ATTN_MAX_HD)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: hd = %d (need 1..%d)", a->hd, SPRIG_ATTN_MAX_HD);
    if (a->n_keys < a->n || a->n_keys > SPRIG_ATTN_MAX_KEYS)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: n_keys %d (need n = %d .. %d)",
                         a->n_keys, a->n, SPRIG_ATTN_MAX_KEYS);
    if ((int64_t)a->n * a->n_head * a->hd > INT32_MAX || (int64_t)a->n * a->n_keys > INT32_MAX)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: n %d x n_head %d x hd %d / n_keys %d too large",
                         a->n, a->n_head, a->hd, a->n_keys);
    if (!a->kr != !a->vr)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s is set but %s is NULL", a->kr ? "kr" : "vr", a->kr ? "vr" : "kr");
    if (a->kr) {
        sprig_status st = rows_check(a, a->kr, a->kr->next ? a->kr->split : a->n_keys, "kr", err);
        if (st == SPRIG_OK) st = rows_check(a, a->vr, a->vr->next ? a->vr->split : a->n_keys, "vr", err);
        /* second segments (one level): the keys past the split */
        if (st == SPRIG_OK && a->kr->next) st = rows_check(a, a->kr->next, a->n_keys - a->kr->split, "kr.next", err);
        if (st == SPRIG_OK && a->vr->next) st = rows_check(a, a->vr->next, a->n_keys - a->vr->split, "vr.next", err);
        if (st) return st;
    } else {
        if (!a->k || !a->v)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: %s is NULL", !a->k ? "k" : "v");
        if (a->kv_type != SPRIG_TYPE_F32 && a->kv_type != SPRIG_TYPE_F16)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: kv_type %s (%d) is not f32 or f16",
                             sprig_type_name(a->kv_type), a->kv_type);
        if (a->kv_stride < (int64_t)a->n_kv_head * a->hd)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: kv_stride %lld < n_kv_head*hd = %lld",
                             (long long)a->kv_stride, (long long)a->n_kv_head * a->hd);
        if (a->kv_stride > INT64_MAX / 4 / a->n_keys)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: kv_stride %lld x n_keys %d overflows",
                             (long long)a->kv_stride, a->n_keys);
    }
    if (!isfinite(a->scale)) return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: scale is not finite");
    if (!(a->softcap >= 0 && a->softcap < 1e6f))
        return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: softcap %g must be 0 (none) or positive", (double)a->softcap);
    if (a->scratch_floats) {
        const size_t need = 15 + sprig_attn_slot_floats(rows_cap((size_t)a->n, (size_t)a->n_head), (size_t)a->n_keys);
        if (a->scratch_floats < need)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "attention: scratch_floats %zu < %zu (one thread, %d keys)",
                             a->scratch_floats, need, a->n_keys);
    }
    return SPRIG_OK;
}

static void check_or_abort(const sprig_attn_args *a)
{
    sprig_error e;
    if (sprig_attn_check(a, &e) != SPRIG_OK) sprig_abort(__FILE__, __LINE__, "%s", e.msg);
}

size_t sprig_attn_scratch_floats(int n, int n_head, int n_keys, int n_threads)
{
    if (n < 1) n = 1;
    if (n_head < 1) n_head = 1;
    if (n_keys < 1) n_keys = 1;
    if (n_threads < 1) n_threads = 1;
    size_t rows, slot, total;
    if (sprig_mul_ovf((size_t)n, (size_t)n_head, &rows)) return SIZE_MAX;
    size_t rp = rows_cap((size_t)n, (size_t)n_head);
    if (sprig_mul_ovf(rp, (size_t)n_keys, &slot)) return SIZE_MAX;
    slot = sprig_attn_slot_floats(rp, (size_t)n_keys);
    size_t slots = (size_t)n_threads < rows ? (size_t)n_threads : rows;
    if (sprig_mul_ovf(slots, slot, &total) || sprig_add_ovf(total, 16, &total)) return SIZE_MAX;
    return total;
}

/* ------------------------------------------------------------------ reference */

void sprig_attention_ref(const sprig_attn_args *a)
{
    check_or_abort(a);
    sprig_kvrows kp, vp;
    if (!a->kr) { kp = rows_plain(a, a->k); vp = rows_plain(a, a->v); }
    const sprig_kvrows *kr = a->kr ? a->kr : &kp, *vr = a->vr ? a->vr : &vp;
    const int n = a->n, hd = a->hd, nk = a->n_keys, group = a->n_head / a->n_kv_head;
    const int64_t qd = (int64_t)a->n_head * hd;
    float row[SPRIG_ATTN_MAX_HD];
    float *sc = a->scratch;                                  /* [n_keys] */
    for (int i = 0; i < n; i++) {
        const int lim = a->mask ? nk : nk - n + i + 1;
        for (int h = 0; h < a->n_head; h++) {
            const int g = h / group;
            const float *q = a->q + i * qd + (int64_t)h * hd;
            float *o = a->out + i * qd + (int64_t)h * hd;
            float mx = -INFINITY;
            for (int j = 0; j < lim; j++) {
                int js = j;
                const sprig_kvrows *ks = sprig_kvrows_seg(kr, &js);
                sprig_kvrows_decode_ref(ks, sprig_kvrows_at(ks, js, g), hd, row);
                float acc = 0.0f;
                for (int d = 0; d < hd; d++) acc = fmaf(q[d], row[d], acc);
                float s = acc * a->scale;
                if (a->softcap > 0) s = sprig_attn_softcap(s, a->softcap, 1.0f / a->softcap);
                if (a->mask) s = s + a->mask[(int64_t)i * nk + j];
                sc[j] = s;
                mx = s > mx ? s : mx;
            }
            float sum = 0.0f;
            for (int d = 0; d < hd; d++) o[d] = 0.0f;
            for (int j = 0; j < lim; j++) {
                const float p = sprig_expf_poly(sc[j] - mx);
                if (p == 0.0f) continue;
                sum += p;
                int js = j;
                const sprig_kvrows *vs = sprig_kvrows_seg(vr, &js);
                sprig_kvrows_decode_ref(vs, sprig_kvrows_at(vs, js, g), hd, row);
                for (int d = 0; d < hd; d++) o[d] = fmaf(p, row[d], o[d]);
            }
            for (int d = 0; d < hd; d++) o[d] = o[d] / sum;
        }
    }
}

/* ------------------------------------------------------------------ plain-C batched kernel */

/* The same per-row arithmetic as the reference, keys in the outer loop and
 * the item's rows inside, so each key/value row is read once per item. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* an x86-64-v3 clone turns fmaf into one instruction on AVX2/FMA machines */
__attribute__((target_clones("default", "arch=x86-64-v3")))
#endif
static void attn_item_c(const sprig_attn_args *a, int g, int r0, int nr, float *slot)
{
    const int n = a->n, hd = a->hd, nk = a->n_keys, group = a->n_head / a->n_kv_head;
    const int64_t qd = (int64_t)a->n_head * hd;
    const size_t rp = round16((size_t)nr);
    sprig_attn_work w;
    sprig_attn_work_split(slot, rp, (size_t)nk, &w);
    int lim[SPRIG_ATTN_ROWS], qi[SPRIG_ATTN_ROWS];
    const float *qrow[SPRIG_ATTN_ROWS];
    float *orow[SPRIG_ATTN_ROWS];
    float mx[SPRIG_ATTN_ROWS], sum[SPRIG_ATTN_ROWS];
    int jmax = 0;
    for (int r = 0; r < nr; r++) {
        const int R = r0 + r, i = R / group, h = g * group + R % group;
        qi[r] = i;
        lim[r] = a->mask ? nk : nk - n + i + 1;
        if (lim[r] > jmax) jmax = lim[r];
        qrow[r] = a->q + i * qd + (int64_t)h * hd;
        orow[r] = a->out + i * qd + (int64_t)h * hd;
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
    }
    /* queries transposed to qt[d][rows] so that the rows' fmaf chains run side by side */
    for (size_t r = 0; r < rp; r++)
        for (int d = 0; d < hd; d++) w.qt[(size_t)d * rp + r] = r < (size_t)nr ? qrow[r][d] : 0.0f;
    /* scores and max: 4 keys x 16 rows of independent fmaf chains at a time */
    for (int j0 = 0; j0 < jmax; j0 += 4) {
        const int kn = jmax - j0 < 4 ? jmax - j0 : 4;
        const float *kp[4];
        for (int kk = 0; kk < 4; kk++) {
            int j = j0 + (kk < kn ? kk : 0);
            const sprig_kvrows *ks = sprig_kvrows_seg(a->kr, &j);
            const uint8_t *src = sprig_kvrows_at(ks, j, g);
            if (ks->fmt == SPRIG_KVROWS_F32 && ((uintptr_t)src & 3) == 0) {
                kp[kk] = (const float *)(const void *)src;
            } else {
                float *dst = w.kb + (size_t)kk * (size_t)hd;
                sprig_kvrows_decode_ref(ks, src, hd, dst);
                kp[kk] = dst;
            }
        }
        for (size_t rb = 0; rb < rp; rb += 16) {
            float acc[4][16];
            memset(acc, 0, sizeof acc);
            const float *qt = w.qt + rb;
            for (int d = 0; d < hd; d++, qt += rp) {
                const float k0 = kp[0][d], k1 = kp[1][d], k2 = kp[2][d], k3 = kp[3][d];
                for (int l = 0; l < 16; l++) {      /* fixed-size: the compiler vectorises it */
                    acc[0][l] = fmaf(qt[l], k0, acc[0][l]);
                    acc[1][l] = fmaf(qt[l], k1, acc[1][l]);
                    acc[2][l] = fmaf(qt[l], k2, acc[2][l]);
                    acc[3][l] = fmaf(qt[l], k3, acc[3][l]);
                }
            }
            for (int kk = 0; kk < kn; kk++) {
                const int j = j0 + kk;
                float *sj = w.sc + (size_t)j * rp;
                for (int l = 0; l < 16; l++) {
                    const int r = (int)rb + l;
                    if (r >= nr || j >= lim[r]) continue;
                    float sc = acc[kk][l] * a->scale;
                    if (a->softcap > 0) sc = sprig_attn_softcap(sc, a->softcap, 1.0f / a->softcap);
                    if (a->mask) sc = sc + a->mask[(int64_t)qi[r] * nk + j];
                    sj[r] = sc;
                    mx[r] = sc > mx[r] ? sc : mx[r];
                }
            }
        }
    }
    /* probabilities and sums */
    for (int j = 0; j < jmax; j++) {
        float *sj = w.sc + (size_t)j * rp;
        for (int r = 0; r < nr; r++) {
            const float p = j < lim[r] ? sprig_expf_poly(sj[r] - mx[r]) : 0.0f;
            sj[r] = p;
            sum[r] += p;
        }
    }
    /* values */
    for (int r = 0; r < nr; r++) memset(orow[r], 0, (size_t)hd * sizeof(float));
    for (int j = 0; j < jmax; j++) {
        const float *sj = w.sc + (size_t)j * rp;
        const float *vp;
        int js = j;
        const sprig_kvrows *vs = sprig_kvrows_seg(a->vr, &js);
        const uint8_t *src = sprig_kvrows_at(vs, js, g);
        if (vs->fmt == SPRIG_KVROWS_F32 && ((uintptr_t)src & 3) == 0) {
            vp = (const float *)(const void *)src;
        } else {
            sprig_kvrows_decode_ref(vs, src, hd, w.vb);
            vp = w.vb;
        }
        for (int r = 0; r < nr; r++) {
            const float p = sj[r];
            if (p == 0.0f) continue;
            float *restrict o = orow[r];
            const float *restrict vr = vp;
            int d = 0;
            for (; d + 16 <= hd; d += 16)
                for (int l = 0; l < 16; l++) o[d + l] = fmaf(p, vr[d + l], o[d + l]);
            for (; d < hd; d++) o[d] = fmaf(p, vr[d], o[d]);
        }
    }
    for (int r = 0; r < nr; r++)
        for (int d = 0; d < hd; d++) orow[r][d] = orow[r][d] / sum[r];
}

/* ------------------------------------------------------------------ driver */

/* Calls below this many scalar fmas run on the calling thread only. Both
 * kernels take about 0.04-0.06 ns per scalar fma on one core, so the default
 * (5e4) is 2-3 us of work: a split pays once the pool's threads are awake
 * (measured with 2 threads: the hd-8 target's tree verification gains from
 * ~3e4 fmas on). */
#define SPRIG_ATTN_PARALLEL_FMAS 5.0e4
static _Atomic double g_parallel_fmas = SPRIG_ATTN_PARALLEL_FMAS;

void sprig_attention_set_parallel_threshold(double fmas)
{
    atomic_store_explicit(&g_parallel_fmas, fmas < 0 ? SPRIG_ATTN_PARALLEL_FMAS : fmas, memory_order_relaxed);
}

typedef void (*attn_item_fn)(const sprig_attn_args *a, int g, int r0, int nr, float *slot);

static const attn_item_fn item_fns[] = { attn_item_c, attn_item_c, sprig_attn_item_avx2, sprig_attn_item_avx512 };

struct attn_job {
    const sprig_attn_args *a;
    attn_item_fn item;
    const sprig_attn_small *small;   /* the small-head path, or NULL */
    float *base;            /* first slot, 64-byte aligned */
    size_t slot_floats;
    int rows_kv;            /* group * n rows per kv head */
    int chunk_rows;         /* rows per item (the last item of a kv head may have fewer) */
    int chunks;             /* items per kv head */
    int n_items;
    atomic_int next;
};

static void attn_task(void *ctx, int ith, int nth)
{
    struct attn_job *J = ctx;
    SPRIG_UNUSED(nth);
    float *slot = J->base + (size_t)ith * J->slot_floats;
    for (;;) {
        const int it = atomic_fetch_add_explicit(&J->next, 1, memory_order_relaxed);
        if (it >= J->n_items) break;
        const int g = it / J->chunks, c = it % J->chunks;
        const int r0 = c * J->chunk_rows;
        const int nr = SPRIG_MIN(J->chunk_rows, J->rows_kv - r0);
        if (J->small) sprig_attn_small_avx512(J->a, J->small, g, r0, nr, slot);
        else J->item(J->a, g, r0, nr, slot);
    }
}

/* The small-head kernel reads plain rows through k / v / kv_type / kv_stride:
 * usable when the records are contiguous f32 or f16 rows of hd elements,
 * the same for keys and values. */
static bool small_rows(sprig_attn_args *a)
{
    const sprig_kvrows *k = a->kr, *v = a->vr;
    const int64_t es = k->fmt == SPRIG_KVROWS_F16 ? 2 : 4;
    if (!sprig_kvrows_plain(k) || !sprig_kvrows_plain(v) || k->fmt != v->fmt || k->stride != v->stride ||
        k->head_bytes != a->hd * es || v->head_bytes != a->hd * es)
        return false;
    a->k = k->base;
    a->v = v->base;
    a->kv_type = k->fmt == SPRIG_KVROWS_F16 ? SPRIG_TYPE_F16 : SPRIG_TYPE_F32;
    a->kv_stride = k->stride / es;
    return true;
}

/* The small-head plan: the largest chunk of G kv heads (G divides n_kv_head)
 * with G*hd <= 32, G*group <= 16 and at most 8 output vectors per row —
 * among those giving at least min_chunks chunks when there are any (a
 * threaded call splits by kv heads first: no key or value row is then
 * streamed twice). */
static bool small_plan(const sprig_attn_args *a, int rp, int min_chunks, sprig_attn_small *p)
{
    const int group = a->n_head / a->n_kv_head;
    if (a->hd > 16) return false;
    for (int pass = 0; pass < 2; pass++)
        for (int G = a->n_kv_head; G >= 1; G--) {
            if (a->n_kv_head % G != 0 || G * a->hd > 32 || G * group > 16) continue;
            if (pass == 0 && a->n_kv_head / G < min_chunks) continue;
            int HP = 1;
            while (HP < G * group) HP *= 2;
            int NW = (a->hd * HP + 15) / 16;
            if (NW > 8) continue;
            NW = NW <= 1 ? 1 : NW <= 2 ? 2 : NW <= 4 ? 4 : 8;
            *p = (sprig_attn_small){ .G = G, .Hc = G * group, .HP = HP, .NW = NW, .rp = rp, .ni = rp / HP };
            return true;
        }
    return false;
}

void sprig_attention(sprig_pool *pool, const sprig_attn_args *args)
{
    check_or_abort(args);
    /* the kernels read records (a->kr, a->vr); the plain arguments become records */
    sprig_attn_args A = *args;
    sprig_kvrows kp, vp;
    if (!A.kr) { kp = rows_plain(&A, A.k); vp = rows_plain(&A, A.v); A.kr = &kp; A.vr = &vp; }
    const sprig_attn_args *a = &A;
    const int group = a->n_head / a->n_kv_head;
    const int rows_kv = group * a->n;
    const int kern = attn_kernel();
    const int rp = (int)rows_cap((size_t)a->n, (size_t)a->n_head);

    struct attn_job J = { .a = a, .item = item_fns[kern] };
    atomic_init(&J.next, 0);
    J.slot_floats = sprig_attn_slot_floats((size_t)rp, (size_t)a->n_keys);
    uintptr_t p = (uintptr_t)a->scratch;
    J.base = a->scratch + ((64 - (p & 63)) & 63) / sizeof(float);
    SPRIG_ASSERT(((uintptr_t)J.base & 63) == 0);   /* float scratch: the offset is whole floats */

    /* threads: a call worth a few microseconds is not worth waking workers
     * for, and no more threads than the scratch has slots */
    int nth = sprig_pool_size(pool);
    const double work = 2.0 * a->n * a->n_head * (double)a->n_keys * a->hd;   /* scalar fmas */
    if (work < atomic_load_explicit(&g_parallel_fmas, memory_order_relaxed)) nth = 1;
    if (a->scratch_floats) {
        const size_t off = (size_t)(J.base - a->scratch);
        const size_t fit = (a->scratch_floats - off) / J.slot_floats;   /* >= 1: checked */
        if ((size_t)nth > fit) nth = (int)fit;
    }

    sprig_attn_small sp;
    const bool small = kern == KERN_AVX512 && small_rows(&A) && small_plan(a, rp, nth, &sp);
    int chunks, chunk_rows, n_groups;
    if (small) {
        /* items: (chunk of G kv heads, block of query rows); rows are split
         * further only to keep otherwise idle threads busy */
        n_groups = a->n_kv_head / sp.G;
        chunks = (a->n + sp.ni - 1) / sp.ni;
        const int want = (nth + n_groups - 1) / n_groups;
        if (want > chunks) chunks = SPRIG_MIN(want, a->n);
        chunk_rows = (a->n + chunks - 1) / chunks;
        chunks = (a->n + chunk_rows - 1) / chunk_rows;
    } else {
        /* items: (kv head, row chunk); more chunks than needed for 64 rows only
         * when that keeps otherwise idle threads busy (>= 16 rows per chunk) */
        n_groups = a->n_kv_head;
        chunks = (rows_kv + SPRIG_ATTN_ROWS - 1) / SPRIG_ATTN_ROWS;
        const int want = (nth + a->n_kv_head - 1) / a->n_kv_head;
        const int max16 = (rows_kv + 15) / 16;
        if (want > chunks) chunks = SPRIG_MIN(want, max16);
        chunk_rows = (rows_kv + chunks - 1) / chunks;
        if (chunk_rows > 16) chunk_rows = (int)round16((size_t)chunk_rows);
        if (chunk_rows > SPRIG_ATTN_ROWS) chunk_rows = SPRIG_ATTN_ROWS;
        chunks = (rows_kv + chunk_rows - 1) / chunk_rows;
    }
    J.small = small ? &sp : NULL;
    J.rows_kv = small ? a->n : rows_kv;
    J.chunk_rows = chunk_rows;
    J.chunks = chunks;
    J.n_items = chunks * n_groups;
    sprig_pool_run(pool, attn_task, &J, SPRIG_MIN(nth, J.n_items));
}
