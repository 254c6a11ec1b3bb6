/* rng.c - xoshiro256** with portable continuous distributions (see rng.h). */
#include "util/rng.h"

#include <math.h>

#define LN2 0.693147180559945309417232121458
#define SQRT_HALF 0.707106781186547524400844362105

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void atr_rng_seed(struct atr_rng *r, uint64_t seed, uint64_t stream)
{
    /* Mix the stream through splitmix first so that nearby (seed, stream)
     * pairs do not give overlapping splitmix sequences. */
    uint64_t x = seed;
    uint64_t base = splitmix64(&x);
    x = base ^ (stream * UINT64_C(0xD1B54A32D192ED03));
    x = splitmix64(&x);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

uint64_t atr_rng_next(struct atr_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t atr_rng_below(struct atr_rng *r, uint64_t n)
{
    /* Reject the top partial range so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = atr_rng_next(r);
    while (x >= limit);
    return x % n;
}

int64_t atr_rng_range(struct atr_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)atr_rng_below(r, (uint64_t)(hi - lo) + 1);
}

double atr_rng_uniform(struct atr_rng *r)
{
    return (double)(atr_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

int atr_rng_chance(struct atr_rng *r, double p)
{
    return atr_rng_uniform(r) < p;
}

/* ln x = 2 atanh((m-1)/(m+1)) + e ln 2 with m in [sqrt(1/2), sqrt(2)):
 * |s| < 0.172, so 20 series terms are far below double precision. */
double atr_det_log(double x)
{
    if (!(x > 0))
        return -INFINITY;
    int e;
    double m = frexp(x, &e);
    if (m < SQRT_HALF) {
        m *= 2;
        e--;
    }
    double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
    for (int k = 1; k < 40; k += 2) {
        sum += term / k;
        term *= s2;
    }
    return 2 * sum + e * LN2;
}

/* e^x = 2^k e^r with |r| <= ln2/2; Taylor terms to 1e-20 relative. */
double atr_det_exp(double x)
{
    if (x > 700)
        x = 700;
    if (x < -700)
        return 0;
    double k = floor(x / LN2 + 0.5);
    double rr = x - k * LN2, term = 1, sum = 1;
    for (int n = 1; n < 24; n++) {
        term *= rr / n;
        sum += term;
    }
    return ldexp(sum, (int)k);
}

/* Marsaglia's polar method: needs only log and sqrt (the pair's second
 * value is dropped to keep the generator state a plain xoshiro state). */
double atr_rng_normal(struct atr_rng *r)
{
    double u, v, s;
    do {
        u = 2 * atr_rng_uniform(r) - 1;
        v = 2 * atr_rng_uniform(r) - 1;
        s = u * u + v * v;
    } while (s >= 1 || s == 0);
    return u * sqrt(-2 * atr_det_log(s) / s);
}

double atr_rng_lognormal(struct atr_rng *r, double median, double sigma)
{
    return median * atr_det_exp(sigma * atr_rng_normal(r));
}

double atr_rng_exponential(struct atr_rng *r, double mean)
{
    return -mean * atr_det_log(1 - atr_rng_uniform(r));   /* 1-U is in (0, 1] */
}

/* Marsaglia-Tsang; shape < 1 boosts from shape + 1 with U^(1/shape). */
double atr_rng_gamma(struct atr_rng *r, double shape, double scale)
{
    if (shape < 1) {
        double g = atr_rng_gamma(r, shape + 1, 1);
        double u = 1 - atr_rng_uniform(r);
        return scale * g * atr_det_exp(atr_det_log(u) / shape);
    }
    double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = atr_rng_normal(r), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = 1 - atr_rng_uniform(r);
        if (atr_det_log(u) < 0.5 * x * x + d - d * v + d * atr_det_log(v))
            return scale * d * v;
    }
}

size_t atr_rng_choice(struct atr_rng *r, const uint32_t *weights, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += weights[i];
    uint64_t x = atr_rng_below(r, total);
    for (size_t i = 0; i < n; i++) {
        if (x < weights[i])
            return i;
        x -= weights[i];
    }
    return n - 1;
}

int64_t atr_rng_lognormal_int(struct atr_rng *r, double median, double sigma,
                              int64_t lo, int64_t hi)
{
    double x = floor(atr_rng_lognormal(r, median, sigma) + 0.5);
    if (x < (double)lo)
        return lo;
    if (x > (double)hi)
        return hi;
    return (int64_t)x;
}
