/* ci.c - confidence intervals and verdicts (ci.h; docs/statistics.md says
 * why each method was chosen): order statistics for one median, the
 * Hodges-Lehmann shift of log values with its exact Mann-Whitney interval
 * for a ratio of two variants, Welch's t on log values where a sample is too
 * small for any distribution-free 95 % interval, and a circular block
 * bootstrap over the requests of one run. */
#include "stats/ci.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats/percentile.h"
#include "util/alloc.h"
#include "util/rng.h"

#define ALPHA (1.0 - ATR_CI_LEVEL)
#define Z_975 1.959963984540054       /* the normal quantile of 1 - ALPHA / 2 */

/* Past this many pairs of repeats the exact Mann-Whitney count table
 * (m x mn doubles) is replaced by its normal approximation, excellent there. */
#define MW_EXACT_PAIRS 1000
/* Past this many pairs the pairwise differences themselves (8 bytes each)
 * are not formed: the ratio of medians is bootstrapped instead. */
#define HL_MAX_PAIRS (1u << 20)

static void ci_set(struct atr_ci *out, double point, double lo, double hi, size_t n,
                   const char *method)
{
    /* A method's interval can in rare cases miss its own point estimate (the
     * t interval is centred on the geometric mean, not the median): widen it
     * to hold the point, which only makes it more cautious. */
    if (!isnan(lo) && !isnan(point)) {
        lo = fmin(lo, point);
        hi = fmax(hi, point);
    }
    out->point = point;
    out->lo = lo;
    out->hi = hi;
    out->n = n;
    out->method = method;
}

static void ci_none(struct atr_ci *out, double point, size_t n)
{
    ci_set(out, point, NAN, NAN, n, "none");
}

static double *sorted_copy(const double *v, size_t n)
{
    double *s = xmalloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    atr_sort_doubles(s, n);
    return s;
}

static double median_of(const double *v, size_t n)
{
    double *s = sorted_copy(v, n);
    double m = atr_percentile_sorted(s, n, 50);
    free(s);
    return m;
}

static bool all_positive(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] > 0))
            return false;
    return true;
}

/* ---- Student's t quantile (for samples too small to go without it) ---- */

/* The continued fraction of the regularized incomplete beta function,
 * evaluated by the modified Lentz method (converges for x < (a+1)/(a+b+2)). */
static double beta_fraction(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    d = fabs(d) < tiny ? 1 / tiny : 1 / d;
    double f = d;
    for (int m = 1; m <= 300; m++) {
        for (int odd = 0; odd < 2; odd++) {
            double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + num * d;
            d = fabs(d) < tiny ? 1 / tiny : 1 / d;
            c = 1 + num / c;
            c = fabs(c) < tiny ? tiny : c;
            f *= c * d;
            if (odd && fabs(c * d - 1) < 1e-15)
                return f;
        }
    }
    return f;
}

