/*
 * tests/test-sample.c — the sampler.
 *
 * Checks parameter validation (each bad field named), greedy = argmax (first
 * on ties, no random numbers used), seed reproducibility, every filter against
 * a plain full-sort reference written here (top-k -> top-p -> min-p ->
 * temperature), that probabilities sum to 1 with filtered tokens exactly 0,
 * that 200k draws follow sprig_sampler_probs (chi-square), hostile logits
 * (NaN, +-inf) and sprig_sample_from_probs edge cases; sprig_top_logprobs
 * against a full sort and a long-double log-sum-exp (order, ties to the lower
 * id, NaN skipped); prints the time per draw for a 32000-token vocabulary.
 */
#include "test.h"
#include "sample/sample.h"
#include "base/timer.h"

static struct sprig_sampler_params P(float temp, int top_k, float top_p, float min_p, uint64_t seed)
{
    return (struct sprig_sampler_params){ .temp = temp, .top_k = top_k, .top_p = top_p, .min_p = min_p, .seed = seed };
}

static sprig_sampler *mk(struct sprig_sampler_params p, int n)
{
    sprig_error err = { 0 };
    sprig_sampler *s = sprig_sampler_create(&p, n, &err);
    if (!s) fprintf(stderr, "  create: %s\n", err.msg);
    return s;
}

/* ---------------------------------------------------------------- reference */

struct ref_c { float l; int id; };

static int ref_cmp(const void *pa, const void *pb)
{
    const struct ref_c *a = pa, *b = pb;
    if (a->l != b->l) return a->l > b->l ? -1 : 1;
    return a->id - b->id;
}

/* Full sort, then each filter in order; *ambiguous set when the top-p cut sat
 * within rounding of the threshold (then the exact set may differ). */
static void ref_probs(const float *logits, int V, struct sprig_sampler_params p, double *out, bool *ambiguous)
{
    *ambiguous = false;
    for (int i = 0; i < V; i++) out[i] = 0;
    if (p.temp <= 0) {
        int b = -1;
        for (int i = 0; i < V; i++)
            if (!isnan(logits[i]) && (b < 0 || logits[i] > logits[b])) b = i;
        out[b < 0 ? 0 : b] = 1;
        return;
    }
    struct ref_c *c = malloc((size_t)V * sizeof *c);
    for (int i = 0; i < V; i++) c[i] = (struct ref_c){ isnan(logits[i]) ? -INFINITY : logits[i], i };
    qsort(c, (size_t)V, sizeof *c, ref_cmp);
    float mx = c[0].l;
    if (mx == -INFINITY) { for (int i = 0; i < V; i++) c[i].l = 0; qsort(c, (size_t)V, sizeof *c, ref_cmp); mx = 0; }
    else if (mx == INFINITY) { for (int i = 0; i < V; i++) c[i].l = c[i].l == INFINITY ? 0 : -INFINITY; mx = 0; }
    int n = V;
    if (p.top_k > 0 && p.top_k < n) n = p.top_k;
    if (p.top_p < 1) {
        double z = 0, cum = 0;
        for (int i = 0; i < n; i++) z += exp((double)c[i].l - mx);
        for (int i = 0; i < n; i++) {
            cum += exp((double)c[i].l - mx);
            if (fabs(cum - p.top_p * z) <= 1e-5 * z) *ambiguous = true;
            if (cum >= p.top_p * z) { n = i + 1; break; }
        }
    }
    if (p.min_p > 0) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (exp((double)c[i].l - mx) >= p.min_p) c[m++] = c[i];
        n = m;
    }
    double z = 0;
    for (int i = 0; i < n; i++) z += exp(((double)c[i].l - mx) / p.temp);
    for (int i = 0; i < n; i++) out[c[i].id] = exp(((double)c[i].l - mx) / p.temp) / z;
    free(c);
}

/* ---------------------------------------------------------------- tests */

