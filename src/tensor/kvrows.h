/*
 * tensor/kvrows — how attention finds and reads one cached key or value row
 * of one kv head, whatever the cache stores.
 *
 * A cache slot holds, per kv head, one record of `head_bytes` bytes; records
 * of a slot sit `head_bytes` apart and slots `stride` bytes apart, either in
 * one contiguous buffer (slot j at base + j*stride), in a ring of ring_cap
 * slots read from slot ring_rot on (slot j at base + ((j + ring_rot) mod
 * ring_cap)*stride: a sliding window that has wrapped, read in logical
 * order), or in fixed-size pages (slot j at pages[j >> page_shift] +
 * (j & page_mask)*stride), which is how a pooled cache shares memory between
 * sequences without copying. Rows may also come in two segments: slots
 * below `split` from these rows, the others from `next` (e.g. old values
 * in 4-bit codes, recent ones in f16).
 *
 * Record formats ([hd] = the head size; f16 = IEEE half; all little-endian):
 *   F32 | f32 x[hd] |                                      x[d]
 *   F16 | f16 x[hd] |                                      x[d]
 *   I8  | i8 q[hd] | f16 s |                               q[d] * s
 *   T4  | u8 c[hd/2] | f16 norm | f16 rescale |            C[c_d] * rescale, c_d = nibble d
 *                                                          (even d in the low nibble)
 *   T3  | u8 c[3*hd/8] | f16 norm | f16 rescale |          C[c_d] * rescale, c_d = bits 3d..3d+2
 *                                                          of each 3-byte group of 8 (LSB first)
 * C is the cache's codebook (16 or 8 floats). T4/T3 rows decode to the
 * ROTATED vector (the cache rotated the row before coding it); the caller
 * rotates the queries into the same basis (keys) or rotates the attention
 * output back (values) — kv/turbo does both — so attention itself never
 * leaves the rotated basis and never dequantizes more than the rows it is
 * streaming. `norm` is the row's length before coding (kept for tools and
 * checks); decoding needs only `rescale` (= norm / |C[c]|, see kv/turbo.c).
 *
 * The decoded value of every element is ONE float operation on stored
 * numbers (a conversion, or a product of two floats), so every kernel family
 * decodes to the same bits as sprig_kvrows_decode_ref below — the spec.
 */
#ifndef SPRIG_TENSOR_KVROWS_H
#define SPRIG_TENSOR_KVROWS_H

#include "tensor/types.h"

#include <stdint.h>

enum sprig_kvrows_fmt {
    SPRIG_KVROWS_F32 = 0,
    SPRIG_KVROWS_F16,
    SPRIG_KVROWS_I8,
    SPRIG_KVROWS_T4,
    SPRIG_KVROWS_T3,
    SPRIG_KVROWS_COUNT
};

typedef struct sprig_kvrows {
    int fmt;                         /* enum sprig_kvrows_fmt */
    const uint8_t *base;             /* contiguous slots, or NULL when paged */
    const uint8_t *const *pages;     /* paged slots (base == NULL) */
    int page_shift;                  /* slots per page = 1 << page_shift */
    int ring_cap, ring_rot;          /* contiguous rows only: a ring of ring_cap slots (0: none),
                                        slot 0 at physical slot ring_rot (< ring_cap) */
    int64_t stride;                  /* bytes between consecutive slots */
    int64_t head_bytes;              /* bytes between the records of kv heads g and g+1 */
    const float *codebook;           /* T4: 16 floats, T3: 8 floats */
    int split;                       /* with next: slots >= split are slot - split of *next */
    const struct sprig_kvrows *next; /* (a cache whose old slots are stored in another format) */
} sprig_kvrows;

/* Bytes of one record of hd elements (hd a multiple of 8 for T3, of 2 for T4). */
static inline int64_t sprig_kvrows_record_bytes(int fmt, int hd)
{
    switch (fmt) {
    case SPRIG_KVROWS_F32: return 4 * (int64_t)hd;
    case SPRIG_KVROWS_F16: return 2 * (int64_t)hd;
    case SPRIG_KVROWS_I8:  return (int64_t)hd + 2;
    case SPRIG_KVROWS_T4:  return (int64_t)hd / 2 + 4;
    case SPRIG_KVROWS_T3:  return 3 * (int64_t)hd / 8 + 4;
    default:               return 0;
    }
}

const char *sprig_kvrows_fmt_name(int fmt);

