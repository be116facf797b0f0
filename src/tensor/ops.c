/*
 * tensor/ops — see ops.h. The plain-C code here is the spec; the SIMD
 * kernels (ops-avx512.c; ops-avx2.c, SwiGLU only) compute the same bits and
 * are picked once per process from CPUID (SPRIG_NO_SIMD=1 keeps plain C,
 * SPRIG_KERNELS=avx2 stops below AVX-512).
 *
 * rmsnorm: sum of squares in double (four interleaved partial sums, added in
 *          a fixed order), scale = 1 / sqrtf((float)(sum / dim) + eps),
 *          out = (x * scale) * w.
 * rope:    cos/sin of pos * theta^(-2i/n_rot) computed in double, rounded to
 *          float once per (row, pair) and shared by every head of the row;
 *          sprig_rope_table keeps them for every layer of a forward, so libm
 *          runs once per position instead of twice per layer. Scaled
 *          tables (linear scaling, Llama 3 frequency factors) multiply the
 *          double angle by freq_scale / factor_i.
 * swiglu:  gate / (1 + sprig_expf_poly(-gate)) * up.
 * exp:     x = n ln2 + r with n = nearest(x * log2 e) (the 1.5*2^23 trick),
 *          r by a two-part Cody-Waite reduction, e^r = 1 + r + r^2 P(r) with
 *          the classic degree-5 P, times 2^n built in the exponent bits.
 */
#include "tensor/ops.h"
#include "tensor/matmul.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ dispatch */

enum { KERN_UNKNOWN = 0, KERN_C = 1, KERN_AVX2 = 2, KERN_AVX512 = 3 };
static atomic_int g_kernel = KERN_UNKNOWN;

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

/* AVX2 and FMA as the matmul families see them (cpu.c: CPUID and XGETBV). */
static bool cpu_has_avx2(void)
{
    const struct sprig_cpu_features *c = sprig_cpu_features();
    return c->avx2 && c->fma;
}

static int ops_kernel(void)
{
    int k = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (k != KERN_UNKNOWN) return k;
    const int cap = sprig_kernels_cap();
    k = cap >= SPRIG_KERNELS_AVX512 && cpu_has_avx512() ? KERN_AVX512
        : cap >= SPRIG_KERNELS_AVX2 && cpu_has_avx2()   ? KERN_AVX2
                                                         : KERN_C;
    atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    return k;
}

const char *sprig_ops_kernel(void)
{
    static const char *const names[] = { [KERN_C] = "c", [KERN_AVX2] = "avx2", [KERN_AVX512] = "avx512" };
    return names[ops_kernel()];
}

bool sprig_ops_use_kernel(const char *name)
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

/* ------------------------------------------------------------------ exp */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("default", "arch=x86-64-v3")))   /* fmaf inline where FMA exists */
#endif
float sprig_expf_poly(float x)
{
    if (x < -87.0f) return 0.0f;
    x = 88.0f < x ? 88.0f : x;
    const float t = x * 1.44269504088896341f;
    const float kf = t + 12582912.0f;            /* 1.5 * 2^23: rounds t to an integer */
    uint32_t kb;
    memcpy(&kb, &kf, 4);
    const float nf = kf - 12582912.0f;
    float r = fmaf(nf, -0.693359375f, x);
    r = fmaf(nf, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    const float r2 = r * r;
    float y = fmaf(p, r2, r);
    y = y + 1.0f;
    /* n = kb - 0x4B400000 lies in [-126, 127] here, so n + 127 is a normal exponent */
    const uint32_t eb = (kb - 0x4B400000u + 127u) << 23;
    float s;
    memcpy(&s, &eb, 4);
    return y * s;
}

/* ------------------------------------------------------------------ rmsnorm */

void sprig_rmsnorm(float *out, const float *x, const float *w, int n, int dim, float eps)
{
    if (n <= 0 || dim <= 0) return;
    if (ops_kernel() == KERN_AVX512) {
        sprig_rmsnorm_avx512(out, x, w, n, dim, eps);
        return;
    }
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * (size_t)dim;
        float *o = out + (size_t)r * (size_t)dim;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int d = 0;
        for (; d + 4 <= dim; d += 4) {
            s0 += (double)xr[d] * xr[d];
            s1 += (double)xr[d + 1] * xr[d + 1];
            s2 += (double)xr[d + 2] * xr[d + 2];
            s3 += (double)xr[d + 3] * xr[d + 3];
        }
        for (; d < dim; d++) s0 += (double)xr[d] * xr[d];
        const double sum = (s0 + s1) + (s2 + s3);
        const float scale = 1.0f / sqrtf((float)(sum / dim) + eps);
        for (d = 0; d < dim; d++) o[d] = (xr[d] * scale) * w[d];
    }
}

