/* cistat.c - the checks of docs/statistics.md on atr's own intervals
 * (stats/ci.h), built and driven by bench/statistics/run.sh:
 *
 *   cistat sim SIGMA OUTLIER_P OUTLIER_X DRIFT REPEATS PAIRS SEED
 *       simulated pairs of variants, REPEATS runs each, interleaved
 *       (ABAB...): each run's figure is 100 x exp(SIGMA z) x a drift of
 *       DRIFT (relative) from the first run to the last x OUTLIER_X with
 *       probability OUTLIER_P. Prints, for a throughput-like figure (higher
 *       is better): A/A false wins + losses, and how often a 10 % gain and
 *       a 10 % loss are found; one line "sim ... aa_false A power_up U
 *       power_down D pairs N".
 *   cistat runs P REF CAND   within-run ratio of percentile P of two files
 *       of request values (one number a line, send order), lower is
 *       better: "point lo hi verdict block_ref block_cand".
 *   cistat repeats HIGHER REF CAND   the ratio over repeats (files of one
 *       figure a line); HIGHER 1 when higher is better.
 *   cistat time N   seconds for atr_ci_percentile_run and
 *       atr_ci_ratio_runs of N log-normal requests (p99 and p50).
 *   cistat blockcov   coverage of atr_ci_percentile_run's interval of the
 *       median and the p90 over 300 simulated runs of n 400 and 2000
 *       requests whose log latencies are an AR(1) series (phi 0, 0.5, 0.9;
 *       stationary N(ln 100, 0.5^2), so the truth is known), and the mean
 *       block length it chose.
 *   cistat bootcov   what atr does not use, for docs/statistics.md: the
 *       coverage of a plain percentile bootstrap (2000 resamples) of one
 *       median and of a ratio of medians at 5 repeats a side, over 2000
 *       simulated A/A samples (log-normal, sd 5 %). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats/ci.h"
#include "stats/percentile.h"
#include "util/rng.h"

static double *read_values(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cistat: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t cap = 1024;
    double *v = malloc(cap * sizeof *v), x;
    *n = 0;
    while (fscanf(f, "%lf", &x) == 1) {
        if (*n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = x;
    }
    fclose(f);
    return v;
}

/* One pair's runs, interleaved: run t of 2 x repeats (A at even t). */
static double run_value(struct atr_rng *r, double median, double sigma, double out_p,
                        double out_x, double drift, int t, int runs)
{
    double v = atr_rng_lognormal(r, median, sigma);
    v *= 1 + drift * ((double)t / (runs > 1 ? runs - 1 : 1));
    if (atr_rng_chance(r, out_p))
        v *= out_x;
    return v;
}

static enum atr_verdict sim_pair(struct atr_rng *r, double change, double sigma, double out_p,
                                 double out_x, double drift, int repeats, uint64_t seed)
{
    double a[64], b[64];
    for (int i = 0; i < repeats; i++) {
        a[i] = run_value(r, 100, sigma, out_p, out_x, drift, 2 * i, 2 * repeats);
        b[i] = run_value(r, 100 * change, sigma, out_p, out_x, drift, 2 * i + 1, 2 * repeats);
    }
    struct atr_ci ci;
    atr_ci_ratio(a, (size_t)repeats, b, (size_t)repeats, seed, &ci);
    return atr_verdict_of(&ci, true, ATR_CI_MARGIN);
}

static int cmd_sim(char **argv)
{
    double sigma = atof(argv[0]), out_p = atof(argv[1]), out_x = atof(argv[2]);
    double drift = atof(argv[3]);
    int repeats = atoi(argv[4]), pairs = atoi(argv[5]);
    if (repeats < 1 || repeats > 64 || pairs < 1) {
        fprintf(stderr, "cistat: repeats 1..64, pairs >= 1\n");
        return 2;
    }
    struct atr_rng r;
    atr_rng_seed(&r, strtoull(argv[6], NULL, 10), 0);
    int aa = 0, up = 0, down = 0;
    for (int t = 0; t < pairs; t++) {
        enum atr_verdict v = sim_pair(&r, 1, sigma, out_p, out_x, drift, repeats, (uint64_t)t);
        aa += v == ATR_VERDICT_WIN || v == ATR_VERDICT_LOSS;
        up += sim_pair(&r, 1.1, sigma, out_p, out_x, drift, repeats, (uint64_t)t) ==
              ATR_VERDICT_WIN;
        down += sim_pair(&r, 1 / 1.1, sigma, out_p, out_x, drift, repeats, (uint64_t)t) ==
                ATR_VERDICT_LOSS;
    }
    printf("sim sigma %g outliers %g x%g drift %g repeats %d: aa_false %d power_up %d "
           "power_down %d pairs %d\n",
           sigma, out_p, out_x, drift, repeats, aa, up, down, pairs);
    return 0;
}

static void print_ci(const struct atr_ci *ci, enum atr_verdict v)
{
    printf("%.6g %.6g %.6g %s", ci->point, ci->lo, ci->hi, atr_verdict_name(v));
}

static int cmd_runs(char **argv)
{
    double p = atof(argv[0]);
    size_t na, nb;
    double *a = read_values(argv[1], &na), *b = read_values(argv[2], &nb);
    struct atr_ci ci;
    atr_ci_ratio_runs(a, na, b, nb, p, ATR_CI_SEED, &ci);
    print_ci(&ci, atr_verdict_of(&ci, false, ATR_CI_MARGIN));
    printf(" %zu %zu\n", atr_ci_block_length(a, na), atr_ci_block_length(b, nb));
    free(a);
    free(b);
    return 0;
}

