/* percentile.c - numpy-compatible ("linear") exact percentiles by sorting. */
#include <math.h>
#include <stdlib.h>

#include "stats/percentile.h"
#include "util/alloc.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
    return atr_percentile_sorted(v, n, p);
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
        if (s->n > 1)
            qsort(s->v, s->n, sizeof *s->v, cmp_double);
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
