/* schedule.c - session start times: trace, poisson/gamma, constant, burst. */
#include "sched/schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/rng.h"

void atr_schedule_defaults(struct atr_schedule *s)
{
    memset(s, 0, sizeof *s);
    s->kind = ATR_ARRIVAL_TRACE;
    s->burstiness = 1.0;
    s->time_scale = 1.0;
}

int atr_schedule_set_rate(struct atr_schedule *s, const char *arg, struct atr_error *err)
{
    if (strcmp(arg, "inf") == 0) {
        s->kind = ATR_ARRIVAL_BURST;
        s->rate = INFINITY;
        return 0;
    }
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end || !(v > 0) || !isfinite(v))
        return atr_error_set(err, "--rate wants requests per second > 0 or inf, not '%s'", arg);
    if (v < ATR_SCHEDULE_MIN_RATE)
        return atr_error_set(err, "--rate wants requests per second >= %g (one per %.1f days) "
                             "or inf, not '%s'", ATR_SCHEDULE_MIN_RATE,
                             1 / ATR_SCHEDULE_MIN_RATE / 86400, arg);
    s->rate = v;
    if (s->kind != ATR_ARRIVAL_CONSTANT)
        s->kind = ATR_ARRIVAL_POISSON;
    return 0;
}

const char *atr_schedule_kind_name(enum atr_arrival kind)
{
    static const char *const names[] = { "trace", "poisson", "constant", "burst" };
    return (unsigned)kind < 4 ? names[kind] : "unknown";
}

double atr_schedule_rate(const struct atr_schedule *s)
{
    switch (s->kind) {
    case ATR_ARRIVAL_POISSON:
    case ATR_ARRIVAL_CONSTANT: return s->rate;
    case ATR_ARRIVAL_BURST: return INFINITY;
    case ATR_ARRIVAL_TRACE: break;
    }
    return NAN;
}

double atr_schedule_session_rate(const struct atr_schedule *s, const struct atr_workload *w)
{
    if (s->kind != ATR_ARRIVAL_TRACE)
        return atr_schedule_rate(s);
    double first = INFINITY, last = -INFINITY;
    size_t n = 0;
    for (size_t i = 0; i < w->n_sessions; i++) {
        if (!w->sessions[i].n_turns)
            continue;
        first = fmin(first, w->sessions[i].offset_s);
        last = fmax(last, w->sessions[i].offset_s);
        n++;
    }
    if (n < 2 || !(last > first))
        return n ? INFINITY : NAN;
    return (double)(n - 1) / ((last - first) * s->time_scale);
}

double atr_schedule_request_rate(const struct atr_schedule *s, const struct atr_workload *w)
{
    for (size_t i = 0; i < w->n_sessions; i++)
        if (w->sessions[i].n_turns > 1)
            return NAN;
    return atr_schedule_session_rate(s, w);
}

int atr_schedule_starts(const struct atr_schedule *s, const struct atr_workload *w,
                        double *starts, struct atr_error *err)
{
    if (!(s->time_scale > 0) || !isfinite(s->time_scale))
        return atr_error_set(err, "--time-scale wants a number > 0");
    if ((s->kind == ATR_ARRIVAL_POISSON || s->kind == ATR_ARRIVAL_CONSTANT) &&
        (!(s->rate > 0) || !isfinite(s->rate)))
        return atr_error_set(err, "this schedule wants --rate > 0");
    if (s->kind == ATR_ARRIVAL_POISSON && (!(s->burstiness > 0) || !isfinite(s->burstiness)))
        return atr_error_set(err, "--burstiness wants a number > 0");
    struct atr_rng rng;
    atr_rng_seed(&rng, s->seed, 0x5c4ed);
    double t = 0;
    for (size_t i = 0; i < w->n_sessions; i++) {
        switch (s->kind) {
        case ATR_ARRIVAL_TRACE: t = w->sessions[i].offset_s * s->time_scale; break;
        case ATR_ARRIVAL_BURST: t = 0; break;
        case ATR_ARRIVAL_CONSTANT: t = (double)i / s->rate; break;
        case ATR_ARRIVAL_POISSON:
            if (i)
                t += atr_rng_gamma(&rng, s->burstiness, 1.0 / (s->rate * s->burstiness));
            break;
        }
        starts[i] = t;
    }
    return 0;
}
