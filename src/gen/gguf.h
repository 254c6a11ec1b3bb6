/* gguf.h - `atr gen --kind gguf`: a small Llama-architecture model with
 * random weights, as a GGUF v3 file that llama.cpp's llama-server loads.
 *
 * The model is for exercising a real serving engine, not for language: its
 * weights are seeded random numbers (the same options give the same bytes),
 * and its SentencePiece vocabulary makes each of atr's 256 prompt words
 * (trace/words.h) one token, so a prompt of N words is N tokens (+ BOS) on the
 * engine as in atr's own counts. Details that make it behave (docs/engines.md):
 * embedding dimension 0 is a constant no layer writes to, which gives the
 * output layer a bias: tokens that must never be generated (control, byte
 * and padding tokens) get a large negative logit, and </s> a logit set from
 * the wanted end-of-sequence probability. A separate output matrix (not tied
 * to the embeddings) keeps the model from repeating its last token.
 *
 * Memory: nothing is kept between calls; the caller owns the output. */
#ifndef ATR_GEN_GGUF_H
#define ATR_GEN_GGUF_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"
#include "util/output.h"

struct atr_gguf_model {
    uint32_t layers, embd, heads, kv_heads, ff;
    uint32_t ctx;              /* llama.context_length */
    uint32_t vocab;            /* total tokens; 0 = the fixed tokens only */
    double eos_prob;           /* wanted P(</s>) per generated token, 0..0.5 */
    uint64_t seed;
};

/* "tiny" or "small" -> the preset's shape (seed and eos_prob untouched);
 * false when unknown. */
bool atr_gguf_preset(const char *name, struct atr_gguf_model *m);

/* 0 when m can be written; else -1 with err naming the impossible shape. */
int atr_gguf_model_check(const struct atr_gguf_model *m, struct atr_error *err);

/* Tokens the vocabulary needs: specials, 256 bytes, ChatML markers and the
 * prompt words' pieces. */
uint32_t atr_gguf_fixed_tokens(void);

/* Writes the model to out (not committed: the caller commits or aborts).
 * Checks m first. 0, or -1 with err set. */
int atr_gguf_model_write(const struct atr_gguf_model *m, struct atr_output *out,
                         struct atr_error *err);

#endif
