/* report.h - `atr bench report`: result sets as groups (one per agent or
 * run), with counts, outcomes, per agent its own success rate, the
 * successful runs, and per commit the agent against baseline and human
 * (throughput, TTFT, TPOT, ITL, E2EL) over repeats: medians, the ratio
 * with its 95 % interval and the verdict read off it (stats/ci.h), true
 * success, and the human's speedup over baseline as the reference.
 *
 * Memory: an atr_bench_report owns its groups and their results (moved in
 * from the sets added). Writers append to a caller's atr_buf. Nothing
 * prints. */
#ifndef ATR_BENCH_REPORT_H
#define ATR_BENCH_REPORT_H

#include "bench/results.h"
#include "util/buf.h"

struct atr_bench_report;

/* noise_pct: the tie margin: a ratio whose interval lies within 1 +-
 * noise_pct/100 is a tie (win, loss and inconclusive come from the
 * interval alone). */
struct atr_bench_report *atr_bench_report_new(double noise_pct);
void atr_bench_report_free(struct atr_bench_report *r);   /* accepts NULL */

/* Moves the results of s into the group named name (made at its first
 * add; adding to a name again merges, as the shards of one run); s is
 * left empty. */
void atr_bench_report_add(struct atr_bench_report *r, const char *name,
                          struct atr_bench_set *s);

/* Appends s as plain text for a Markdown table cell, heading or list
 * item: '|', '`', '<', '>', '&', '[', ']' and '\\' as HTML entities, line
 * breaks and other control bytes as spaces. 0, or -1 at the buffer's cap.
 * (atr compare's tables use it too.) */
int atr_md_text(struct atr_buf *b, const char *s);

/* Each returns 0, or -1 when the buffer's cap is reached. */
int atr_bench_report_markdown(struct atr_buf *b, const struct atr_bench_report *r);
int atr_bench_report_json(struct atr_buf *b, const struct atr_bench_report *r);
/* One row per result: group, file, commit, variant, agent, model, status,
 * outcome, figures and repeat. */
int atr_bench_report_csv(struct atr_buf *b, const struct atr_bench_report *r);
/* One row per ratio (agent vs baseline, agent vs human, human vs baseline,
 * per metric): the two medians, the ratio, its interval and verdict. */
int atr_bench_report_csv_ratios(struct atr_buf *b, const struct atr_bench_report *r);

#endif
