/*
 * sample — logits -> token (see sample.h).
 *
 * Filter order (llama.cpp's default chain): top-k -> top-p -> min-p ->
 * temperature -> draw. top-k, top-p and min-p look at the untempered
 * distribution softmax(logits) restricted to the tokens still in play;
 * temperature then reshapes only the survivors: p_i ∝ exp((l_i - l_max) / T).
 *   top-k: keep the k highest logits (ties: lower id first).
 *   top-p: sort survivors by logit (ties: lower id first), keep the shortest
 *          prefix whose probability mass reaches top_p (at least one token).
 *   min-p: keep tokens with p_i >= min_p * p_max, i.e. l_i >= l_max + ln(min_p).
 * sprig_sample draws from exactly the vector sprig_sampler_probs returns (it
 * computes that vector and calls sprig_sample_from_probs), which speculative
 * rejection sampling relies on. Greedy (temp 0) is the argmax, first on ties,
 * and uses no random numbers.
 *
 * Hostile logits: NaN counts as -inf; if the largest logit is +inf the +inf
 * tokens share the mass evenly; if every logit is -inf (or NaN) every token
 * is equally likely. top-k keeps a k-entry min-heap while scanning (small k)
 * or runs a quickselect over (logit, id) pairs (large k); top-p buckets the
 * probability mass by logit (1/32-nat buckets) to find the bucket where the
 * mass reaches top_p, then sorts only the tokens at or above that bucket. A
 * 32000-token vocabulary never pays for a full sort unless the distribution is
 * flat. Buffers are allocated once for n_vocab at creation.
 */
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLER_MAX_VOCAB (1 << 24)

/* top-p mass histogram: bucket b holds logits in (l_max - (b+1)/SCALE, l_max - b/SCALE]. */
#define TOPP_BUCKETS 1024
#define TOPP_SCALE   32.0f

struct cand {
    float l;        /* logit */
    int32_t id;
};

struct sprig_sampler {
    struct sprig_sampler_params p;
    int n_vocab;
    sprig_rng rng;
    struct cand *c;     /* [n_vocab] candidates */
    float *probs;       /* [n_vocab] scratch for sprig_sample */
    double mass[TOPP_BUCKETS];
};

struct sprig_sampler_params sprig_sampler_default_params(void)
{
    return (struct sprig_sampler_params){ .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 0 };
}

sprig_sampler *sprig_sampler_create(const struct sprig_sampler_params *p, int n_vocab, sprig_error *err)
{
    if (!p) { sprig_err(err, SPRIG_E_INVALID_ARG, "sampler: params is NULL"); return NULL; }
    if (!isfinite(p->temp) || p->temp < 0.0f) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "sampler: temp %g must be finite and >= 0 (0 = greedy)", (double)p->temp);
        return NULL;
    }
    if (p->top_k < 0) { sprig_err(err, SPRIG_E_INVALID_ARG, "sampler: top_k %d must be >= 0 (0 = off)", p->top_k); return NULL; }
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "sampler: top_p %g must be in (0, 1] (1 = off)", (double)p->top_p);
        return NULL;
    }
    if (!(p->min_p >= 0.0f && p->min_p < 1.0f)) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "sampler: min_p %g must be in [0, 1) (0 = off)", (double)p->min_p);
        return NULL;
    }
    if (n_vocab <= 0 || n_vocab > SAMPLER_MAX_VOCAB) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "sampler: n_vocab %d out of range (1..%d)", n_vocab, SAMPLER_MAX_VOCAB);
        return NULL;
    }
    sprig_sampler *s = calloc(1, sizeof *s);
    if (s) {
        s->c = malloc((size_t)n_vocab * sizeof *s->c);
        s->probs = malloc((size_t)n_vocab * sizeof *s->probs);
    }
    if (!s || !s->c || !s->probs) {
        sprig_sampler_free(s);
        sprig_err(err, SPRIG_E_NOMEM, "sampler: out of memory for %d tokens", n_vocab);
        return NULL;
    }
    s->p = *p;
    s->n_vocab = n_vocab;
    sprig_rng_seed(&s->rng, p->seed);
    return s;
}

