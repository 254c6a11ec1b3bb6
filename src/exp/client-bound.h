/* client-bound.h - does the load generator, not the server, limit a run
 * against an HTTP target? From the run's records and the client's own CPU
 * time: the rate achieved against the one the schedule asked for, the
 * schedule lag (the event loop releasing requests late), the send lag
 * (the bytes leaving late), the busiest event loop's share of a core, and
 * whether more requests were in flight than the connection pool holds.
 * The verdict is true with the first reason that holds (docs/replay-llm.md,
 * "When the client is the bottleneck").
 *
 * Memory: a verdict holds no pointers. Nothing prints. */
#ifndef ATR_EXP_CLIENT_BOUND_H
#define ATR_EXP_CLIENT_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/writer.h"
#include "stats/metrics.h"

#define ATR_CLIENT_LAG_MS 10.0       /* send or schedule lag p99 past it: late */
#define ATR_CLIENT_BUSY 0.90         /* an event loop this busy saturates its core */
#define ATR_CLIENT_RATE_SHORT 0.95   /* achieved below this share of the asked rate */

/* The client's work: CPU seconds its event loops spent and the seconds
 * they ran (summed over loops), and the busiest loop's CPU over its wall
 * time; the connection pool of each loop. */
struct atr_client_load {
    double cpu_s, wall_s, busiest;
    unsigned loops;
    unsigned connections;            /* per loop */
};

struct atr_client_verdict {
    double scheduled_rate;           /* requests/s the schedule released; NAN: all at once */
    double achieved_rate;            /* requests/s whose bytes left */
    double schedule_lag_p99_ms, send_lag_p99_ms;
    double cpu_per_request_us;       /* client CPU over the requests sent */
    double busiest;                  /* of a core, 0..1+ */
    int64_t max_in_flight;
    unsigned connections;            /* of all loops */
    bool client_bound;
    char reason[192];                /* why, or "" */
};

/* The verdict of records r[0..n) (scheduled_s, send_s and sent_s in one
 * clock) under load; max_concurrency: the run's --max-concurrency (its
 * waits are asked for, never the client's fault), 0 none. */
void atr_client_verdict_of(const struct atr_llm_record *r, size_t n,
                           const struct atr_client_load *load, unsigned max_concurrency,
                           struct atr_client_verdict *v);

/* "client": {...} into the result object being written. */
void atr_client_verdict_write(struct atr_jw *w, const struct atr_client_verdict *v);

#endif
