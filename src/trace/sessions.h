/* sessions.h - fold single-request traces into one trace per session:
 * `atr convert --sessions` on the journal of `atr proxy` (docs/proxy.md).
 *
 * A journal line is a trace with one llm step whose meta names its session
 * ("session") and its place in it ("turn"). Folding groups the lines by
 * session and orders each session's requests by start time (then turn,
 * then input order), giving one trace per session whose llm steps are the
 * requests and whose tool steps ("tool":"client") are the time between
 * one request's end and the next one's start: the client's own time, which
 * replay (sched/workload.h) waits as think time before the next turn.
 *
 * Memory: the fold copies what it keeps of each added trace into its own
 * arena (the trace may be cleared right after atr_sessions_add); it holds
 * every request until atr_sessions_free, so memory grows with the input.
 * A built trace owns its steps and meta in its arena but borrows hash ids
 * and JSON values from the fold: use it before atr_sessions_free. */
#ifndef ATR_TRACE_SESSIONS_H
#define ATR_TRACE_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "trace/reader.h"
#include "trace/trace.h"
#include "util/error.h"

struct atr_sessions;

struct atr_sessions *atr_sessions_new(void);
void atr_sessions_free(struct atr_sessions *s);     /* accepts NULL */

/* Adds t, a trace of exactly one llm step with a string meta.session (and,
 * optionally, an integer meta.turn >= 0). 0, or -1 with err set to what
 * was expected (no position: atr_sessions_read adds it). */
int atr_sessions_add(struct atr_sessions *s, const struct atr_trace *t, struct atr_error *err);

/* Adds every trace of path (format NULL: sniffed). An error names
 * FILE:LINE:COL, a trace that is no journal line included. */
int atr_sessions_read(struct atr_sessions *s, const char *path, const char *format,
                      const struct atr_read_opts *ro, struct atr_error *err);

/* Sessions so far, and requests over all of them. */
size_t atr_sessions_count(const struct atr_sessions *s);
size_t atr_sessions_requests(const struct atr_sessions *s);

/* Fills t (cleared first) with session k, the sessions in order of their
 * first request's start (then of first appearance): trace_id
 * "proxy/<session>", start_ms its first request's, meta {session,
 * session_source, model, requests}, its requests as llm steps with t_ms
 * relative to the first and the request's meta kept as the step's "meta",
 * and a "client" tool step before each one but the first. The requests'
 * "messages" and "output" are kept only with keep_content; then a prompt
 * that continues the previous one keeps only what it adds (the format's
 * "messages since the previous llm step"). */
void atr_sessions_build(struct atr_sessions *s, size_t k, bool keep_content,
                        struct atr_trace *t);

#endif
