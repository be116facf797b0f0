/*
 * sample — logits -> token: greedy, temperature, top-k, top-p, min-p, seed.
 *
 * The sampler is also the target distribution for speculative rejection
 * sampling, so it can return the final probability vector (after every
 * filter) instead of a draw. Same seed, same params, same logits => same
 * token. No allocation after creation (buffers sized for n_vocab).
 */
#ifndef SPRIG_SAMPLE_H
#define SPRIG_SAMPLE_H

#include "base/err.h"
#include "base/rng.h"

struct sprig_sampler_params {
    float temp;        /* <= 0: greedy */
    int   top_k;       /* <= 0: off */
    float top_p;       /* 1: off; in (0, 1] */
    float min_p;       /* 0: off; in [0, 1) */
    uint64_t seed;
};

typedef struct sprig_sampler sprig_sampler;

struct sprig_sampler_params sprig_sampler_default_params(void);
/* Validates params (naming the field) and allocates for n_vocab. */
sprig_sampler *sprig_sampler_create(const struct sprig_sampler_params *p, int n_vocab, sprig_error *err);
void sprig_sampler_free(sprig_sampler *s);
bool sprig_sampler_is_greedy(const sprig_sampler *s);

/* Draw a token from logits[n_vocab] (greedy = argmax, first on ties). */
int sprig_sample(sprig_sampler *s, const float *logits);

/* Final distribution after temperature and filters: probs[n_vocab], sums to 1
 * (filtered tokens exactly 0). Greedy gives a one-hot at the argmax. */
void sprig_sampler_probs(sprig_sampler *s, const float *logits, float *probs);
/* Draw from a probability vector (not necessarily normalised) with the sampler's rng. */
int sprig_sample_from_probs(sprig_sampler *s, const float *probs, int n);
/* Uniform [0,1) from the sampler's rng (for rejection tests). */
double sprig_sampler_uniform(sprig_sampler *s);

#endif