/* ------------------------------------------------------------------ rope */

#define ROPE_MAX_PAIRS 512   /* n_rot up to 1024 with the angle table on the stack */

void sprig_rope(float *x, const int32_t *pos, int n, int n_head, int hd, int n_rot, float theta, int mode)
{
    if (n <= 0 || n_head <= 0 || hd <= 0) return;
    if (n_rot > hd) n_rot = hd;
    n_rot &= ~1;
    if (n_rot <= 0) return;
    const int half = n_rot / 2;
    float cs[ROPE_MAX_PAIRS], sn[ROPE_MAX_PAIRS];
    double inv[ROPE_MAX_PAIRS];
    for (int i0 = 0; i0 < half; i0 += ROPE_MAX_PAIRS) {   /* chunks only when n_rot > 1024 */
        const int i1 = half - i0 < ROPE_MAX_PAIRS ? half : i0 + ROPE_MAX_PAIRS;
        for (int i = i0; i < i1; i++) inv[i - i0] = pow((double)theta, -(double)(2 * i) / (double)n_rot);
        for (int r = 0; r < n; r++) {
            const double p = (double)pos[r];
            for (int i = i0; i < i1; i++) {
                const double ang = p * inv[i - i0];
                cs[i - i0] = (float)cos(ang);
                sn[i - i0] = (float)sin(ang);
            }
            float *xr = x + (size_t)r * (size_t)n_head * (size_t)hd;
            for (int h = 0; h < n_head; h++) {
                float *xh = xr + (size_t)h * (size_t)hd;
                for (int i = i0; i < i1; i++) {
                    const int a = mode == SPRIG_ROPE_NEOX ? i : 2 * i;
                    const int b = mode == SPRIG_ROPE_NEOX ? i + half : 2 * i + 1;
                    const float x0 = xh[a], x1 = xh[b];
                    const float c = cs[i - i0], s = sn[i - i0];
                    xh[a] = x0 * c - x1 * s;
                    xh[b] = x0 * s + x1 * c;
                }
            }
        }
    }
}

/* n_rot as sprig_rope uses it: at most hd, even; 0 = nothing to rotate */
static int rope_dims(int hd, int n_rot)
{
    if (hd <= 0) return 0;
    if (n_rot > hd) n_rot = hd;
    n_rot &= ~1;
    return n_rot > 0 ? n_rot : 0;
}

/* theta^(-2i/n_rot) for the pairs [i0, i0 + ROPE_MAX_PAIRS) of the last
 * (theta, n_rot) this thread asked for: a forward asks for the same ones. */
static const double *rope_inv(float theta, int n_rot, int i0, int i1)
{
    static _Thread_local struct { float theta; int n_rot, i0, i1; double inv[ROPE_MAX_PAIRS]; } c;
    if (c.i1 == 0 || c.theta != theta || c.n_rot != n_rot || c.i0 != i0 || c.i1 != i1) {
        for (int i = i0; i < i1; i++) c.inv[i - i0] = pow((double)theta, -(double)(2 * i) / (double)n_rot);
        c.theta = theta;
        c.n_rot = n_rot;
        c.i0 = i0;
        c.i1 = i1;
    }
    return c.inv;
}

void sprig_rope_table(float *cs, const int32_t *pos, int n, int hd, int n_rot, float theta)
{
    sprig_rope_table_scaled(cs, pos, n, hd, n_rot, theta, 1.0f, NULL);
}