static void test_validation(void)
{
    struct sprig_sampler_params d = sprig_sampler_default_params();
    sprig_error err = { 0 };
    sprig_sampler *s = sprig_sampler_create(&d, 512, &err);
    CHECK(s != NULL);
    CHECK(!sprig_sampler_is_greedy(s));
    CHECK_EQ_INT(sprig_sampler_n_vocab(s), 512);
    sprig_sampler_free(s);
    sprig_sampler_free(NULL);

    static const struct { struct sprig_sampler_params p; int n; const char *field; } bad[] = {
        { { .temp = NAN, .top_p = 1 }, 10, "temp" },
        { { .temp = INFINITY, .top_p = 1 }, 10, "temp" },
        { { .temp = -0.5f, .top_p = 1 }, 10, "temp" },
        { { .temp = 1, .top_k = -1, .top_p = 1 }, 10, "top_k" },
        { { .temp = 1, .top_p = 0 }, 10, "top_p" },
        { { .temp = 1, .top_p = -0.1f }, 10, "top_p" },
        { { .temp = 1, .top_p = 1.01f }, 10, "top_p" },
        { { .temp = 1, .top_p = NAN }, 10, "top_p" },
        { { .temp = 1, .top_p = 1, .min_p = 1 }, 10, "min_p" },
        { { .temp = 1, .top_p = 1, .min_p = -0.01f }, 10, "min_p" },
        { { .temp = 1, .top_p = 1, .min_p = NAN }, 10, "min_p" },
        { { .temp = 1, .top_p = 1 }, 0, "n_vocab" },
        { { .temp = 1, .top_p = 1 }, -3, "n_vocab" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        s = sprig_sampler_create(&bad[i].p, bad[i].n, &err);
        CHECKF(s == NULL && err.code == SPRIG_E_INVALID_ARG && strstr(err.msg, bad[i].field),
               "case %zu: %s", i, err.msg);
        sprig_sampler_free(s);
    }
    CHECK(sprig_sampler_create(NULL, 10, &err) == NULL);
    /* boundaries that are fine */
    struct sprig_sampler_params ok = P(0, 0, 1, 0, 0);
    s = sprig_sampler_create(&ok, 1, &err);
    CHECK(s && sprig_sampler_is_greedy(s));
    sprig_sampler_free(s);
    ok = P(1e-30f, 100000, 1e-9f, 0.999f, 0);
    s = sprig_sampler_create(&ok, 3, &err);
    CHECK(s != NULL);
    sprig_sampler_free(s);
}

static void test_greedy(void)
{
    sprig_sampler *s = mk(P(0, 5, 0.5f, 0.1f, 7), 6);
    float l[6] = { 1, 3, -2, 3, NAN, 0 };
    CHECK_EQ_INT(sprig_sample(s, l), 1);          /* first of the tied maxima */
    float pr[6];
    sprig_sampler_probs(s, l, pr);
    for (int i = 0; i < 6; i++) CHECK(pr[i] == (i == 1 ? 1.0f : 0.0f));
    /* greedy consumes no random numbers */
    sprig_sampler *ref = mk(P(0, 0, 1, 0, 7), 6);
    for (int i = 0; i < 10; i++) sprig_sample(s, l);
    CHECK(sprig_sampler_uniform(s) == sprig_sampler_uniform(ref));
    /* NaN first, -inf elsewhere */
    float l2[6] = { NAN, -INFINITY, -INFINITY, -1, -INFINITY, -INFINITY };
    CHECK_EQ_INT(sprig_sample(s, l2), 3);
    float l3[6] = { NAN, NAN, NAN, NAN, NAN, NAN };
    CHECK_EQ_INT(sprig_sample(s, l3), 0);
    /* greedy == argmax on random logits */
    sprig_rng r;
    sprig_rng_seed(&r, 3);
    sprig_sampler *g = mk(P(0, 0, 1, 0, 0), 1000);
    static float big[1000];
    for (int it = 0; it < 50; it++) {
        int want = 0;
        for (int i = 0; i < 1000; i++) {
            big[i] = (float)sprig_rng_normal(&r);
            if (big[i] > big[want]) want = i;
        }
        CHECK_EQ_INT(sprig_sample(g, big), want);
    }
    sprig_sampler_free(g);
    sprig_sampler_free(ref);
    sprig_sampler_free(s);
}

static void test_seeds(void)
{
    const int V = 300;
    float *l = malloc(V * sizeof *l);
    sprig_rng r;
    sprig_rng_seed(&r, 8);
    for (int i = 0; i < V; i++) l[i] = (float)sprig_rng_normal(&r) * 2;
    struct sprig_sampler_params p = P(1.0f, 0, 1, 0, 42);
    sprig_sampler *a = mk(p, V), *b = mk(p, V);
    p.seed = 43;
    sprig_sampler *c = mk(p, V);
    int same_ab = 0, same_ac = 0, seq[200];
    for (int i = 0; i < 200; i++) {
        int x = sprig_sample(a, l), y = sprig_sample(b, l), z = sprig_sample(c, l);
        seq[i] = x;
        same_ab += x == y;
        same_ac += x == z;
    }
    CHECK_EQ_INT(same_ab, 200);
    CHECK(same_ac < 150);
    /* reseed restarts the stream */
    sprig_sampler_reseed(b, 42);
    int again = 0;
    for (int i = 0; i < 200; i++) again += sprig_sample(b, l) == seq[i];
    CHECK_EQ_INT(again, 200);
    sprig_sampler_free(a); sprig_sampler_free(b); sprig_sampler_free(c);
    free(l);
}

static bool check_against_ref(sprig_sampler *s, const float *l, int V, struct sprig_sampler_params p, const char *what)
{
    float *got = malloc((size_t)V * sizeof *got);
    double *want = malloc((size_t)V * sizeof *want);
    sprig_sampler_probs(s, l, got);
    bool amb;
    ref_probs(l, V, p, want, &amb);
    double sum = 0, maxdiff = 0;
    int set_diff = 0;
    for (int i = 0; i < V; i++) {
        sum += got[i];
        if ((got[i] > 0) != (want[i] > 0)) set_diff++;
        double d = fabs(got[i] - want[i]);
        if (d > maxdiff) maxdiff = d;
    }
    bool ok = fabs(sum - 1) < 1e-5 && (amb || (set_diff == 0 && maxdiff < 2e-6));
    if (!ok)
        fprintf(stderr, "  %s: T=%g k=%d p=%g minp=%g: sum %.9g, %d set differences, max diff %g\n", what,
                (double)p.temp, p.top_k, (double)p.top_p, (double)p.min_p, sum, set_diff, maxdiff);
    free(got); free(want);
    return ok;
}

static void test_filters_small(void)
{
    /* 8 tokens, probabilities at T=1 from logits ln(w) */
    float w[8] = { 0.30f, 0.05f, 0.20f, 0.20f, 0.10f, 0.08f, 0.04f, 0.03f };
    float l[8];
    for (int i = 0; i < 8; i++) l[i] = logf(w[i]);
    float pr[8];

    /* top-k 3: tokens 0, 2, 3 (2 and 3 tie: both fit) */
    sprig_sampler *s = mk(P(1, 3, 1, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] > 0 && pr[2] > 0 && pr[3] > 0);
    CHECK(pr[1] == 0 && pr[4] == 0 && pr[5] == 0 && pr[6] == 0 && pr[7] == 0);
    CHECK_NEAR(pr[0], 0.30 / 0.70, 1e-6);
    sprig_sampler_free(s);
    /* top-k 2 with a tie at the cut: the lower id (2) is kept */
    s = mk(P(1, 2, 1, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] > 0 && pr[2] > 0 && pr[3] == 0);
    sprig_sampler_free(s);
    /* top-p 0.5: 0.30 + 0.20 reaches 0.5 -> {0, 2} */
    s = mk(P(1, 0, 0.5f, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] > 0 && pr[2] > 0);
    for (int i = 0; i < 8; i++) if (i != 0 && i != 2) CHECK(pr[i] == 0);
    sprig_sampler_free(s);
    /* top-p 0.51: needs the third -> {0, 2, 3} */
    s = mk(P(1, 0, 0.51f, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] > 0 && pr[2] > 0 && pr[3] > 0 && pr[4] == 0);
    sprig_sampler_free(s);
    /* top-p tiny: exactly one token */
    s = mk(P(1, 0, 1e-6f, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] == 1.0f);
    CHECK_EQ_INT(sprig_sample(s, l), 0);
    sprig_sampler_free(s);
    /* min-p 0.3: keep p >= 0.09 -> {0, 2, 3, 4} */
    s = mk(P(1, 0, 1, 0.3f, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] > 0 && pr[2] > 0 && pr[3] > 0 && pr[4] > 0);
    CHECK(pr[1] == 0 && pr[5] == 0 && pr[6] == 0 && pr[7] == 0);
    CHECK_NEAR(pr[4], 0.10 / 0.80, 1e-6);
    sprig_sampler_free(s);
    /* top-p is measured before min-p removes anything (order): top-p 0.75
     * keeps {0,2,3,4} (0.8), min-p 0.5 then keeps {0} plus p >= 0.15 -> {0,2,3} */
    s = mk(P(1, 0, 0.75f, 0.5f, 0), 8);
    sprig_sampler_probs(s, l, pr);
    CHECK(pr[0] > 0 && pr[2] > 0 && pr[3] > 0 && pr[4] == 0);
    sprig_sampler_free(s);
    /* temperature after the filters: T=0.5 squares the kept weights */
    s = mk(P(0.5f, 3, 1, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    double z = 0.09 + 0.04 + 0.04;
    CHECK_NEAR(pr[0], 0.09 / z, 1e-6);
    CHECK_NEAR(pr[2], 0.04 / z, 1e-6);
    sprig_sampler_free(s);
    /* no filters, T=2: softmax(l / 2) */
    s = mk(P(2, 0, 1, 0, 0), 8);
    sprig_sampler_probs(s, l, pr);
    z = 0;
    for (int i = 0; i < 8; i++) z += sqrt(w[i]);
    for (int i = 0; i < 8; i++) CHECK_NEAR(pr[i], sqrt(w[i]) / z, 1e-6);
    sprig_sampler_free(s);
}

static void test_filters_random(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 77);
    static const int sizes[] = { 1, 2, 7, 64, 65, 300, 4096, 32000 };
    static const float temps[] = { 0.1f, 0.7f, 1.0f, 1.5f, 4.0f };
    static const int ks[] = { 0, 1, 2, 40, 100, 1000, 50000 };
    static const float ps[] = { 1.0f, 0.95f, 0.9f, 0.5f, 0.999f, 0.1f };
    static const float mps[] = { 0.0f, 0.05f, 0.1f, 0.5f, 1e-4f };
    int iters = test_quick() ? 60 : 400, bad = 0;
    for (int it = 0; it < iters; it++) {
        int V = sizes[sprig_rng_u64(&r) % 8];
        struct sprig_sampler_params p = P(temps[sprig_rng_u64(&r) % 5], ks[sprig_rng_u64(&r) % 7],
                                          ps[sprig_rng_u64(&r) % 6], mps[sprig_rng_u64(&r) % 5], (uint64_t)it);
        float *l = malloc((size_t)V * sizeof *l);
        double scale = (sprig_rng_u64(&r) % 4) * 1.5 + 0.05;   /* flat to peaked */
        for (int i = 0; i < V; i++) l[i] = (float)(sprig_rng_normal(&r) * scale);
        if (it % 5 == 0)   /* many exact ties */
            for (int i = 0; i < V; i++) l[i] = (float)(int)(l[i] * 2) / 2;
        sprig_sampler *s = mk(p, V);
        if (!check_against_ref(s, l, V, p, "random")) bad++;
        sprig_sampler_free(s);
        free(l);
    }
    CHECKF(bad == 0, "%d of %d random filter cases differ from the reference", bad, iters);
}

static void test_hostile_logits(void)
{
    float pr[5];
    sprig_sampler *s = mk(P(1, 0, 1, 0, 1), 5);
    float a[5] = { -INFINITY, NAN, -INFINITY, -INFINITY, NAN };
    sprig_sampler_probs(s, a, pr);
    for (int i = 0; i < 5; i++) CHECK_NEAR(pr[i], 0.2, 1e-7);
    float b[5] = { 1, INFINITY, 3, INFINITY, NAN };
    sprig_sampler_probs(s, b, pr);
    CHECK(pr[0] == 0 && pr[2] == 0 && pr[4] == 0);
    CHECK_NEAR(pr[1], 0.5, 1e-7);
    CHECK_NEAR(pr[3], 0.5, 1e-7);
    for (int i = 0; i < 50; i++) { int t = sprig_sample(s, b); CHECK(t == 1 || t == 3); }
    float c[5] = { 1, NAN, 1, 2, -1e30f };
    sprig_sampler_probs(s, c, pr);
    CHECK(pr[1] == 0);
    double sum = 0;
    for (int i = 0; i < 5; i++) sum += pr[i];
    CHECK_NEAR(sum, 1, 1e-6);
    /* huge logits do not overflow */
    float d[5] = { 1e30f, -1e30f, 1e30f, 0, 3e38f };
    sprig_sampler_probs(s, d, pr);
    CHECK(pr[4] == 1.0f);
    sprig_sampler_free(s);
}

static void test_from_probs(void)
{
    sprig_sampler *s = mk(P(1, 0, 1, 0, 5), 4);
    CHECK_EQ_INT(sprig_sample_from_probs(s, NULL, 4), -1);
    float p0[4] = { 0, 0, 0, 0 };
    CHECK_EQ_INT(sprig_sample_from_probs(s, p0, 0), -1);
    CHECK_EQ_INT(sprig_sample_from_probs(s, p0, 4), 0);
    float p1[4] = { -1, NAN, 0, 0 };
    CHECK_EQ_INT(sprig_sample_from_probs(s, p1, 4), 2);   /* all invalid/zero: argmax (NaN skipped) */
    float p2[4] = { 0, 0, 5, 0 };
    for (int i = 0; i < 20; i++) CHECK_EQ_INT(sprig_sample_from_probs(s, p2, 4), 2);
    float p3[4] = { 1, INFINITY, 1, INFINITY };
    CHECK_EQ_INT(sprig_sample_from_probs(s, p3, 4), 1);
    /* unnormalised weights: frequencies follow the ratios */
    float p4[4] = { 2, NAN, 6, -3 };
    int cnt[4] = { 0 };
    for (int i = 0; i < 40000; i++) cnt[sprig_sample_from_probs(s, p4, 4)]++;
    CHECK(cnt[1] == 0 && cnt[3] == 0);
    CHECK_NEAR(cnt[0] / 40000.0, 0.25, 0.01);
    double u = sprig_sampler_uniform(s);
    CHECK(u >= 0 && u < 1);
    sprig_sampler_free(s);
}

static void test_empirical(void)
{
    static const struct { int V; struct sprig_sampler_params p; } cfg[] = {
        { 40, { .temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 1 } },
        { 40, { .temp = 0.7f, .top_k = 20, .top_p = 0.9f, .min_p = 0.05f, .seed = 2 } },
        { 40, { .temp = 1.8f, .top_k = 0, .top_p = 0.8f, .min_p = 0.0f, .seed = 3 } },
        /* few survivors of many: sprig_sample walks the survivors instead of the vector */
        { 2000, { .temp = 1.2f, .top_k = 25, .top_p = 1.0f, .min_p = 0.0f, .seed = 4 } },
        { 2000, { .temp = 0.9f, .top_k = 0, .top_p = 0.9f, .min_p = 0.02f, .seed = 5 } },
    };
    sprig_rng r;
    sprig_rng_seed(&r, 21);
    for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
        const int V = cfg[k].V;
        const int N = (test_quick() ? 40000 : 200000) / (V > 100 ? 4 : 1);   /* big V: slower draws, fewer */
        float *l = malloc((size_t)V * sizeof *l), *pr = malloc((size_t)V * sizeof *pr);
        int *cnt = calloc((size_t)V, sizeof *cnt);
        for (int i = 0; i < V; i++) l[i] = (float)sprig_rng_normal(&r) * (V > 100 ? 3.0f : 1.3f);
        sprig_sampler *s = mk(cfg[k].p, V);
        sprig_sampler_probs(s, l, pr);
        for (int i = 0; i < N; i++) cnt[sprig_sample(s, l)]++;
        double chi2 = 0, maxdev = 0;
        int df = -1, zero_hits = 0;
        for (int i = 0; i < V; i++) {
            if (pr[i] == 0) { zero_hits += cnt[i]; continue; }
            double e = (double)N * pr[i];
            chi2 += (cnt[i] - e) * (cnt[i] - e) / e;
            df++;
            double dev = fabs(cnt[i] / (double)N - pr[i]) / sqrt(pr[i] * (1 - pr[i]) / N + 1e-300);
            if (dev > maxdev) maxdev = dev;
        }
        /* chi-square with df degrees of freedom: mean df, sd sqrt(2 df) */
        double bound = df + 6 * sqrt(2.0 * (df > 0 ? df : 1)) + 6;
        CHECKF(chi2 < bound, "config %zu: chi2 %.1f (df %d, bound %.1f)", k, chi2, df, bound);
        CHECK_EQ_INT(zero_hits, 0);
        CHECKF(maxdev < 5.5, "config %zu: max deviation %.2f sd", k, maxdev);
        CHECK(df >= 1);
        fprintf(stderr, "  config %zu: V=%d, %d draws, %d tokens in play, chi2 %.1f (df %d), max dev %.2f sd\n",
                k, V, N, df + 1, chi2, df, maxdev);
        sprig_sampler_free(s);
        free(l); free(pr); free(cnt);
    }
}

/* sprig_sample is token for token sprig_sample_from_probs(sprig_sampler_probs)
 * with the same seed, on both of its paths. */
static void test_sample_equals_probs_draw(void)
{
    static const struct { int V; struct sprig_sampler_params p; } cfg[] = {
        { 32000, { .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 9 } },
        { 3000, { .temp = 1.0f, .top_k = 0, .top_p = 0.5f, .min_p = 0.0f, .seed = 10 } },
        { 50, { .temp = 1.3f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 11 } },
        { 500, { .temp = 0.5f, .top_k = 3, .top_p = 1.0f, .min_p = 0.0f, .seed = 12 } },
    };
    sprig_rng r;
    sprig_rng_seed(&r, 31);
    for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
        const int V = cfg[k].V;
        float *l = malloc((size_t)V * sizeof *l), *pr = malloc((size_t)V * sizeof *pr);
        sprig_sampler *a = mk(cfg[k].p, V), *b = mk(cfg[k].p, V);
        int same = 0, rounds = test_quick() ? 30 : 300;
        for (int it = 0; it < rounds; it++) {
            for (int i = 0; i < V; i++) l[i] = (float)sprig_rng_normal(&r) * 2.5f;
            int x = sprig_sample(a, l);
            sprig_sampler_probs(b, l, pr);
            int y = sprig_sample_from_probs(b, pr, V);
            same += x == y;
        }
        CHECKF(same == rounds, "config %zu: %d of %d draws agree", k, same, rounds);
        sprig_sampler_free(a); sprig_sampler_free(b);
        free(l); free(pr);
    }
}