void sprig_sampler_free(sprig_sampler *s)
{
    if (!s) return;
    free(s->c);
    free(s->probs);
    free(s);
}

bool sprig_sampler_is_greedy(const sprig_sampler *s) { return s && s->p.temp <= 0.0f; }

int sprig_sampler_n_vocab(const sprig_sampler *s) { return s ? s->n_vocab : 0; }

/* ------------------------------------------------------------- selection */

/* Total order: higher logit first, then lower id. */
static inline bool better(const struct cand *a, const struct cand *b)
{
    return a->l > b->l || (a->l == b->l && a->id < b->id);
}

static int cand_cmp(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

static inline void swap_c(struct cand *a, struct cand *b) { struct cand t = *a; *a = *b; *b = t; }

/* Sift a[i] down the min-heap a[0..k) whose root is the worst entry. */
static void heap_down(struct cand *a, size_t k, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, w = i;
        if (l < k && better(&a[w], &a[l])) w = l;
        if (l + 1 < k && better(&a[w], &a[l + 1])) w = l + 1;
        if (w == i) return;
        swap_c(&a[i], &a[w]);
        i = w;
    }
}

/* Reorder a[0..n) so that a[0..k) are the k best (in any order), 0 < k < n. */
static void select_top(struct cand *a, size_t n, size_t k)
{
    if (k <= 256 && k * 8 <= n) {
        /* a[0..k) as a heap of the best so far, worst at the root; most of
         * the scan is one comparison per token */
        for (size_t i = k / 2; i-- > 0;) heap_down(a, k, i);
        for (size_t j = k; j < n; j++)
            if (better(&a[j], &a[0])) { swap_c(&a[j], &a[0]); heap_down(a, k, 0); }
        return;
    }
    size_t lo = 0, hi = n;
    int budget = 64;
    for (size_t m = n; m; m >>= 1) budget += 2;
    while (hi - lo > 16) {
        if (--budget < 0) { qsort(a + lo, hi - lo, sizeof *a, cand_cmp); return; }
        size_t mid = lo + (hi - lo) / 2, last = hi - 1;
        /* median of three into a[last] as the pivot */
        if (better(&a[mid], &a[lo])) swap_c(&a[mid], &a[lo]);
        if (better(&a[last], &a[lo])) swap_c(&a[last], &a[lo]);
        if (better(&a[mid], &a[last])) swap_c(&a[mid], &a[last]);
        struct cand piv = a[last];
        size_t st = lo;
        for (size_t j = lo; j < last; j++)
            if (better(&a[j], &piv)) swap_c(&a[st++], &a[j]);
        swap_c(&a[st], &a[last]);
        if (st == k || st + 1 == k) return;
        if (st > k) hi = st;
        else lo = st + 1;
    }
    for (size_t i = lo + 1; i < hi; i++) {   /* insertion sort the small rest */
        struct cand x = a[i];
        size_t j = i;
        while (j > lo && better(&x, &a[j - 1])) { a[j] = a[j - 1]; j--; }
        a[j] = x;
    }
}

static int argmax(const float *v, int n)
{
    int best = 0;
    float bv = -INFINITY;
    bool found = false;
    for (int i = 0; i < n; i++) {
        float x = v[i];
        if (isnan(x)) continue;
        if (!found || x > bv) { bv = x; best = i; found = true; }
    }
    return best;
}

/* ------------------------------------------------------------- distribution */

static inline int topp_bucket(float l, float mx)
{
    float d = (mx - l) * TOPP_SCALE;   /* >= 0; +inf for l = -inf */
    return d < (float)(TOPP_BUCKETS - 1) ? (int)d : TOPP_BUCKETS - 1;
}

/* Sort c[0..n) by logit just far enough to find the shortest prefix whose
 * mass reaches top_p of the total; returns its length (>= 1). */
