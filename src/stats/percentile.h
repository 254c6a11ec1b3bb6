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
 * out-of-memory like the arena); atr_samples_release frees it. A set's
 * percentiles come by selection, not a full sort (issue 16: sorting every
 * inter-token gap was 30 % of a simulation): each query partitions only the
 * stretch between positions earlier queries fixed, so a few percentiles of
 * n values cost O(n) each at first and less after; past
 * ATR_SAMPLES_FIXED fixed positions the set is sorted once. */
#ifndef ATR_STATS_PERCENTILE_H
#define ATR_STATS_PERCENTILE_H

#include <stdbool.h>
#include <stddef.h>

/* Sorts v[0..n) ascending in place (an introsort on doubles; no NaN). */
void atr_sort_doubles(double *v, size_t n);

/* Percentile p (0..100) of v[0..n), which must already be sorted ascending. */
double atr_percentile_sorted(const double *v, size_t n, double p);

/* Same on unsorted values: sorts v in place first. */
double atr_percentile(double *v, size_t n, double p);

#define ATR_SAMPLES_FIXED 16

/* Percentile p of n values known only by rank: kth(ctx, k) gives the k-th
 * smallest (0-based; asked for at most two ranks). For sets kept in another
 * form, e.g. distinct values with counts. */
double atr_percentile_by_rank(size_t n, double p, double (*kth)(void *ctx, size_t k),
                              void *ctx);

/* A growing set of samples: 8 bytes per value. */
struct atr_samples {
    double *v;
    size_t n, cap;
    /* The order facts below hold: set by a query, cleared by add. A caller
     * that writes v[] directly must clear it. */
    bool sorted;
    /* Positions k (ascending) where v[k] is the k-th smallest and every value
     * before k is <= v[k] <= every value after; SIZE_MAX in fixed[0] alone:
     * all of v is ascending. Valid only while sorted is set. */
    size_t fixed[ATR_SAMPLES_FIXED];
    size_t n_fixed;
};

#define ATR_SAMPLES_INIT {NULL, 0, 0, false, {0}, 0}

/* Room for n samples in all, so adding that many never copies the array. */
void atr_samples_reserve(struct atr_samples *s, size_t n);
void atr_samples_add(struct atr_samples *s, double x);
/* Percentile p of the samples added so far (NAN when empty); reorders v. */
double atr_samples_percentile(struct atr_samples *s, double p);
/* The k-th smallest sample (0-based, k < n); reorders v. */
double atr_samples_kth(struct atr_samples *s, size_t k);
void atr_samples_clear(struct atr_samples *s);     /* empty, keep the array */
void atr_samples_release(struct atr_samples *s);   /* free the array */

#endif
