/*
 * tests/test-ops.c — the row-wise ops against double-precision formulas:
 * rmsnorm, RoPE in NORM (adjacent pairs) and NEOX (split halves) layouts
 * including partial rotation, swiglu, the polynomial exp, add, argmax
 * (first index on ties, NaN never wins); the AVX-512 and AVX2 swiglu equal
 * the plain-C one bit for bit.
 */
#include "test.h"
#include "base/rng.h"
#include "tensor/ops.h"

static bool cpu_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool cpu_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
}

static void test_rmsnorm(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 1);
    const int dims[] = { 1, 3, 7, 64, 288, 4096 };
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        const int dim = dims[t], n = 3;
        float *x = malloc(sizeof(float) * n * dim), *w = malloc(sizeof(float) * dim), *o = malloc(sizeof(float) * n * dim);
        for (int i = 0; i < n * dim; i++) x[i] = (float)(sprig_rng_normal(&r) * (1 + i % 5));
        for (int i = 0; i < dim; i++) w[i] = (float)(0.5 + sprig_rng_uniform(&r));
        sprig_rmsnorm(o, x, w, n, dim, 1e-5f);
        double worst = 0;
        for (int row = 0; row < n; row++) {
            double ss = 0;
            for (int i = 0; i < dim; i++) ss += (double)x[row * dim + i] * x[row * dim + i];
            double sc = 1.0 / sqrt(ss / dim + 1e-5);
            for (int i = 0; i < dim; i++) {
                double want = x[row * dim + i] * sc * w[i];
                double err = fabs(o[row * dim + i] - want) / (fabs(want) + 1e-30);
                if (err > worst) worst = err;
            }
        }
        CHECKF(worst < 4e-7, "dim %d: relative error %g", dim, worst);
        /* in place gives the same bits */
        sprig_rmsnorm(x, x, w, n, dim, 1e-5f);
        CHECK(memcmp(x, o, sizeof(float) * n * dim) == 0);
        /* rows are independent: row 1 alone equals row 1 of the batch */
        free(x); free(w); free(o);
    }
    float z[4] = { 0, 0, 0, 0 }, w1[4] = { 1, 1, 1, 1 }, oz[4];
    sprig_rmsnorm(oz, z, w1, 1, 4, 1e-5f);
    for (int i = 0; i < 4; i++) CHECK(oz[i] == 0.0f);
}

/* The documented arithmetic, spelled out: angle in double, cos/sin rounded
 * to float, then float products without fma. */
static void rope_spec(float *x, int pos, int hd, int n_rot, double theta, int mode)
{
    const int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        double ang = (double)pos * pow(theta, -(double)(2 * i) / n_rot);
        float c = (float)cos(ang), s = (float)sin(ang);
        int a = mode == SPRIG_ROPE_NEOX ? i : 2 * i, b = mode == SPRIG_ROPE_NEOX ? i + half : 2 * i + 1;
        volatile float x0 = x[a], x1 = x[b];
        volatile float p0 = x0 * c, p1 = x1 * s, p2 = x0 * s, p3 = x1 * c;
        x[a] = p0 - p1;
        x[b] = p2 + p3;
    }
    (void)hd;
}

