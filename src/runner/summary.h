/* summary.h - summary.json of a tool replay, computed from metrics.jsonl
 * lines, so a live run and a merge of shards (atr replay tools --merge)
 * give the same figures from the same lines. Percentiles sort the
 * samples, so writing the summary is not const.
 * Memory: the summary owns its per-config latency arrays (malloc). */
#ifndef ATR_RUNNER_SUMMARY_H
#define ATR_RUNNER_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

struct atr_replay_summary;

struct atr_replay_summary *atr_replay_summary_new(void);
void atr_replay_summary_free(struct atr_replay_summary *s);   /* accepts NULL */

/* Adds one metrics.jsonl line; where names it in errors (file:line). */
int atr_replay_summary_add(struct atr_replay_summary *s, const char *line, size_t len,
                           const char *file, unsigned long lineno, struct atr_error *err);

/* Appends summary.json: {"backend": ..., "configs": [{config, traces,
 * total_steps, latency_p50_ms, ...}, ...]}. backend may be NULL. */
void atr_replay_summary_json(struct atr_replay_summary *s, const char *backend,
                             bool incomplete, struct atr_buf *out);

#endif
