/* llm-merge.h - `atr replay llm --merge`: the --requests-out files of the
 * shards of one run (replay llm --shard I/N, one shared --start-at) read
 * back as one set of requests, and every figure computed from all of
 * them, as one run on one machine would have: exact percentiles, never an
 * average of the shards' summaries (docs/replay-llm.md). */
#ifndef ATR_CLI_LLM_MERGE_H
#define ATR_CLI_LLM_MERGE_H

#include <stddef.h>

#include "cli/llm-report.h"
#include "sched/schedule.h"
#include "stats/metrics.h"

struct llm_merge {
    const struct llm_report_opts *report;   /* --save-result, --percentiles, ... */
    const char *model;                      /* model_id to echo, or NULL */
    /* The shards' schedule as --rate, --arrival, ... say, to echo; the
     * request rate of a trace schedule is not known without the traces
     * (null). */
    const struct atr_schedule *schedule;
    unsigned max_concurrency;               /* per shard, to echo; 0: none */
};

/* Reads every request line of paths[0..n), summarizes them, prints the
 * block (unless quiet) and writes --save-result / --requests-out (all of
 * the lines, in file order). An exit status: 0; 1 for a file that cannot
 * be read or a line that is not a request line ("FILE:LINE:COL: what was
 * expected"; nothing is written then). */
int llm_merge(const struct llm_merge *m, char *const *paths, size_t n);

#endif
