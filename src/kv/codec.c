/*
 * kv/codec — the table of record formats a cache mode can store, and the
 * plain ones (f32, f16). See codec.h; int8 is in codec_int8.c, the rotated
 * 4- and 3-bit codes in turbo.c.
 */
#include "kv/codec.h"

#include <string.h>

static void encode_f32(const sprig_kv_codec *c, const float *x, uint8_t *rec)
{
    memcpy(rec, x, (size_t)c->hd * sizeof(float));
}

static void encode_f16(const sprig_kv_codec *c, const float *x, uint8_t *rec)
{
    for (int d = 0; d < c->hd; d++) {
        const sprig_f16 h = sprig_f32_to_f16(x[d]);
        memcpy(rec + 2 * d, &h, 2);
    }
}

static const struct {
    void (*encode)(const sprig_kv_codec *c, const float *x, uint8_t *rec);
    int levels;            /* rotated codes: centroids; 0 = not rotated */
} formats[SPRIG_KVROWS_COUNT] = {
    [SPRIG_KVROWS_F32] = { encode_f32, 0 },
    [SPRIG_KVROWS_F16] = { encode_f16, 0 },
    [SPRIG_KVROWS_I8]  = { sprig_kv_encode_int8, 0 },
    [SPRIG_KVROWS_T4]  = { sprig_kv_encode_turbo, 16 },
    [SPRIG_KVROWS_T3]  = { sprig_kv_encode_turbo, 8 },
};

sprig_status sprig_kv_codec_init(sprig_kv_codec *c, int fmt, int hd, uint32_t seed, sprig_error *err)
{
    memset(c, 0, sizeof *c);
    if (fmt < 0 || fmt >= SPRIG_KVROWS_COUNT)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv codec: format %d is not known", fmt);
    if (hd < 1 || hd > SPRIG_KV_CODEC_MAX_HD)
        return sprig_err(err, SPRIG_E_INVALID_ARG, "kv codec: head size %d (need 1..%d)", hd, SPRIG_KV_CODEC_MAX_HD);
    c->fmt = fmt;
    c->hd = hd;
    c->rec_bytes = sprig_kvrows_record_bytes(fmt, hd);
    c->levels = formats[fmt].levels;
    if (c->levels) return sprig_kv_turbo_init(c, seed, err);
    return SPRIG_OK;
}

void sprig_kv_codec_encode(const sprig_kv_codec *c, const float *x, uint8_t *rec)
{
    formats[c->fmt].encode(c, x, rec);
}
