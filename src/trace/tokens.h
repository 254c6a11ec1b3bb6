/* tokens.h - deterministic token estimator and prefix-block hashing.
 *
 * No tokenizer ships with atr (no model files), so token counts come from a
 * pseudo-tokenizer that splits text the way byte-pair encoders roughly do
 * (letter runs, digit groups of 3, punctuation, whitespace runs, UTF-8 code
 * points). It is deterministic and prefix-stable: the tokens of a text never
 * depend on what follows it, so two prompts that share leading messages share
 * leading tokens and hence leading blocks. `atr stats` reports its error
 * against real counts where a source records them. */
#ifndef ATR_TRACE_TOKENS_H
#define ATR_TRACE_TOKENS_H

#include <stddef.h>
#include <stdint.h>

/* Number of estimated tokens in text[0..len). */
uint64_t atr_tokens_estimate(const char *text, size_t len);

/* hash ids are 53-bit so every JSON reader (doubles) keeps them exact. */
#define ATR_HASH_ID_MASK ((UINT64_C(1) << 53) - 1)

/* Streaming block hasher: feed text pieces; every block_size estimated tokens
 * closes a block whose id is XXH3 of its bytes seeded with the previous
 * block's hash (chained, like vLLM's prefix cache). */
struct atr_blockhash {
    uint32_t block_size;
    uint64_t tokens;          /* tokens fed so far */
    uint64_t chain;           /* full 64-bit hash of the last closed block (0 at start) */
    uint32_t in_block;        /* tokens in the open block */
    uint64_t open_hash;       /* running hash of the open block's bytes */
    uint64_t *ids;            /* closed block ids (malloc, owned) */
    size_t n_ids, cap_ids;
};

void atr_blockhash_init(struct atr_blockhash *h, uint32_t block_size);
void atr_blockhash_feed(struct atr_blockhash *h, const char *text, size_t len);
/* Id the open (partial) block would have, or 0 if it is empty. */
uint64_t atr_blockhash_partial_id(const struct atr_blockhash *h);
void atr_blockhash_release(struct atr_blockhash *h);

#endif
