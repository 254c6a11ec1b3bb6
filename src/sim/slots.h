/* slots.h - llama-server's parallel slots as the llama.cpp engine flavour
 * sees them (docs/sim-engine.md, "llama.cpp flavour"): each slot caches the
 * prompt it ran last; a new prompt takes the idle slot whose cache shares
 * the largest part of it (over a similarity threshold), else the least
 * recently used idle slot; a RAM prompt cache keeps prompts that slots
 * gave up and restores a better one into the slot taken.
 *
 * Prompts are lists of chained block ids (one per full block of
 * block_size tokens, as in traces), so a common prefix is counted in whole
 * blocks. Memory: the slots own copies of the ids they cache; ids passed
 * in are borrowed for the call only. */
#ifndef ATR_SIM_SLOTS_H
#define ATR_SIM_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

struct atr_slots;

struct atr_slots_cfg {
    unsigned n;                  /* parallel slots (llama-server -np), >= 1 */
    unsigned block_size;         /* tokens per id, >= 1 */
    /* --slot-prompt-similarity (llama-server: 0.1): a slot is chosen by its
     * cache only when the common prefix is more than this share of the new
     * prompt; 0 always takes the least recently used idle slot. */
    double similarity;
    /* Tokens the RAM prompt cache may hold (--cache-ram in tokens of KV);
     * 0: no RAM cache. */
    uint64_t ram_tokens;
};

/* Counts for the engine's figures and tests. */
struct atr_slots_stats {
    uint64_t by_prefix, by_lru;  /* slots chosen by their cache / least recently used */
    uint64_t ram_saves, ram_restores, ram_evictions;
    uint64_t ram_tokens;         /* tokens held by the RAM cache now */
    unsigned ram_entries;
};

struct atr_slots *atr_slots_new(const struct atr_slots_cfg *cfg);
void atr_slots_free(struct atr_slots *s);     /* NULL is fine */

/* Takes an idle slot for a prompt of prompt_tokens tokens whose full blocks
 * are ids[0..n_ids): the slot choice, then the RAM cache's save and
 * restore, as llama-server's get_available_slot; then every other idle
 * slot's prompt is saved to the RAM cache (its --cache-idle-slots default).
 * *cached gets the prompt tokens the slot already holds, at most
 * prompt_tokens - 1 (the last token always runs). Returns the slot, or -1
 * when every slot is busy. */
int atr_slots_take(struct atr_slots *s, const uint64_t *ids, uint32_t n_ids,
                   uint32_t prompt_tokens, uint32_t *cached);

/* The request in slot i ended: the slot is idle and caches ids[0..n_ids)
 * (the blocks it computed) for `tokens` tokens (its prompt and outputs). */
void atr_slots_release(struct atr_slots *s, unsigned i, const uint64_t *ids, uint32_t n_ids,
                       uint64_t tokens);

bool atr_slots_busy(const struct atr_slots *s, unsigned i);
/* The ids slot i caches (n_ids of them), for tests. */
const uint64_t *atr_slots_cached(const struct atr_slots *s, unsigned i, uint32_t *n_ids);
void atr_slots_get_stats(const struct atr_slots *s, struct atr_slots_stats *out);

#endif