/* I_x(a, b), the regularized incomplete beta function. */
static double incomplete_beta(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_fraction(a, b, x) / a;
    return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

/* P(T <= t) for t >= 0 with df degrees of freedom. */
static double t_cdf_upper_half(double t, double df)
{
    return 1 - 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

/* The quantile 1 - ALPHA / 2 of Student's t with df > 0 degrees of freedom,
 * by bisection (the CDF is monotone; 12.71 at df 1, 1.96 at infinity). */
static double t_quantile(double df)
{
    double lo = 0, hi = 1e4;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (t_cdf_upper_half(mid, df) < 1 - ALPHA / 2)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

struct moments {
    double mean, var;   /* var: the unbiased sample variance */
};

static struct moments moments_of(const double *v, size_t n, bool logs)
{
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += logs ? log(v[i]) : v[i];
    double mean = sum / (double)n;
    for (size_t i = 0; i < n; i++) {
        double d = (logs ? log(v[i]) : v[i]) - mean;
        sq += d * d;
    }
    return (struct moments){mean, n > 1 ? sq / (double)(n - 1) : 0};
}

/* ---- one median over repeats ---- */

/* The distribution-free interval [x(k), x(n+1-k)] (1-based order
 * statistics) with the largest k whose coverage 1 - 2 P(Bin(n, 1/2) <= k-1)
 * is still at least ATR_CI_LEVEL; 0 when even [min, max] falls short
 * (n < 6: [min, max] covers 1 - 2^(1-n), 93.75 % at 5). Exact binomial
 * sums up to n 1000 (2^-n stays a normal double), the normal
 * approximation with continuity correction beyond. */
static size_t order_statistic_rank(size_t n)
{
    if (n > 1000) {
        double c = floor(n / 2.0 - 0.5 - Z_975 * sqrt((double)n) / 2);
        return c < 0 ? 0 : (size_t)c + 1;
    }
    double term = ldexp(1.0, -(int)n), cdf = term;   /* P(Bin <= k) */
    size_t k = 0;
    while (k < n / 2 && cdf <= ALPHA / 2) {
        k++;
        term = term * (double)(n - k + 1) / (double)k;
        cdf += term;
    }
    return k;
}

/* A t interval for the median of a small sample: on log values (the
 * median of a log-normal is the exponential of the mean log), or on the
 * values themselves when one is not positive. */
static void t_interval_median(const double *v, size_t n, double point, struct atr_ci *out)
{
    bool logs = all_positive(v, n);
    struct moments m = moments_of(v, n, logs);
    double half = t_quantile((double)(n - 1)) * sqrt(m.var / (double)n);
    double lo = m.mean - half, hi = m.mean + half;
    if (logs) {
        lo = exp(lo);
        hi = exp(hi);
    }
    ci_set(out, point, lo, hi, n, "repeats");
}

void atr_ci_median(const double *v, size_t n, uint64_t seed, struct atr_ci *out)
{
    if (n == 0) {
        ci_none(out, NAN, 0);
        return;
    }
    if (n == 1) {
        ci_none(out, v[0], 1);
        return;
    }
    double *s = sorted_copy(v, n);
    double point = atr_percentile_sorted(s, n, 50);
    size_t k = order_statistic_rank(n);
    if (k > 0)
        ci_set(out, point, s[k - 1], s[n - k], n, "repeats");
    else
        t_interval_median(v, n, point, out);
    free(s);
}

/* ---- the ratio of two variants over repeats ---- */

/* The largest c with P(U <= c) <= ALPHA / 2 for the Mann-Whitney count U
 * of samples of m and n (no ties), or -1 when no such c exists (the two
 * samples are too small for a 95 % interval: 3 and 3, 3 and 4, 2 and 7).
 * Exact counts by the recurrence f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u)
 * (the largest value is from the first sample, beating all j of the
 * second, or from the second) while m x n is small, normal beyond. */
static long mann_whitney_critical(size_t m, size_t n)
{
    size_t mn = m * n;
    if (mn > MW_EXACT_PAIRS) {
        double c = floor(mn / 2.0 - 0.5 - Z_975 * sqrt(mn * (double)(m + n + 1) / 12));
        return c < 0 ? -1 : (long)c;
    }
    size_t width = mn + 1;
    double *f = xcalloc((m + 1) * width, sizeof *f);   /* f[i][u] for the current j */
    for (size_t i = 0; i <= m; i++)
        f[i * width] = 1;                              /* j = 0: U is 0 */
    for (size_t j = 1; j <= n; j++)
        for (size_t i = 1; i <= m; i++)
            for (size_t u = i * j + 1; u-- > j;)       /* in place: u descending */
                f[i * width + u] += f[(i - 1) * width + u - j];
    double total = 0;
    for (size_t u = 0; u <= mn; u++)
        total += f[m * width + u];
    long c = -1;
    double cum = 0;
    for (size_t u = 0; u <= mn; u++) {
        cum += f[m * width + u];
        if (cum / total > ALPHA / 2)
            break;
        c = (long)u;
    }
    free(f);
    return c;
}

/* The k-th smallest (0-based) of v[0..n), which it reorders. */
static double kth_smallest(double *v, size_t n, size_t k)
{
    struct atr_samples s = {v, n, n, false, {0}, 0};
    return atr_samples_kth(&s, k);
}

/* Hodges-Lehmann: the log ratios log(cand_j / ref_i) of all m x n pairs;
 * under a multiplicative change (cand = ratio x ref in distribution) the
 * interval between their (c+1)-th smallest and (c+1)-th largest covers the
 * ratio with the exact Mann-Whitney probability. */
static void hodges_lehmann_ratio(const double *ref, size_t m, const double *cand, size_t n,
                                 long c, double point, struct atr_ci *out)
{
    size_t mn = m * n;
    double *d = xmalloc(mn * sizeof *d);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            d[i * n + j] = log(cand[j]) - log(ref[i]);
    double lo = kth_smallest(d, mn, (size_t)c);
    double hi = kth_smallest(d, mn, mn - 1 - (size_t)c);
    free(d);
    ci_set(out, point, exp(lo), exp(hi), m < n ? m : n, "repeats");
}

/* Welch's t on log values: where neither side has enough repeats for a
 * distribution-free interval (assumes log-normal noise). */
static void welch_log_ratio(const double *ref, size_t m, const double *cand, size_t n,
                            double point, struct atr_ci *out)
{
    struct moments a = moments_of(ref, m, true), b = moments_of(cand, n, true);
    double va = a.var / (double)m, vb = b.var / (double)n, se = sqrt(va + vb);
    double diff = b.mean - a.mean, half = 0;
    if (se > 0) {
        double df = (va + vb) * (va + vb) /
                    (va * va / (double)(m - 1) + vb * vb / (double)(n - 1));
        half = t_quantile(df) * se;
    }
    ci_set(out, point, exp(diff - half), exp(diff + half), m < n ? m : n, "repeats");
}

static void bootstrap_ratio(const double *ref, size_t n_ref, const double *cand, size_t n_cand,
                            double p, size_t block, uint64_t seed, const char *method,
                            struct atr_ci *out);

void atr_ci_ratio(const double *ref, size_t n_ref, const double *cand, size_t n_cand,
                  uint64_t seed, struct atr_ci *out)
{
    if (n_ref == 0 || n_cand == 0) {
        ci_none(out, NAN, 0);
        return;
    }
    size_t n = n_ref < n_cand ? n_ref : n_cand;
    double point = median_of(cand, n_cand) / median_of(ref, n_ref);
    if (n < 2 || !all_positive(ref, n_ref) || !all_positive(cand, n_cand)) {
        ci_none(out, point, n);
        return;
    }
    if (n_ref * n_cand > HL_MAX_PAIRS) {
        bootstrap_ratio(ref, n_ref, cand, n_cand, 50, 1, seed, "repeats", out);
        return;
    }
    long c = mann_whitney_critical(n_ref, n_cand);
    if (c >= 0)
        hodges_lehmann_ratio(ref, n_ref, cand, n_cand, c, point, out);
    else
        welch_log_ratio(ref, n_ref, cand, n_cand, point, out);
}

void atr_ci_ratio_one(const double *ref, size_t n_ref, double cand, uint64_t seed,
                      struct atr_ci *out)
{
    if (n_ref == 0) {
        ci_none(out, NAN, 0);
        return;
    }
    double point = cand / median_of(ref, n_ref);
    if (n_ref < 2 || !(cand > 0) || !all_positive(ref, n_ref)) {
        ci_none(out, point, 1);
        return;
    }
    struct moments m = moments_of(ref, n_ref, true);
    double half = t_quantile((double)(n_ref - 1)) * sqrt(m.var * (1 + 1.0 / (double)n_ref));
    double diff = log(cand) - m.mean;
    ci_set(out, point, exp(diff - half), exp(diff + half), 1, "repeats");
}

/* ---- the ratio of two variants run in pairs (interleaved rounds) ---- */

/* The largest c with P(T <= c) <= ALPHA / 2 for the Wilcoxon signed-rank
 * statistic T of n pairs (no ties), or -1 when none exists (n under 6):
 * the exact distribution by the recurrence over ranks, normal past 50. */
static long signed_rank_critical(size_t n)
{
    if (n > 50) {
        double mean = n * (n + 1) / 4.0, sd = sqrt(n * (n + 1) * (2.0 * n + 1) / 24);
        double c = floor(mean - 0.5 - Z_975 * sd);
        return c < 0 ? -1 : (long)c;
    }
    size_t top = n * (n + 1) / 2;
    double *f = xcalloc(top + 1, sizeof *f);   /* f[t]: subsets of ranks 1..k summing to t */
    f[0] = 1;
    for (size_t k = 1; k <= n; k++)
        for (size_t t = top + 1; t-- > k;)
            f[t] += f[t - k];
    double total = ldexp(1.0, (int)n), cum = 0;
    long c = -1;
    for (size_t t = 0; t <= top; t++) {
        cum += f[t];
        if (cum / total > ALPHA / 2)
            break;
        c = (long)t;
    }
    free(f);
    return c;
}

void atr_ci_ratio_paired(const double *ref, const double *cand, size_t n, struct atr_ci *out)
{
    if (n == 0) {
        ci_none(out, NAN, 0);
        return;
    }
    if (!all_positive(ref, n) || !all_positive(cand, n)) {
        ci_none(out, median_of(cand, n) / median_of(ref, n), n);
        return;
    }
    double *d = xcalloc(n, sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = log(cand[i] / ref[i]);
    long c = signed_rank_critical(n);
    if (n < 2) {
        ci_none(out, exp(d[0]), n);
    } else if (c < 0) {                /* 2-5 pairs: Student's t on the log ratios */
        struct moments m = moments_of(d, n, false);
        double half = t_quantile((double)(n - 1)) * sqrt(m.var / (double)n);
        ci_set(out, exp(m.mean), exp(m.mean - half), exp(m.mean + half), n, "pairs");
    } else {                           /* Hodges-Lehmann on the Walsh averages */
        size_t w = n * (n + 1) / 2, k = 0;
        double *walsh = xcalloc(w, sizeof *walsh);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++)
                walsh[k++] = (d[i] + d[j]) / 2;
        double point = exp(median_of(walsh, w));
        double lo = exp(kth_smallest(walsh, w, (size_t)c));
        double hi = exp(kth_smallest(walsh, w, w - 1 - (size_t)c));
        ci_set(out, point, lo, hi, n, "pairs");
        free(walsh);
    }
    free(d);
}

static bool round_twice(const unsigned *round, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (round[i] == round[j])
                return true;
    return false;
}

size_t atr_ci_pair_rounds(const unsigned *ref_round, const double *ref, size_t n_ref,
                          const unsigned *cand_round, const double *cand, size_t n_cand,
                          double *ref_out, double *cand_out)
{
    if (round_twice(ref_round, n_ref) || round_twice(cand_round, n_cand))
        return 0;
    size_t k = 0;
    for (size_t j = 0; j < n_cand; j++)
        for (size_t i = 0; i < n_ref; i++)
            if (ref_round[i] == cand_round[j]) {
                ref_out[k] = ref[i];
                cand_out[k++] = cand[j];
            }
    return k;
}

/* ---- within one run: a circular block bootstrap over its requests ---- */

/* The block length: Politis and White's (2004) automatic choice for the
 * circular block bootstrap, with Patton, Politis and White's (2009)
 * correction, b = (2 G^2 / D)^(1/3) n^(1/3) with D = 4/3 g^2, where g and
 * G are flat-top lag-window sums of the autocovariances R(k) and |k| R(k)
 * out to M = 2 m, m the first lag after which K autocorrelations in a row
 * are insignificant (under 2 sqrt(log10 n / n)). It is computed on the
 * ranks, so that one huge latency does not decide it. It is never under
 * n^(1/3), the textbook order (blocks that long are still valid for
 * independent requests, and they keep a resample to n^(2/3) random
 * starts: 2000 resamples of 100k requests in tens of milliseconds, where
 * blocks of one would take seconds); an AR(1) with phi 0.9 over 2000
 * requests gets about 64, where n^(1/3) alone, 13, covers far too little. */
static double autocovariance(const double *x, size_t n, size_t lag)
{
    double sum = 0;
    for (size_t i = 0; i + lag < n; i++)
        sum += x[i] * x[i + lag];
    return sum / (double)n;
}

static double flat_top(double t)
{
    t = fabs(t);
    return t <= 0.5 ? 1 : t <= 1 ? 2 * (1 - t) : 0;
}

static size_t block_length_of(const double *x, size_t n)
{
    size_t max_block = (size_t)ceil(fmin(3 * sqrt((double)n), n / 3.0));
    size_t runs = (size_t)fmax(5, ceil(sqrt(log10((double)n))));
    double r0 = autocovariance(x, n, 0), bound = 2 * sqrt(log10((double)n) / (double)n);
    if (!(r0 > 0) || n < 8)
        return (size_t)fmax(1, round(cbrt((double)n)));
    size_t lag_cap = max_block + runs, m = 0, quiet = 0;
    double *r = xmalloc((2 * lag_cap + 1) * sizeof *r);
    size_t have = 0;
    for (size_t k = 1; k <= lag_cap && k < n && quiet < runs; k++) {
        r[k] = autocovariance(x, n, k);
        have = k;
        quiet = fabs(r[k] / r0) < bound ? quiet + 1 : 0;
        if (quiet == 0)
            m = k;
    }
    size_t big_m = 2 * m;
    double g = r0, G = 0;
    for (size_t k = 1; k <= big_m && k < n; k++) {
        if (k > have)
            r[have = k] = autocovariance(x, n, k);
        double w = flat_top((double)k / (double)big_m);
        g += 2 * w * r[k];
        G += 2 * w * (double)k * r[k];
    }
    free(r);
    double floor_b = round(cbrt((double)n));
    if (!(g > 0) || G == 0)
        return (size_t)fmax(1, floor_b);
    double b = cbrt(2 * G * G / (4.0 / 3 * g * g)) * cbrt((double)n);
    return (size_t)fmax(1, fmin(fmax(round(b), floor_b), (double)max_block));
}

/* One run prepared for resampling its percentile p fast. A resample is
 * n / block blocks of consecutive requests (wrapping around the end), each
 * from a uniform start, cut to n values. Its percentile depends only on
 * the ranks it holds near rank k = floor((n-1) p / 100): every request is
 * classed once as below a window of ranks around k, inside it, or above.
 * Then a resample costs its number of blocks plus the in-window requests
 * it draws (prefix counts give each block's share), not n: 2000 resamples
 * of 100k requests take tens of milliseconds. A resample whose k-th value
 * falls outside the window (rare by the window's width) is counted in
 * full, so the result is exactly that of a plain bootstrap. */
struct prefix {
    uint32_t below;          /* requests before this one ranked under the window */
    uint32_t inside;         /* ... ranked in it */
};

struct run_boot {
    size_t n, block;
    double p;
    double *sorted;          /* the values ascending: rank r has value sorted[r] */
    uint32_t *rank;          /* rank of request i (ties broken by send order) */
    size_t lo, hi;           /* the window: ranks [lo, hi) */
    struct prefix *pre;      /* n + 1 of them */
    uint32_t *window_rank;   /* the in-window requests' ranks, in send order */
    unsigned *count;         /* scratch: draws per rank, of the window or all */
};

struct ranked {
    double v;
    size_t i;
};

static int ranked_cmp(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static void run_boot_rank(struct run_boot *rb, const double *v)
{
    struct ranked *r = xmalloc(rb->n * sizeof *r);
    for (size_t i = 0; i < rb->n; i++)
        r[i] = (struct ranked){v[i], i};
    qsort(r, rb->n, sizeof *r, ranked_cmp);
    for (size_t k = 0; k < rb->n; k++) {
        rb->sorted[k] = r[k].v;
        rb->rank[r[k].i] = (uint32_t)k;
    }
    free(r);
}

static size_t run_boot_block(const struct run_boot *rb)
{
    double *x = xmalloc(rb->n * sizeof *x), mid = (double)(rb->n - 1) / 2;
    for (size_t i = 0; i < rb->n; i++)
        x[i] = rb->rank[i] - mid;
    size_t b = block_length_of(x, rb->n);
    free(x);
    return b;
}

static size_t percentile_rank(size_t n, double p)
{
    return (size_t)floor((double)(n - 1) * fmin(fmax(p / 100, 0), 1));
}

/* The window: ranks k and k+1 (a percentile interpolates between them)
 * plus six standard deviations of a resample's count of requests ranked
 * under k, plus a block. That count is a sum of n / block independent
 * block counts, whose variance comes from every circular block of the run
 * (so clustering in send order widens it). */
static void run_boot_window(struct run_boot *rb)
{
    size_t n = rb->n, L = rb->block, k = percentile_rank(n, rb->p), c = 0;
    for (size_t i = 0; i < L; i++)
        c += rb->rank[i] < k;
    double sum = 0, sq = 0;
    for (size_t s = 0; s < n; s++) {
        sum += (double)c;
        sq += (double)c * (double)c;
        c += (size_t)(rb->rank[(s + L) % n] < k) - (size_t)(rb->rank[s] < k);
    }
    double mean = sum / (double)n, var = fmax(0, sq / (double)n - mean * mean);
    double sd = sqrt(var * ceil((double)n / (double)L));
    size_t w = (size_t)(6 * sd) + L + 8;
    rb->lo = k > w ? k - w : 0;
    rb->hi = k + 2 + w < n ? k + 2 + w : n;
}

/* block 0: chosen from the data (block_length_of). */
static void run_boot_init(struct run_boot *rb, const double *v, size_t n, double p, size_t block)
{
    *rb = (struct run_boot){.n = n, .p = p};
    rb->sorted = xmalloc(n * sizeof *rb->sorted);
    rb->rank = xmalloc(n * sizeof *rb->rank);
    run_boot_rank(rb, v);
    rb->block = block ? (block < n ? block : n) : run_boot_block(rb);
    run_boot_window(rb);
    rb->pre = xmalloc((n + 1) * sizeof *rb->pre);
    rb->window_rank = xmalloc((rb->hi - rb->lo) * sizeof *rb->window_rank);
    rb->count = xcalloc(n, sizeof *rb->count);
    uint32_t nb = 0, ni = 0;
    for (size_t i = 0; i < n; i++) {
        rb->pre[i] = (struct prefix){nb, ni};
        size_t r = rb->rank[i];
        if (r < rb->lo)
            nb++;
        else if (r < rb->hi)
            rb->window_rank[ni++] = (uint32_t)r;
    }
    rb->pre[n] = (struct prefix){nb, ni};
}

static void run_boot_release(struct run_boot *rb)
{
    free(rb->sorted);
    free(rb->rank);
    free(rb->pre);
    free(rb->window_rank);
    free(rb->count);
}

size_t atr_ci_block_length(const double *v, size_t n)
{
    if (n < 2)
        return 1;
    struct run_boot rb = {.n = n};
    rb.sorted = xmalloc(n * sizeof *rb.sorted);
    rb.rank = xmalloc(n * sizeof *rb.rank);
    run_boot_rank(&rb, v);
    size_t b = run_boot_block(&rb);
    free(rb.sorted);
    free(rb.rank);
    return b;
}

/* numpy's "linear" interpolation between neighbouring order statistics. */
static double interpolate(double a, double b, double g)
{
    return g < 0.5 ? a + (b - a) * g : b - (b - a) * (1 - g);
}

/* The values of the k-th and k2-th smallest (0-based, k <= k2) of the
 * counted ranks, counts given for ranks [base, base + len); the caller
 * knows both are there. */
static void kth_counted(const struct run_boot *rb, size_t base, size_t len, size_t k,
                        size_t k2, double *a, double *b)
{
    size_t seen = 0, r = 0;
    for (; r < len; r++) {
        seen += rb->count[r];
        if (seen > k)
            break;
    }
    *a = rb->sorted[base + r];
    for (; seen <= k2 && r + 1 < len;)
        seen += rb->count[++r];
    *b = rb->sorted[base + r];
}

/* A resample's requests under the window and inside it. */
struct tally {
    size_t below, inside;
};

/* Adds requests [a, b) to the resample's tallies (all: every rank). */
static void run_boot_take(struct run_boot *rb, size_t a, size_t b, struct tally *t, bool all)
{
    if (all) {
        for (size_t i = a; i < b; i++)
            rb->count[rb->rank[i]]++;
        return;
    }
    t->below += rb->pre[b].below - rb->pre[a].below;
    t->inside += rb->pre[b].inside - rb->pre[a].inside;
    for (size_t i = rb->pre[a].inside; i < rb->pre[b].inside; i++)
        rb->count[rb->window_rank[i] - rb->lo]++;
}

/* Draws one resample's blocks. */
static struct tally run_boot_draw(struct run_boot *rb, struct atr_rng *rng, bool all)
{
    struct tally t = {0, 0};
    for (size_t got = 0; got < rb->n;) {
        size_t start = (size_t)atr_rng_below(rng, rb->n);
        size_t len = rb->block < rb->n - got ? rb->block : rb->n - got;
        size_t first = len < rb->n - start ? len : rb->n - start;
        run_boot_take(rb, start, start + first, &t, all);
        run_boot_take(rb, 0, len - first, &t, all);
        got += len;
    }
    return t;
}

/* Percentile p of one resample. The rng is copied first so that the full
 * count, when the window misses, draws the very same blocks. */
static double run_boot_resample(struct run_boot *rb, struct atr_rng *rng)
{
    double h = (double)(rb->n - 1) * fmin(fmax(rb->p / 100, 0), 1);
    size_t k = percentile_rank(rb->n, rb->p);
    size_t k2 = k + 1 < rb->n ? k + 1 : k;
    struct atr_rng again = *rng;
    size_t len = rb->hi - rb->lo;
    struct tally t = run_boot_draw(rb, rng, false);
    double a, b;
    if (t.below <= k && k2 < t.below + t.inside) {
        kth_counted(rb, rb->lo, len, k - t.below, k2 - t.below, &a, &b);
        memset(rb->count, 0, len * sizeof *rb->count);
    } else {
        memset(rb->count, 0, len * sizeof *rb->count);
        run_boot_draw(rb, &again, true);
        kth_counted(rb, 0, rb->n, k, k2, &a, &b);
        memset(rb->count, 0, rb->n * sizeof *rb->count);
    }
    return interpolate(a, b, h - floor(h));
}

static double run_boot_point(const struct run_boot *rb)
{
    return atr_percentile_sorted(rb->sorted, rb->n, rb->p);
}

/* The percentile interval of B bootstrap statistics (sorts them). */
static void percentile_interval(double *stat, size_t b, double *lo, double *hi)
{
    atr_sort_doubles(stat, b);
    *lo = atr_percentile_sorted(stat, b, 100 * ALPHA / 2);
    *hi = atr_percentile_sorted(stat, b, 100 * (1 - ALPHA / 2));
}

static void percentile_run(const double *v, size_t n, double p, uint64_t seed,
                           size_t resamples, struct atr_ci *out)
{
    if (n == 0) {
        ci_none(out, NAN, 0);
        return;
    }
    if (n < ATR_CI_MIN_REQUESTS) {
        double *s = sorted_copy(v, n);
        ci_none(out, atr_percentile_sorted(s, n, p), n);
        free(s);
        return;
    }
    struct run_boot rb;
    run_boot_init(&rb, v, n, p, 0);
    struct atr_rng rng;
    atr_rng_seed(&rng, seed, 0);
    double *stat = xmalloc(resamples * sizeof *stat);
    for (size_t b = 0; b < resamples; b++)
        stat[b] = run_boot_resample(&rb, &rng);
    double lo, hi;
    percentile_interval(stat, resamples, &lo, &hi);
    ci_set(out, run_boot_point(&rb), lo, hi, n, "requests-block");
    free(stat);
    run_boot_release(&rb);
}

void atr_ci_percentile_run(const double *v, size_t n, double p, uint64_t seed,
                           struct atr_ci *out)
{
    percentile_run(v, n, p, seed, ATR_CI_RESAMPLES, out);
}

/* The two runs resampled independently (each with its own stream of the
 * seed); the interval is that of the resampled ratios. */
static void bootstrap_ratio(const double *ref, size_t n_ref, const double *cand, size_t n_cand,
                            double p, size_t block, uint64_t seed, const char *method,
                            struct atr_ci *out)
{
    struct run_boot a, b;
    run_boot_init(&a, ref, n_ref, p, block);
    run_boot_init(&b, cand, n_cand, p, block);
    struct atr_rng ra, rb;
    atr_rng_seed(&ra, seed, 1);
    atr_rng_seed(&rb, seed, 2);
    double *stat = xmalloc(ATR_CI_RESAMPLES * sizeof *stat);
    for (size_t i = 0; i < ATR_CI_RESAMPLES; i++)
        stat[i] = run_boot_resample(&b, &rb) / run_boot_resample(&a, &ra);
    double lo, hi;
    percentile_interval(stat, ATR_CI_RESAMPLES, &lo, &hi);
    ci_set(out, run_boot_point(&b) / run_boot_point(&a), lo, hi,
           n_ref < n_cand ? n_ref : n_cand, method);
    free(stat);
    run_boot_release(&a);
    run_boot_release(&b);
}

void atr_ci_ratio_runs(const double *ref, size_t n_ref, const double *cand, size_t n_cand,
                       double p, uint64_t seed, struct atr_ci *out)
{
    size_t n = n_ref < n_cand ? n_ref : n_cand;
    if (n == 0) {
        ci_none(out, NAN, 0);
        return;
    }
    if (n < ATR_CI_MIN_REQUESTS || !all_positive(ref, n_ref) || !all_positive(cand, n_cand)) {
        double *a = sorted_copy(ref, n_ref), *b = sorted_copy(cand, n_cand);
        ci_none(out, atr_percentile_sorted(b, n_cand, p) / atr_percentile_sorted(a, n_ref, p), n);
        free(a);
        free(b);
        return;
    }
    bootstrap_ratio(ref, n_ref, cand, n_cand, p, 0, seed, "requests-block", out);
}

/* ---- verdicts ---- */

enum atr_verdict atr_verdict_of(const struct atr_ci *ratio, bool higher_is_better,
                                double margin)
{
    if (isnan(ratio->lo) || isnan(ratio->hi))
        return ATR_VERDICT_INCONCLUSIVE;
    /* The margin is symmetric on the log scale (1/1.05 .. 1.05), so that
     * swapping the variants mirrors the verdict. */
    if (ratio->lo >= 1 / (1 + margin) && ratio->hi <= 1 + margin)
        return ATR_VERDICT_TIE;
    if (ratio->lo > 1)
        return higher_is_better ? ATR_VERDICT_WIN : ATR_VERDICT_LOSS;
    if (ratio->hi < 1)
        return higher_is_better ? ATR_VERDICT_LOSS : ATR_VERDICT_WIN;
    return ATR_VERDICT_INCONCLUSIVE;
}

const char *atr_verdict_name(enum atr_verdict v)
{
    switch (v) {
    case ATR_VERDICT_WIN: return "win";
    case ATR_VERDICT_TIE: return "tie";
    case ATR_VERDICT_LOSS: return "loss";
    case ATR_VERDICT_INCONCLUSIVE: return "inconclusive";
    }
    return "inconclusive";
}
