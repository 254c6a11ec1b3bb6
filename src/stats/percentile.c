/* percentile.c - numpy-compatible ("linear") exact percentiles by sorting
 * or selecting in place. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "stats/percentile.h"
#include "util/alloc.h"

/* Sorting in place, ascending: an introsort (quicksort with a median of
 * three, insertion sort below 16 values, heapsort past a depth limit).
 * glibc's qsort merge-sorts through a copy of the whole array (8 bytes more
 * per sample at the peak, the largest allocation of a simulation's summary)
 * and calls a comparator per comparison. */
static void insertion_sort(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static void sift_down(double *v, size_t root, size_t n)
{
    double x = v[root];
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && v[child + 1] > v[child])
            child++;
        if (!(v[child] > x))
            break;
        v[root] = v[child];
    }
    v[root] = x;
}

static void heap_sort(double *v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(v, i, n);
    for (size_t end = n; end-- > 1;) {
        double t = v[0];
        v[0] = v[end];
        v[end] = t;
        sift_down(v, 0, end);
    }
}

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Median of three into v[mid], then a Hoare partition around it; returns
 * `left`: [0, left) <= pivot <= [left, n). Needs n > 16. */
static size_t partition(double *v, size_t n)
{
    size_t mid = n / 2;
    if (v[mid] < v[0])
        swap(&v[mid], &v[0]);
    if (v[n - 1] < v[0])
        swap(&v[n - 1], &v[0]);
    if (v[n - 1] < v[mid])
        swap(&v[n - 1], &v[mid]);
    double pivot = v[mid];
    size_t i = 0, j = n - 1;
    for (;;) {
        while (v[i] < pivot)
            i++;
        while (pivot < v[j])
            j--;
        if (i >= j)
            break;
        swap(&v[i++], &v[j--]);
    }
    return j + 1;
}

static void intro_sort(double *v, size_t n, unsigned depth)
{
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(v, n);
            return;
        }
        size_t left = partition(v, n);
        if (left < n - left) {              /* recurse into the smaller side */
            intro_sort(v, left, depth);
            v += left;
            n -= left;
        } else {
            intro_sort(v + left, n - left, depth);
            n = left;
        }
    }
    insertion_sort(v, n);
}

static unsigned depth_limit(size_t n)
{
    unsigned depth = 0;
    for (size_t k = n; k > 1; k >>= 1)
        depth += 2;
    return depth;
}

static void sort_doubles(double *v, size_t n)
{
    intro_sort(v, n, depth_limit(n));
}

void atr_sort_doubles(double *v, size_t n)
{
    sort_doubles(v, n);
}

/* Moves the smallest of v[0..n) to v[0]. */
static void min_to_front(double *v, size_t n)
{
    size_t m = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] < v[m])
            m = i;
    swap(&v[0], &v[m]);
}

/* Quickselect: afterwards v[k] is the k-th smallest of v[0..n) and the
 * values before it are <= v[k] <= those after (an introselect: a bad run of
 * pivots sorts the stretch left instead). */
static void select_kth(double *v, size_t n, size_t k)
{
    unsigned depth = depth_limit(n);
    while (n > 16) {
        if (depth-- == 0)
            break;
        size_t left = partition(v, n);
        if (k < left) {
            n = left;
        } else {
            v += left;
            n -= left;
            k -= left;
        }
    }
    sort_doubles(v, n);
}

/* numpy's _lerp: the two-sided form keeps the result exact at g = 1 and
 * monotone in g, which a + (b-a)*g alone does not guarantee. */
static double lerp(double a, double b, double g)
{
    double d = b - a;
    return g < 0.5 ? a + d * g : b - d * (1.0 - g);
}

/* Where percentile p of n values falls: the rank i below it and the
 * weight g of rank i + 1; false when it is the largest value (no
 * interpolation). */
static bool rank_of(size_t n, double p, size_t *i, double *g)
{
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    double h = (double)(n - 1) * (p / 100.0);
    double lo = floor(h);
    *i = (size_t)lo;
    *g = h - lo;
    return *i < n - 1;
}

double atr_percentile_sorted(const double *v, size_t n, double p)
{
    if (n == 0 || isnan(p))
        return NAN;
    size_t i;
    double g;
    if (!rank_of(n, p, &i, &g))
        return v[n - 1];
    return lerp(v[i], v[i + 1], g);
}

double atr_percentile(double *v, size_t n, double p)
{
    sort_doubles(v, n);
    return atr_percentile_sorted(v, n, p);
}

void atr_samples_reserve(struct atr_samples *s, size_t n)
{
    if (n > s->cap) {
        s->v = xreallocarray(s->v, n, sizeof *s->v);
        s->cap = n;
    }
}

void atr_samples_add(struct atr_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        s->v = xreallocarray(s->v, cap, sizeof *s->v);
        s->cap = cap;
    }
    s->v[s->n++] = x;
    s->sorted = false;
}

/* Fixes position k: selects within the stretch between the nearest fixed
 * positions around it, which partitioning left holding rank k. */
double atr_samples_kth(struct atr_samples *s, size_t k)
{
    if (!s->sorted) {
        s->n_fixed = 0;
        s->sorted = true;
    }
    if (s->n_fixed == 1 && s->fixed[0] == SIZE_MAX)
        return s->v[k];                     /* all ascending */
    size_t at = 0;
    while (at < s->n_fixed && s->fixed[at] < k)
        at++;
    if (at < s->n_fixed && s->fixed[at] == k)
        return s->v[k];
    if (s->n_fixed == ATR_SAMPLES_FIXED) {  /* many queries: one sort serves all */
        sort_doubles(s->v, s->n);
        s->fixed[0] = SIZE_MAX;
        s->n_fixed = 1;
        return s->v[k];
    }
    size_t lo = at ? s->fixed[at - 1] + 1 : 0;
    size_t hi = at < s->n_fixed ? s->fixed[at] : s->n;
    if (k == lo)                /* the next rank after a fixed one (the other half of an */
        min_to_front(s->v + lo, hi - lo);   /* interpolation): one scan */
    else
        select_kth(s->v + lo, hi - lo, k - lo);
    for (size_t j = s->n_fixed; j > at; j--)
        s->fixed[j] = s->fixed[j - 1];
    s->fixed[at] = k;
    s->n_fixed++;
    return s->v[k];
}

double atr_percentile_by_rank(size_t n, double p, double (*kth)(void *ctx, size_t k),
                              void *ctx)
{
    if (n == 0 || isnan(p))
        return NAN;
    size_t i;
    double g;
    if (!rank_of(n, p, &i, &g))
        return kth(ctx, n - 1);
    double a = kth(ctx, i);
    return lerp(a, kth(ctx, i + 1), g);
}

static double samples_kth(void *s, size_t k)
{
    return atr_samples_kth(s, k);
}

double atr_samples_percentile(struct atr_samples *s, double p)
{
    return atr_percentile_by_rank(s->n, p, samples_kth, s);
}

void atr_samples_clear(struct atr_samples *s)
{
    s->n = 0;
    s->sorted = false;
}

void atr_samples_release(struct atr_samples *s)
{
    free(s->v);
    *s = (struct atr_samples)ATR_SAMPLES_INIT;
}
