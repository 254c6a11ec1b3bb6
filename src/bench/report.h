/* report.h - `atr bench report`: result sets as groups (one per agent or
 * run), with counts, outcomes, the successful runs, and per commit the
 * agent's throughput against baseline and human.
 *
 * Memory: an atr_bench_report owns its groups and their results (moved in
 * from the sets added). Writers append to a caller's atr_buf. Nothing
 * prints. */
#ifndef ATR_BENCH_REPORT_H
#define ATR_BENCH_REPORT_H

#include "bench/results.h"
#include "util/buf.h"

struct atr_bench_report;

/* noise_pct: a ratio within 1 +- noise_pct/100 is a tie. */
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
 * outcome and figures. */
int atr_bench_report_csv(struct atr_buf *b, const struct atr_bench_report *r);

#endif