/* The record of slot j, kv head g. */
static inline const uint8_t *sprig_kvrows_at(const sprig_kvrows *r, int j, int g)
{
    if (r->ring_cap) {
        j += r->ring_rot;
        if (j >= r->ring_cap) j -= r->ring_cap;
    }
    const uint8_t *s = r->base ? r->base + (int64_t)j * r->stride
                               : r->pages[j >> r->page_shift] + (int64_t)(j & ((1 << r->page_shift) - 1)) * r->stride;
    return s + (int64_t)g * r->head_bytes;
}

/* The segment holding slot *j; *j becomes the slot within it. */
static inline const sprig_kvrows *sprig_kvrows_seg(const sprig_kvrows *r, int *j)
{
    while (r->next && *j >= r->split) {
        *j -= r->split;
        r = r->next;
    }
    return r;
}

/* Prefetch the record of slot j, kv head g (no-op past n_keys): the kernels
 * call it a few dozen keys ahead, since a record is a short strided read the
 * hardware prefetchers do not follow. */
static inline void sprig_kvrows_prefetch(const sprig_kvrows *r, int j, int g, int n_keys)
{
    if (j >= n_keys) return;
    const sprig_kvrows *s = sprig_kvrows_seg(r, &j);
    const uint8_t *p = sprig_kvrows_at(s, j, g);
    __builtin_prefetch(p);
    __builtin_prefetch(p + s->head_bytes - 1);
}

/* Whether rows are plain contiguous f32/f16 with element-aligned strides (the
 * layout the older attention paths read directly). */
static inline bool sprig_kvrows_plain(const sprig_kvrows *r)
{
    const int64_t es = r->fmt == SPRIG_KVROWS_F32 ? 4 : 2;
    return r->base && !r->ring_cap && !r->next && (r->fmt == SPRIG_KVROWS_F32 || r->fmt == SPRIG_KVROWS_F16) &&
           r->stride % es == 0 && r->head_bytes % es == 0;
}

static inline uint16_t sprig_kvrows_u16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }

/* Code of element d of a T3 record. */
static inline unsigned sprig_kvrows_t3_code(const uint8_t *c, int d)
{
    const uint8_t *g = c + 3 * (d >> 3);
    const uint32_t w = (uint32_t)g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16;
    return (w >> (3 * (d & 7))) & 7u;
}

/* Element d of a record (the tails of the SIMD decoders). */
static inline float sprig_kvrows_elem(const sprig_kvrows *r, const uint8_t *p, int hd, int d)
{
    switch (r->fmt) {
    case SPRIG_KVROWS_F32: { float x; memcpy(&x, p + 4 * d, 4); return x; }
    case SPRIG_KVROWS_F16: return sprig_f16_to_f32(sprig_kvrows_u16(p + 2 * d));
    case SPRIG_KVROWS_I8:  return (float)(int8_t)p[d] * sprig_f16_to_f32(sprig_kvrows_u16(p + hd));
    case SPRIG_KVROWS_T4:  return r->codebook[(p[d >> 1] >> (4 * (d & 1))) & 15] * sprig_f16_to_f32(sprig_kvrows_u16(p + hd / 2 + 2));
    case SPRIG_KVROWS_T3:  return r->codebook[sprig_kvrows_t3_code(p, d)] * sprig_f16_to_f32(sprig_kvrows_u16(p + 3 * hd / 8 + 2));
    default:               return 0.0f;
    }
}

/* The spec: decode one record of hd elements to f32. */
static inline void sprig_kvrows_decode_ref(const sprig_kvrows *r, const uint8_t *p, int hd, float *dst)
{
    switch (r->fmt) {
    case SPRIG_KVROWS_F32:
        memcpy(dst, p, (size_t)hd * 4);
        break;
    case SPRIG_KVROWS_F16:
        for (int d = 0; d < hd; d++) dst[d] = sprig_f16_to_f32(sprig_kvrows_u16(p + 2 * d));
        break;
    case SPRIG_KVROWS_I8: {
        const float s = sprig_f16_to_f32(sprig_kvrows_u16(p + hd));
        for (int d = 0; d < hd; d++) dst[d] = (float)(int8_t)p[d] * s;
        break;
    }
    case SPRIG_KVROWS_T4: {
        const float s = sprig_f16_to_f32(sprig_kvrows_u16(p + hd / 2 + 2));
        for (int d = 0; d < hd; d++) dst[d] = r->codebook[(p[d >> 1] >> (4 * (d & 1))) & 15] * s;
        break;
    }
    case SPRIG_KVROWS_T3: {
        const float s = sprig_f16_to_f32(sprig_kvrows_u16(p + 3 * hd / 8 + 2));
        for (int d = 0; d < hd; d++) dst[d] = r->codebook[sprig_kvrows_t3_code(p, d)] * s;
        break;
    }
    default:
        break;
    }
}

#endif
