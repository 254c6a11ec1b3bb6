/* sched-opts.h - the arrival-schedule options `atr sim run`, `atr replay
 * llm` and `atr router` share: --rate, --burstiness, --arrival,
 * --time-scale, --seed, --max-concurrency, as an option group. */
#ifndef ATR_CLI_SCHED_OPTS_H
#define ATR_CLI_SCHED_OPTS_H

#include <stdbool.h>

#include "cli/opts.h"
#include "sched/schedule.h"

#define SCHED_HELP                                                                  \
    "arrival schedule (each trace is a session; its first turn starts on the\n"    \
    "schedule, each next turn when the previous reply ended plus the recorded\n"   \
    "tool time):\n"                                                                \
    "      --rate R|inf          sessions per second, Poisson arrivals; inf: all\n" \
    "                            at once (default: the traces' own start times)\n"  \
    "      --burstiness B        gamma shape of --rate's gaps (1 = Poisson, <1\n"  \
    "                            burstier); only with a finite --rate\n"          \
    "      --arrival KIND        trace, poisson, constant (gaps of exactly 1/R) or\n" \
    "                            burst; trace and burst take no --rate\n"         \
    "      --time-scale F        multiply trace start times and tool times by F\n"  \
    "      --seed N              seed of the random gaps (default 0)\n"             \
    "      --max-concurrency N   at most N requests in flight; the wait for a slot\n" \
    "                            is reported as client queue time\n"

struct sched_opts {
    struct atr_schedule schedule;
    unsigned max_concurrency;
    /* As given, in any order; sched_opts_finish makes the schedule of them. */
    int arrival;                 /* enum atr_arrival, or -1: not given */
    const char *rate;            /* NULL: not given */
    double burstiness;           /* NaN: not given */
};

/* The schedule options, filling a struct sched_opts: include them with
 * OPT_INCLUDE(struct my_args, sched, sched_opts_group). */
extern const struct opt sched_opts_group[];

void sched_opts_init(struct sched_opts *o);
/* Sets the schedule from --rate, --arrival and --burstiness, after parsing:
 * EXIT_OK, or EXIT_USAGE for a combination where one would be ignored. */
int sched_opts_finish(struct sched_opts *o, const char *cmd);

#endif
