/* sched-opts.c - the shared arrival-schedule options as an option group. */
#include "cli/sched-opts.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cli/cmd.h"

void sched_opts_init(struct sched_opts *o)
{
    memset(o, 0, sizeof *o);
    atr_schedule_defaults(&o->schedule);
}

/* --rate R|inf: the schedule's own parser says what is wrong. */
static bool parse_rate(void *base, const char *arg, const char *cmd)
{
    struct sched_opts *o = base;
    struct atr_error err;
    if (atr_schedule_set_rate(&o->schedule, arg, &err) == 0)
        return true;
    cli_usage(cmd, "%s", err.msg);
    return false;
}

#define ARGS struct sched_opts
const struct opt sched_opts_group[] = {
    OPT_CALL("rate", 0, parse_rate, NULL),
    OPT_DOUBLE(ARGS, schedule.burstiness, "burstiness", 0, OPT_GT0, OPT_FINITE,
               "--burstiness wants a number > 0"),
    OPT_ENUM(ARGS, schedule.kind, "arrival", 0, OPT_WORDS("trace", "poisson", "constant", "burst"),
             "--arrival wants trace, poisson, constant or burst"),
    OPT_DOUBLE(ARGS, schedule.time_scale, "time-scale", 0, OPT_GT0, OPT_FINITE,
               "--time-scale wants a number > 0"),
    OPT_UINT(ARGS, schedule.seed, "seed", 0, 0, UINT64_MAX, "--seed wants a non-negative integer"),
    OPT_UINT(ARGS, max_concurrency, "max-concurrency", 0, 1, 1000000,
             "--max-concurrency wants 1..1000000"),
    OPT_END,
};
#undef ARGS

int sched_opts_finish(struct sched_opts *o, const char *cmd)
{
    struct atr_schedule *s = &o->schedule;
    bool wants_rate = s->kind == ATR_ARRIVAL_POISSON || s->kind == ATR_ARRIVAL_CONSTANT;
    if (wants_rate && !(s->rate > 0))
        return cli_usage(cmd, "--arrival poisson and constant want --rate R");
    if (s->kind == ATR_ARRIVAL_CONSTANT && isinf(s->rate))
        return cli_usage(cmd, "--arrival constant wants a finite --rate");
    if (s->kind == ATR_ARRIVAL_POISSON && isinf(s->rate))
        s->kind = ATR_ARRIVAL_BURST;
    return EXIT_OK;
}
