/* retention.h - does a session's KV cache survive its tool pauses? Over
 * the multi-turn sessions of a run: for each turn after the first, the
 * pause since the previous turn ended (its tool calls, the agent's
 * thinking) and how much of the prefix it shares with that turn the
 * server had still cached (usage.cached_tokens against the previous
 * prompt plus its reply), binned by pause length: the curve "hit rate
 * against pause" that says how long a cache must hold a session.
 *
 * Memory: a value type; nothing kept. Nothing prints. */
#ifndef ATR_STATS_RETENTION_H
#define ATR_STATS_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct atr_llm_record;   /* stats/metrics.h, which holds a struct atr_retention */

#define ATR_RETENTION_BINS 7

struct atr_retention_bin {
    double lo_s, hi_s;           /* pause in [lo, hi) seconds; hi INFINITY for the last */
    int64_t turns;               /* turns whose pause fell here */
    int64_t shareable;           /* tokens they could have found cached */
    int64_t cached;              /* of those, what the server had */
};

struct atr_retention {
    struct atr_retention_bin bins[ATR_RETENTION_BINS];
    int64_t turns;               /* counted: after a successful turn, cached tokens known */
    int64_t unknown;             /* later turns without cached tokens (the server
                                    reported none) or after a failed turn */
};

/* The curve of records r[0..n) (turns of sessions by trace_id and turn). */
void atr_retention_of(const struct atr_llm_record *r, size_t n, struct atr_retention *out);

/* The share of the shareable tokens found cached in bin b; NAN when none. */
double atr_retention_reuse(const struct atr_retention_bin *b);

#endif
