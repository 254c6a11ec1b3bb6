/* client-bound.c - the client-bound verdict of a run (client-bound.h). */
#include "exp/client-bound.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/percentile.h"
#include "util/alloc.h"

/* The p99 of the lags of the records that have both times, in ms. */
static double lag_p99_ms(const struct atr_llm_record *r, size_t n, bool send)
{
    double *v = xcalloc(n ? n : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double at = send ? r[i].sent_s : r[i].send_s;
        if (at > 0)
            v[k++] = (at - r[i].scheduled_s) * 1000;
    }
    double p = k ? atr_percentile(v, k, 99) : NAN;
    free(v);
    return p;
}

/* Requests a second over the span of times t[0..n) (n-1 gaps). */
static double span_rate(double first, double last, size_t n)
{
    return n >= 2 && last > first ? (double)(n - 1) / (last - first) : NAN;
}

/* Most requests between their start and end at once (a sweep of +1/-1). */
static int cmp_event(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (fabs(x) > fabs(y)) - (fabs(x) < fabs(y));
}

/* Requests the schedule had released (send_s: waiting for a slot or a
 * connection, or sent) and not yet ended: what the run wanted in flight. */
static int64_t max_in_flight(const struct atr_llm_record *r, size_t n)
{
    /* sign marks the kind: +t a request was released at t, -t it ended */
    double *ev = xcalloc(2 * n + 1, sizeof *ev);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].send_s > 0 && r[i].end_s >= r[i].send_s) {
            ev[k++] = r[i].send_s;
            ev[k++] = -r[i].end_s;
        }
    qsort(ev, k, sizeof *ev, cmp_event);
    int64_t now = 0, most = 0;
    for (size_t i = 0; i < k; i++) {
        now += ev[i] > 0 ? 1 : -1;
        if (now > most)
            most = now;
    }
    free(ev);
    return most;
}

static void rates(const struct atr_llm_record *r, size_t n, struct atr_client_verdict *v)
{
    double s0 = INFINITY, s1 = -INFINITY, t0 = INFINITY, t1 = -INFINITY;
    size_t sent = 0;
    for (size_t i = 0; i < n; i++) {
        s0 = fmin(s0, r[i].scheduled_s), s1 = fmax(s1, r[i].scheduled_s);
        if (r[i].sent_s > 0) {
            t0 = fmin(t0, r[i].sent_s), t1 = fmax(t1, r[i].sent_s);
            sent++;
        }
    }
    /* The schedule's span from its first arrival: all at once is NAN. */
    v->scheduled_rate = s1 - s0 > 1e-6 ? span_rate(s0, s1, n) : NAN;
    v->achieved_rate = span_rate(sent && s0 < t0 ? s0 : t0, t1, sent);
}

void atr_client_verdict_of(const struct atr_llm_record *r, size_t n,
                           const struct atr_client_load *load, unsigned max_concurrency,
                           struct atr_client_verdict *v)
{
    memset(v, 0, sizeof *v);
    rates(r, n, v);
    v->schedule_lag_p99_ms = lag_p99_ms(r, n, false);
    v->send_lag_p99_ms = lag_p99_ms(r, n, true);
    v->busiest = load->busiest;
    v->cpu_per_request_us = n ? load->cpu_s / (double)n * 1e6 : NAN;
    v->max_in_flight = max_in_flight(r, n);
    v->connections = load->connections * (load->loops ? load->loops : 1);
    /* The first reason that holds, the most specific first: a saturated
     * core explains late timers and late bytes alike. */
    if (load->busiest >= ATR_CLIENT_BUSY)
        snprintf(v->reason, sizeof v->reason, "an event loop used %.0f %% of its core",
                 load->busiest * 100);
    else if (!max_concurrency && v->connections && v->max_in_flight > (int64_t)v->connections)
        snprintf(v->reason, sizeof v->reason, "connection pool exhausted: %lld requests in "
                 "flight for %u connections", (long long)v->max_in_flight, v->connections);
    else if (v->schedule_lag_p99_ms > ATR_CLIENT_LAG_MS)
        snprintf(v->reason, sizeof v->reason, "event loop late: schedule lag p99 %.1f ms > "
                 "%g ms", v->schedule_lag_p99_ms, ATR_CLIENT_LAG_MS);
    else if (!max_concurrency && v->send_lag_p99_ms > ATR_CLIENT_LAG_MS)
        snprintf(v->reason, sizeof v->reason, "send lag p99 %.1f ms > %g ms",
                 v->send_lag_p99_ms, ATR_CLIENT_LAG_MS);
    else if (!max_concurrency && isfinite(v->scheduled_rate) &&
             v->achieved_rate < ATR_CLIENT_RATE_SHORT * v->scheduled_rate)
        snprintf(v->reason, sizeof v->reason, "requested rate not achieved: %.1f of %.1f "
                 "requests/s", v->achieved_rate, v->scheduled_rate);
    v->client_bound = v->reason[0] != '\0';
}

/* A figure, null where it cannot be had (NaN is not JSON). */
static void kv_num(struct atr_jw *w, const char *key, double v)
{
    if (isfinite(v))
        atr_jw_kv_pyfloat(w, key, v);
    else
        atr_jw_kv_null(w, key);
}

void atr_client_verdict_write(struct atr_jw *w, const struct atr_client_verdict *v)
{
    atr_jw_key(w, "client");
    atr_jw_object_begin(w);
    kv_num(w, "scheduled_rate", v->scheduled_rate);
    kv_num(w, "achieved_rate", v->achieved_rate);
    kv_num(w, "p99_schedule_lag_ms", v->schedule_lag_p99_ms);
    kv_num(w, "p99_send_lag_ms", v->send_lag_p99_ms);
    kv_num(w, "cpu_per_request_us", v->cpu_per_request_us);
    kv_num(w, "busiest_loop", v->busiest);
    atr_jw_kv_uint(w, "max_in_flight", (uint64_t)v->max_in_flight);
    atr_jw_kv_uint(w, "connections", v->connections);
    atr_jw_kv_bool(w, "client_bound", v->client_bound);
    atr_jw_kv_str(w, "reason", v->reason[0] ? v->reason : NULL);
    atr_jw_object_end(w);
}