void sprig_rope_table_scaled(float *cs, const int32_t *pos, int n, int hd, int n_rot, float theta, float freq_scale,
                             const float *factors)
{
    n_rot = rope_dims(hd, n_rot);
    if (n <= 0 || n_rot == 0) return;
    const int half = n_rot / 2;
    const bool plain = freq_scale == 1.0f && !factors;
    double mul[ROPE_MAX_PAIRS];   /* freq_scale / factor_i: exactly 1 when unscaled */
    for (int i0 = 0; i0 < half; i0 += ROPE_MAX_PAIRS) {
        const int i1 = half - i0 < ROPE_MAX_PAIRS ? half : i0 + ROPE_MAX_PAIRS;
        const double *inv = rope_inv(theta, n_rot, i0, i1);
        for (int i = i0; i < i1; i++) mul[i - i0] = plain ? 1.0 : (double)freq_scale / (factors ? (double)factors[i] : 1.0);
        for (int r = 0; r < n; r++) {
            const double p = (double)pos[r];
            float *t = cs + ((size_t)r * (size_t)half + (size_t)i0) * 2;   /* [half][2] of row r */
            for (int i = i0; i < i1; i++, t += 2) {
                const double ang = plain ? p * inv[i - i0] : p * inv[i - i0] * mul[i - i0];
                t[0] = (float)cos(ang);
                t[1] = (float)sin(ang);
            }
        }
    }
}

void sprig_rope_apply(float *x, const float *cs, int n, int n_head, int hd, int n_rot, int mode)
{
    n_rot = rope_dims(hd, n_rot);
    if (n <= 0 || n_head <= 0 || n_rot == 0) return;
    if (mode != SPRIG_ROPE_NEOX && ops_kernel() == KERN_AVX512) {
        sprig_rope_apply_norm_avx512(x, cs, n, n_head, hd, n_rot);
        return;
    }
    const int half = n_rot / 2;
    /* NORM: pairs (2i, 2i+1); NEOX: (i, i + half) */
    const int step = mode == SPRIG_ROPE_NEOX ? 1 : 2, other = mode == SPRIG_ROPE_NEOX ? half : 1;
    for (int r = 0; r < n; r++) {
        const float *t = cs + (size_t)r * (size_t)half * 2;   /* [half][2] */
        float *xr = x + (size_t)r * (size_t)n_head * (size_t)hd;
        for (int h = 0; h < n_head; h++) {
            float *xh = xr + (size_t)h * (size_t)hd;
            for (int i = 0; i < half; i++) {
                float *pa = xh + (size_t)i * step, *pb = pa + other;
                const float x0 = *pa, x1 = *pb, c = t[2 * i], s = t[2 * i + 1];
                *pa = x0 * c - x1 * s;
                *pb = x0 * s + x1 * c;
            }
        }
    }
}

/* ------------------------------------------------------------------ swiglu, add, argmax */

static sprig_f16 gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static void gelu_table_init(void)
{
    const float k = 0.79788456080286535587989211986876f, a = 0.044715f;   /* sqrt(2/pi), llama.cpp's constants */
    for (int i = 0; i < 1 << 16; i++) {
        const float x = sprig_f16_to_f32((sprig_f16)i);
        gelu_table[i] = sprig_f32_to_f16(0.5f * x * (1.0f + tanhf(k * x * (1.0f + a * x * x))));
    }
}

void sprig_geglu(float *out, const float *gate, const float *up, int64_t n)
{
    pthread_once(&gelu_once, gelu_table_init);
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g <= -10.0f ? 0.0f : g >= 10.0f ? g * up[i] : sprig_f16_to_f32(gelu_table[sprig_f32_to_f16(g)]) * up[i];
    }
}

void sprig_swiglu(float *out, const float *gate, const float *up, int64_t n)
{
    if (n <= 0) return;
    const int k = ops_kernel();
    if (k == KERN_AVX512) {
        sprig_swiglu_avx512(out, gate, up, n);
        return;
    }
    if (k == KERN_AVX2) {
        sprig_swiglu_avx2(out, gate, up, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + sprig_expf_poly(-g)) * up[i];
    }
}

void sprig_add_inplace(float *y, const float *x, int64_t n)
{
    if (n > 0 && ops_kernel() == KERN_AVX512) {
        sprig_add_avx512(y, x, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

int sprig_argmax(const float *x, int n)
{
    if (n <= 0) return -1;
    int best = -1;
    float bv = 0.0f;
    for (int i = 0; i < n; i++) {
        if (x[i] != x[i]) continue;                /* NaN */
        if (best < 0 || x[i] > bv) { best = i; bv = x[i]; }
    }
    return best < 0 ? 0 : best;
}