static void test_rope(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 2);
    const int hds[] = { 8, 64, 128 };
    const int32_t pos[] = { 0, 1, 7, 100, 2047, 50000 };
    const int n = 6, n_head = 3;
    for (int mode = 0; mode < 2; mode++)
        for (size_t t = 0; t < 3; t++)
            for (int partial = 0; partial < 2; partial++) {
                const int hd = hds[t], n_rot = partial ? hd / 2 : hd;
                const float theta = partial ? 500000.0f : 10000.0f;
                const int sz = n * n_head * hd;
                float *x = malloc(sizeof(float) * sz), *y = malloc(sizeof(float) * sz), *z = malloc(sizeof(float) * sz);
                for (int i = 0; i < sz; i++) x[i] = (float)sprig_rng_normal(&r);
                memcpy(y, x, sizeof(float) * sz);
                memcpy(z, x, sizeof(float) * sz);
                sprig_rope(y, pos, n, n_head, hd, n_rot, theta, mode);
                double worst = 0;
                int spec_bad = 0, tail_bad = 0;
                for (int row = 0; row < n; row++)
                    for (int h = 0; h < n_head; h++) {
                        const float *xi = x + (row * n_head + h) * hd;
                        const float *yo = y + (row * n_head + h) * hd;
                        float *zs = z + (row * n_head + h) * hd;
                        rope_spec(zs, pos[row], hd, n_rot, theta, mode);
                        for (int i = 0; i < hd; i++) spec_bad += memcmp(&zs[i], &yo[i], 4) != 0;
                        for (int i = n_rot; i < hd; i++) tail_bad += yo[i] != xi[i];
                        /* double-precision rotation of the pairs the layout defines */
                        for (int i = 0; i < n_rot / 2; i++) {
                            int a = mode ? i : 2 * i, b = mode ? i + n_rot / 2 : 2 * i + 1;
                            double ang = pos[row] * pow((double)theta, -2.0 * i / n_rot);
                            double wa = xi[a] * cos(ang) - xi[b] * sin(ang);
                            double wb = xi[a] * sin(ang) + xi[b] * cos(ang);
                            double e = fmax(fabs(wa - yo[a]), fabs(wb - yo[b]));
                            if (e > worst) worst = e;
                        }
                    }
                CHECKF(spec_bad == 0, "mode %d hd %d n_rot %d: %d values differ from the documented arithmetic", mode, hd, n_rot, spec_bad);
                CHECKF(tail_bad == 0, "mode %d hd %d: dims past n_rot changed", mode, hd);
                CHECKF(worst < 2e-6, "mode %d hd %d n_rot %d: error %g against double", mode, hd, n_rot, worst);
                free(x); free(y); free(z);
            }
    /* NORM and NEOX really pair different dims: e_1 rotates with e_0 vs e_(1+half) */
    float a[8] = { 0, 1, 0, 0, 0, 0, 0, 0 }, b[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };
    const int32_t p = 3;
    sprig_rope(a, &p, 1, 1, 8, 8, 10000.0f, SPRIG_ROPE_NORM);
    sprig_rope(b, &p, 1, 1, 8, 8, 10000.0f, SPRIG_ROPE_NEOX);
    CHECK_NEAR(a[0], -sin(3.0), 1e-6);
    CHECK_NEAR(a[1], cos(3.0), 1e-6);
    CHECK(a[5] == 0.0f);
    CHECK(b[0] == 0.0f);
    double ang = 3.0 * pow(10000.0, -2.0 / 8);
    CHECK_NEAR(b[1], cos(ang), 1e-6);
    CHECK_NEAR(b[5], sin(ang), 1e-6);
    /* position 0 is the identity */
    float c[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    const int32_t p0 = 0;
    sprig_rope(c, &p0, 1, 1, 8, 8, 10000.0f, SPRIG_ROPE_NORM);
    for (int i = 0; i < 8; i++) CHECK(c[i] == (float)(i + 1));
}

/* The table + apply split gives the bits of sprig_rope, for the q and k
 * shapes of a layer, every layout, partial and clamped n_rot. */
