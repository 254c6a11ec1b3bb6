/* decide.h - the learned router's decision outside the simulator (`atr
 * router decide`, the report's router lab): feature vectors written as
 * "name=value,..." and the per-turn requests of a trace as the simulator
 * builds them.
 *
 * Nothing here prints or allocates beyond what the caller passes. The
 * workload is borrowed. */
#ifndef ATR_ROUTER_DECIDE_H
#define ATR_ROUTER_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/learned-features.h"
#include "sched/workload.h"
#include "util/error.h"

/* Parses "name=value,name=value" (names of atr_router_feature_names,
 * values finite numbers, spaces around either allowed) into
 * x[ATR_ROUTER_N_FEATURES]; a feature not named is 0. Errors read
 * "where:line:col: expected ..." with col counted in spec from 1. */
int atr_router_parse_features(const char *spec, const char *where, unsigned long line,
                              double *x, struct atr_error *err);

/* One llm turn as the learned policy sees it when the simulator sends it
 * on time with the recorded output lengths: since_last_s is the recorded
 * think time, prev_output_tokens and mean_output_tokens come from the
 * recorded outputs (a run where max-tokens caps outputs, or where the
 * engine queues the request, sees other values for these two or three). */
struct atr_router_turn {
    uint32_t prompt_tokens, n_ids, shared;   /* shared: blocks in common with the previous turn */
    unsigned tool;                           /* atr_router_tool_class of the previous tool */
    double think_s, since_last_s;
    uint32_t prev_output_tokens;
    double mean_output_tokens;
};

/* Turn t of session s of w (turns in order: the prefix reuse compares
 * with turn t-1), and its feature vector x[ATR_ROUTER_N_FEATURES]
 * computed by atr_router_features. */
void atr_router_turn_of(const struct atr_workload *w, size_t s, size_t t,
                        struct atr_router_turn *out, double *x);

#endif
