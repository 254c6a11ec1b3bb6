/* models.h - asks an OpenAI-compatible server which model it serves
 * (GET /v1/models), so `atr replay llm` works without --model as vLLM's
 * benchmark does.
 * Memory: the name is copied into the caller's buffer. */
#ifndef ATR_LLM_MODELS_H
#define ATR_LLM_MODELS_H

#include <stddef.h>

#include "util/error.h"

/* Why atr_llm_first_model failed: the server is not there (nothing to
 * list models; naming one would not help), or its answer is no model
 * list (a server without /v1/models: naming the model helps). */
enum atr_models_fail { ATR_MODELS_UNREACHABLE = 1, ATR_MODELS_NO_LIST };

/* The first model id of base_url's /v1/models into out[0..cap). 0, or -1
 * with err set and *why (may be NULL) saying which failure it was. */
int atr_llm_first_model(const char *base_url, const char *api_key, double timeout_s,
                        char *out, size_t cap, enum atr_models_fail *why,
                        struct atr_error *err);

#endif
