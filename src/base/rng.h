/*
 * base/rng — seeded, reproducible random numbers (xoshiro256**, seeded by
 * splitmix64). Same seed, same stream, on every machine: sampling and the
 * synthetic-model generator depend on it.
 */
#ifndef SPRIG_BASE_RNG_H
#define SPRIG_BASE_RNG_H

#include <stdint.h>

typedef struct sprig_rng { uint64_t s[4]; } sprig_rng;

void     sprig_rng_seed(sprig_rng *r, uint64_t seed);
uint64_t sprig_rng_u64(sprig_rng *r);
/* Uniform in [0, 1) with 53 bits. */
double   sprig_rng_uniform(sprig_rng *r);
/* Standard normal (Box-Muller, deterministic). */
double   sprig_rng_normal(sprig_rng *r);

#endif
