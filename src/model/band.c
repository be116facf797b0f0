/*
 * model/band — see band.h. The arithmetic is a comparison per entry: a key
 * at position q is inside the band of a row at position p iff q > p - W;
 * inside, the caller's value (or the causal 0 / -1e9) is kept; outside,
 * -1e9 (the minimum of the two). Nothing here depends on the kind of cache:
 * the history's positions are first .. len - 1 whether the layer's cache is
 * a full buffer, a ring or a buffer compacted from the front.
 */
#include "model/band.h"

bool sprig_band_needed(int window, int first, int len, const int32_t *pos, int n)
{
    int32_t pmax = pos[0], qmin = pos[0];
    for (int i = 1; i < n; i++) {
        if (pos[i] > pmax) pmax = pos[i];
        if (pos[i] < qmin) qmin = pos[i];
    }
    if (len > first && first < qmin) qmin = first;
    return qmin <= pmax - window;
}

void sprig_band_mask(float *out, const float *caller, int window, int first, int len, const int32_t *pos, int n)
{
    const int nh = len - first, w_out = nh + n, w_in = len + n;
    for (int i = 0; i < n; i++) {
        const int32_t lo = pos[i] - window;   /* keys at positions <= lo are outside */
        float *o = out + (int64_t)i * w_out;
        const float *c = caller ? caller + (int64_t)i * w_in : 0;
        for (int j = 0; j < nh; j++) {
            const float v = c ? c[first + j] : 0.0f;
            o[j] = first + j <= lo && !(v < SPRIG_BAND_BLOCKED) ? SPRIG_BAND_BLOCKED : v;   /* min(v, band) */
        }
        for (int t = 0; t < n; t++) {
            const float v = c ? c[len + t] : (t <= i ? 0.0f : SPRIG_BAND_BLOCKED);
            o[nh + t] = pos[t] <= lo && !(v < SPRIG_BAND_BLOCKED) ? SPRIG_BAND_BLOCKED : v;
        }
    }
}
