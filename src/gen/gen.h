/* gen.h - seeded synthetic agent traces: SWE-style coding agents, chat
 * conversations and fixed-size requests (distributions: docs/gen.md).
 *
 * Every trace is built with atr_convo over synthetic text (words drawn from a
 * fixed vocabulary), so token counts and hash ids come from the same
 * estimator as converted traces and prefix sharing is real: a shared system
 * prompt gives the same leading ids across traces, and each call's prompt
 * is the previous one plus what came after. Output is a pure function of
 * the options: trace i uses its own random stream, so `--traces 10` is a
 * prefix of `--traces 20` for the same seed.
 *
 * Memory: a generator owns its shared texts (atr_gen_free); the trace passed
 * to atr_gen_next is cleared and refilled, owned by the caller. */
#ifndef ATR_GEN_GEN_H
#define ATR_GEN_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace.h"
#include "util/error.h"

enum atr_gen_kind { ATR_GEN_SWE, ATR_GEN_CHAT, ATR_GEN_REQUESTS };

struct atr_gen_opts {
    enum atr_gen_kind kind;
    uint64_t traces;          /* how many traces */
    uint64_t seed;
    double rate;              /* Poisson arrivals, traces per second; 0 or inf = all at 0 */
    uint32_t block_size;      /* 0 = ATR_DEFAULT_BLOCK_SIZE */
    /* requests: prompt and reply tokens (0 = 200 and 64). With a _max
     * above them, each request draws its own, uniformly from min..max
     * inclusive, from its own random stream; 0 = exactly the min. */
    uint64_t input_tokens, input_tokens_max;
    uint64_t output_tokens, output_tokens_max;
    uint64_t shared_prefix;   /* requests: tokens every prompt shares (0 = none) */
    bool keep_content;        /* write the synthetic messages too */
    /* swe: sub-agents (docs/gen.md). With subagent_prob > 0 a turn of an
     * agent above subagent_depth forks subagent_fanout sub-agents (1..16,
     * 0 = 2) with that chance; they run in parallel and the agent's next
     * call joins them. 0 = none (and no random draw for it, so traces
     * without sub-agents are the bytes they always were). depth 0 = 1. */
    double subagent_prob;
    uint32_t subagent_fanout, subagent_depth;
};

struct atr_gen;

/* Returns NULL with err set when the options cannot be met (e.g. an input
 * size too small to hold the message framing). */
struct atr_gen *atr_gen_new(const struct atr_gen_opts *opts, struct atr_error *err);
/* Fills t with the next trace: 1, or 0 after the last. */
int atr_gen_next(struct atr_gen *g, struct atr_trace *t);
void atr_gen_free(struct atr_gen *g);                 /* accepts NULL */

/* Noisy neighbours (gen-noisy.c, `atr gen --kind noisy`): fills t with
 * trace i for seed, bash steps only (CPU spins, memory hogs, fork storms;
 * docs/gen.md), start_ms 0. Not a kind of atr_gen_new: no llm steps, no
 * text. t is cleared and refilled, owned by the caller. */
void atr_gen_noisy_trace(uint64_t seed, uint64_t i, struct atr_trace *t);

/* "swe", "chat", "requests" -> kind; false when unknown. */
bool atr_gen_kind_parse(const char *name, enum atr_gen_kind *out);
const char *atr_gen_kind_name(enum atr_gen_kind kind);

#endif
