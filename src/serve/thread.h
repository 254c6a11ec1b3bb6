/* thread.h - atr's engine model served over HTTP in real time on a
 * thread of this process (as `atr sim serve --profile` does), so a driver
 * that needs wall-clock replies (atr replay agent against sim:GPU/MODEL)
 * can talk to it like any server.
 *
 * Memory: the thread owns its event loop, server and URL; the profile is
 * copied. atr_sim_thread_stop ends the thread and frees everything. */
#ifndef ATR_SERVE_THREAD_H
#define ATR_SERVE_THREAD_H

#include "sim/cost.h"
#include "sim/engine.h"
#include "util/error.h"

struct atr_sim_thread;

/* Serves profile p (engine settings e, max_model_len 0: the model's) on
 * 127.0.0.1 on a free port; NULL with err set. */
struct atr_sim_thread *atr_sim_thread_start(const struct atr_profile *p,
                                            const struct atr_engine_cfg *e,
                                            unsigned max_model_len, struct atr_error *err);
/* "http://127.0.0.1:PORT", and the served model id. */
const char *atr_sim_thread_url(const struct atr_sim_thread *s);
const char *atr_sim_thread_model(const struct atr_sim_thread *s);
/* Ends the serving thread (no more replies) and fills out with its
 * engine's figures (its KV pins, evictions, prefix hits: what the run cost
 * the engine); out's histogram is the caller's (atr_sim_stats_release).
 * -1 when it serves no engine. atr_sim_thread_stop still frees s. */
int atr_sim_thread_halt(struct atr_sim_thread *s, struct atr_engine_stats *out);
/* Accepts NULL. */
void atr_sim_thread_stop(struct atr_sim_thread *s);

#endif
