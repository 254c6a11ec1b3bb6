/* ci.h - confidence intervals and verdicts for comparisons that must
 * survive noise (docs/statistics.md says which method each function uses
 * and why): a figure's median over repeated runs with its 95 % interval,
 * the ratio of two variants with its interval, the same within one run
 * over its requests (a block bootstrap: requests of one run are not
 * independent), and a verdict (win / tie / loss / inconclusive) read off
 * the ratio's interval, never off a fixed band around the point estimate.
 *
 * Every function is deterministic for a given seed (results must be
 * reproducible by a reviewer), takes its values by pointer (never
 * modified, never kept) and allocates only scratch it frees before
 * returning. NaN inputs are the caller's to drop (a failed repeat is
 * excluded, and counted, by the caller). Nothing prints. */
#ifndef ATR_STATS_CI_H
#define ATR_STATS_CI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ATR_CI_LEVEL 0.95          /* two-sided coverage of every interval */
#define ATR_CI_SEED 0x5eedc1u      /* the seed commands use unless told */
#define ATR_CI_MARGIN 0.05         /* the default tie margin of atr_verdict_of */
#define ATR_CI_RESAMPLES 2000      /* bootstrap resamples per interval */
#define ATR_CI_MIN_REQUESTS 10     /* fewer requests in a run: method "none" */

/* Which method gave an interval (static strings, written into results):
 * "repeats" (over the per-repeat values), "pairs" (over the per-round
 * ratios of two interleaved variants), "requests-block" (within one
 * run, over its requests in arrival order), "none" (too few values: lo
 * and hi are NAN). */
struct atr_ci {
    double point;                  /* the estimate: median, or ratio of medians */
    double lo, hi;                 /* the interval; NAN when it cannot be had */
    size_t n;                      /* values used (of each side, the smaller) */
    const char *method;
};

/* The median of v[0..n) (one value per repeat) and its interval: the
 * distribution-free order-statistic interval from 6 values on, a t interval
 * on log values below (no distribution-free 95 % interval exists there;
 * on the values themselves if one is not positive). n 0: point NAN; n 1:
 * point v[0], method "none". */
void atr_ci_median(const double *v, size_t n, uint64_t seed, struct atr_ci *out);

/* The ratio cand / ref of two variants' medians over repeats and its
 * interval (cand 1.10: 10 % higher): the exact Mann-Whitney interval of the
 * Hodges-Lehmann shift of log values where the sizes allow one (4 and 4, 3
 * and 5, 2 and 8 and up), Welch's t on log values below, a bootstrap of the
 * medians past 2^20 pairs. Either side under 2 values, or a value that is
 * not positive: the point (when both sides have one), method "none". */
void atr_ci_ratio(const double *ref, size_t n_ref, const double *cand, size_t n_cand,
                  uint64_t seed, struct atr_ci *out);

/* The ratio cand / ref of two variants run in n pairs (ref[i] and
 * cand[i] of the same interleaved round, so drift between rounds cancels):
 * on the per-pair log ratios, Hodges-Lehmann (the median of the Walsh
 * averages) with the exact Wilcoxon signed-rank interval from 6 pairs on,
 * Student's t for 2-5; method "pairs". A value not positive, or one pair:
 * the point, method "none". */
void atr_ci_ratio_paired(const double *ref, const double *cand, size_t n, struct atr_ci *out);

/* The pairs of two variants' values by round: ref[i] and cand[j] pair
 * when ref_round[i] == cand_round[j]; into ref_out[k], cand_out[k] (room
 * for the smaller side). How many pairs; 0 when a round is seen twice on
 * a side (no pairing can be trusted then). */
size_t atr_ci_pair_rounds(const unsigned *ref_round, const double *ref, size_t n_ref,
                          const unsigned *cand_round, const double *cand, size_t n_cand,
                          double *ref_out, double *cand_out);

/* The ratio of one new value cand to ref's median over repeats, for a
 * result with no repeats of its own (a nightly point against its rolling
 * baseline): the t interval on log values with ref's spread standing for
 * cand's, log cand - mean log ref +- t(n_ref-1) s sqrt(1 + 1/n_ref)
 * (assumes log-normal noise of one size). ref under 2 values or a value
 * not positive: the point, method "none". */
void atr_ci_ratio_one(const double *ref, size_t n_ref, double cand, uint64_t seed,
                      struct atr_ci *out);

/* Within one run: percentile p (0..100) of request-level values v[0..n)
 * in the order the requests were sent, with a circular block-bootstrap
 * interval (blocks of atr_ci_block_length(n) consecutive requests,
 * ATR_CI_RESAMPLES resamples); and the ratio of two runs' percentiles the
 * same way, the runs resampled independently (ratio: values must be
 * positive). Under ATR_CI_MIN_REQUESTS requests: the point, method "none". */
void atr_ci_percentile_run(const double *v, size_t n, double p, uint64_t seed,
                           struct atr_ci *out);
void atr_ci_ratio_runs(const double *ref, size_t n_ref, const double *cand, size_t n_cand,
                       double p, uint64_t seed, struct atr_ci *out);
/* The block length the bootstrap uses for these requests: Politis and
 * White's automatic choice (n^(1/3) times a factor that grows with the
 * dependence it sees between neighbouring requests' ranks), never under
 * n^(1/3) rounded nor over 3 sqrt(n). */
size_t atr_ci_block_length(const double *v, size_t n);

enum atr_verdict {
    ATR_VERDICT_WIN,               /* better beyond noise */
    ATR_VERDICT_TIE,               /* the interval lies within the margin around 1 */
    ATR_VERDICT_LOSS,              /* worse beyond noise */
    ATR_VERDICT_INCONCLUSIVE,      /* the interval holds 1 and reaches past the margin,
                                    * or there is none */
};

/* The verdict of a ratio's interval for a metric where higher is better
 * (throughput) or lower is (latency); margin: the smallest relative change
 * that matters (0.05: 5 %), used only to call a tie: the interval within
 * [1/(1+margin), 1+margin] is a tie (even when it excludes 1: a change too
 * small to matter), else one wholly above or below 1 is a win or a loss. */
enum atr_verdict atr_verdict_of(const struct atr_ci *ratio, bool higher_is_better,
                                double margin);
const char *atr_verdict_name(enum atr_verdict v);   /* "win", "tie", ... */

#endif