/* Full-sort reference: the n best (logit desc, id asc) with log p in long double. */
static void top_ref(const float *l, int V, int n, int32_t *ids, long double *lp)
{
    long double mx = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++) if (!isnan(l[i]) && l[i] > mx) mx = l[i];
    for (int i = 0; i < V; i++) if (!isnan(l[i])) sum += expl((long double)l[i] - mx);
    bool *used = calloc((size_t)V, 1);
    for (int j = 0; j < n; j++) {
        int b = -1;
        for (int i = 0; i < V; i++)
            if (!used[i] && !isnan(l[i]) && (b < 0 || l[i] > l[b])) b = i;
        used[b] = true;
        ids[j] = b;
        lp[j] = (long double)l[b] - mx - logl(sum);
    }
    free(used);
}

static void test_top_logprobs(void)
{
    sprig_rng r;
    sprig_rng_seed(&r, 77);
    const int V = 3000;
    float *l = malloc((size_t)V * sizeof *l);
    sprig_logprob out[SPRIG_TOP_LOGPROBS_MAX];
    int32_t ids[SPRIG_TOP_LOGPROBS_MAX];
    long double lp[SPRIG_TOP_LOGPROBS_MAX];
    for (int trial = 0; trial < 40; trial++) {
        for (int i = 0; i < V; i++) {
            l[i] = (float)(sprig_rng_uniform(&r) * 20.0 - 10.0);
            if (trial % 4 == 1) l[i] = (float)(int)(l[i] * 0.5f);   /* many exact ties */
            if (trial % 4 == 2 && i % 97 == 0) l[i] = NAN;
        }
        int n = 1 + trial % SPRIG_TOP_LOGPROBS_MAX;
        sprig_top_logprobs(l, V, n, out);
        top_ref(l, V, n, ids, lp);
        for (int j = 0; j < n; j++) {
            CHECKF(out[j].id == ids[j], "trial %d rank %d: id %d, want %d", trial, j, out[j].id, ids[j]);
            CHECK_NEAR(out[j].logprob, (double)lp[j], 2e-6);
        }
    }
    /* the top-1 of a one-hot-ish row, and n = V */
    float t[4] = { 0.0f, 30.0f, 0.0f, -1.0f };
    sprig_top_logprobs(t, 4, 4, out);
    CHECK_EQ_INT(out[0].id, 1);
    CHECK_EQ_INT(out[1].id, 0);
    CHECK_EQ_INT(out[2].id, 2);
    CHECK_EQ_INT(out[3].id, 3);
    CHECK(out[0].logprob <= 0.0f && out[0].logprob > -1e-12f);
    free(l);
}

