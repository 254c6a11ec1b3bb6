/* prompt.h - deterministic prompts for hash-only traces, and the request
 * bodies `atr replay llm` sends.
 *
 * A block id always gives the same block_size words, so two requests that
 * share leading hash_ids share byte-identical leading text and a real
 * engine's prefix cache hits exactly where the recorded one did. Each word
 * is a common lower-case English word with a leading space (trace/words.h):
 * one token in Llama-3, Qwen and GPT tokenizers, in atr's own estimator and
 * in the models `atr gen --kind gguf` writes, so a block of
 * N words is N tokens and block boundaries line up with the engine's. The
 * part of a prompt past its last block id is filled with words drawn from a
 * per-request seed, so it is shared with nobody (an unrecorded suffix).
 *
 * Memory: everything is appended to the caller's atr_buf. */
#ifndef ATR_LLM_PROMPT_H
#define ATR_LLM_PROMPT_H

#include <stdbool.h>
#include <stdint.h>

#include "llm/client.h"
#include "sched/workload.h"
#include "util/buf.h"

/* The prompt text of turn t (ids in blocks of block_size tokens), with
 * unique_seed choosing the words past the last id. */
int atr_prompt_text(struct atr_buf *b, const struct atr_turn *t, uint32_t block_size,
                    uint64_t unique_seed);

struct atr_body_opts {
    enum atr_llm_api api;
    const char *model;           /* required by most servers */
    bool stream;                 /* true: SSE with include_usage */
    bool force_length;           /* ignore_eos + min_tokens = max_tokens (vLLM, SGLang) */
    const char *run_salt;        /* first of all: a word unique to one run, so runs of
                                    several policies never share cached prefixes; or NULL */
    const char *salt;            /* prepended to the prompt (defeats prefix caching), or NULL;
                                    plain letters, digits and spaces only (both) */
    uint32_t max_tokens;         /* output cap below the turn's length, or 0 */
    const char *user;            /* OpenAI's "user" field (a session hint), or NULL */
    /* replay llm --session-hint: each turn with a turn to come sends its
     * session's trace id as "user" (atr sim serve --kv-retain pins those);
     * the replay sets user per turn, atr_prompt_body ignores this flag */
    bool session_hint;
};

/* The JSON body for turn t. */
int atr_prompt_body(struct atr_buf *b, const struct atr_body_opts *o, const struct atr_turn *t,
                    uint32_t block_size, uint64_t unique_seed);

#endif
