/*
 * kv/turbo — TurboQuant rows (formats T4 and T3 of tensor/kvrows.h): a
 * row is normalised, rotated by random signs x Walsh-Hadamard x random signs,
 * and each rotated coordinate snapped to the nearest Lloyd-Max centroid for
 * N(0, 1/hd) — the distribution a rotated unit vector's coordinates follow —
 * with 16 (4-bit) or 8 (3-bit) levels.
 *
 *   n = |x|  (0 stored as is; the division uses 1)      u = x / n
 *   r = D2 H D1 u      H: the orthonormal Walsh-Hadamard transform (hd a
 *                      power of two), D1, D2: +-1 from a 32-bit LCG
 *                      (x <- 1664525 x + 1013904223, sign = bit 31), D1
 *                      seeded with `seed`, D2 with seed + 0x9E3779B9
 *   c_d = the centroid nearest r_d (midpoint boundaries, ties to the lower)
 *   rescale = n / max(|C[c]|, 1e-10)
 * so that C[c_d] * rescale ~ (D2 H D1 x)_d: attention reads the rotated row
 * (tensor/kvrows.h) against rotated queries and rotates its output back
 * (sprig_kv_codec_rotate). norm and rescale are stored as f16 (clamped to
 * its largest finite value).
 *
 * The codebook: Lloyd's algorithm on the standard normal density from the
 * quantile initialisation c_i = Phi^-1((i + 1/2) / L) (centroid of an
 * interval = (phi(a) - phi(b)) / (Phi(b) - Phi(a))), computed in double and
 * run to convergence (no centroid moves by 1e-12; 100 iterations, as some
 * implementations stop at, leave the outer 16-level centroids ~0.5% short),
 * then divided by sqrt(hd). It reproduces the published tables (16 levels:
 * 0.1284, 0.3881, ..., 2.7326; 8 levels: 0.2451, ..., 2.1520 for N(0, 1)).
 */
#include "kv/codec.h"

#include <math.h>
#include <string.h>