static size_t top_p_cut(sprig_sampler *s, struct cand *c, size_t n, float mx)
{
    double *mass = s->mass;
    memset(mass, 0, sizeof s->mass);
    double z = 0.0;
    for (size_t j = 0; j < n; j++) {
        float e = expf(c[j].l - mx);
        z += e;
        mass[topp_bucket(c[j].l, mx)] += e;
    }
    const double target = (double)s->p.top_p * z;
    /* the bucket where the running mass first reaches the target */
    double run = 0.0;
    int bb = TOPP_BUCKETS - 1;
    for (int b = 0; b < TOPP_BUCKETS; b++) {
        run += mass[b];
        if (run >= target) { bb = b; break; }
    }
    /* move every token of buckets 0..bb to the front and sort just those */
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (topp_bucket(c[j].l, mx) <= bb) swap_c(&c[m++], &c[j]);
    qsort(c, m, sizeof *c, cand_cmp);
    double cum = 0.0;
    for (size_t j = 0; j < m; j++) {
        cum += expf(c[j].l - mx);
        if (cum >= target) return j + 1;
    }
    /* rounding left the sorted prefix just short: sort the rest too */
    qsort(c + m, n - m, sizeof *c, cand_cmp);
    for (size_t j = m; j < n; j++) {
        cum += expf(c[j].l - mx);
        if (cum >= target) return j + 1;
    }
    return n;
}

/* Top-k straight from the logits: a k-entry heap of the best so far (worst
 * at the root), so most tokens cost one comparison and nothing is copied. */
static void top_k_scan(struct cand *c, const float *logits, int V, int k)
{
    for (int i = 0; i < k; i++) c[i] = (struct cand){ isnan(logits[i]) ? -INFINITY : logits[i], i };
    for (int i = k / 2; i-- > 0;) heap_down(c, (size_t)k, (size_t)i);
    for (int i = k; i < V; i++) {
        struct cand x = { isnan(logits[i]) ? -INFINITY : logits[i], i };
        if (better(&x, &c[0])) { c[0] = x; heap_down(c, (size_t)k, 0); }
    }
}

/* The survivors of every filter in c[0..n) with their final probabilities
 * in place of the logits (each exactly the float sprig_sampler_probs stores). */
static size_t distribution(sprig_sampler *s, const float *logits)
{
    const int V = s->n_vocab, k = s->p.top_k;
    struct cand *c = s->c;
    size_t n;
    if (k > 0 && k < V && k <= 256 && (size_t)k * 8 <= (size_t)V) {
        top_k_scan(c, logits, V, k);
        n = (size_t)k;
    } else {
        for (int i = 0; i < V; i++) c[i] = (struct cand){ isnan(logits[i]) ? -INFINITY : logits[i], i };
        n = (size_t)V;
        if (k > 0 && k < V) { select_top(c, n, (size_t)k); n = (size_t)k; }
    }
    /* top-k never drops the maximum, so this is the global max */
    float mx = -INFINITY;
    for (size_t j = 0; j < n; j++) if (c[j].l > mx) mx = c[j].l;
    if (mx == -INFINITY) {            /* nothing finite: all equally likely */
        for (size_t j = 0; j < n; j++) c[j].l = 0.0f;
        mx = 0.0f;
    } else if (mx == INFINITY) {      /* the +inf tokens share the mass */
        for (size_t j = 0; j < n; j++) c[j].l = c[j].l == INFINITY ? 0.0f : -INFINITY;
        mx = 0.0f;
    }

    if (s->p.top_p < 1.0f && n > 1) n = top_p_cut(s, c, n, mx);

    if (s->p.min_p > 0.0f) {
        const double thr = (double)mx + log((double)s->p.min_p);
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if ((double)c[j].l >= thr) c[m++] = c[j];
        n = m;   /* the max always survives: l_max >= l_max + ln(min_p) */
    }

    const float inv_t = 1.0f / s->p.temp;
    double z = 0.0;
    for (size_t j = 0; j < n; j++) {
        float d = c[j].l - mx;   /* <= 0 */
        float w = d == 0.0f ? 1.0f : expf(d * inv_t);
        c[j].l = w;
        z += w;
    }
    SPRIG_ASSERT(n > 0 && z >= 1.0);   /* the max contributes exp(0) = 1 */
    const double inv_z = 1.0 / z;
    for (size_t j = 0; j < n; j++) c[j].l = (float)(c[j].l * inv_z);
    return n;
}

