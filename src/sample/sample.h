/*
 * sample — logits -> token: greedy, temperature, top-k, top-p, min-p, seed.
 *
 * The sampler is also the target distribution for speculative rejection
 * sampling, so it can return the final probability vector (after every
 * filter) instead of a draw. Same seed, same params, same logits => same
 * token. No allocation after creation (buffers sized for n_vocab).
 *
 * Order (llama.cpp's default chain): top-k -> top-p -> min-p on the
 * untempered softmax, then temperature over the survivors, then the draw.
 * Ties (equal logits) are broken towards the lower token id everywhere.
 */
#ifndef SPRIG_SAMPLE_H
#define SPRIG_SAMPLE_H

#include "base/err.h"
#include "base/rng.h"

struct sprig_sampler_params {
    float temp;        /* finite, >= 0; 0: greedy (negative is rejected) */
    int   top_k;       /* >= 0; 0: off */
    float top_p;       /* 1: off; in (0, 1] */
    float min_p;       /* 0: off; in [0, 1) */
    uint64_t seed;
};

typedef struct sprig_sampler sprig_sampler;

/* temp 0.8, top_k 40, top_p 0.95, min_p 0.05, seed 0 (llama.cpp's defaults). */
struct sprig_sampler_params sprig_sampler_default_params(void);
/* Validates params (naming the field) and allocates for n_vocab. */
sprig_sampler *sprig_sampler_create(const struct sprig_sampler_params *p, int n_vocab, sprig_error *err);
void sprig_sampler_free(sprig_sampler *s);
bool sprig_sampler_is_greedy(const sprig_sampler *s);
int  sprig_sampler_n_vocab(const sprig_sampler *s);
/* Restart the random stream as if created with this seed. */
void sprig_sampler_reseed(sprig_sampler *s, uint64_t seed);

/* Draw a token from logits[n_vocab] (greedy = argmax, first on ties, no
 * random number used); otherwise exactly a draw from sprig_sampler_probs. */
int sprig_sample(sprig_sampler *s, const float *logits);

/* Final distribution after temperature and filters: probs[n_vocab], sums to 1
 * (filtered tokens exactly 0). Greedy gives a one-hot at the argmax. */
void sprig_sampler_probs(sprig_sampler *s, const float *logits, float *probs);
/* Draw from a probability vector (not necessarily normalised) with the
 * sampler's rng: one uniform u in [0, total), first index whose running sum
 * exceeds u. NaN/negative weights count as 0; all zero gives the argmax
 * (0 when all are zero); -1 when n <= 0. */
int sprig_sample_from_probs(sprig_sampler *s, const float *probs, int n);
/* Uniform [0,1) from the sampler's rng (for rejection tests). */
double sprig_sampler_uniform(sprig_sampler *s);

/* The n most likely tokens of logits[n_vocab] with their log-probabilities
 * under the plain softmax (no temperature, no filter): out[n], most likely
 * first, ties towards the lower id; 1 <= n <= n_vocab. log p_i = x_i - lse
 * with lse = max + log(sum exp(x_j - max)), the sum in double, so the value
 * depends only on the row. NaN logits are skipped. No allocation. */
void sprig_top_logprobs(const float *logits, int n_vocab, int n, sprig_logprob *out);

#endif
