/*
 * tests/test-kv-codec.c — the KV record codecs (kv/codec.h, kv/turbo.c,
 * kv/codec_int8.c) against independent arithmetic:
 *   - the Lloyd-Max codebooks equal the published N(0, 1) tables (16 and 8
 *     levels) scaled by 1/sqrt(hd);
 *   - the rotation D2 H D1 is orthonormal: inverse(rotate(x)) = x and dot
 *     products are preserved (what lets attention run in the rotated basis);
 *   - int8 records: the f16 scale is absmax/127, codes round(x/s), decoded
 *     error <= s/2 per element; an all-zero row decodes to zeros;
 *   - T4 / T3 records: every code is the centroid nearest the rotated,
 *     normalised coordinate (recomputed here with a plain O(L) scan and an
 *     independent packing reader, so the 3-bit groups' byte edges are
 *     checked at head sizes 8, 16, 64, 128), norm = |x|, rescale =
 *     |x| / |C[c]|; decoding then rotating back gives x with mean cosine
 *     similarity > 0.99 (4-bit) / 0.975 (3-bit) on Gaussian rows.
 */
#include "test.h"
#include "base/rng.h"
#include "kv/codec.h"
#include "kv/kv.h"

static const double published16[8] = { 0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326 };
static const double published8[4] = { 0.2451, 0.7560, 1.3439, 2.1520 };

static void test_codebooks(void)
{
    sprig_error err;
    sprig_kv_codec c;
    for (int hd = 8; hd <= 256; hd *= 2) {
        CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_T4, hd, 1, &err), SPRIG_OK);
        CHECK_EQ_INT(c.levels, 16);
        for (int i = 0; i < 8; i++) {
            CHECK_NEAR(c.codebook[8 + i] * sqrt((double)hd), published16[i], 2e-4);
            CHECK_NEAR(c.codebook[7 - i] * sqrt((double)hd), -published16[i], 2e-4);
        }
        for (int i = 0; i + 1 < 16; i++) CHECK(c.codebook[i] < c.codebook[i + 1]);
        CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_T3, hd, 1, &err), SPRIG_OK);
        CHECK_EQ_INT(c.levels, 8);
        for (int i = 0; i < 4; i++) CHECK_NEAR(c.codebook[4 + i] * sqrt((double)hd), published8[i], 2e-4);
    }
    /* head sizes a rotation cannot take are refused by name */
    CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_T4, 96, 1, &err), SPRIG_E_INVALID_ARG);
    CHECK(strstr(err.msg, "power of two") && strstr(err.msg, "96"));
    CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_T3, 4, 1, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_I8, 96, 1, &err), SPRIG_OK);
    CHECK_EQ_INT(sprig_kv_codec_init(&c, 17, 64, 1, &err), SPRIG_E_INVALID_ARG);
}

static void test_rotation(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 9);
    for (int hd = 8; hd <= 256; hd *= 2) {
        sprig_kv_codec c;
        CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_T4, hd, 123, &err), SPRIG_OK);
        int neg = 0;
        for (int d = 0; d < hd; d++) {
            CHECK(c.sign1[d] == 1.0f || c.sign1[d] == -1.0f);
            neg += c.sign1[d] < 0;
        }
        CHECK(neg > 0 && neg < hd);
        float x[256], y[256], q[256], rq[256];
        for (int d = 0; d < hd; d++) { x[d] = (float)sprig_rng_normal(&r); q[d] = (float)sprig_rng_normal(&r); }
        memcpy(y, x, sizeof x);
        memcpy(rq, q, sizeof q);
        sprig_kv_codec_rotate(&c, y, 1, false);
        sprig_kv_codec_rotate(&c, rq, 1, false);
        double dot0 = 0, dot1 = 0, n0 = 0, n1 = 0;
        for (int d = 0; d < hd; d++) {
            dot0 += (double)x[d] * q[d];
            dot1 += (double)y[d] * rq[d];
            n0 += (double)x[d] * x[d];
            n1 += (double)y[d] * y[d];
        }
        CHECK_NEAR(dot1, dot0, 1e-4 * sqrt(n0) * hd);
        CHECK_NEAR(n1, n0, 1e-4 * n0);
        sprig_kv_codec_rotate(&c, y, 1, true);
        double e = 0;
        for (int d = 0; d < hd; d++) e = fmax(e, fabs((double)y[d] - x[d]));
        CHECKF(e < 1e-5, "hd %d: inverse(rotate(x)) off by %g", hd, e);
    }
}

static void test_int8(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 10);
    for (int hd = 1; hd <= 130; hd += 43) {
        sprig_kv_codec c;
        CHECK_EQ_INT(sprig_kv_codec_init(&c, SPRIG_KVROWS_I8, hd, 0, &err), SPRIG_OK);
        CHECK_EQ_INT(c.rec_bytes, hd + 2);
        float x[256], y[256];
        uint8_t rec[300];
        for (int d = 0; d < hd; d++) x[d] = (float)(3.0 * sprig_rng_normal(&r));
        sprig_kv_codec_encode(&c, x, rec);
        float amax = 0;
        for (int d = 0; d < hd; d++) amax = fmaxf(amax, fabsf(x[d]));
        const float s = sprig_f16_to_f32(sprig_f32_to_f16(amax / 127.0f));
        CHECK(sprig_f16_to_f32(sprig_kvrows_u16(rec + hd)) == s);
        sprig_kvrows rows = { .fmt = SPRIG_KVROWS_I8 };
        sprig_kvrows_decode_ref(&rows, rec, hd, y);
        bool ok = true;
        for (int d = 0; d < hd; d++) {
            ok &= (int8_t)rec[d] == (int)nearbyintf(fminf(fmaxf(x[d] / s, -127.0f), 127.0f));
            ok &= fabsf(y[d] - x[d]) <= 0.5f * s * 1.0001f + 1e-6f;
        }
        CHECKF(ok, "hd %d", hd);
        memset(x, 0, sizeof x);
        sprig_kv_codec_encode(&c, x, rec);
        sprig_kvrows_decode_ref(&rows, rec, hd, y);
        for (int d = 0; d < hd; d++) CHECK(y[d] == 0.0f);
    }
}

