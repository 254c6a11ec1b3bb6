/* llm-run.h - what `atr sim run`, `atr replay llm` and `atr compare --run`
 * share after parsing: the options of a series of runs (exp/series.h runs
 * it) and the printing of each run's block, its progress and the
 * comparison table of the runs at the end. */
#ifndef ATR_CLI_LLM_RUN_H
#define ATR_CLI_LLM_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli/llm-report.h"
#include "cli/sched-opts.h"
#include "exp/exp.h"

struct llm_run {
    const char *from;                     /* input format, or NULL: sniffed */
    const struct llm_policy_list *policies;   /* none: one run as recorded */
    const char *policy_opts;
    const struct sched_opts *sched;
    const struct llm_report_opts *report;
    const char *iterations_out;           /* sim: one line per iteration (one run, one replica) */
    bool table_only;                      /* print only the comparison table */
    const volatile sig_atomic_t *stop;    /* HTTP: set by a signal to stop early */
    /* One shard of a run on several machines: the sessions i with
     * i % shard_n == shard_i, each at its start on the whole schedule;
     * shard_n 0 or 1: all. */
    unsigned shard_i, shard_n;
    double start_at;                      /* HTTP: the schedule's 0 (wall-clock epoch), or 0 */
    unsigned threads;                     /* HTTP: event loops (exp/threads.h); <= 1: one */
    unsigned repeats;                     /* --repeat N; 0: not given (each policy once) */
};

/* Loads the traces paths[0..n_paths) and runs them on t once per policy
 * (repeats times each, interleaved, with --repeat). Returns the exit
 * status: 0; 1 on a failure (printed; no output file is left), also for
 * traces without llm steps and when every request of a run failed (its
 * files are kept; with --repeat the other runs go on, the table is printed
 * without it, and the status is 1 at the end); 130 when stopped early
 * ("interrupted" on stderr; what finished is written and printed, marked
 * incomplete). */
int llm_run(const struct llm_run *r, const struct atr_target *t, char *const *paths,
            size_t n_paths);

#endif
