/*
 * model/deltanet — see deltanet.h. Sums run sequentially in element order
 * (llama.cpp's SIMD dot products sum in another order; the oracle test
 * bounds the difference). The convolution sums in float, as ggml_ssm_conv
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

void sprig_deltanet_step(const struct sprig_deltanet *d, const float *conv_w, const float *dt_bias, const float *a,
                         float *conv_state, float *S, float *qkv, const float *alpha, const float *beta, float *o)
{
    const int K = d->K, C = sprig_deltanet_conv_dim(d), N = d->state;
    const int kd = d->k_heads * N;
    /* the causal convolution over [conv_state; x], then the state slides by one input */
    for (int c = 0; c < C; c++) {
        const float *w = conv_w + (size_t)c * K;
        float sum = 0.0f;
        for (int j = 0; j < K - 1; j++) sum += conv_state[(size_t)j * C + c] * w[j];
        sum += qkv[c] * w[K - 1];
        if (K > 1) {
            for (int j = 0; j < K - 2; j++) conv_state[(size_t)j * C + c] = conv_state[(size_t)(j + 1) * C + c];
            conv_state[(size_t)(K - 2) * C + c] = qkv[c];
        }
        qkv[c] = sum / (1.0f + expf(-sum));   /* silu */
    }
    float *q = qkv, *k = qkv + kd, *v = qkv + 2 * kd;
    for (int h = 0; h < d->k_heads; h++) {
        l2norm(q + (size_t)h * N, N, d->eps);
        l2norm(k + (size_t)h * N, N, d->eps);
    }
    const float scale = 1.0f / sqrtf((float)N);
    for (int h = 0; h < d->v_heads; h++) {
        const float *qh = q + (size_t)(h % d->k_heads) * N, *kh = k + (size_t)(h % d->k_heads) * N, *vh = v + (size_t)h * N;
        const float x = alpha[h] + dt_bias[h];
        const float g = (x > 20.0f ? x : logf(1.0f + expf(x))) * a[h];
        const float b = 1.0f / (1.0f + expf(-beta[h]));
        const float decay = expf(g);
        float *M = S + (size_t)h * N * N;   /* M[j][i] = S[i][j] */
        for (int i = 0; i < N * N; i++) M[i] *= decay;
        float delta[512];
        for (int j = 0; j < N; j++) {
            const float *row = M + (size_t)j * N;
            float sum = 0.0f;
            for (int i = 0; i < N; i++) sum += row[i] * kh[i];
            delta[j] = (vh[j] - sum) * b;
        }
        for (int j = 0; j < N; j++) {
            float *row = M + (size_t)j * N;
            for (int i = 0; i < N; i++) row[i] += kh[i] * delta[j];
        }
        float *oh = o + (size_t)h * N;
        for (int j = 0; j < N; j++) {
            const float *row = M + (size_t)j * N;
            float sum = 0.0f;
            for (int i = 0; i < N; i++) sum += row[i] * qh[i];
            oh[j] = sum * scale;
        }
    }
}
