/* convo.h - turn a chat trajectory into llm steps with prefix hash ids.
 *
 * Readers of chat-style sources (SWE-agent, mini-swe-agent, OpenHands,
 * OpenAI chat) feed the conversation message by message; each model call
 * becomes one llm step whose input is every message added so far. Messages
 * are rendered as "<|role|>\n" + text + "\n" and fed to the block hasher, so
 * consecutive calls share their leading hash ids exactly as the real prompts
 * share their prefix.
 *
 * Memory: the convo keeps the running block hashes (malloc, freed by
 * atr_convo_release); steps and content go into the trace's arena. */
#ifndef ATR_TRACE_CONVO_H
#define ATR_TRACE_CONVO_H

#include <stdbool.h>
#include <stddef.h>

#include "trace/tokens.h"
#include "trace/trace.h"

struct atr_convo {
    struct atr_trace *trace;
    struct atr_blockhash hash;
    bool keep_content;
    bool mark_origin;             /* readers: steps say "tokens_from":"estimated" */
    struct atr_json *pending;     /* keep_content: messages since the last llm step */
};

void atr_convo_init(struct atr_convo *c, struct atr_trace *t, bool keep_content);
void atr_convo_release(struct atr_convo *c);

/* Adds a message to the running prompt. role is "system", "user",
 * "assistant", "tool", ... */
void atr_convo_add(struct atr_convo *c, const char *role, const char *text, size_t len);

/* Emits an llm step for a model call whose prompt is every message added so
 * far and whose reply is reply[0..len): input_tokens, output_tokens (both
 * estimated) and hash_ids are set, t_ms/dur_ms left for the caller. The
 * reply is NOT added to the prompt: call atr_convo_add("assistant", ...)
 * when the source's history continues with it. With keep_content the step
 * gets "messages" (those added since the previous llm step) and "output".
 * With mark_origin, tokens_from is "estimated" until atr_step_set_counts
 * says otherwise (readers of sources; generated traces leave it out). */
struct atr_step *atr_convo_llm(struct atr_convo *c, const char *reply, size_t len);

/* Gives llm step s the source's own counts (negative: not recorded) with
 * origin from (ATR_TOKENS_RECORDED or ATR_TOKENS_SCALED): the estimates
 * move to estimated_*_tokens and input_tokens/output_tokens become what
 * the source says. Call atr_trace_fit_ids once the trace is complete. */
void atr_step_set_counts(struct atr_step *s, int64_t in, int64_t out, const char *from);

/* Fits the hash ids of every step with a recorded or scaled input to
 * ceil(input_tokens / block_size), keeping the prefix sharing the text
 * showed: a step repeats the previous such step's full blocks in the same
 * share as its estimated ids repeated that step's (all of them in an
 * append-only conversation); the first keeps its estimated ids as far as
 * they go. Blocks past those (the part of a prompt the trace does not
 * show, e.g. a system prompt the source left out) get ids unique to the
 * step: sharing that is not known is never claimed. A step without
 * recorded counts after one with them stays "estimated" but is anchored:
 * its input is that step's recorded input plus the estimated growth since
 * (its plain estimate kept in estimated_input_tokens). "Previous" means
 * the previous one of the step's own agent (atr_step.agent): a sub-agent
 * has a conversation of its own. */
void atr_trace_fit_ids(struct atr_trace *t);

/* The per-step part of atr_trace_fit_ids, for writers that fit one
 * request at a time (atr proxy's journal). atr_fit_ids_count: the ids of a
 * prompt of tokens tokens, ceil(tokens / block_size). atr_fit_ids_fill:
 * ids[0..want) are the first keep ids of from (all of them when keep >=
 * want; from may be ids itself), then ids unique to step `step` of the
 * trace named trace_id (53-bit; the same for the same name, step and
 * block, and shared with no other prompt). A single request keeps its
 * estimated ids as far as they go: keep = their count. */
uint32_t atr_fit_ids_count(uint64_t tokens, uint32_t block_size);
void atr_fit_ids_fill(uint64_t *ids, uint32_t want, const uint64_t *from, uint32_t keep,
                      const char *trace_id, uint32_t step);

/* A recorded prompt count past this is no prompt's (its ids would not fit
 * in a line): writers of one request at a time keep the estimate. */
#define ATR_FIT_MAX_TOKENS (INT64_C(1) << 24)

/* Scales the estimated counts of t's llm steps so they sum to a source's
 * recorded totals (SWE-agent's model_stats records only those): each step
 * gets its share by cumulative rounding, so the sum is exact, and is marked
 * "scaled". A total below 1 or a trace without estimated steps changes
 * nothing; steps with recorded counts are left as they are. Fits no ids. */
void atr_trace_scale_counts(struct atr_trace *t, int64_t total_in, int64_t total_out);

#endif