static void test_rope_table(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 3);
    const int hds[] = { 2, 8, 16, 64, 128 };
    const int n = 9;
    int32_t pos[9] = { 0, 1, 2, 3, 127, 128, 2047, 4095, 1 << 24 };
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        if (shuffle)   /* tree positions: repeats, any order */
            for (int i = 0; i < n; i++) pos[i] = 500 + (int32_t)(sprig_rng_uniform(&r) * 4);
        for (int mode = 0; mode < 2; mode++)
            for (size_t t = 0; t < sizeof hds / sizeof hds[0]; t++)
                for (int rot = 0; rot < 4; rot++) {
                    const int hd = hds[t];
                    const int n_rot = rot == 0 ? hd : rot == 1 ? hd / 2 : rot == 2 ? hd + 2 : hd - 1;   /* clamped: > hd, odd */
                    const float theta = rot == 1 ? 500000.0f : 10000.0f;
                    float *cs = malloc(sizeof(float) * n * hd);
                    sprig_rope_table(cs, pos, n, hd, n_rot, theta);
                    for (int n_head = 1; n_head <= 8; n_head += 7) {
                        const int sz = n * n_head * hd;
                        float *x = malloc(sizeof(float) * sz), *y = malloc(sizeof(float) * sz);
                        for (int i = 0; i < sz; i++) x[i] = (float)sprig_rng_normal(&r) * 3.0f;
                        memcpy(y, x, sizeof(float) * sz);
                        sprig_rope(x, pos, n, n_head, hd, n_rot, theta, mode);
                        sprig_rope_apply(y, cs, n, n_head, hd, n_rot, mode);
                        CHECKF(memcmp(x, y, sizeof(float) * sz) == 0, "mode %d hd %d n_rot %d heads %d shuffle %d",
                               mode, hd, n_rot, n_head, shuffle);
                        free(x);
                        free(y);
                    }
                    free(cs);
                }
    }
    /* the same (theta, n_rot) twice in a row, then another and back: the same tables */
    {
        const int32_t pp[3] = { 3, 900, 77 };
        float t1[3 * 64], t2[3 * 64], t3[3 * 64];
        sprig_rope_table(t1, pp, 3, 64, 64, 10000.0f);
        sprig_rope_table(t2, pp, 3, 64, 64, 10000.0f);
        sprig_rope_table(t3, pp, 3, 64, 32, 10000.0f);
        sprig_rope_table(t3, pp, 3, 64, 64, 500000.0f);
        sprig_rope_table(t3, pp, 3, 64, 64, 10000.0f);
        CHECK(memcmp(t1, t2, sizeof t1) == 0 && memcmp(t1, t3, sizeof t1) == 0);
    }
    /* nothing to rotate: x unchanged, the table untouched */
    float x[4] = { 1, 2, 3, 4 }, cs[4] = { 9, 9, 9, 9 };
    const int32_t p = 5;
    sprig_rope_table(cs, &p, 1, 4, 1, 10000.0f);
    sprig_rope_apply(x, cs, 1, 1, 4, 1, SPRIG_ROPE_NORM);
    for (int i = 0; i < 4; i++) CHECK(x[i] == (float)(i + 1) && cs[i] == 9.0f);
}

static void test_exp(void)
{
    double worst = 0;
    for (int i = 0; i <= 200000; i++) {
        float x = -87.0f + 175.0f * (float)i / 200000.0f;
        double want = exp((double)x), got = sprig_expf_poly(x);
        double ulp = (double)nextafterf((float)want, INFINITY) - (float)want;
        double e = fabs(got - want) / ulp;
        if (e > worst) worst = e;
    }
    CHECKF(worst < 2.0, "exp error %g ulp", worst);
    CHECK(sprig_expf_poly(0.0f) == 1.0f);
    CHECK(sprig_expf_poly(-0.0f) == 1.0f);
    CHECK(sprig_expf_poly(-87.01f) == 0.0f);
    CHECK(sprig_expf_poly(-1e9f) == 0.0f);
    CHECK(isfinite(sprig_expf_poly(1e9f)));
    CHECK(sprig_expf_poly(-86.99f) > 0.0f);
}

