/* kvruns.h - vLLM's paged KV cache and prefix cache kept as runs of a
 * prompt's block ids, not block by block (issue 16).
 *
 * Ids are chained (an id names its whole prefix, as vLLM's block hashes
 * and atr's traces do), so the cached ids along any prompt fall into runs:
 * a run is positions [lo, c) of one id chain, cached, found through the
 * id at lo alone. Who holds a run holds a prefix of it, so reference
 * counts along a run only fall with depth, and the unreferenced part of a
 * run is its deepest one, queued for eviction in pieces (one per release,
 * deepest first, as vLLM frees a request's blocks tail first). Admission,
 * release and eviction then cost per run, not per block; a check-in costs
 * one probe of a small map per block. What vLLM's block-level cache makes
 * of the same requests (cached ids, counts, LRU order and numbers,
 * evictions) is the same (docs/sim-engine.md, "Kept as runs"; the block
 * model is engine.c's block_cache). An id that is not chained (a trace
 * repeating it at another depth) counts as cached at its own depth only.
 *
 * The engine owns a struct kvr and one struct kvr_table per request.
 * Block ids passed in are borrowed for the call only: a run keeps copies. */
#ifndef ATR_SIM_KVRUNS_H
#define ATR_SIM_KVRUNS_H

#include <stdbool.h>
#include <stdint.h>

struct kvr;

/* Positions [lo, end) of run `run` (lo: the run's first), held; version:
 * the run's when it was matched. */
struct kvr_hold {
    uint32_t run;
    uint32_t end;
    uint32_t version;
};

/* The runs a request holds, in depth order. Its other blocks (computed
 * duplicates, the last partial block, output blocks) are only counted, by
 * the engine: the functions below take that count where they need it. */
struct kvr_table {
    struct kvr_hold *holds;      /* malloc'd; kvr_table_release frees it */
    uint32_t n_holds, cap_holds;
    uint32_t memo_max;           /* the holds are a match up to this (0: not) */
};

/* Counts over the whole cache, read by the engine. */
struct kvr_counts {
    uint32_t used;               /* blocks some request holds */
    uint32_t n_free;             /* neither held nor cached */
    uint32_t n_lru;              /* cached, unreferenced: queued for eviction */
    uint64_t n_released;         /* blocks whose last holder let go, ever */
    uint64_t appended;           /* queue numbers given out: 1, 2, ... */
    uint64_t evicted_seq;        /* queue number of the last eviction (0: none) */
    uint64_t evictions;
};

/* one_copy: SGLang's radix cache keeps one copy of a prefix: a request
 * that computed blocks another cached meanwhile gives its own up and
 * holds the cached ones (vLLM keeps its own, uncached). */
struct kvr *kvr_new(uint32_t n_blocks, bool one_copy);
void kvr_free(struct kvr *c);
const struct kvr_counts *kvr_counts(const struct kvr *c);

void kvr_table_release(struct kvr_table *t);     /* frees t->holds; holds nothing */

/* Longest cached prefix of ids[0..max), in blocks; t (holding nothing)
 * gets the runs it found as holds, not yet referenced. A request that
 * waits is matched again and again (SGLang's queue, every iteration): a
 * match whose runs did not change since is kept, not redone. */
uint32_t kvr_match(struct kvr *c, struct kvr_table *t, const uint64_t *ids, uint32_t max);

/* Of t's matched blocks, how many are queued for eviction and the oldest
 * queue number among them (UINT64_MAX: none). */
void kvr_hits_in_lru(const struct kvr *c, const struct kvr_table *t, uint32_t *in_lru,
                     uint64_t *oldest);

/* Whether ids[p] is cached, p being where t's last match stopped (p in a
 * run that starts there or in the last run it matched). Valid while the
 * runs it matched are: none of them was evicted from since. */
bool kvr_cached_at(const struct kvr *c, const struct kvr_table *t, const uint64_t *ids,
                   uint32_t p);

/* References t's matched runs: t now holds them. Returns the blocks it
 * holds: the match's length. */
uint32_t kvr_ref_hits(struct kvr *c, struct kvr_table *t);

/* Takes `n` more blocks for a request, free ones first, then evicting the
 * oldest queued; false (nothing changed) when there are not enough. */
bool kvr_grow(struct kvr *c, uint32_t n);

/* Checks t's blocks [from, end) in under ids[from..end): each joins the
 * cache unless its id is cached already (then it stays t's own, or with
 * one_copy t holds the cached block instead). t holds at least `end`
 * blocks and checked in [0, from) before. */
void kvr_check_in(struct kvr *c, struct kvr_table *t, const uint64_t *ids, uint32_t from,
                  uint32_t end);

/* Lets go of all t's n_blocks blocks, deepest first: cached ones are
 * queued, the others freed. With n_blocks 0 (a request that waits: its
 * holds are a match, not referenced) it only forgets the match. */
void kvr_release(struct kvr *c, struct kvr_table *t, uint32_t n_blocks);

#endif
