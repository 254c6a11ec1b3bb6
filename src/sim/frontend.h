/* frontend.h - the API server in front of an engine replica, as both
 * `atr sim run` (virtual time) and `atr sim serve` (real time) model it:
 * the context-length check that answers 400 before the engine sees a
 * request, and the time from a request's arrival to its hand-over to the
 * engine (tokenising its prompt in a queue, one prompt at a time, then a
 * fixed time per request). One set of terms for both commands, so the
 * simulator and its HTTP server agree (docs/sim.md, "Cost of one
 * iteration").
 *
 * Memory: plain values; nothing to free. */
#ifndef ATR_SIM_FRONTEND_H
#define ATR_SIM_FRONTEND_H

#include <stddef.h>
#include <stdint.h>

#include "sim/cost.h"

/* The failure reason a request over the context length gets in the
 * simulator's records (the server answers 400 with the message of
 * atr_context_check). */
#define ATR_SIM_CONTEXT_ERROR "prompt + output longer than the model's context"

/* vLLM's rule (serving_engine.py, _validate_input): a request whose prompt
 * plus max output tokens is over max_model_len is refused. 0 when it fits;
 * -1 when not, with vLLM's message in msg (cap bytes, may be NULL). */
int atr_context_check(uint64_t max_model_len, uint64_t prompt_tokens, uint64_t output_tokens,
                      char *msg, size_t cap);

/* One replica's API server: request_s per request and token_s per prompt
 * token (struct atr_profile's frontend_s and frontend_token_s; both 0 for
 * an offline run, vLLM's LLM class), and when its tokeniser is free. */
struct atr_frontend {
    double request_s, token_s;
    double tokeniser_free;
};

/* The front end of profile p: its flavour's terms, none after
 * atr_profile_set_offline. */
void atr_frontend_init(struct atr_frontend *f, const struct atr_profile *p);

/* When a request that arrived at `now` reaches the engine: its prompt is
 * tokenised after the prompts before it (vLLM runs its tokeniser on a
 * single-thread executor, SGLang in one tokenizer process, so a burst's
 * prompts reach the engine in the order sent, not shortest first), then
 * the rest of the front end's time is per request. Calls come in arrival
 * order. */
double atr_frontend_arrival(struct atr_frontend *f, uint64_t prompt_tokens, double now);

#endif