static void test_swiglu(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 3);
    const int N = 1000;
    float *g = malloc(sizeof(float) * N), *u = malloc(sizeof(float) * N), *o = malloc(sizeof(float) * N),
          *c = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) { g[i] = (float)(sprig_rng_normal(&r) * 4); u[i] = (float)sprig_rng_normal(&r); }
    g[0] = 0; g[1] = -0.0f; g[2] = 100; g[3] = -100; g[4] = 1e30f; g[5] = -1e30f; g[6] = 87.5f; g[7] = -87.5f;
    sprig_swiglu(o, g, u, N);
    double worst = 0;
    int nonfinite = 0;
    for (int i = 0; i < N; i++) {
        double want = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        double e = fabs(o[i] - want) / (fabs(want) + 1e-30);
        if (fabs(want) > 1e-30 && e > worst) worst = e;
        nonfinite += !isfinite(o[i]);
        c[i] = g[i] / (1.0f + sprig_expf_poly(-g[i])) * u[i];     /* the plain-C spec */
    }
    CHECKF(worst < 1e-6, "swiglu relative error %g", worst);
    CHECK_EQ_INT(nonfinite, 0);
    CHECK(memcmp(o, c, sizeof(float) * N) == 0);
    if (cpu_avx512()) {   /* every tail length */
        for (int n = 1; n <= 40; n++) {
            float a[40], b[40];
            sprig_swiglu_avx512(a, g + 50, u + 50, n);
            for (int i = 0; i < n; i++) b[i] = g[50 + i] / (1.0f + sprig_expf_poly(-g[50 + i])) * u[50 + i];
            CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "avx512 swiglu differs at length %d", n);
        }
    }
    if (cpu_avx2()) {   /* every tail length, and every input above (the specials in lanes 0-7) */
        for (int n = 1; n <= 40; n++) {
            float a[41], b[40];
            a[n] = 12345.0f;   /* the tail must not write past n */
            sprig_swiglu_avx2(a, g + 50, u + 50, n);
            for (int i = 0; i < n; i++) b[i] = g[50 + i] / (1.0f + sprig_expf_poly(-g[50 + i])) * u[50 + i];
            CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "avx2 swiglu differs at length %d", n);
            CHECK(a[n] == 12345.0f);
        }
        float *a = malloc(sizeof(float) * N);
        sprig_swiglu_avx2(a, g, u, N);
        CHECK(memcmp(a, c, sizeof(float) * N) == 0);
        CHECK(sprig_ops_use_kernel("avx2"));
        CHECK(strcmp(sprig_ops_kernel(), "avx2") == 0);
        for (int i = 0; i < N; i++) a[i] = -1.0f;
        sprig_swiglu(a, g, u, N);   /* the dispatcher reaches it */
        CHECK(memcmp(a, c, sizeof(float) * N) == 0);
        sprig_ops_use_kernel(NULL);
        free(a);
    }
    /* out aliasing gate */
    memcpy(c, g, sizeof(float) * N);
    sprig_swiglu(c, c, u, N);
    CHECK(memcmp(o, c, sizeof(float) * N) == 0);
    free(g); free(u); free(o); free(c);
}

/* Run fn under the plain-C ops and under the AVX-512 ones; the outputs
 * (bytes of `out`) must agree bit for bit. */
static bool same_under_kernels(void (*fn)(void *ctx), void *ctx, void *out, size_t bytes, void *save)
{
    if (!sprig_ops_use_kernel("avx512")) return true;
    fn(ctx);
    memcpy(save, out, bytes);
    CHECK(sprig_ops_use_kernel("c"));
    fn(ctx);
    sprig_ops_use_kernel(NULL);
    return memcmp(save, out, bytes) == 0;
}

struct simd_case {
    float *x, *y, *w, *cs, *x0, *y0;
    int32_t pos[9];
    int n, dim, n_head, hd, n_rot, mode;
};

static void run_rmsnorm(void *p)
{
    struct simd_case *c = p;
    memcpy(c->x, c->x0, sizeof(float) * c->n * c->dim);
    sprig_rmsnorm(c->y, c->x, c->w, c->n, c->dim, 1e-5f);
    sprig_rmsnorm(c->x, c->x, c->w, c->n, c->dim, 1e-6f);   /* in place */
    memcpy(c->y + c->n * c->dim, c->x, sizeof(float) * c->n * c->dim);
}

static void run_add(void *p)
{
    struct simd_case *c = p;
    memcpy(c->y, c->y0, sizeof(float) * c->n * c->dim);
    sprig_add_inplace(c->y, c->x0, (int64_t)c->n * c->dim);
}

static void run_rope(void *p)
{
    struct simd_case *c = p;
    memcpy(c->y, c->x0, sizeof(float) * c->n * c->n_head * c->hd);
    sprig_rope_table(c->cs, c->pos, c->n, c->hd, c->n_rot, 10000.0f);
    sprig_rope_apply(c->y, c->cs, c->n, c->n_head, c->hd, c->n_rot, c->mode);
}

/* rmsnorm, add and RoPE apply: the AVX-512 kernels equal the plain C, every
 * row count, dim / tail length, head layout. */
