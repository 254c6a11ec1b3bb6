/* percentile.h - exact percentiles of a set of doubles, as numpy computes them.
 *
 * Definition (numpy.percentile's default, method="linear"): sort the n
 * values ascending into v[0..n); for p in [0, 100] the virtual index is
 * h = (n - 1) * p / 100, and the result interpolates linearly between
 * v[floor(h)] and v[floor(h) + 1] with weight g = h - floor(h). The
 * interpolation uses numpy's formula (a + (b-a)*g for g < 0.5, else
 * b - (b-a)*(1-g)), so results match numpy bit for bit on finite input.
 * Consequences: p0 is the minimum, p100 the maximum, p50 of an even count
 * is the mean of the two middle values; one value is every percentile of
 * itself; no values give NAN. p outside [0, 100] is clamped; values must
 * not be NaN (their order would be undefined).
 *
 * Memory: struct atr_samples owns its array (malloc; aborts on
 * out-of-memory like the arena); atr_samples_release frees it. Callers that
 * need several percentiles of the same set pay for one sort only. */
#ifndef ATR_STATS_PERCENTILE_H
#define ATR_STATS_PERCENTILE_H

#include <stdbool.h>
#include <stddef.h>

/* Percentile p (0..100) of v[0..n), which must already be sorted ascending. */
double atr_percentile_sorted(const double *v, size_t n, double p);

/* Same on unsorted values: sorts v in place first. */
double atr_percentile(double *v, size_t n, double p);

/* A growing set of samples: 8 bytes per value. */
struct atr_samples {
    double *v;
    size_t n, cap;
    bool sorted;     /* v is ascending: set by a percentile query, cleared by add */
};

#define ATR_SAMPLES_INIT {NULL, 0, 0, false}

/* Room for n samples in all, so adding that many never copies the array. */
void atr_samples_reserve(struct atr_samples *s, size_t n);
void atr_samples_add(struct atr_samples *s, double x);
/* Percentile p of the samples added so far (sorts them once; NAN when empty). */
double atr_samples_percentile(struct atr_samples *s, double p);
void atr_samples_clear(struct atr_samples *s);     /* empty, keep the array */
void atr_samples_release(struct atr_samples *s);   /* free the array */

#endif
