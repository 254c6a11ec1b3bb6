/* repeats.h - the comparison over repeated runs: runs grouped by target
 * and policy, per metric the median over a group's repeats with its 95 %
 * interval, and per policy the ratio against the `naive` policy of its
 * target with its interval and a verdict (stats/ci.h; docs/statistics.md).
 * With one run per policy, the intervals come from within the run: the
 * percentile over its requests in send order, block-bootstrapped; the
 * table says which method each line used. A failed run is counted and
 * left out, never averaged in.
 *
 *     struct atr_repeats *r = atr_repeats_new(3, ATR_REPEATS_MARGIN);
 *     atr_repeats_add_run(r, "sim:h100/llama-3.1-8b", "naive", 1, &sum, &bc, recs, n);
 *     atr_repeats_add_failed(r, "sim:h100/llama-3.1-8b", "naive", 2);
 *     atr_repeats_write_markdown(&buf, r);
 *
 * Memory: an atr_repeats owns copies of everything added (request-level
 * values included); nothing is kept of the caller's. Nothing prints. */
#ifndef ATR_REPORT_REPEATS_H
#define ATR_REPORT_REPEATS_H

#include <stdbool.h>
#include <stddef.h>

#include "report/compare.h"
#include "stats/ci.h"
#include "stats/metrics.h"
#include "util/buf.h"
#include "util/error.h"

#define ATR_REPEATS_MARGIN ATR_CI_MARGIN /* the change too small to matter: a tie (5 %) */

struct atr_repeats;

/* repeats: how many each policy was to have (0: as many as are added). */
struct atr_repeats *atr_repeats_new(unsigned repeats, double margin);
void atr_repeats_free(struct atr_repeats *r);            /* accepts NULL */

/* A run that succeeded: its figures (the row of its summary, as atr
 * compare reads it back) and its requests' TTFT and E2E latency, in the
 * order they were sent (recs in any order; failed requests left out). */
void atr_repeats_add_run(struct atr_repeats *r, const char *target, const char *policy,
                         unsigned repeat, const struct atr_llm_summary *sum,
                         const struct atr_llm_bench_config *bc,
                         const struct atr_llm_record *recs, size_t n);
/* A row of a result file (atr compare), repeat from its "repeat"; a row
 * with no completed request counts as failed. */
void atr_repeats_add_row(struct atr_repeats *r, const struct atr_compare_row *row,
                         unsigned repeat);
/* A run that failed: counted, left out of every interval. */
void atr_repeats_add_failed(struct atr_repeats *r, const char *target, const char *policy,
                            unsigned repeat);

/* -1 with err naming the group and the figure when the runs of one
 * target and policy do not have the same figures (a metric some runs have
 * and others not), or one repeat is there twice; else 0. */
int atr_repeats_check(const struct atr_repeats *r, struct atr_error *err);

/* The table: a line per policy and metric (median, interval, ratio to
 * naive, its interval, verdict, method), then what failed. 0, or -1 at
 * b's cap. */
int atr_repeats_write_markdown(struct atr_buf *b, const struct atr_repeats *r);

#endif
