/* sched-opts.c - the shared arrival-schedule options as an option group. */
#include "cli/sched-opts.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cli/cmd.h"

static const char *const arrivals[] = {"trace", "poisson", "constant", "burst", NULL};

void sched_opts_init(struct sched_opts *o)
{
    memset(o, 0, sizeof *o);
    atr_schedule_defaults(&o->schedule);
    o->arrival = -1;
    o->burstiness = NAN;
}

#define ARGS struct sched_opts
const struct opt sched_opts_group[] = {
    OPT_STRING(ARGS, rate, "rate", 0),
    OPT_DOUBLE(ARGS, burstiness, "burstiness", 0, OPT_GT0, OPT_FINITE,
               "--burstiness wants a number > 0"),
    OPT_ENUM(ARGS, arrival, "arrival", 0, arrivals,
             "--arrival wants trace, poisson, constant or burst"),
    OPT_DOUBLE(ARGS, schedule.time_scale, "time-scale", 0, OPT_GT0, OPT_FINITE,
               "--time-scale wants a number > 0"),
    OPT_UINT(ARGS, schedule.seed, "seed", 0, 0, UINT64_MAX, "--seed wants a non-negative integer"),
    OPT_UINT(ARGS, max_concurrency, "max-concurrency", 0, 1, 1000000,
             "--max-concurrency wants 1..1000000"),
    OPT_END,
};
#undef ARGS

/* --arrival KIND against --rate (already applied: poisson, or burst for
 * inf): the kinds that time sessions by the rate want one, the others
 * would ignore it. */
static int apply_arrival(struct sched_opts *o, const char *cmd)
{
    struct atr_schedule *s = &o->schedule;
    switch (o->arrival) {
    case ATR_ARRIVAL_TRACE:
    case ATR_ARRIVAL_BURST:
        if (o->rate)
            return cli_usage(cmd, "--arrival %s takes no --rate (--rate R alone: Poisson "
                             "arrivals, R sessions/s)", arrivals[o->arrival]);
        s->kind = (enum atr_arrival)o->arrival;
        return EXIT_OK;
    case ATR_ARRIVAL_POISSON:
    case ATR_ARRIVAL_CONSTANT:
        if (!o->rate)
            return cli_usage(cmd, "--arrival poisson and constant want --rate R");
        if (o->arrival == ATR_ARRIVAL_CONSTANT && isinf(s->rate))
            return cli_usage(cmd, "--arrival constant wants a finite --rate");
        if (o->arrival == ATR_ARRIVAL_CONSTANT)
            s->kind = ATR_ARRIVAL_CONSTANT;
        return EXIT_OK;   /* poisson at rate inf is the burst --rate inf made */
    default:
        return EXIT_OK;
    }
}

int sched_opts_finish(struct sched_opts *o, const char *cmd)
{
    struct atr_schedule *s = &o->schedule;
    struct atr_error err;
    if (o->rate && atr_schedule_set_rate(s, o->rate, &err) < 0)
        return cli_usage(cmd, "%s", err.msg);
    int rc = apply_arrival(o, cmd);
    if (rc != EXIT_OK || isnan(o->burstiness))
        return rc;
    if (s->kind != ATR_ARRIVAL_POISSON)
        return cli_usage(cmd, "--burstiness shapes Poisson gaps: it wants a finite --rate R, "
                         "without --arrival constant");
    s->burstiness = o->burstiness;
    return EXIT_OK;
}
