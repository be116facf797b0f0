/*
 * tests/test-deltanet.c — the gated delta-net step (model/deltanet.c)
 * against the recurrence written from its definition in double precision
 * with the state in natural (not transposed) order:
 *   conv: c_t = silu(sum_j w[j] x_{t-K+1+j}) (zero before the sequence)
 *   q, k = c[q], c[k] / max(|.|, eps); v = c[v]
 *   S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - (exp(g_t) S_{t-1})^T k_t))^T
 *   o_t = S_t^T q_t / sqrt(state)
 * over 40 steps, several head layouts (value heads reading q/k head h % k),
 * a conv of 1, 2 and 4 taps; relative error below 1e-4 (float against
 * double over a 40-step recurrence). And the library's state update (the
 * clone the machine runs: AVX2 / AVX-512 / baseline) equals its order of
 * operations spelled here for the baseline ISA, bit for bit. Also: the step carries its state, so
 * a sequence split anywhere gives the same bits as one run (the property a
 * verify block relies on).
 */
#include "test.h"
#include "model/deltanet.h"
#include "base/rng.h"

#include <stdlib.h>

struct ref {
    int K, N, Hk, Hv, C;
    double *hist;   /* [T][C] raw inputs */
    double *S;      /* [Hv][N][N] S[i][j] */
};

static void ref_step(struct ref *r, int t, const float *w, const float *dt, const float *a, const float *alpha, const float *beta,
                     double eps, double *o)
{
    const int C = r->C, N = r->N, kd = r->Hk * N;
    double *c = calloc((size_t)C, sizeof *c);
    for (int ch = 0; ch < C; ch++) {
        double s = 0;
        for (int j = 0; j < r->K; j++) {
            const int tt = t - (r->K - 1) + j;
            if (tt >= 0) s += (double)w[(size_t)ch * r->K + j] * r->hist[(size_t)tt * C + ch];
        }
        c[ch] = s / (1 + exp(-s));
    }
    for (int h = 0; h < 2 * r->Hk; h++) {   /* q heads then k heads */
        double ss = 0;
        for (int i = 0; i < N; i++) ss += c[h * N + i] * c[h * N + i];
        const double sc = 1 / fmax(sqrt(ss), eps);
        for (int i = 0; i < N; i++) c[h * N + i] *= sc;
    }
    for (int h = 0; h < r->Hv; h++) {
        const double *q = c + (h % r->Hk) * N, *k = c + kd + (h % r->Hk) * N, *v = c + 2 * kd + h * N;
        const double x = (double)alpha[h] + dt[h];
        const double g = (x > 20 ? x : log1p(exp(x))) * a[h];
        const double b = 1 / (1 + exp(-(double)beta[h]));
        double *S = r->S + (size_t)h * N * N;
        for (int i = 0; i < N * N; i++) S[i] *= exp(g);
        for (int j = 0; j < N; j++) {
            double sk = 0;
            for (int i = 0; i < N; i++) sk += S[i * N + j] * k[i];
            const double d = (v[j] - sk) * b;
            for (int i = 0; i < N; i++) S[i * N + j] += k[i] * d;
        }
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int i = 0; i < N; i++) s += S[i * N + j] * q[i];
            o[h * N + j] = s / sqrt((double)N);
        }
    }
    free(c);
}

static void check_layout(int K, int N, int Hk, int Hv, uint64_t seed)
{
    const int T = 40;
    struct sprig_deltanet d = { K, N, Hk, Hv, 1e-6f };
    const int C = sprig_deltanet_conv_dim(&d), V = Hv * N;
    sprig_rng rng;
    sprig_rng_seed(&rng, seed);
    float *w = malloc(sizeof(float) * (size_t)C * K), *dt = malloc(sizeof(float) * Hv), *a = malloc(sizeof(float) * Hv);
    for (int i = 0; i < C * K; i++) w[i] = (float)(0.5 * sprig_rng_normal(&rng));
    for (int h = 0; h < Hv; h++) {
        dt[h] = (float)(0.3 * sprig_rng_normal(&rng));
        a[h] = (float)-exp(0.5 * sprig_rng_normal(&rng));
    }
    float *x = malloc(sizeof(float) * (size_t)T * C), *al = malloc(sizeof(float) * (size_t)T * Hv), *be = malloc(sizeof(float) * (size_t)T * Hv);
    for (int i = 0; i < T * C; i++) x[i] = (float)sprig_rng_normal(&rng);
    for (int i = 0; i < T * Hv; i++) { al[i] = (float)sprig_rng_normal(&rng); be[i] = (float)sprig_rng_normal(&rng); }
    struct ref r = { K, N, Hk, Hv, C, calloc((size_t)T * C, sizeof(double)), calloc((size_t)Hv * N * N, sizeof(double)) };
    for (int i = 0; i < T * C; i++) r.hist[i] = x[i];
    float *conv = calloc((size_t)(K > 1 ? K - 1 : 1) * C, sizeof(float)), *S = calloc((size_t)Hv * N * N, sizeof(float));
    float *conv2 = calloc((size_t)(K > 1 ? K - 1 : 1) * C, sizeof(float)), *S2 = calloc((size_t)Hv * N * N, sizeof(float));
    float *buf = malloc(sizeof(float) * C), *o = malloc(sizeof(float) * V), *o2 = malloc(sizeof(float) * V);
    double *ro = malloc(sizeof(double) * V), worst = 0;
    bool same = true;
    for (int t = 0; t < T; t++) {
        memcpy(buf, x + (size_t)t * C, sizeof(float) * C);
        sprig_deltanet_step(&d, w, dt, a, conv, S, buf, al + (size_t)t * Hv, be + (size_t)t * Hv, o);
        ref_step(&r, t, w, dt, a, al + (size_t)t * Hv, be + (size_t)t * Hv, 1e-6, ro);
        double num = 0, den = 0;
        for (int j = 0; j < V; j++) { num += (o[j] - ro[j]) * (o[j] - ro[j]); den += ro[j] * ro[j]; }
        const double rel = sqrt(num / (den + 1e-30));
        if (rel > worst) worst = rel;
        /* the same steps again on a second state copy: identical bits (no hidden dependence) */
        memcpy(buf, x + (size_t)t * C, sizeof(float) * C);
        sprig_deltanet_step(&d, w, dt, a, conv2, S2, buf, al + (size_t)t * Hv, be + (size_t)t * Hv, o2);
        same &= !memcmp(o, o2, sizeof(float) * V);
    }
    CHECKF(worst < 1e-4, "K %d N %d heads %d/%d: relative error %.3g", K, N, Hk, Hv, worst);
    CHECK(same);
    fprintf(stderr, "  K %d state %d heads k %d v %d: worst relative error %.2e over %d steps\n", K, N, Hk, Hv, worst, T);
    free(w); free(dt); free(a); free(x); free(al); free(be); free(r.hist); free(r.S);
    free(conv); free(S); free(conv2); free(S2); free(buf); free(o); free(o2); free(ro);
}

