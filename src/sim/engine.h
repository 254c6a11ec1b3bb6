/* engine.h - deterministic virtual-time model of a vLLM-v1-like serving
 * engine: continuous batching, chunked prefill, paged KV cache with a prefix
 * cache over full blocks (LRU eviction), and recompute preemption; an
 * SGLang flavour adds longest-prefix-first scheduling and a radix cache
 * (hits inside a block when told, one copy per prefix, leaves evicted
 * first); a llama.cpp flavour has fixed slots, each with its own prefix
 * cache (docs/sim-engine.md).
 *
 * The engine is event driven. Requests are added with an arrival time at or
 * after the engine's clock; atr_engine_step() advances to the next event
 * (an arrival or the end of an iteration), and atr_engine_finished() lists
 * the requests that finished during the last step or run_until call, so a
 * driver can add the next turn of a session with arrival = finish + think
 * time before the engine schedules its next iteration.
 *
 * Memory: the engine owns its request states and their records; record
 * pointers stay valid until atr_engine_free() (or atr_engine_release_record).
 * A finished request keeps only its record, about 100 bytes in a chunk of
 * records (its scheduling state and block table are freed); its token
 * times live in the engine's log of iteration ends when they came from
 * consecutive iterations, the usual case, so a run of many requests costs
 * little more than the records (atr_engine_token_times). The hash_ids array of
 * a request is borrowed: it must stay valid until the request is reported
 * finished. The cost callback's context is borrowed. */
#ifndef ATR_SIM_ENGINE_H
#define ATR_SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/cost.h"
#include "util/error.h"

/* Passed to on_iter once per iteration, when it is scheduled. */
struct atr_iter_info {
    uint64_t index;          /* 0-based iteration number */
    double start, seconds;   /* start time and duration */
    unsigned num_seqs;       /* sequences in the batch */
    struct atr_iter_work work;
    uint32_t kv_blocks_used; /* referenced KV blocks after allocation */
};

struct atr_engine_cfg {
    /* Seconds one iteration takes; must return a finite value > 0. */
    double (*iter_seconds)(void *ctx, const struct atr_iter_work *w);
    void *cost_ctx;
    uint64_t kv_capacity_tokens;     /* KV blocks = this / block_size */
    unsigned block_size;             /* 0 -> 16 */
    unsigned max_num_seqs;           /* 0 -> 256 */
    unsigned max_num_batched_tokens; /* 0 -> 8192 */
    bool chunked_prefill;            /* vLLM v1 default: true */
    bool prefix_caching;             /* vLLM v1 default: true */
    /* SGLang's default schedule ("lpm"): the waiting queue is served in
     * order of longest cached prefix (ties in arrival order), FCFS again
     * when more than 128 requests wait. vLLM: false (FCFS). */
    bool longest_prefix_first;
    /* SGLang's radix cache at page size 1 (docs/sim-engine.md, "SGLang
     * flavour"): a prefix hit may end inside a block (a request's shared
     * tail, below), and eviction takes least recently used leaves only (a
     * cached block is not evicted while a cached block continues it).
     * vLLM: false (16-token blocks, LRU per block). */
    bool radix_cache;
    /* The cache kept block by block instead of as runs of chained ids
     * (src/sim/kvruns.h): the same results for chained ids, slower. The
     * reference tests compare the runs with; radix_cache's shared tails
     * (atr_engine_set_tail) need it. */
    bool block_cache;
    /* vLLM V0's default scheduler (no chunked prefill): waiting prompts
     * are admitted first, and an iteration that admitted any runs only
     * prefills, pausing the decodes; decodes run when nothing could be
     * admitted. Needs chunked_prefill false. V1 and SGLang: false (decodes
     * first, then prefill chunks in the same iteration). */
    bool prefill_first;
    /* vLLM V0's multi-step scheduling (--num-scheduler-steps K): a
     * decode-only batch runs K steps back to back without the scheduler
     * between them (lookahead KV blocks taken first), and its tokens are
     * delivered when the window ends, as without async output processing;
     * arrivals wait for the window. A sequence done before the window ends
     * still runs to its end. Batches with prefill run one step. 0 or 1: a
     * step at a time. */
    unsigned num_scheduler_steps;
    /* llama.cpp's llama-server (docs/sim-engine.md, "llama.cpp flavour"):
     * this many parallel slots (-np); 0: not that flavour. Each slot has
     * kv_capacity_tokens / slots tokens of context (-c split evenly) and a
     * prefix cache of its own (its last prompt, src/sim/slots.h) in place
     * of the shared block cache, with the RAM prompt cache below; a
     * request longer than a slot never fits. max_num_seqs becomes the slot
     * count and max_num_batched_tokens is the logical batch (-b); decodes
     * are scheduled before prompt chunks, prefill is always chunked, and
     * nothing is preempted (a slot's context is its own). */
    unsigned slots;
    double slot_similarity;          /* --slot-prompt-similarity (llama-server: 0.1) */
    uint64_t prompt_cache_tokens;    /* --cache-ram, in tokens of KV; 0: none */
    /* A request that could never fit (atr_engine_fits false) is rejected
     * by atr_engine_add, as vLLM rejects a prompt longer than it can hold,
     * instead of being an error: its record says rejected and it never
     * runs. */
    bool skip_oversized;
    /* KV retention across tool pauses (issue 34): the blocks of a
     * finished request marked with atr_engine_set_retain (a session's turn
     * with a turn to come) stay pinned this many seconds: evicted only
     * once no unpinned cached block is left (then the oldest pin gives way,
     * before any preemption or wait), so the session's next turn finds its
     * prefix at the cost of other sessions' cached blocks. 0: off (vLLM:
     * blocks go to the LRU queue at once). Not for slots (llama.cpp keeps a
     * slot's prompt anyway). */
    double retain_s;
    /* Optional per-iteration observer (batch size / KV series). */
    void (*on_iter)(void *ctx, const struct atr_iter_info *it);
    void *iter_ctx;
};

