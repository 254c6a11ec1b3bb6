/* merge.h - the request files of the shards of one run (replay llm
 * --shard I:N, one shared --start-at) read back as one set of requests,
 * and every figure computed from all of them, as one run on one machine
 * would have: exact percentiles, never an average of the shards'
 * summaries (docs/replay-llm.md, `atr replay llm --merge`).
 *
 * Memory: cfg is borrowed; a struct atr_llm_merged owns its records, its
 * summary and its stamp (atr_llm_merged_release). Nothing prints. */
#ifndef ATR_STATS_MERGE_H
#define ATR_STATS_MERGE_H

#include <stddef.h>

#include "sched/schedule.h"
#include "stats/metrics.h"
#include "stats/requests.h"
#include "util/error.h"

struct atr_llm_merge_cfg {
    const char *model;                      /* model_id to echo, or NULL: "merged" */
    /* The shards' schedule, to echo; the request rate of a trace schedule
     * is not known without the traces (null). */
    const struct atr_schedule *schedule;
    unsigned max_concurrency;               /* per shard, to echo; 0: none */
    double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;   /* goodput; < 0: unset */
    double slo_session_ms;                          /* session completion; <= 0: unset */
    const double *percentiles;              /* n_percentiles 0: the defaults */
    size_t n_percentiles;
    const char *date;                       /* the stamp, or NULL: now */
    const char *save_result, *requests_out; /* files to write, or NULL */
};

struct atr_llm_merged {
    struct atr_llm_requests reqs;           /* every request line, in file order */
    struct atr_llm_summary sum;
    struct atr_llm_bench_config bc;
    char date[32];
};

/* Reads every request line of paths[0..n), summarizes them and writes
 * save_result and requests_out (all of the lines, in file order; each file
 * all or none). 0; -1 with err set for a file that cannot be read or
 * written, a line that is not a request line ("FILE:LINE:COL: what was
 * expected") or no line at all; nothing is written then and out holds
 * nothing to release. */
int atr_llm_merge(const struct atr_llm_merge_cfg *cfg, char *const *paths, size_t n,
                  struct atr_llm_merged *out, struct atr_error *err);
void atr_llm_merged_release(struct atr_llm_merged *m);

#endif