static int cmd_repeats(char **argv)
{
    bool higher = atoi(argv[0]) != 0;
    size_t na, nb;
    double *a = read_values(argv[1], &na), *b = read_values(argv[2], &nb);
    struct atr_ci ci;
    atr_ci_ratio(a, na, b, nb, ATR_CI_SEED, &ci);
    print_ci(&ci, atr_verdict_of(&ci, higher, ATR_CI_MARGIN));
    printf("\n");
    free(a);
    free(b);
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmd_time(char **argv)
{
    size_t n = strtoull(argv[0], NULL, 10);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    struct atr_rng r;
    atr_rng_seed(&r, 1, 0);
    for (size_t i = 0; i < n; i++) {
        a[i] = atr_rng_lognormal(&r, 100, 0.5);
        b[i] = atr_rng_lognormal(&r, 100, 0.5);
    }
    for (double p = 99; p >= 50; p -= 49) {
        struct atr_ci ci;
        double t0 = now_s();
        atr_ci_percentile_run(a, n, p, 1, &ci);
        double t1 = now_s();
        atr_ci_ratio_runs(a, n, b, n, p, 1, &ci);
        double t2 = now_s();
        printf("time n %zu p%g: percentile_run %.3f s, ratio_runs %.3f s\n", n, p, t1 - t0,
               t2 - t1);
    }
    free(a);
    free(b);
    return 0;
}

static void ar1_run(struct atr_rng *r, double *v, size_t n, double phi)
{
    double sd = 0.5, x = atr_rng_normal(r) * sd;
    for (size_t i = 0; i < n; i++) {
        x = phi * x + sqrt(1 - phi * phi) * sd * atr_rng_normal(r);
        v[i] = 100 * exp(x);
    }
}

static int cmd_blockcov(void)
{
    static const double phis[] = {0, 0.5, 0.9};
    static const size_t sizes[] = {400, 2000};
    double p90 = 100 * exp(0.5 * 1.2815515655446004);
    for (size_t a = 0; a < 3; a++)
        for (size_t b = 0; b < 2; b++) {
            size_t n = sizes[b], runs = 300, med = 0, tail = 0, blocks = 0;
            double *v = malloc(n * sizeof *v);
            struct atr_rng r;
            atr_rng_seed(&r, 77, 0);
            for (size_t t = 0; t < runs; t++) {
                ar1_run(&r, v, n, phis[a]);
                struct atr_ci ci;
                atr_ci_percentile_run(v, n, 50, t, &ci);
                med += ci.lo <= 100 && 100 <= ci.hi;
                atr_ci_percentile_run(v, n, 90, t, &ci);
                tail += ci.lo <= p90 && p90 <= ci.hi;
                blocks += atr_ci_block_length(v, n);
            }
            printf("blockcov phi %.1f n %zu: median covered %.1f %%, p90 %.1f %%, block %.1f\n",
                   phis[a], n, 100.0 * (double)med / (double)runs,
                   100.0 * (double)tail / (double)runs, (double)blocks / (double)runs);
            free(v);
        }
    return 0;
}

static double resampled_median(const double *x, size_t n, struct atr_rng *r)
{
    double s[64];
    for (size_t i = 0; i < n; i++)
        s[i] = x[atr_rng_below(r, n)];
    return atr_percentile(s, n, 50);
}

static bool bootstrap_covers(double *stat, size_t b)
{
    atr_sort_doubles(stat, b);
    return atr_percentile_sorted(stat, b, 2.5) <= 1 && 1 <= atr_percentile_sorted(stat, b, 97.5);
}

static int cmd_bootcov(void)
{
    enum { T = 2000, B = 2000, N = 5 };
    static double stat[B];
    struct atr_rng r;
    atr_rng_seed(&r, 1, 0);
    int ratio = 0, median = 0;
    for (int t = 0; t < T; t++) {
        double a[N], b[N];
        for (int i = 0; i < N; i++) {
            a[i] = atr_rng_lognormal(&r, 1, 0.05);
            b[i] = atr_rng_lognormal(&r, 1, 0.05);
        }
        for (int k = 0; k < B; k++)
            stat[k] = resampled_median(b, N, &r) / resampled_median(a, N, &r);
        ratio += bootstrap_covers(stat, B);
        for (int k = 0; k < B; k++)
            stat[k] = resampled_median(a, N, &r);
        median += bootstrap_covers(stat, B);
    }
    printf("bootcov: percentile bootstrap at %d repeats covers one median %.3f, "
           "a ratio of medians %.3f\n", N, (double)median / T, (double)ratio / T);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "bootcov") == 0)
        return cmd_bootcov();
    if (argc == 2 && strcmp(argv[1], "blockcov") == 0)
        return cmd_blockcov();
    if (argc == 9 && strcmp(argv[1], "sim") == 0)
        return cmd_sim(argv + 2);
    if (argc == 5 && strcmp(argv[1], "runs") == 0)
        return cmd_runs(argv + 2);
    if (argc == 5 && strcmp(argv[1], "repeats") == 0)
        return cmd_repeats(argv + 2);
    if (argc == 3 && strcmp(argv[1], "time") == 0)
        return cmd_time(argv + 2);
    fprintf(stderr, "usage: cistat sim|runs|repeats|time ... (see cistat.c)\n");
    return 2;
}