static double phi(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * M_PI); }
static double Phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* Phi^-1(p) by bisection (setup only). */
static double Phi_inv(double p)
{
    double lo = -12.0, hi = 12.0;
    for (int i = 0; i < 200; i++) {
        const double mid = 0.5 * (lo + hi);
        if (Phi(mid) < p) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

static void lloyd_max(int L, double *c)
{
    for (int i = 0; i < L; i++) c[i] = Phi_inv((i + 0.5) / L);
    for (int it = 0; it < 20000; it++) {
        double moved = 0.0;
        double b[17];
        b[0] = -INFINITY;
        b[L] = INFINITY;
        for (int i = 1; i < L; i++) b[i] = 0.5 * (c[i - 1] + c[i]);
        for (int i = 0; i < L; i++) {
            const double pa = isinf(b[i]) ? 0.0 : phi(b[i]), pb = isinf(b[i + 1]) ? 0.0 : phi(b[i + 1]);
            const double mass = Phi(b[i + 1]) - Phi(b[i]);
            const double ci = (pa - pb) / mass;
            moved = fmax(moved, fabs(ci - c[i]));
            c[i] = ci;
        }
        if (moved < 1e-12) break;
    }
}

static void signs(float *s, int hd, uint32_t seed)
{
    uint32_t x = seed;
    for (int d = 0; d < hd; d++) {
        x = x * 1664525u + 1013904223u;
        s[d] = (x >> 31) ? -1.0f : 1.0f;
    }
}

sprig_status sprig_kv_turbo_init(sprig_kv_codec *c, uint32_t seed, sprig_error *err)
{
    const int hd = c->hd, L = c->levels;
    if (hd < 8 || (hd & (hd - 1)))
        return sprig_err(err, SPRIG_E_INVALID_ARG,
                         "kv codec: rotated %s rows need a head size that is a power of two >= 8 (the Walsh-Hadamard "
                         "transform); this model's head size is %d",
                         sprig_kvrows_fmt_name(c->fmt), hd);
    double cb[16];
    lloyd_max(L, cb);
    const double k = 1.0 / sqrt((double)hd);
    for (int i = 0; i < L; i++) c->codebook[i] = (float)(cb[i] * k);
    for (int i = 0; i + 1 < L; i++) c->bounds[i] = 0.5f * (c->codebook[i] + c->codebook[i + 1]);
    signs(c->sign1, hd, seed);
    signs(c->sign2, hd, seed + 0x9E3779B9u);
    return SPRIG_OK;
}

/* In-place orthonormal Walsh-Hadamard transform of x[hd] (hd a power of two). */
static void wht(float *x, int hd)
{
    for (int h = 1; h < hd; h *= 2)
        for (int i = 0; i < hd; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    const float k = 1.0f / sqrtf((float)hd);
    for (int d = 0; d < hd; d++) x[d] *= k;
}

void sprig_kv_codec_rotate(const sprig_kv_codec *c, float *x, int n, bool inverse)
{
    if (!sprig_kv_codec_rotates(c)) return;
    const int hd = c->hd;
    const float *a = inverse ? c->sign2 : c->sign1, *b = inverse ? c->sign1 : c->sign2;
    for (int i = 0; i < n; i++, x += hd) {
        for (int d = 0; d < hd; d++) x[d] *= a[d];
        wht(x, hd);
        for (int d = 0; d < hd; d++) x[d] *= b[d];
    }
}

static sprig_f16 half_clamped(float v)
{
    sprig_f16 h = sprig_f32_to_f16(v);
    return isfinite(sprig_f16_to_f32(h)) ? h : (sprig_f16)0x7BFF;
}

/* Codes of r = the normalised row in the rotated basis, n its length. */
static void encode_codes(const sprig_kv_codec *c, const float *r, float n, uint8_t *rec);

/* r = x / |x| (a zero or non-finite length divides by 1); returns |x|. */
static float normalise(const float *x, float *r, int hd)
{
    double ss = 0.0;
    for (int d = 0; d < hd; d++) ss += (double)x[d] * x[d];
    const float n = (float)sqrt(ss), div = n > 0.0f && isfinite(n) ? n : 1.0f;
    for (int d = 0; d < hd; d++) r[d] = x[d] / div;
    return n;
}

void sprig_kv_encode_turbo(const sprig_kv_codec *c, const float *x, uint8_t *rec)
{
    float r[SPRIG_KV_CODEC_MAX_HD];
    const float n = normalise(x, r, c->hd);
    sprig_kv_codec_rotate(c, r, 1, false);
    encode_codes(c, r, n, rec);
}

void sprig_kv_encode_turbo_rotated(const sprig_kv_codec *c, const float *xr, uint8_t *rec)
{
    float r[SPRIG_KV_CODEC_MAX_HD];
    encode_codes(c, r, normalise(xr, r, c->hd), rec);
}

static void encode_codes(const sprig_kv_codec *c, const float *r, float n, uint8_t *rec)
{
    const int hd = c->hd, L = c->levels;
    unsigned code[SPRIG_KV_CODEC_MAX_HD];
    double yy = 0.0;
    for (int d = 0; d < hd; d++) {
        unsigned q = 0;
        while (q + 1 < (unsigned)L && r[d] > c->bounds[q]) q++;   /* NaN stays at 0 */
        code[d] = q;
        yy += (double)c->codebook[q] * c->codebook[q];
    }
    const double ny = sqrt(yy);
    const float rescale = (float)((double)(isfinite(n) ? n : 0.0f) / (ny > 1e-10 ? ny : 1e-10));
    int64_t cb_bytes;
    if (c->fmt == SPRIG_KVROWS_T4) {
        cb_bytes = hd / 2;
        for (int d = 0; d < hd; d += 2) rec[d / 2] = (uint8_t)(code[d] | code[d + 1] << 4);
    } else {
        cb_bytes = 3 * hd / 8;
        for (int d = 0; d < hd; d += 8) {
            uint32_t w = 0;
            for (int e = 0; e < 8; e++) w |= (uint32_t)code[d + e] << (3 * e);
            uint8_t *g = rec + 3 * (d / 8);
            g[0] = (uint8_t)w;
            g[1] = (uint8_t)(w >> 8);
            g[2] = (uint8_t)(w >> 16);
        }
    }
    const sprig_f16 hn = half_clamped(isfinite(n) ? n : 0.0f), hr = half_clamped(rescale);
    memcpy(rec + cb_bytes, &hn, 2);
    memcpy(rec + cb_bytes + 2, &hr, 2);
}
