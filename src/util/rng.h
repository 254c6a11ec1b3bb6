/* rng.h - seeded pseudo-random numbers that give the same bits everywhere.
 *
 * xoshiro256** seeded by splitmix64. The continuous distributions use only
 * IEEE-exact operations (+ - * / sqrt floor frexp ldexp) and their own log
 * and exp, never libm's transcendental functions, whose last bits differ
 * between C libraries: `atr gen` output is byte-identical for a seed on any
 * machine. */
#ifndef ATR_UTIL_RNG_H
#define ATR_UTIL_RNG_H

#include <stddef.h>
#include <stdint.h>

struct atr_rng {
    uint64_t s[4];
};

/* Seeds from (seed, stream): different streams of one seed are independent
 * sequences, so e.g. trace i's content never depends on trace i-1's draws. */
void atr_rng_seed(struct atr_rng *r, uint64_t seed, uint64_t stream);
uint64_t atr_rng_next(struct atr_rng *r);
/* Uniform integer in [0, n); n > 0. Unbiased (rejection). */
uint64_t atr_rng_below(struct atr_rng *r, uint64_t n);
/* Uniform integer in [lo, hi] inclusive. */
int64_t atr_rng_range(struct atr_rng *r, int64_t lo, int64_t hi);
/* Uniform double in [0, 1), 53 random bits. */
double atr_rng_uniform(struct atr_rng *r);
/* true with probability p. */
int atr_rng_chance(struct atr_rng *r, double p);
double atr_rng_normal(struct atr_rng *r);                     /* mean 0, sd 1 */
/* exp(N(ln median, sigma^2)): median is the distribution's median. */
double atr_rng_lognormal(struct atr_rng *r, double median, double sigma);
double atr_rng_exponential(struct atr_rng *r, double mean);
double atr_rng_gamma(struct atr_rng *r, double shape, double scale);
/* Index i with probability weights[i] / sum(weights); the sum must be > 0. */
size_t atr_rng_choice(struct atr_rng *r, const uint32_t *weights, size_t n);
/* Lognormal rounded to an integer and clamped to [lo, hi]. */
int64_t atr_rng_lognormal_int(struct atr_rng *r, double median, double sigma,
                              int64_t lo, int64_t hi);

/* The portable log and exp the distributions use (exposed for tests). */
double atr_det_log(double x);
double atr_det_exp(double x);

#endif