/* The code of element d of a record, read bit by bit (independent of kvrows.h). */
static unsigned code_at(int fmt, const uint8_t *rec, int d)
{
    const int bits = fmt == SPRIG_KVROWS_T4 ? 4 : 3;
    unsigned v = 0;
    for (int b = 0; b < bits; b++) {
        const int bit = fmt == SPRIG_KVROWS_T4 ? d * 4 + b : (d / 8) * 24 + (d % 8) * 3 + b;
        v |= (unsigned)((rec[bit / 8] >> (bit % 8)) & 1) << b;
    }
    return v;
}

static void test_turbo(void)
{
    sprig_error err;
    sprig_rng r;
    sprig_rng_seed(&r, 11);
    static const int fmts[2] = { SPRIG_KVROWS_T4, SPRIG_KVROWS_T3 };
    for (int fi = 0; fi < 2; fi++)
        for (int hd = 8; hd <= 128; hd *= 2) {
            const int fmt = fmts[fi];
            sprig_kv_codec c;
            CHECK_EQ_INT(sprig_kv_codec_init(&c, fmt, hd, 77, &err), SPRIG_OK);
            CHECK_EQ_INT(c.rec_bytes, (fmt == SPRIG_KVROWS_T4 ? hd / 2 : 3 * hd / 8) + 4);
            double cos_min = 1.0, cos_sum = 0.0;
            for (int rep = 0; rep < 50; rep++) {
                float x[128], u[128], y[128];
                uint8_t rec[128];
                double n2 = 0;
                for (int d = 0; d < hd; d++) { x[d] = (float)(2.0 * sprig_rng_normal(&r)); n2 += (double)x[d] * x[d]; }
                sprig_kv_codec_encode(&c, x, rec);
                const float n = (float)sqrt(n2);
                for (int d = 0; d < hd; d++) u[d] = x[d] / n;
                sprig_kv_codec_rotate(&c, u, 1, false);
                bool ok = true;
                double yy = 0;
                for (int d = 0; d < hd; d++) {
                    const unsigned k = code_at(fmt, rec, d);
                    unsigned best = 0;
                    for (unsigned i = 1; i < (unsigned)c.levels; i++)
                        if (fabsf(u[d] - c.codebook[i]) < fabsf(u[d] - c.codebook[best])) best = i;
                    /* a tie between two centroids may go either way */
                    ok &= k == best || fabsf(fabsf(u[d] - c.codebook[k]) - fabsf(u[d] - c.codebook[best])) < 1e-6f;
                    yy += (double)c.codebook[k] * c.codebook[k];
                }
                CHECKF(ok, "fmt %d hd %d rep %d: a code is not the nearest centroid", fmt, hd, rep);
                const int64_t cb = c.rec_bytes - 4;
                CHECK_NEAR(sprig_f16_to_f32(sprig_kvrows_u16(rec + cb)), n, 1e-3 * n);
                CHECK_NEAR(sprig_f16_to_f32(sprig_kvrows_u16(rec + cb + 2)), n / sqrt(yy), 1e-3 * n / sqrt(yy));
                sprig_kvrows rows = { .fmt = fmt, .codebook = c.codebook };
                sprig_kvrows_decode_ref(&rows, rec, hd, y);
                for (int d = 0; d < hd; d++) CHECK(sprig_kvrows_elem(&rows, rec, hd, d) == y[d]);
                sprig_kv_codec_rotate(&c, y, 1, true);
                double dot = 0, ny = 0;
                for (int d = 0; d < hd; d++) { dot += (double)x[d] * y[d]; ny += (double)y[d] * y[d]; }
                cos_min = fmin(cos_min, dot / sqrt(n2 * ny));
                cos_sum += dot / sqrt(n2 * ny);
            }
            /* Lloyd-Max distortion of N(0,1): 0.0095 (16 levels), 0.0345 (8): mean cosine ~0.995 / ~0.983 */
            const double want = fmt == SPRIG_KVROWS_T4 ? 0.99 : 0.975, worst = fmt == SPRIG_KVROWS_T4 ? 0.98 : 0.93;
            CHECKF(cos_sum / 50 > want && cos_min > worst, "fmt %d hd %d: cosine mean %f worst %f", fmt, hd, cos_sum / 50, cos_min);
            fprintf(stderr, "  %s hd %3d: cosine(x, decoded) over 50 rows: mean %.4f, worst %.4f\n", sprig_kvrows_fmt_name(fmt), hd,
                    cos_sum / 50, cos_min);
        }
}

int main(void)
{
    RUN(test_codebooks);
    RUN(test_rotation);
    RUN(test_int8);
    RUN(test_turbo);
    return test_summary("test-kv-codec");
}
