/*
 * model/deltanet — see deltanet.h. The state's dot products sum in 8
 * interleaved lanes combined pairwise (a fixed order, vectorised by the
 * compiler; llama.cpp's SIMD dot products use another: the oracle test
 * bounds the difference). Each row j of a head's transposed state is
 * independent of the others (decay, its delta, its rank-1 update, o_j), so
 * a row is finished while it is in L1. The convolution sums in float, as ggml_ssm_conv
 * does; the L2 norm's sum of squares in double, as ggml_l2_norm does.
 */
#include "model/deltanet.h"

#include <math.h>
#include <string.h>

static void l2norm(float *x, int n, float eps)
{
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)x[i] * x[i];
    const float scale = 1.0f / fmaxf(sqrtf((float)sum), eps);
    for (int i = 0; i < n; i++) x[i] *= scale;
}

/* sum of a[i] b[i] in 8 interleaved partial sums, combined pairwise, then the
 * tail: a fixed order (the compiler turns the lanes into one vector) */
static inline float dot8(const float *a, const float *b, int n)
{
    float s[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) s[l] += a[i + l] * b[i + l];
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; i++) t += a[i] * b[i];
    return t;
}

void sprig_deltanet_conv(const struct sprig_deltanet *d, const float *conv_w, const float *conv_in, float *conv_out, float *qkv)
{
    const int K = d->K, C = sprig_deltanet_conv_dim(d), N = d->state;
    const int kd = d->k_heads * N;
    /* the causal convolution over [conv_in; x], then the window slides by one input into conv_out */
    for (int c = 0; c < C; c++) {
        const float *w = conv_w + (size_t)c * K;
        float sum = 0.0f;
        for (int j = 0; j < K - 1; j++) sum += conv_in[(size_t)j * C + c] * w[j];
        sum += qkv[c] * w[K - 1];
        if (K > 1) {
            for (int j = 0; j < K - 2; j++) conv_out[(size_t)j * C + c] = conv_in[(size_t)(j + 1) * C + c];
            conv_out[(size_t)(K - 2) * C + c] = qkv[c];
        }
        qkv[c] = sum / (1.0f + expf(-sum));   /* silu */
    }
    for (int h = 0; h < d->k_heads; h++) {
        l2norm(qkv + (size_t)h * N, N, d->eps);
        l2norm(qkv + kd + (size_t)h * N, N, d->eps);
    }
}

/* wider vectors on AVX2 and AVX-512 machines: the same operations lane for
 * lane (no FMA contraction), so every clone gives the same bits (GCC on
 * x86-64; other compilers build the baseline only) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#endif
void sprig_deltanet_heads(const struct sprig_deltanet *d, int h0, int h1, const float *dt_bias, const float *a, const float *S_in,
                          float *S, const float *qkv, const float *alpha, const float *beta, float *o)
{
    const int N = d->state, kd = d->k_heads * N;
    const float *q = qkv, *k = qkv + kd, *v = qkv + 2 * kd;
    const float scale = 1.0f / sqrtf((float)N);
    for (int h = h0; h < h1; h++) {
        const float *qh = q + (size_t)(h % d->k_heads) * N, *kh = k + (size_t)(h % d->k_heads) * N, *vh = v + (size_t)h * N;
        const float x = alpha[h] + dt_bias[h];
        const float g = (x > 20.0f ? x : logf(1.0f + expf(x))) * a[h];
        const float b = 1.0f / (1.0f + expf(-beta[h]));
        const float decay = expf(g);
        float *M = S + (size_t)h * N * N;   /* M[j][i] = S[i][j] */
        const float *M_in = S_in + (size_t)h * N * N;
        float *oh = o + (size_t)h * N;
        for (int j = 0; j < N; j++) {   /* per row j: decay, delta_j, the rank-1 update, o_j (rows are independent) */
            float *row = M + (size_t)j * N;
            const float *row_in = M_in + (size_t)j * N;
            for (int i = 0; i < N; i++) row[i] = row_in[i] * decay;
            const float dj = (vh[j] - dot8(row, kh, N)) * b;
            for (int i = 0; i < N; i++) row[i] += kh[i] * dj;
            oh[j] = dot8(row, qh, N) * scale;
        }
    }
}

void sprig_deltanet_step(const struct sprig_deltanet *d, const float *conv_w, const float *dt_bias, const float *a,
                         float *conv_state, float *S, float *qkv, const float *alpha, const float *beta, float *o)
{
    sprig_deltanet_conv(d, conv_w, conv_state, conv_state, qkv);
    sprig_deltanet_heads(d, 0, d->v_heads, dt_bias, a, S, S, qkv, alpha, beta, o);
}
