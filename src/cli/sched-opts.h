/* sched-opts.h - the arrival-schedule options `atr sim run` and `atr replay
 * llm` share: --rate, --burstiness, --arrival, --time-scale, --seed,
 * --max-concurrency. */
#ifndef ATR_CLI_SCHED_OPTS_H
#define ATR_CLI_SCHED_OPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "sched/schedule.h"

enum { SCHED_OPT_RATE = 0x1000, SCHED_OPT_BURSTINESS, SCHED_OPT_ARRIVAL, SCHED_OPT_TIME_SCALE,
       SCHED_OPT_SEED, SCHED_OPT_MAX_CONCURRENCY };

#define SCHED_LONG_OPTIONS                                                          \
    {"rate", required_argument, NULL, SCHED_OPT_RATE},                              \
    {"burstiness", required_argument, NULL, SCHED_OPT_BURSTINESS},                  \
    {"arrival", required_argument, NULL, SCHED_OPT_ARRIVAL},                        \
    {"time-scale", required_argument, NULL, SCHED_OPT_TIME_SCALE},                  \
    {"seed", required_argument, NULL, SCHED_OPT_SEED},                              \
    {"max-concurrency", required_argument, NULL, SCHED_OPT_MAX_CONCURRENCY}

#define SCHED_HELP                                                                  \
    "arrival schedule (each trace is a session; its first turn starts on the\n"    \
    "schedule, each next turn when the previous reply ended plus the recorded\n"   \
    "tool time):\n"                                                                \
    "      --rate R|inf          sessions per second, Poisson arrivals; inf: all\n" \
    "                            at once (default: the traces' own start times)\n"  \
    "      --burstiness B        gamma shape of the gaps (1 = Poisson, <1 burstier)\n" \
    "      --arrival KIND        trace, poisson, constant (gaps of exactly 1/R) or\n" \
    "                            burst\n"                                           \
    "      --time-scale F        multiply trace start times and tool times by F\n"  \
    "      --seed N              seed of the random gaps (default 0)\n"             \
    "      --max-concurrency N   at most N requests in flight; the wait for a slot\n" \
    "                            is reported as client queue time\n"

struct sched_opts {
    struct atr_schedule schedule;
    unsigned max_concurrency;
};

void sched_opts_init(struct sched_opts *o);
/* Handles option c if it is one of SCHED_OPT_*: returns 1 when taken, 0
 * when c is not a schedule option, or EXIT_USAGE's negation (-2) after
 * printing a usage error for cmd. */
int sched_opts_parse(struct sched_opts *o, int c, const char *arg, const char *cmd);
/* Checks combinations after parsing; EXIT_OK or EXIT_USAGE. */
int sched_opts_finish(struct sched_opts *o, const char *cmd);

#endif
