/* stats.h - an engine's (or several replicas') figures as one summary and
 * as the "engine" member of a result JSON.
 * Memory: the summary's batch histogram is malloc'd and owned by it
 * (atr_sim_stats_release). */
#ifndef ATR_SIM_STATS_H
#define ATR_SIM_STATS_H

#include "sim/cost.h"
#include "sim/engine.h"
#include "json/writer.h"

/* Sums replicas: counts and busy time add up, the hit rate is over all
 * prompt tokens, the KV peak is the largest, the KV mean and the mean batch
 * are averaged (weighted by busy time and by iterations). */
void atr_sim_stats_sum(struct atr_engine *const *engines, unsigned n,
                       struct atr_engine_stats *out);
void atr_sim_stats_release(struct atr_engine_stats *s);

/* The member "engine": {...} of a result's "atr" object (profile, tp,
 * replicas, flavour, the figures, the requests rejected as too long for the
 * KV cache ("skipped_oversized"), and the batch histogram trimmed after its
 * last non-zero bucket). */
void atr_sim_stats_write(struct atr_jw *w, const struct atr_profile *p, unsigned replicas,
                         const char *flavour, const struct atr_engine_stats *s);

#endif
