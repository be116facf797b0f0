/*
 * tensor/types — see types.h. The type table, scalar f16/bf16 conversions
 * and the reference (plain C) row quantizers/dequantizers.
 */
#include "tensor/types.h"
#include "tensor/quant.h"

#include <math.h>
#include <strings.h>

/* ---------------------------------------------------------------- f16 / bf16 */

float sprig_f16_to_f32(sprig_f16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {             /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            man &= 0x3ff;
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

sprig_f16 sprig_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t exp = (u >> 23) & 0xff;
    uint32_t man = u & 0x7fffff;
    if (exp == 0xff) return (sprig_f16)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (sprig_f16)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (sprig_f16)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1);
        uint32_t q = man >> shift;
        if (rest > half || (rest == half && (q & 1))) q++;
        return (sprig_f16)(sign | q);
    }
    uint32_t q = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (q & 1))) q++;   /* may carry into the exponent: correct */
    return (sprig_f16)(sign | q);
}

sprig_bf16 sprig_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return (sprig_bf16)((u >> 16) | 0x40);
    u += 0x7fff + ((u >> 16) & 1);
    return (sprig_bf16)(u >> 16);
}

/* ---------------------------------------------------------------- reference rows */

static void f32_to_f32(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
static void f32_from_f32(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }

static void f16_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_f16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sprig_f16_to_f32(s[i]);
}

static void f16_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_f16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = sprig_f32_to_f16(src[i]);
}

static void bf16_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_bf16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sprig_bf16_to_f32(s[i]);
}

static void bf16_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_bf16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = sprig_f32_to_bf16(src[i]);
}

static void q8_0_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / SPRIG_QK; i++) {
        float d = sprig_f16_to_f32(b[i].d);
        for (int j = 0; j < SPRIG_QK; j++) dst[i * SPRIG_QK + j] = d * (float)b[i].qs[j];
    }
}

/* As llama.cpp: d = amax / 127, q = round-half-away(x / d). */
static void q8_0_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / SPRIG_QK; i++) {
        const float *x = src + i * SPRIG_QK;
        float amax = 0;
        for (int j = 0; j < SPRIG_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = sprig_f32_to_f16(d);
        for (int j = 0; j < SPRIG_QK; j++) b[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

static void q4_0_to_f32(const void *src, float *dst, int64_t n)
{
    const sprig_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / SPRIG_QK; i++) {
        float d = sprig_f16_to_f32(b[i].d);
        for (int j = 0; j < SPRIG_QK / 2; j++) {
            dst[i * SPRIG_QK + j] = d * (float)((b[i].qs[j] & 15) - 8);
            dst[i * SPRIG_QK + j + 16] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

/* As llama.cpp: the signed value of largest magnitude maps to -8. */
static void q4_0_from_f32(const float *src, void *dst, int64_t n)
{
    sprig_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / SPRIG_QK; i++) {
        const float *x = src + i * SPRIG_QK;
        float amax = 0, max = 0;
        for (int j = 0; j < SPRIG_QK; j++) {
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        }
        float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = sprig_f32_to_f16(d);
        for (int j = 0; j < SPRIG_QK / 2; j++) {
            float a = x[j] * id + 8.5f, c = x[j + 16] * id + 8.5f;
            int qa = (int)a, qc = (int)c;
            if (qa > 15) qa = 15;
            if (qc > 15) qc = 15;
            if (qa < 0) qa = 0;
            if (qc < 0) qc = 0;
            b[i].qs[j] = (uint8_t)(qa | (qc << 4));
        }
    }
}

/* ---------------------------------------------------------------- the table */

#define T(id, nm, bl, sz) [id] = { .name = nm, .blck = bl, .type_size = sz }
#define C(id, nm, bl, sz, fn) [id] = { nm, bl, sz, true, sprig_##fn##_to_f32, sprig_##fn##_from_f32, false }
#define K(id, nm, sz, fn) [id] = { nm, SPRIG_QK_K, sz, true, sprig_##fn##_to_f32, sprig_##fn##_from_f32, true }
static const struct sprig_type_traits traits[SPRIG_TYPE_COUNT] = {
    [SPRIG_TYPE_F32]  = { "f32",  1, 4, true, f32_to_f32, f32_from_f32, false },
    [SPRIG_TYPE_F16]  = { "f16",  1, 2, true, f16_to_f32, f16_from_f32, false },
    [SPRIG_TYPE_Q4_0] = { "q4_0", 32, 18, true, q4_0_to_f32, q4_0_from_f32, false },
    C(SPRIG_TYPE_Q4_1, "q4_1", 32, 20, q4_1),
    C(SPRIG_TYPE_Q5_0, "q5_0", 32, 22, q5_0),
    C(SPRIG_TYPE_Q5_1, "q5_1", 32, 24, q5_1),
    [SPRIG_TYPE_Q8_0] = { "q8_0", 32, 34, true, q8_0_to_f32, q8_0_from_f32, false },
    T(9, "q8_1", 32, 36),
    K(SPRIG_TYPE_Q2_K, "q2_k", 84, q2_k),
    K(SPRIG_TYPE_Q3_K, "q3_k", 110, q3_k),
    K(SPRIG_TYPE_Q4_K, "q4_k", 144, q4_k),
    K(SPRIG_TYPE_Q5_K, "q5_k", 176, q5_k),
    K(SPRIG_TYPE_Q6_K, "q6_k", 210, q6_k),
    [15] = { .name = "q8_k", .blck = 256, .type_size = 292, .kquant = true },
    T(16, "iq2_xxs", 256, 66),
    T(17, "iq2_xs", 256, 74),
    T(18, "iq3_xxs", 256, 98),
    T(19, "iq1_s", 256, 50),
    T(20, "iq4_nl", 32, 18),
    T(21, "iq3_s", 256, 110),
    T(22, "iq2_s", 256, 82),
    T(23, "iq4_xs", 256, 136),
    T(24, "i8", 1, 1),
    T(25, "i16", 1, 2),
    T(26, "i32", 1, 4),
    T(27, "i64", 1, 8),
    T(28, "f64", 1, 8),
    T(29, "iq1_m", 256, 56),
    [SPRIG_TYPE_BF16] = { "bf16", 1, 2, true, bf16_to_f32, bf16_from_f32, false },
    T(34, "tq1_0", 256, 54),
    T(35, "tq2_0", 256, 66),
    T(39, "mxfp4", 32, 17),
};
#undef K
#undef C
#undef T

const struct sprig_type_traits *sprig_type_traits(int type)
{
    if (type < 0 || type >= SPRIG_TYPE_COUNT || !traits[type].name) return NULL;
    return &traits[type];
}

const char *sprig_type_name(int type)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    return t ? t->name : "?";
}

int sprig_type_from_name(const char *name)
{
    for (int i = 0; i < SPRIG_TYPE_COUNT; i++)
        if (traits[i].name && !strcasecmp(traits[i].name, name)) return i;
    return -1;
}

/* test-quant checks this list against the table */
const char *sprig_type_readable_names(void)
{
    return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k";
}

bool sprig_type_quantizable(int type)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    return t && t->from_f32;
}

bool sprig_type_is_kquant(int type)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    return t && t->kquant;
}

bool sprig_row_bytes(int type, int64_t n, size_t *out)
{
    const struct sprig_type_traits *t = sprig_type_traits(type);
    if (!t || n < 0 || n % t->blck) return false;
    uint64_t blocks = (uint64_t)(n / t->blck);
    return !__builtin_mul_overflow(blocks, (uint64_t)t->type_size, out);
}