static void test_speed(void)
{
    const int V = 32000;
    float *l = malloc(V * sizeof *l);
    sprig_rng r;
    sprig_rng_seed(&r, 4);
    for (int i = 0; i < V; i++) l[i] = (float)sprig_rng_normal(&r) * 3;
    static const struct { const char *name; struct sprig_sampler_params p; } cfg[] = {
        { "default (T0.8 k40 p0.95 minp0.05)", { .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f } },
        { "top-p 0.9 only", { .temp = 1.0f, .top_k = 0, .top_p = 0.9f, .min_p = 0.0f } },
        { "T1 no filters", { .temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f } },
        { "greedy", { .temp = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f } },
    };
    int reps = test_quick() ? 5 : 200;
    for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
        sprig_sampler *s = mk(cfg[k].p, V);
        CHECK(check_against_ref(s, l, V, cfg[k].p, cfg[k].name));
        double t0 = sprig_time_ms();
        int acc = 0;
        for (int i = 0; i < reps; i++) acc += sprig_sample(s, l);
        double dt = (sprig_time_ms() - t0) / reps;
        CHECK(acc >= 0);
        fprintf(stderr, "  V=%d %s: %.1f us per draw\n", V, cfg[k].name, dt * 1e3);
        sprig_sampler_free(s);
    }
    free(l);
}

int main(void)
{
    RUN(test_validation);
    RUN(test_greedy);
    RUN(test_seeds);
    RUN(test_filters_small);
    RUN(test_filters_random);
    RUN(test_hostile_logits);
    RUN(test_from_probs);
    RUN(test_empirical);
    RUN(test_sample_equals_probs_draw);
    RUN(test_top_logprobs);
    RUN(test_speed);
    return test_summary("test-sample");
}