static void test_simd_matches_c(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 9);
    const size_t cap = 9 * 4096 * 2;
    struct simd_case c = { 0 };
    c.x = malloc(sizeof(float) * cap); c.y = malloc(sizeof(float) * cap); c.w = malloc(sizeof(float) * cap);
    c.cs = malloc(sizeof(float) * cap); c.x0 = malloc(sizeof(float) * cap); c.y0 = malloc(sizeof(float) * cap);
    float *save = malloc(sizeof(float) * cap);
    for (size_t i = 0; i < cap; i++) {
        c.x0[i] = (float)(sprig_rng_normal(&r) * (1 + i % 7));
        c.y0[i] = (float)sprig_rng_normal(&r);
        c.w[i] = (float)(0.5 + sprig_rng_uniform(&r));
    }
    c.x0[5] = 1e30f; c.x0[6] = -0.0f; c.x0[7] = 1e-40f;
    for (int i = 0; i < 9; i++) c.pos[i] = (int32_t)(sprig_rng_uniform(&r) * 3000);
    int bad = 0, runs = 0;
    const int dims[] = { 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 172, 288, 4096 };
    for (int n = 1; n <= 9; n++)
        for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
            c.n = n;
            c.dim = dims[t];
            const size_t nd = (size_t)n * c.dim;
            runs += 2;
            if (!same_under_kernels(run_rmsnorm, &c, c.y, sizeof(float) * 2 * nd, save)) {
                if (bad++ < 5) fprintf(stderr, "  rmsnorm differs: n %d dim %d\n", n, c.dim);
            }
            if (!same_under_kernels(run_add, &c, c.y, sizeof(float) * nd, save)) {
                if (bad++ < 5) fprintf(stderr, "  add differs: n %d dim %d\n", n, c.dim);
            }
        }
    const int hds[] = { 2, 4, 6, 8, 12, 16, 32, 64, 80, 128 };
    for (int n = 1; n <= 9; n += 4)
        for (size_t t = 0; t < sizeof hds / sizeof hds[0]; t++)
            for (int n_head = 1; n_head <= 9; n_head += 4)
                for (int rot = 0; rot < 3; rot++)
                    for (int mode = 0; mode < 2; mode++) {
                        c.n = n; c.hd = hds[t]; c.n_head = n_head; c.mode = mode;
                        c.n_rot = rot == 0 ? c.hd : rot == 1 ? c.hd / 2 : c.hd - 2;
                        runs++;
                        if (!same_under_kernels(run_rope, &c, c.y, sizeof(float) * n * n_head * c.hd, save) && bad++ < 5)
                            fprintf(stderr, "  rope differs: n %d heads %d hd %d n_rot %d mode %d\n", n, n_head, c.hd, c.n_rot, mode);
                    }
    CHECKF(bad == 0, "%d of %d runs differ between the kernels", bad, runs);
    free(c.x); free(c.y); free(c.w); free(c.cs); free(c.x0); free(c.y0); free(save);
}

static void test_add_argmax(void)
{
    float y[5] = { 1, 2, 3, 4, 5 }, x[5] = { 0.5f, -2, 0, 1e-8f, -5 };
    sprig_add_inplace(y, x, 5);
    CHECK(y[0] == 1.5f && y[1] == 0.0f && y[2] == 3.0f && y[3] == 4.0f && y[4] == 0.0f);
    float t[6] = { 1, 3, -2, 3, 0, 3 };
    CHECK_EQ_INT(sprig_argmax(t, 6), 1);                       /* first of the ties */
    float u[4] = { -INFINITY, -INFINITY, -5, -5 };
    CHECK_EQ_INT(sprig_argmax(u, 4), 2);
    float v[4] = { NAN, 2, NAN, 7 };
    CHECK_EQ_INT(sprig_argmax(v, 4), 3);                       /* NaN never wins */
    float w[3] = { NAN, NAN, NAN };
    CHECK_EQ_INT(sprig_argmax(w, 3), 0);
    float s[3] = { -INFINITY, -INFINITY, -INFINITY };
    CHECK_EQ_INT(sprig_argmax(s, 3), 0);
    CHECK_EQ_INT(sprig_argmax(t, 0), -1);
    float big[512];
    for (int i = 0; i < 512; i++) big[i] = (float)(i % 97);
    CHECK_EQ_INT(sprig_argmax(big, 512), 96);
}

int main(void)
{
    fprintf(stderr, "ops kernel: %s\n", sprig_ops_kernel());
    RUN(test_rmsnorm);
    RUN(test_rope);
    RUN(test_rope_table);
    RUN(test_exp);
    RUN(test_swiglu);
    RUN(test_add_argmax);
    RUN(test_simd_matches_c);
    return test_summary("test-ops");
}
