/* percentile.c - numpy-compatible ("linear") exact percentiles by sorting
 * in place. */
#include <math.h>
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

static void intro_sort(double *v, size_t n, unsigned depth)
{
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(v, n);
            return;
        }
        size_t mid = n / 2;                 /* median of three into v[0] */
        if (v[mid] < v[0])
            swap(&v[mid], &v[0]);
        if (v[n - 1] < v[0])
            swap(&v[n - 1], &v[0]);
        if (v[n - 1] < v[mid])
            swap(&v[n - 1], &v[mid]);
        double pivot = v[mid];
        size_t i = 0, j = n - 1;            /* Hoare partition */
        for (;;) {
            while (v[i] < pivot)
                i++;
            while (pivot < v[j])
                j--;
            if (i >= j)
                break;
            swap(&v[i++], &v[j--]);
        }
        size_t left = j + 1;                /* [0, left) <= pivot <= [left, n) */
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

static void sort_doubles(double *v, size_t n)
{
    unsigned depth = 0;
    for (size_t k = n; k > 1; k >>= 1)
        depth += 2;
    intro_sort(v, n, depth);
}

/* numpy's _lerp: the two-sided form keeps the result exact at g = 1 and
 * monotone in g, which a + (b-a)*g alone does not guarantee. */
static double lerp(double a, double b, double g)
{
    double d = b - a;
    return g < 0.5 ? a + d * g : b - d * (1.0 - g);
}

double atr_percentile_sorted(const double *v, size_t n, double p)
{
    if (n == 0 || isnan(p))
        return NAN;
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    double h = (double)(n - 1) * (p / 100.0);
    double lo = floor(h);
    size_t i = (size_t)lo;
    if (i >= n - 1)
        return v[n - 1];
    return lerp(v[i], v[i + 1], h - lo);
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

double atr_samples_percentile(struct atr_samples *s, double p)
{
    if (!s->sorted) {
        sort_doubles(s->v, s->n);
        s->sorted = true;
    }
    return atr_percentile_sorted(s->v, s->n, p);
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
