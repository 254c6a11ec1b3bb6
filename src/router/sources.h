/* sources.h - which source each session of a workload came from, for the
 * router's source-held-out evaluation (docs/policies.md, "## learned").
 *
 * A session's source is its trace's `source` field (the reader that made
 * it: "swe-agent", "openai-chat", ...); generated traces ("gen") are told
 * apart by their generator kind: "gen-swe", "gen-chat". A trace without a
 * source is "unknown".
 *
 * Memory: atr_router_sources owns its names and group array;
 * atr_router_sources_release frees them. */
#ifndef ATR_ROUTER_SOURCES_H
#define ATR_ROUTER_SOURCES_H

#include <stddef.h>

#include "sched/workload.h"
#include "util/error.h"

struct atr_router_sources {
    char **names;                 /* distinct sources, in order of first sight */
    size_t n_names;
    size_t *group;                /* [n_sessions]: index into names */
    size_t n_sessions;
};

/* Reads the traces of paths again (as atr_workload_load did, same order)
 * and assigns every session of w its source. Fails when the files no
 * longer give w's sessions. */
int atr_router_sources_load(struct atr_router_sources *out, char *const *paths, size_t n_paths,
                            const char *format, const struct atr_workload *w,
                            struct atr_error *err);
/* The index of name, or -1. */
long atr_router_source_index(const struct atr_router_sources *s, const char *name);
void atr_router_sources_release(struct atr_router_sources *s);

#endif
