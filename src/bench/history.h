/* history.h - `atr bench history`: benchmark results of one set-up across
 * commits as series of points, and each metric's regressions beyond noise
 * against a rolling baseline, the points just before (stats/ci.h gives the
 * intervals and verdicts; docs/bench.md, "Regressions across commits").
 *
 * A series: the results with the same variant, agent, model, target and
 * policy. A point: a series' results of one commit (its repeats), or one
 * result where the file names no commit. Points are ordered by when they
 * were measured (the files' "timestamp" or "date"); in a series where a
 * result says nothing of it, in the order read (a folder's files by name),
 * and the series says so. Failed results are counted, never measured.
 *
 * A regression is flagged where a point's ratio to its baseline is a loss
 * (stats/ci.h) and its whole interval lies past the margin: a history
 * makes many comparisons (points x metrics), and a loss alone, 2.5 % likely
 * in each when nothing changed, would fail most runs of a CI gate on an
 * unchanged series. Other losses are shown, not flagged.
 *
 * Memory: an atr_history owns its series, points and labels; its other
 * strings point into the atr_bench_set it was built from, which must
 * outlive it. Writers append to a caller's atr_buf. Nothing prints. */
#ifndef ATR_BENCH_HISTORY_H
#define ATR_BENCH_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/results.h"
#include "stats/ci.h"
#include "util/buf.h"
#include "util/error.h"

enum atr_history_metric {
    ATR_HM_REQ_S,          /* request throughput (higher is better) */
    ATR_HM_TOK_S,          /* output token throughput */
    ATR_HM_TTFT_P50,       /* the latencies, ms (lower is better) */
    ATR_HM_TTFT_P99,
    ATR_HM_TPOT_P99,
    ATR_HM_E2EL_P50,
    ATR_HM_E2EL_P99,
    ATR_HM_METRICS,
};

/* "req_s", "tok_s", "ttft_p50_ms", ... (the JSON keys). */
const char *atr_history_metric_name(enum atr_history_metric m);
/* "req/s", "output tok/s", "p50 TTFT ms", ... (headings). */
const char *atr_history_metric_title(enum atr_history_metric m);

struct atr_history_cell {
    double value;              /* median over the point's runs; NAN: none */
    size_t runs;
    bool compared;             /* false for a series' first point */
    struct atr_ci ratio;       /* this point over its baseline */
    size_t baseline_runs;      /* the baseline's runs, all its points together */
    enum atr_verdict verdict;  /* win / loss read with the metric's direction */
    /* A loss whose whole interval lies past the margin: worse beyond noise
     * and by more than the margin, what the history flags. */
    bool regression;
};

struct atr_history_point {
    const char *commit;        /* NULL when the file names none */
    const char *when;          /* its first result's; NULL when none */
    const char *file;          /* its first result's file */
    size_t ok, failed;         /* results that measured, and those that failed */
    size_t *idx;               /* its results' indexes in the set */
    size_t n_idx;
    struct atr_history_cell cell[ATR_HM_METRICS];
};

struct atr_history_series {
    char *label;
    bool by_time;              /* else ordered as read */
    size_t untimed;            /* results without a time */
    bool has[ATR_HM_METRICS];  /* metrics its results carry */
    struct atr_history_point *p;
    size_t n;
    size_t regressions;
};

struct atr_history_opts {
    size_t window;             /* baseline: this many points before (default 5) */
    double margin;             /* the tie margin (ATR_CI_MARGIN) */
    uint64_t seed;
};

struct atr_history {
    struct atr_history_opts o;
    struct atr_history_series *s;
    size_t n;
    size_t results, failed, regressions;
};

/* Builds h from set. Errors: no result that measured, no series with two
 * points, a result missing a metric the rest of its series has
 * ("FILE: no p99 TTFT, which FILE has ..."). On error h is empty. */
int atr_history_build(struct atr_history *h, const struct atr_bench_set *set,
                      const struct atr_history_opts *o, struct atr_error *err);
void atr_history_release(struct atr_history *h);

/* Each returns 0, or -1 when the buffer's cap is reached. */
int atr_history_markdown(struct atr_buf *b, const struct atr_history *h);
int atr_history_json(struct atr_buf *b, const struct atr_history *h);

#endif
