/*
 * kv/codec — how a KV cache mode stores one kv head's key or value row.
 *
 * A codec turns the f32 row a forward computed into one record of the
 * formats attention reads (tensor/kvrows.h) and tells attention how to read
 * it. Rotated-code formats (T4, T3: TurboQuant, see kv/turbo.c) store a row
 * in a rotated basis; attention then works in that basis: queries are
 * rotated in (keys) and the attention output rotated back (values) by
 * sprig_kv_codec_rotate, once per query row, never per cached token.
 *
 * One table row per format (codec.c); the encoders live in one file each:
 * codec.c (f32, f16), codec_int8.c, turbo.c (T4, T3).
 *
 * Encoding is deterministic (a row's record depends only on the row and the
 * codec), so a verify block and plain decoding store, and therefore read,
 * the same bits for the same token.
 */
#ifndef SPRIG_KV_CODEC_H
#define SPRIG_KV_CODEC_H

#include "base/err.h"
#include "tensor/kvrows.h"

#include <stdbool.h>
#include <stdint.h>

#define SPRIG_KV_CODEC_MAX_HD 512   /* = SPRIG_ATTN_MAX_HD */

typedef struct sprig_kv_codec {
    int fmt;                 /* enum sprig_kvrows_fmt */
    int hd;                  /* elements per row */
    int64_t rec_bytes;       /* bytes of one record */
    int levels;              /* T4: 16, T3: 8, else 0 */
    float codebook[16];      /* the Lloyd-Max centroids for N(0, 1/hd), ascending */
    float bounds[15];        /* midpoints between neighbouring centroids */
    float sign1[SPRIG_KV_CODEC_MAX_HD], sign2[SPRIG_KV_CODEC_MAX_HD];   /* rotation D2 H D1: +-1 */
} sprig_kv_codec;

/* Set up a codec of format fmt for rows of hd elements; seed picks the
 * rotation's sign vectors (rotated formats). Refuses, naming the cause, a
 * head size the format cannot take (rotated formats: a power of two, >= 8 for
 * T3). */
sprig_status sprig_kv_codec_init(sprig_kv_codec *c, int fmt, int hd, uint32_t seed, sprig_error *err);

/* Encode one row x[hd] into rec[rec_bytes]. */
void sprig_kv_codec_encode(const sprig_kv_codec *c, const float *x, uint8_t *rec);

/* Whether the format stores rows rotated (queries / outputs must be rotated). */
static inline bool sprig_kv_codec_rotates(const sprig_kv_codec *c)
{
    return c->fmt == SPRIG_KVROWS_T4 || c->fmt == SPRIG_KVROWS_T3;
}

/* x[n][hd]: into the codec's basis (inverse = false: q -> D2 H D1 q) or back
 * (inverse = true: o -> D1 H D2 o). No-op for unrotated formats. */
void sprig_kv_codec_rotate(const sprig_kv_codec *c, float *x, int n, bool inverse);

/* Internal: the per-format encoders (one file each) and turbo's setup. */
void sprig_kv_encode_int8(const sprig_kv_codec *c, const float *x, uint8_t *rec);
void sprig_kv_encode_turbo(const sprig_kv_codec *c, const float *x, uint8_t *rec);
/* A T4/T3 record of a row xr[hd] already in the codec's rotated basis (the
 * delegated cache folds its rotated f16 rows with it). */
void sprig_kv_encode_turbo_rotated(const sprig_kv_codec *c, const float *xr, uint8_t *rec);
sprig_status sprig_kv_turbo_init(sprig_kv_codec *c, uint32_t seed, sprig_error *err);

#endif