void sprig_sampler_probs(sprig_sampler *s, const float *logits, float *probs)
{
    const int V = s->n_vocab;
    memset(probs, 0, (size_t)V * sizeof *probs);
    if (s->p.temp <= 0.0f) { probs[argmax(logits, V)] = 1.0f; return; }
    size_t n = distribution(s, logits);
    for (size_t j = 0; j < n; j++) probs[s->c[j].id] = s->c[j].l;
}

/* ------------------------------------------------------------- drawing */

int sprig_sample_from_probs(sprig_sampler *s, const float *probs, int n)
{
    if (!s || !probs || n <= 0) return -1;
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        float p = probs[i];
        if (p == INFINITY) return i;            /* degenerate: the first infinite weight */
        if (p > 0.0f) total += p;               /* NaN and negative weights count as 0 */
    }
    if (!(total > 0.0)) return argmax(probs, n);
    const double u = sprig_rng_uniform(&s->rng) * total;
    double acc = 0.0;
    int last = -1;
    for (int i = 0; i < n; i++) {
        float p = probs[i];
        if (!(p > 0.0f)) continue;
        acc += p;
        last = i;
        if (u < acc) return i;
    }
    return last;   /* u landed in the rounding gap at the very end */
}

static int id_cmp(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

int sprig_sample(sprig_sampler *s, const float *logits)
{
    const int V = s->n_vocab;
    if (s->p.temp <= 0.0f) return argmax(logits, V);
    size_t n = distribution(s, logits);
    struct cand *c = s->c;
    if (n * 16 > (size_t)V) {
        memset(s->probs, 0, (size_t)V * sizeof *s->probs);
        for (size_t j = 0; j < n; j++) s->probs[c[j].id] = c[j].l;
        return sprig_sample_from_probs(s, s->probs, V);
    }
    /* Few survivors: walk them in id order. The zero entries sprig_sample_from_probs
     * would skip add nothing, so the sums, the uniform and the token are the same. */
    qsort(c, n, sizeof *c, id_cmp);
    double total = 0.0;
    for (size_t j = 0; j < n; j++) if (c[j].l > 0.0f) total += c[j].l;
    if (!(total > 0.0)) return c[0].id;   /* unreachable: the max has weight > 0 */
    const double u = sprig_rng_uniform(&s->rng) * total;
    double acc = 0.0;
    int last = c[0].id;
    for (size_t j = 0; j < n; j++) {
        if (!(c[j].l > 0.0f)) continue;
        acc += c[j].l;
        last = c[j].id;
        if (u < acc) return last;
    }
    return last;
}

double sprig_sampler_uniform(sprig_sampler *s)
{
    return sprig_rng_uniform(&s->rng);
}

void sprig_top_logprobs(const float *logits, int n_vocab, int n, sprig_logprob *out)
{
    SPRIG_ASSERT(n >= 1 && n <= n_vocab);
    /* out[0..k) sorted best first: one comparison per token once it is full */
    int k = 0;
    float mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++) {
        float x = logits[i];
        if (isnan(x)) continue;
        if (x > mx) mx = x;
        if (k == n && !(x > out[n - 1].logprob)) continue;   /* equal: the lower id already holds the place */
        int j = k < n ? k++ : n - 1;
        while (j > 0 && x > out[j - 1].logprob) { out[j] = out[j - 1]; j--; }
        out[j] = (sprig_logprob){ .id = i, .logprob = x };
    }
    double sum = 0;
    for (int i = 0; i < n_vocab; i++)
        if (!isnan(logits[i])) sum += exp((double)logits[i] - (double)mx);
    double lse = (double)mx + log(sum);
    for (int j = 0; j < k; j++) out[j].logprob = (float)((double)out[j].logprob - lse);
    for (int j = k; j < n; j++) out[j] = (sprig_logprob){ .id = -1, .logprob = -INFINITY };   /* all NaN */
}

void sprig_sampler_reseed(sprig_sampler *s, uint64_t seed)
{
    sprig_rng_seed(&s->rng, seed);
}
