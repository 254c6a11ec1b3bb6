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
 * gets "messages" (those added since the previous llm step) and "output". */
struct atr_step *atr_convo_llm(struct atr_convo *c, const char *reply, size_t len);

#endif