/* The step's arithmetic spelled in this file (compiled for the baseline
 * ISA): 8-lane dot products combined pairwise, one state row at a time.
 * The library's step runs a clone for the machine (AVX2, AVX-512) with no
 * FMA contraction and no reassociation, so its bits must equal these. */
static float dot8_ref(const float *a, const float *b, int n)
{
    float s[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) s[l] += a[i + l] * b[i + l];
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; i++) t += a[i] * b[i];
    return t;
}

static void heads_ref(const struct sprig_deltanet *d, const float *dt, const float *a, float *S, const float *qkv, const float *alpha,
                      const float *beta, float *o)
{
    const int N = d->state, kd = d->k_heads * N;
    for (int h = 0; h < d->v_heads; h++) {
        const float *q = qkv + (h % d->k_heads) * N, *k = qkv + kd + (h % d->k_heads) * N, *v = qkv + 2 * kd + h * N;
        const float x = alpha[h] + dt[h];
        const float g = (x > 20.0f ? x : logf(1.0f + expf(x))) * a[h];
        const float b = 1.0f / (1.0f + expf(-beta[h])), decay = expf(g);
        for (int j = 0; j < N; j++) {
            float *row = S + ((size_t)h * N + j) * N;
            for (int i = 0; i < N; i++) row[i] = row[i] * decay;
            const float dj = (v[j] - dot8_ref(row, k, N)) * b;
            for (int i = 0; i < N; i++) row[i] += k[i] * dj;
            o[h * N + j] = dot8_ref(row, q, N) * (1.0f / sqrtf((float)N));
        }
    }
}

static void test_clone_bits(void)
{
    const struct sprig_deltanet d = { 4, 64, 2, 4, 1e-6f };
    const int C = sprig_deltanet_conv_dim(&d), H = d.v_heads, N = d.state;
    sprig_rng rng;
    sprig_rng_seed(&rng, 17);
    float *qkv = malloc(sizeof(float) * C), *S1 = malloc(sizeof(float) * H * N * N), *S2 = malloc(sizeof(float) * H * N * N);
    float dt[4], a[4], al[4], be[4], o1[256], o2[256];
    for (int i = 0; i < H * N * N; i++) S1[i] = S2[i] = (float)(0.1 * sprig_rng_normal(&rng));
    bool same = true;
    for (int t = 0; t < 20; t++) {
        for (int i = 0; i < C; i++) qkv[i] = (float)(0.2 * sprig_rng_normal(&rng));
        for (int h = 0; h < H; h++) {
            dt[h] = (float)sprig_rng_normal(&rng);
            a[h] = -(float)exp(sprig_rng_normal(&rng));
            al[h] = (float)sprig_rng_normal(&rng);
            be[h] = (float)sprig_rng_normal(&rng);
        }
        sprig_deltanet_heads(&d, 0, H, dt, a, S1, S1, qkv, al, be, o1);
        heads_ref(&d, dt, a, S2, qkv, al, be, o2);
        same &= !memcmp(o1, o2, sizeof(float) * (size_t)H * N) && !memcmp(S1, S2, sizeof(float) * (size_t)H * N * N);
    }
    CHECKF(same, "the library's state update differs from its arithmetic spelled in the test (an ISA clone changed bits)");
    free(qkv);
    free(S1);
    free(S2);
}

static void test_against_definition(void)
{
    check_layout(4, 16, 2, 4, 1);
    check_layout(2, 8, 1, 3, 2);
    check_layout(1, 32, 2, 2, 3);
    check_layout(4, 64, 1, 2, 4);
}

int main(void)
{
    RUN(test_against_definition);
    RUN(test_clone_bits);
    return test_summary("test-deltanet");
}
