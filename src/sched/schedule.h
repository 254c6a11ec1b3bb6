/* schedule.h - when each session of a workload starts.
 *
 * Sessions start in workload order. The kinds:
 *   trace     the traces' own start times, times time_scale
 *   poisson   inter-arrival gaps drawn from a gamma distribution with shape
 *             burstiness and mean 1/rate (burstiness 1 is a Poisson process),
 *             as `vllm bench serve --request-rate R --burstiness B` does
 *   constant  one session every 1/rate seconds
 *   burst     all at time 0 (`--rate inf`)
 * The first session starts at 0 in every kind. time_scale also scales the
 * recorded think times (atr_schedule_think). Deterministic for a seed.
 * Memory: nothing is kept; starts are written into the caller's array. */
#ifndef ATR_SCHED_SCHEDULE_H
#define ATR_SCHED_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "sched/workload.h"
#include "util/error.h"

enum atr_arrival { ATR_ARRIVAL_TRACE, ATR_ARRIVAL_POISSON, ATR_ARRIVAL_CONSTANT, ATR_ARRIVAL_BURST };

struct atr_schedule {
    enum atr_arrival kind;
    double rate;                 /* sessions per second (poisson, constant) */
    double burstiness;           /* gamma shape, > 0; 1 = Poisson */
    double time_scale;           /* > 0; 0.5 replays twice as fast */
    uint64_t seed;
};

/* trace kind, burstiness 1, time_scale 1, seed 0. */
void atr_schedule_defaults(struct atr_schedule *s);

/* The lowest rate taken: one session per 11.6 days. Below it the
 * arrivals of even a small workload span years, past the range the
 * per-second figures (stats/metrics.c) cover: such a rate is a typo, and
 * is refused before anything runs rather than after the whole run. */
#define ATR_SCHEDULE_MIN_RATE 1e-6

/* Parses a --rate value: a number >= ATR_SCHEDULE_MIN_RATE, or "inf"
 * (burst). Sets kind to poisson (or burst) unless it is constant already. */
int atr_schedule_set_rate(struct atr_schedule *s, const char *arg, struct atr_error *err);

/* starts[i] for each of the n sessions of w. */
int atr_schedule_starts(const struct atr_schedule *s, const struct atr_workload *w,
                        double *starts, struct atr_error *err);

/* The think time a driver waits before turn t of a session. */
static inline double atr_schedule_think(const struct atr_schedule *s, const struct atr_turn *t)
{
    return t->think_s * s->time_scale;
}

/* The kind's name: "trace", "poisson", "constant" or "burst". */
const char *atr_schedule_kind_name(enum atr_arrival kind);

/* Sessions a second the schedule starts, as configured: the rate
 * (poisson, constant), INFINITY (burst: all at once), NAN (trace: it
 * depends on the workload, see atr_schedule_session_rate). */
double atr_schedule_rate(const struct atr_schedule *s);

/* Sessions a second the schedule starts w's sessions at (those with llm
 * turns): atr_schedule_rate, and for trace the recorded starts' mean rate,
 * (n - 1) / their span over time_scale (INFINITY when they start
 * together). */
double atr_schedule_session_rate(const struct atr_schedule *s, const struct atr_workload *w);

/* vLLM's request_rate of w under s: the rate at which requests are sent
 * whatever the server does. Only a workload whose sessions are single
 * requests has one, its session rate; NAN when a session has later turns,
 * sent when the answer to the one before came back (no request rate was
 * configured then; the session rate says what was). */
double atr_schedule_request_rate(const struct atr_schedule *s, const struct atr_workload *w);

#endif
