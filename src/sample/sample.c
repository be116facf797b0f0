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
 * is equally likely. top-k uses a quickselect over (logit, id) pairs and top-p
 * sorts only as long a prefix as it needs (64, 256, 1024, ... tokens), so a
 * 32000-token vocabulary does not pay for a full sort. Buffers are allocated
 * once for n_vocab at creation.
 */
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLER_MAX_VOCAB (1 << 24)

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

/* Reorder a[0..n) so that a[0..k) are the k best (in any order), 0 < k < n. */
static void select_top(struct cand *a, size_t n, size_t k)
{
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

void sprig_sampler_probs(sprig_sampler *s, const float *logits, float *probs)
{
    const int V = s->n_vocab;
    memset(probs, 0, (size_t)V * sizeof *probs);
    if (s->p.temp <= 0.0f) { probs[argmax(logits, V)] = 1.0f; return; }

    struct cand *c = s->c;
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        float l = isnan(logits[i]) ? -INFINITY : logits[i];
        c[i] = (struct cand){ l, i };
        if (l > mx) mx = l;
    }
    if (mx == -INFINITY) {
        for (int i = 0; i < V; i++) c[i].l = 0.0f;
        mx = 0.0f;
    } else if (mx == INFINITY) {
        for (int i = 0; i < V; i++) c[i].l = c[i].l == INFINITY ? 0.0f : -INFINITY;
        mx = 0.0f;
    }

    size_t n = (size_t)V;
    if (s->p.top_k > 0 && (size_t)s->p.top_k < n) {
        select_top(c, n, (size_t)s->p.top_k);
        n = (size_t)s->p.top_k;
    }

    if (s->p.top_p < 1.0f && n > 1) {
        double z = 0.0;
        for (size_t j = 0; j < n; j++) z += expf(c[j].l - mx);
        const double target = (double)s->p.top_p * z;
        double cum = 0.0;
        size_t sorted = 0, chunk = 64;
        for (;;) {
            size_t upto = n - sorted > chunk ? sorted + chunk : n;
            if (upto < n) select_top(c + sorted, n - sorted, upto - sorted);
            qsort(c + sorted, upto - sorted, sizeof *c, cand_cmp);
            size_t j = sorted;
            for (; j < upto; j++) {
                cum += expf(c[j].l - mx);
                if (cum >= target) break;
            }
            if (j < upto) { n = j + 1; break; }
            sorted = upto;
            if (sorted == n) break;   /* rounding kept the mass just short: keep all */
            chunk *= 4;
        }
    }

    if (s->p.min_p > 0.0f) {
        const double thr = (double)mx + log((double)s->p.min_p);
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if ((double)c[j].l >= thr) c[m++] = c[j];
        n = m;   /* the max always survives: l_max >= l_max + ln(min_p) */
    }

    const double inv_t = 1.0 / (double)s->p.temp;
    double z = 0.0;
    for (size_t j = 0; j < n; j++) {
        float w = (float)exp(((double)c[j].l - (double)mx) * inv_t);
        probs[c[j].id] = w;
        z += w;
    }
    SPRIG_ASSERT(z >= 1.0);   /* the max contributes exp(0) = 1 */
    const double inv_z = 1.0 / z;
    for (size_t j = 0; j < n; j++) probs[c[j].id] = (float)(probs[c[j].id] * inv_z);
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

int sprig_sample(sprig_sampler *s, const float *logits)
{
    if (s->p.temp <= 0.0f) return argmax(logits, s->n_vocab);
    sprig_sampler_probs(s, logits, s->probs);
    return sprig_sample_from_probs(s, s->probs, s->n_vocab);
}

double sprig_sampler_uniform(sprig_sampler *s)
{
    return sprig_rng_uniform(&s->rng);
}

void sprig_sampler_reseed(sprig_sampler *s, uint64_t seed)
{
    sprig_rng_seed(&s->rng, seed);
}