/* Fills the vLLM v1 defaults (block 16, 256 seqs, 8192 tokens, chunked
 * prefill and prefix caching on); cost and capacity stay to be set. */
void atr_engine_cfg_defaults(struct atr_engine_cfg *cfg);

struct atr_sim_req {
    uint64_t id;                /* caller's id, copied into the record */
    double arrival;             /* seconds, >= the engine's clock */
    uint32_t prompt_tokens;     /* >= 1 */
    uint32_t output_tokens;     /* forced output length, >= 1 */
    const uint64_t *hash_ids;   /* prompt block ids (borrowed), may be NULL */
    size_t n_hash_ids;          /* ids past the last full block are ignored */
};

struct atr_sim_record {
    uint64_t id;
    uint32_t prompt_tokens, output_tokens;
    uint32_t cached_tokens;     /* prompt tokens from the prefix cache at first admission */
    uint32_t preemptions;
    uint32_t tokens_done;       /* output tokens produced so far */
    double arrival;
    double first_scheduled;     /* start of the first iteration that ran it */
    double first_token;         /* end of the iteration completing its prefill (TTFT) */
    double finish;              /* time of the last token (E2EL) */
    bool aborted;               /* atr_engine_abort: finish is the abort time, tokens_done
                                   what it produced */
    bool rejected;              /* skip_oversized: refused at atr_engine_add (finish =
                                   arrival, no tokens) */
};

struct atr_engine_stats {
    uint64_t iterations;
    uint64_t requests_added, requests_finished, requests_aborted;
    uint64_t requests_rejected;     /* skip_oversized: refused as too long */
    uint64_t prompt_tokens;         /* over first admissions */
    uint64_t cached_tokens;         /* over first admissions */
    double prefix_hit_rate;         /* cached_tokens / prompt_tokens (0 if none) */
    uint64_t prefill_tokens;        /* tokens computed by prefill chunks, recompute included */
    uint64_t decode_tokens;
    uint64_t preemptions;
    uint64_t evictions;             /* cached blocks evicted for reuse */
    uint64_t kv_pins;               /* retain_s: requests whose blocks were pinned */
    uint64_t kv_pins_dropped;       /* retain_s: pins ended early for another's memory */
    uint32_t kv_blocks_total, kv_blocks_peak;
    double kv_blocks_mean;          /* time-weighted over busy time */
    double busy_seconds;            /* sum of iteration durations */
    double batch_mean;              /* mean sequences per iteration */
    unsigned batch_hist_len;        /* max_num_seqs + 1 */
    const uint64_t *batch_hist;     /* [n] = iterations with n sequences; engine-owned */
};

struct atr_engine;

/* NULL with err set on bad configuration or out of memory. */
struct atr_engine *atr_engine_new(const struct atr_engine_cfg *cfg,
                                  struct atr_error *err);
void atr_engine_free(struct atr_engine *e);

/* Queues a request and returns its record (engine-owned, updated as the
 * engine runs: tokens_done grows per iteration, which is what a real-time
 * server streams from). NULL with err set when its arrival is before the
 * engine clock, its sizes are zero, or it could never fit (see
 * atr_engine_fits) and skip_oversized is off; with skip_oversized such a
 * request's record comes back already over, with rejected set. */
