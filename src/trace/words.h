/* words.h - the fixed vocabulary of atr's synthetic prompt text: 256 common
 * lower-case English words, each with a leading space, each one token in
 * Llama-3, Qwen and GPT tokenizers, in atr's own estimator (tokens.h) and in
 * the models `atr gen --kind gguf` writes. Replay's prompts (llm/prompt.c)
 * draw from it; the model generator (gen/gguf.c) gives each word a token. */
#ifndef ATR_TRACE_WORDS_H
#define ATR_TRACE_WORDS_H

#include <stdint.h>

#define ATR_PROMPT_WORDS 256

/* Word i, a static string such as " the". */
const char *atr_prompt_word(uint8_t i);

#endif
