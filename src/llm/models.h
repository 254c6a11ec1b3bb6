/* models.h - asks an OpenAI-compatible server which model it serves
 * (GET /v1/models), so `atr replay llm` works without --model as vLLM's
 * benchmark does.
 * Memory: the name is copied into the caller's buffer. */
#ifndef ATR_LLM_MODELS_H
#define ATR_LLM_MODELS_H

#include <stddef.h>

#include "util/error.h"

/* The first model id of base_url's /v1/models into out[0..cap). 0, or -1
 * with err set (unreachable, non-200, not the OpenAI list shape). */
int atr_llm_first_model(const char *base_url, const char *api_key, double timeout_s,
                        char *out, size_t cap, struct atr_error *err);

#endif