const struct atr_sim_record *atr_engine_add(struct atr_engine *e, const struct atr_sim_req *req,
                                            struct atr_error *err);

/* radix_cache only (else ignored): says that rec's prompt tokens
 * [tail_block * block_size, + tail_tokens) are the same, token for token, as
 * those of every request given the same tail_id, an id chained on prompt
 * block tail_block - 1 like a block id (0 < tail_tokens < block_size). Block
 * ids say nothing about a partial block, so a caller that knows an exact
 * shared-prefix length must say so outright. Call it right after
 * atr_engine_add, before the engine steps past the request's arrival.
 * The engine keeps the tail (24 bytes) until atr_engine_free. 0, or -1
 * with err set when tail_tokens is out of range or the radix cache is not
 * kept block by block (block_cache: the runs have no tails). */
int atr_engine_set_tail(struct atr_engine *e, const struct atr_sim_record *rec,
                        uint64_t tail_id, uint32_t tail_block, uint32_t tail_tokens,
                        struct atr_error *err);

/* Whether a request of these sizes could ever be scheduled: its prompt +
 * output KV blocks within the whole cache, and without chunked prefill the
 * whole request within max_num_batched_tokens. */
bool atr_engine_fits(const struct atr_engine *e, uint32_t prompt_tokens,
                     uint32_t output_tokens);
/* The first half of that: its prompt + output KV blocks within the cache. */
bool atr_engine_fits_kv(const struct atr_engine *e, uint32_t prompt_tokens,
                        uint32_t output_tokens);

/* The times of r's tokens_done tokens so far: the end of the iteration that
 * produced each (r->first_token is the first). Valid until the next step
 * or run_until call (the log they may point into grows), so after the last
 * step until atr_engine_free; NULL when r has no tokens. */
/* Marks rec's request (added, not finished) to have its blocks pinned
 * for cfg.retain_s when it finishes. */
void atr_engine_set_retain(struct atr_engine *e, const struct atr_sim_record *rec);

const double *atr_engine_token_times(const struct atr_engine *e,
                                     const struct atr_sim_record *r);

/* Engine clock: the time of the last event processed. */
double atr_engine_now(const struct atr_engine *e);
/* Time of the next thing step would do: the clock itself when an iteration
 * is due to be scheduled, INFINITY when there is nothing left to do. */
double atr_engine_next_time(const struct atr_engine *e);

/* One step: either schedules the due iteration (clock unchanged), or
 * advances the clock to the next event time and processes every event at
 * that time. Clears, then fills, the finished list. 0, or -1 with err set
 * (the cost callback returned a bad time, or out of memory). */
int atr_engine_step(struct atr_engine *e, struct atr_error *err);
/* Steps while next_time <= t; the finished list accumulates over the call.
 * t = INFINITY runs until every added request finished. */
int atr_engine_run_until(struct atr_engine *e, double t, struct atr_error *err);

/* Records finished in the last step / run_until call, in finish order. */
struct atr_sim_record *const *atr_engine_finished(const struct atr_engine *e,
                                                  size_t *n);
/* Requests added and not yet finished. */
size_t atr_engine_pending(const struct atr_engine *e);

void atr_engine_get_stats(const struct atr_engine *e, struct atr_engine_stats *out);

/* Live figures for a server's /metrics: requests admitted and running,
 * requests waiting for admission, KV blocks referenced now, and the total. */
size_t atr_engine_num_running(const struct atr_engine *e);
size_t atr_engine_num_waiting(const struct atr_engine *e);
uint32_t atr_engine_kv_blocks_used(const struct atr_engine *e);
uint32_t atr_engine_kv_blocks_total(const struct atr_engine *e);
/* The llama.cpp flavour's slots (cfg.slots); 0 for the others. */
unsigned atr_engine_slots(const struct atr_engine *e);

/* Aborts a request, as vLLM does when its client goes away: it leaves the
 * waiting queue or the batch at the next safe point (the end of an
 * iteration in flight), its blocks are released (computed ones stay in the
 * prefix cache), and it produces no more tokens. The record gets aborted =
 * true and finish = the engine clock. 0 (also when it had already ended),
 * -1 when it is not this engine's. */
int atr_engine_abort(struct atr_engine *e, const struct atr_sim_record *rec);

/* Frees a finished or aborted request's state and record, so a long-running
 * server does not keep every request until atr_engine_free. rec must not be
 * used afterwards; it also leaves the atr_engine_finished() list. An aborted
 * request still in an iteration or not yet arrived is freed when the engine
 * lets go of it. -1 (nothing freed) when the request is still running or is
 * not this engine's. */
int atr_engine_release_record(struct atr_engine *e, const struct atr_sim_record *rec);

#endif
