/* sched-opts.c - parsing of the shared arrival-schedule options. */
#include "cli/sched-opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"

void sched_opts_init(struct sched_opts *o)
{
    memset(o, 0, sizeof *o);
    atr_schedule_defaults(&o->schedule);
}

static bool parse_positive(const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end || !(v > 0) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

int sched_opts_parse(struct sched_opts *o, int c, const char *arg, const char *cmd)
{
    struct atr_schedule *s = &o->schedule;
    struct atr_error err;
    unsigned long long v;
    switch (c) {
    case SCHED_OPT_RATE:
        if (atr_schedule_set_rate(s, arg, &err) < 0)
            return -cli_usage(cmd, "%s", err.msg);
        return 1;
    case SCHED_OPT_BURSTINESS:
        if (!parse_positive(arg, &s->burstiness))
            return -cli_usage(cmd, "--burstiness wants a number > 0");
        return 1;
    case SCHED_OPT_TIME_SCALE:
        if (!parse_positive(arg, &s->time_scale))
            return -cli_usage(cmd, "--time-scale wants a number > 0");
        return 1;
    case SCHED_OPT_SEED:
        if (!cli_parse_uint(arg, 0, UINT64_MAX, &v))
            return -cli_usage(cmd, "--seed wants a non-negative integer");
        s->seed = v;
        return 1;
    case SCHED_OPT_MAX_CONCURRENCY:
        if (!cli_parse_uint(arg, 1, 1000000, &v))
            return -cli_usage(cmd, "--max-concurrency wants 1..1000000");
        o->max_concurrency = (unsigned)v;
        return 1;
    case SCHED_OPT_ARRIVAL:
        if (strcmp(arg, "trace") == 0)
            s->kind = ATR_ARRIVAL_TRACE;
        else if (strcmp(arg, "poisson") == 0)
            s->kind = ATR_ARRIVAL_POISSON;
        else if (strcmp(arg, "constant") == 0)
            s->kind = ATR_ARRIVAL_CONSTANT;
        else if (strcmp(arg, "burst") == 0)
            s->kind = ATR_ARRIVAL_BURST;
        else
            return -cli_usage(cmd, "--arrival wants trace, poisson, constant or burst");
        return 1;
    }
    return 0;
}

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
