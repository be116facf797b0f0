/*
 * kv/codec_int8 — int8 rows: per token and kv head, s = absmax / 127 stored
 * as f16 beside the codes, q[d] = round(x[d] / s) (ties to even) in
 * [-127, 127], decoded as q[d] * s (tensor/kvrows.h). The codes are computed
 * with the f16-rounded scale, the one decoding uses. An all-zero row stores
 * s = 0 and decodes to zeros; a scale past f16's range is clamped to its
 * largest finite value (the codes then saturate at +-127).
 */
#include "kv/codec.h"

#include <math.h>
#include <string.h>

void sprig_kv_encode_int8(const sprig_kv_codec *c, const float *x, uint8_t *rec)
{
    const int hd = c->hd;
    float amax = 0.0f;
    for (int d = 0; d < hd; d++) {
        const float a = fabsf(x[d]);
        if (a > amax) amax = a;              /* NaN compares false: ignored */
    }
    sprig_f16 h = sprig_f32_to_f16(amax / 127.0f);
    if (!isfinite(sprig_f16_to_f32(h))) h = 0x7BFF;   /* |x| > ~8.3e6: the largest finite f16 scale */
    const float s = sprig_f16_to_f32(h);
    for (int d = 0; d < hd; d++) {
        float q = s > 0.0f && isfinite(s) ? nearbyintf(x[d] / s) : 0.0f;
        q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
        rec[d] = (uint8_t)(int8_t)(q == q ? q : 0.0f);
    }
    memcpy(rec + hd, &h, 2);
}
